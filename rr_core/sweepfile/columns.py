"""A sweep file's columns, and its rows as the published file writes them: which columns a file has and in what
order (`file_columns`, `known_columns`, `extra_columns`), and one row as a CSV line in the published number format
(`format_row`, the decimals `rr_core.sweepfile.DECIMALS`), so new rows and files stay diffable with the release.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from rr_core.sweepfile import DECIMALS
from rr_core.sweepfile.csv_text import FIELDS
from rr_core.sweepfile.schema import RECIPE_COLUMNS, Problem

__all__ = [
    "known_columns",
    "file_columns",
    "extra_columns",
    "format_row",
    "header_of",
    "row_problems",
    "INTEGER_COLUMNS",
]


def format_row(row: Mapping, columns: Sequence[str] = FIELDS) -> str:
    """One CSV line (no newline) of `columns` in the published number format; an extra measured column's
    number as Python writes it (shortest round trip), an empty cell where `row` has none."""
    cells = []
    for name in columns:
        v = row.get(name)
        if v is None or (isinstance(v, float) and np.isnan(v)):
            cells.append("")
        elif name in DECIMALS:
            cells.append(repr(round(float(v), DECIMALS[name])))
        elif name in INTEGER_COLUMNS:  # an optional integer, held as float64 (tokens, init_seed, data_seed)
            cells.append(str(int(v)))
        elif name in FIELDS or isinstance(v, str):
            cells.append(str(v))
        else:
            cells.append(repr(float(v)))
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(cells)
    return buf.getvalue()


def extra_columns(columns: Iterable[str]) -> list[str]:
    """The names among `columns` beyond the schema's (`FIELDS` and the recipe columns): extra measured
    columns, in their order."""
    return [c for c in columns if c not in FIELDS and c not in _RECIPE]


_RECIPE = [c.name for c in RECIPE_COLUMNS]


INTEGER_COLUMNS = {c.name for c in RECIPE_COLUMNS if c.kind == "int"}


def known_columns(columns: Iterable[str]) -> list[str]:
    """The schema's columns a file of `columns` has: `FIELDS`, then the recipe columns present (lr, role,
    init_seed, data_seed)."""
    columns = list(columns)
    return [*FIELDS, *(c for c in _RECIPE if c in columns)]


def file_columns(columns: Iterable[str]) -> list[str]:
    """The columns a sweep file of `columns` is written with: `known_columns`, then the extra measured ones."""
    columns = list(columns)
    return [*known_columns(columns), *extra_columns(columns)]


def header_of(raw: bytes) -> list[str]:
    """The column names of a sweep file's first line, as written (any order); `FIELDS` when it does not
    name them all (the file is then refused for what it is once the new rows are parsed with it)."""
    first = raw.split(b"\n", 1)[0].decode("utf-8-sig", errors="replace").strip("\r")
    names = [name.strip() for name in next(csv.reader([first]), [])]
    return names if set(FIELDS) <= set(names) else list(FIELDS)


def row_problems(rows: Sequence[Mapping], columns: Sequence[str]) -> list[Problem]:
    """A problem for each key of a new row that is not one of `columns` (a file's header): rows are
    appended to the columns a file has, never to a column it lacks."""
    return [
        Problem(
            None,
            key,
            None,
            "the file has no such column: rr appends only to the columns a file has",
            f"new row {i}",
        )
        for i, row in enumerate(rows, 1)
        for key in row
        if key not in columns
    ]

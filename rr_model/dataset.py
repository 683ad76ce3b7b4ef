"""Reading, writing and appending sweep CSVs, always through the schema.

`load_sweep` is the only way data enters the analysis; `append_rows` is the only way the trainer
writes it back. Both report every problem of a file at once, by line and column, as a `DataError`.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pandera.pandas as pa

from rr_model.errors import RRError
from rr_model.files import locked
from rr_model.schema import COLUMNS, GROUP_RULES, KEY, SCHEMA, Problem

__all__ = [
    "DataError",
    "load_sweep",
    "read_sweep_text",
    "write_sweep",
    "append_rows",
    "bundled_path",
    "plain",
]

FIELDS: list[str] = [c.name for c in COLUMNS]
# Published precision of each float column (decimals; shortest repr after rounding, as in the release):
# new rows are written the same way so files stay diffable.
_DECIMALS = {"params_M": 2, "val_loss": 4, "ece": 4, "minutes": 1}


class DataError(RRError, ValueError):
    """A sweep file that cannot be used, with every problem found in it."""

    def __init__(self, path: str | os.PathLike | None, problems: list[Problem]):
        self.path = str(path) if path is not None else "<data>"
        self.problems = problems
        super().__init__(self.message())

    def message(self, limit: int = 50) -> str:
        n = len(self.problems)
        head = f"{self.path}: {n} problem{'s' if n != 1 else ''} found"
        if n == 1 and self.problems[0].line is None and self.problems[0].column is None:
            return f"{self.path}: {self.problems[0].rule}"
        lines = [f"  {p}" for p in self.problems[:limit]]
        if n > limit:
            lines.append(f"  ... and {n - limit} more")
        return "\n".join([head + ":", *lines])


def bundled_path() -> Path:
    """The published dataset (42 runs) as shipped inside the installed package."""
    return Path(str(resources.files("rr_model") / "published" / "scaling_v8.csv"))


def _file_problem(path, rule: str) -> DataError:
    return DataError(path, [Problem(None, None, None, rule)])


def _read_text(path: Path) -> str:
    if not path.exists():
        raise _file_problem(path, "no such file")
    if path.is_dir():
        raise _file_problem(path, "is a directory, not a CSV file")
    return _decode(path.read_bytes(), path)


def _decode(raw: bytes, path) -> str:
    try:
        return raw.decode("utf-8-sig")  # a UTF-8 byte-order mark is tolerated
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise DataError(
            path, [Problem(line, None, raw[e.start : e.start + 1].hex(), "not UTF-8 text (byte 0x.. above)")]
        ) from None


def _parse_rows(text: str, path) -> tuple[list[str], list[list[str]], list[int]]:
    """Split CSV text into a stripped header, stripped rows and each row's 1-based line number."""
    if not text.strip():
        raise _file_problem(path, "is empty; expected a header line: " + ",".join(FIELDS))
    if "\x00" in text:
        raise _file_problem(path, "is not a CSV text file (it contains NUL bytes)")
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    rows, lines, problems = [], [], []
    try:
        for record in reader:
            cells = list(map(str.strip, record))  # one pass per row in C: this loop is most of a load
            if not any(cells):
                continue  # blank lines are tolerated
            if header is None:
                header = cells
                continue
            if len(cells) != len(header):
                problems.append(
                    Problem(
                        reader.line_num, None, None, f"has {len(cells)} fields, the header has {len(header)}"
                    )
                )
                continue
            rows.append(cells)
            lines.append(reader.line_num)
    except csv.Error as e:
        raise _file_problem(path, f"is not valid CSV (line {reader.line_num}: {e})") from None
    _check_header(header, path)
    if not rows and not problems:
        raise _file_problem(path, "has a header but no data rows")
    if problems:
        raise DataError(path, problems)
    return header, rows, lines


def _check_header(header: list[str], path) -> None:
    seen, dupes = set(), []
    for name in header:
        if name in seen and name not in dupes:
            dupes.append(name)
        seen.add(name)
    if not seen & set(FIELDS):
        shown = ",".join(header)[:80]
        raise _file_problem(
            path,
            f"does not look like a sweep CSV: the first line {shown!r} has none of the columns {','.join(FIELDS)}",
        )
    problems = [Problem(1, d, None, "column name appears more than once in the header") for d in dupes]
    problems += [Problem(1, m, None, "required column is missing") for m in FIELDS if m not in seen]
    problems += [
        Problem(1, x, None, f"unknown column (expected {','.join(FIELDS)})")
        for x in header
        if x not in FIELDS
    ]
    if problems:
        raise DataError(path, problems)


def _typed(header: list[str], rows: list[list[str]], lines: list[int]) -> tuple[pd.DataFrame, list[Problem]]:
    """Turn string cells into typed columns, collecting every cell that does not parse."""
    raw = pd.DataFrame(rows, columns=header)[FIELDS]
    out, problems = {}, []
    for col in COLUMNS:
        s = raw[col.name]
        if col.kind == "str":
            out[col.name] = s.astype(str)
            continue
        num = pd.to_numeric(s.where(s != ""), errors="coerce")
        bad = num.isna() & (s != "")
        if not col.optional:
            bad |= s == ""
        if col.kind == "int":
            bad |= num.notna() & (num != np.floor(num))
        for i in np.flatnonzero(bad.to_numpy()):
            kind = "an integer" if col.kind == "int" else "a number"
            rule = "must not be empty" if s.iat[i] == "" else f"is not {kind}"
            problems.append(Problem(lines[i], col.name, s.iat[i], rule))
        out[col.name] = num.fillna(0).round().astype("int64") if col.kind == "int" else num.astype("float64")
    return pd.DataFrame(out), problems


def _schema_problems(df: pd.DataFrame, lines: list[int], skip: set[tuple[int, str]]) -> list[Problem]:
    try:
        SCHEMA.validate(df, lazy=True)
        return []
    except pa.errors.SchemaErrors as e:
        fc = e.failure_cases
    problems, seen = [], set(skip)
    for row in fc.itertuples(index=False):
        if pd.isna(row.index):
            continue
        i = int(row.index)
        if row.check in GROUP_RULES:
            column, rule = GROUP_RULES[row.check], row.check
        elif row.check == "multiple_fields_uniqueness":
            column, rule = ",".join(KEY), "duplicate run: this (size, variant, seed) appears more than once"
        else:
            column, rule = row.column, f"must be {row.check}"
        if (lines[i], column) in seen:
            continue
        seen.add((lines[i], column))
        value = df.at[i, column] if column in df.columns else tuple(df.loc[i, KEY])
        problems.append(Problem(lines[i], column, plain(value), rule))
    return sorted(problems, key=lambda p: (p.line, p.column or ""))


def plain(value):
    """A numpy scalar as the Python value it holds (np.int64(3) -> 3), so messages and JSON show plain numbers."""
    return value.item() if isinstance(value, np.generic) else value


class _Lines(tuple):
    """Line numbers in `DataFrame.attrs`: immutable, so a deep copy may return the same object.

    pandas deep-copies attrs into the result of every operation; for a plain list of 10^5 line numbers
    each copy was a Python loop (~0.1 s), and `gap_table` on 10^5 rows spent 90% of its time there.
    """

    def __deepcopy__(self, memo: dict) -> _Lines:
        return self


def read_sweep_text(text: str, path: str | os.PathLike | None = None) -> pd.DataFrame:
    """Parse and validate CSV text (see `load_sweep`)."""
    header, rows, lines = _parse_rows(text, path)
    df, problems = _typed(header, rows, lines)
    problems += _schema_problems(df, lines, {(p.line, p.column) for p in problems})
    if problems:
        raise DataError(path, sorted(problems, key=lambda p: (p.line or 0, p.column or "")))
    df.attrs["path"] = str(path) if path is not None else None
    df.attrs["lines"] = _Lines(lines)
    return df


def load_sweep(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """Load a sweep CSV, validated against the schema, as a typed DataFrame.

    Parameters
    ----------
    path
        A CSV with the columns size, variant, seed, params_M, steps, val_loss, ece, minutes (any order).
        None loads the published dataset bundled with the package.

    Returns
    -------
    DataFrame with those columns in that order: seed and steps int64, size and variant str, the rest
    float64 (ece and minutes NaN where not measured). Rows keep the file's order;
    ``df.attrs["lines"]`` holds each row's line number in the file (a tuple).

    Raises
    ------
    DataError
        Listing every problem (file, line, column, value, rule). A BOM, CRLF line ends, blank lines and
        whitespace around cells are tolerated.

    Example
    -------
    >>> df = load_sweep()
    >>> len(df), df["size"].nunique()
    (42, 5)
    """
    path = Path(path) if path is not None else bundled_path()
    return read_sweep_text(_read_text(path), path)


def format_row(row: Mapping) -> str:
    """One CSV line (no newline) in the published number format."""
    cells = []
    for name in FIELDS:
        v = row.get(name)
        if v is None or (isinstance(v, float) and np.isnan(v)):
            cells.append("")
        elif name in _DECIMALS:
            cells.append(repr(round(float(v), _DECIMALS[name])))
        else:
            cells.append(str(v))
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(cells)
    return buf.getvalue()


def write_sweep(df: pd.DataFrame, path: str | os.PathLike, *, exact: bool = False) -> None:
    """Write a new sweep file, refusing to overwrite an existing one.

    ``exact=True`` writes floats at full precision (round-trips bit for bit) instead of the published
    number format.
    """
    path = Path(path)
    problems = _schema_problems(df[FIELDS].reset_index(drop=True), list(range(2, len(df) + 2)), set())
    if problems:
        raise DataError(path, problems)
    if exact:
        body = df[FIELDS].to_csv(index=False, float_format=None, lineterminator="\n")
    else:
        body = "\n".join([",".join(FIELDS), *(format_row(r) for r in df[FIELDS].to_dict("records"))]) + "\n"
    with open(path, "x", encoding="utf-8") as f:  # "x": never clobber a dataset
        f.write(body)
        f.flush()
        os.fsync(f.fileno())


def append_rows(path: str | os.PathLike, rows: Iterable[Mapping]) -> pd.DataFrame:
    """Append validated rows to a sweep CSV under an exclusive lock; the existing bytes are never rewritten.

    The file is locked (`rr_model.files.locked`), re-read and validated together with the
    new rows, and only then are the new lines appended and fsynced. A missing file is created with a header.
    Returns the new rows as parsed back from the file. Raises DataError if the combined file would be invalid
    (for instance a duplicate (size, variant, seed)), in which case nothing is written.
    """
    path = Path(path)
    new = [format_row(r) for r in rows]
    with locked(path) as fd:
        with open(fd, "rb", closefd=False) as f:
            f.seek(0)
            existing = f.read()
        if existing.strip():
            text = _decode(existing, path)
            sep = "" if existing.endswith(b"\n") else "\n"
            combined = text + sep + "\n".join(new) + "\n"
            prefix = sep
        else:
            combined = ",".join(FIELDS) + "\n" + "\n".join(new) + "\n"
            prefix = ",".join(FIELDS) + "\n"
        df = read_sweep_text(combined, path)
        payload = (prefix + "\n".join(new) + "\n").encode("utf-8")
        os.write(fd, payload)  # one write of whole lines: O_APPEND keeps it at the end
        os.fsync(fd)
    return df.iloc[len(df) - len(new) :].reset_index(drop=True)

"""Render an analysis frame as text, Markdown, LaTeX (booktabs), CSV or JSON, as the `View` given says.
Nothing here computes a statistic, and nothing here knows one view from another: each view's `View` is its own
module's (`rr_analysis.views`).

Text output fits the terminal: when a table is wider than `width`, prose columns wrap (`rr_analysis.tables.grid.wrap_columns`),
then the columns of least consequence go first (each column has a rank; the primary test's columns, the gap and
its CI and Hedges g stay), and a line below the table says what was left out. `columns` chooses the columns of any
format instead. Markdown, LaTeX, CSV and JSON are never wrapped, and JSON and CSV always hold every number any
format shows.
"""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import replace

import pandas as pd

from rr_analysis.comparison import for_reference
from rr_analysis.tables.columns import Col, View, filled, missing
from rr_analysis.tables.grid import (
    FORMATS,
    csv_text,
    latex_lines,
    markdown_lines,
    text_lines,
    widths,
    wrap_columns,
)
from rr_core.errors import InputError
from rr_core.sweepfile.typed import plain
from rr_core.variants import REFERENCE

__all__ = [
    "render",
    "column_names",
    "machine_columns",
]


def _fit(columns: list[Col], cells: list[list[str]], width: int) -> list[int]:
    """Indices of the columns to show so that the table is at most `width` wide (rank 0 always stays), prose
    columns counted as narrow as they wrap."""
    header = cells[0]
    drawn = widths(header, wrap_columns(header, cells[1:], [c.wrap for c in columns], width))
    keep = list(range(len(columns)))
    while sum(drawn[i] for i in keep) + 2 * (len(keep) - 1) > width:
        droppable = [i for i in keep if columns[i].rank > 0]
        if not droppable:
            break
        keep.remove(max(droppable, key=lambda i: (columns[i].rank, i)))
    return keep


def machine_columns(view: View, frame: pd.DataFrame) -> list[str]:
    """The columns csv and json hold: the view's stable `machine` columns (the reference's own named for the
    frame's reference, `rr_analysis.comparison.for_reference`), or every column of the frame."""
    if not view.machine:
        return list(frame.columns)
    reference = frame["reference"].iloc[0] if "reference" in frame and len(frame) else REFERENCE
    return [for_reference(c, reference) for c in view.machine]


def column_names(view: View, fmt: str, frame: pd.DataFrame) -> list[str]:
    """The names `render`'s `columns` takes for `view` in `fmt`: for csv and json the machine columns; for
    the others each display column's header in lower case, its words joined by "_" (``paired* 95% CI``:
    ``paired_95_ci``; ``paired* p adj``: ``paired_p_adj``), as the frame's comparison fills it.

    Examples
    --------
    >>> from rr_analysis.stats.gap_tests import gap_table
    >>> from rr_analysis.views.registry import VIEWS
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> column_names(VIEWS["table"], "text", gap_table(load_sweep()))[6:10]
    ['baseline_mean', 'gap', 'paired_95_ci', 'hedges_g']
    """
    if fmt in ("csv", "json"):
        return machine_columns(view, frame)
    return ["_".join(re.findall(r"[a-z0-9]+", c.header.lower())) for c in filled(view, frame).columns]


def _chosen(view: View, fmt: str, frame: pd.DataFrame, names: list[str]) -> list[int]:
    """The indices, among `column_names`, of the columns named, in the order named; a name not there is an
    `InputError` listing the view's names."""
    known = column_names(view, fmt, frame)
    unknown = [n for n in names if n.lower() not in known]
    if unknown:
        raise InputError(
            f"--columns: no column {', '.join(map(repr, unknown))} in the {view.name} view's {fmt}; its "
            "columns: " + ", ".join(known)
        )
    return [known.index(n.lower()) for n in names]


def _stacked(view: View, frame: pd.DataFrame, width: int | None) -> str:
    """One block per row, "header: value" lines wrapped to `width`: for views whose cells are sentences."""
    wrap = (
        (lambda p: textwrap.wrap(p, width, subsequent_indent="    ", break_on_hyphens=False))
        if width
        else (lambda p: [p])
    )
    lines = [view.title]
    for _, r in frame.iterrows():
        cells = [(c.header.replace(chr(10), " "), c.cell(r)) for c in view.columns]
        lines += [""] + [w for head, text in cells if text for w in wrap(f"{head}: {text}")]
    lines += [""] + [w for p in [*view.legend, *(f"note: {n}" for n in view.notes(frame))] for w in wrap(p)]
    return "\n".join(lines) + "\n"


def _hidden(names: list[str], width: int) -> str:
    """The paragraph below a narrowed table: every column it leaves out, by name (wrapped like the legend), so
    a reader knows what to ask --columns for without a second run."""
    return f"not shown at width {width}: {', '.join(names)} (--wide shows all, --columns chooses)"


def _text(view: View, frame: pd.DataFrame, width: int | None = None) -> str:
    """Plain aligned text; with `width`, prose columns wrap and columns are dropped by rank to fit."""
    if view.stacked:
        return _stacked(view, frame, width)
    cols = list(view.columns)
    cells = [[c.header for c in cols]] + [[c.cell(r) for c in cols] for _, r in frame.iterrows()]
    keep = _fit(cols, cells, width) if width else list(range(len(cols)))
    left = {i for i in keep if any(c[i] != "n/a" and any(ch.isalpha() for ch in c[i]) for c in cells[1:])}
    header, rows = [cols[i].header for i in keep], [[row[i] for i in keep] for row in cells[1:]]
    if width:
        rows = wrap_columns(header, rows, [cols[i].wrap for i in keep], width)
    grid = text_lines(header, rows, [i not in left for i in keep])
    hidden = [cols[i].header.replace("\n", " ") for i in range(len(cols)) if i not in keep]
    prose = [*view.legend, *(f"note: {n}" for n in view.notes(frame))]
    wrap = (
        (lambda p: textwrap.wrap(p, width, subsequent_indent="  ", break_on_hyphens=False))
        if width
        else (lambda p: [p])
    )
    below = wrap(_hidden(hidden, width)) if hidden else []
    return "\n".join(wrap(view.title) + grid + below + [w for p in prose for w in wrap(p)]) + "\n"


def _grid(view: View, frame: pd.DataFrame) -> tuple[list[str], list[list[str]], list[bool]]:
    """Header, rows and right-alignment of the view's display columns (the first two, the labels, left)."""
    rows = [[c.cell(r) for c in view.columns] for _, r in frame.iterrows()]
    return [c.header for c in view.columns], rows, [i >= 2 for i in range(len(view.columns))]


def markdown(view: View, frame: pd.DataFrame) -> str:
    extra = [*view.legend, *view.notes(frame)]
    return (
        "\n".join(markdown_lines(*_grid(view, frame)) + ([""] + [f"- {e}" for e in extra] if extra else []))
        + "\n"
    )


def _latex(view: View, frame: pd.DataFrame) -> str:
    legend = [f"% {line}" for line in [*view.legend, *view.notes(frame)]]
    return "\n".join([*legend, *latex_lines(*_grid(view, frame))]) + "\n"


def _csv(out: pd.DataFrame) -> str:
    """The machine columns as CSV: raw values, missing empty; a column holding mappings or lists as JSON."""
    nested = {c for c in out.columns if out[c].map(lambda v: isinstance(v, dict | list)).any()}

    def value(c: str, v):
        return json.dumps(v) if c in nested else None if missing(v) else plain(v)

    return csv_text(list(out.columns), [{c: value(c, r[c]) for c in out.columns} for _, r in out.iterrows()])


def render(
    frame: pd.DataFrame, view: View, fmt: str, width: int | None = None, columns: list[str] | None = None
) -> str:
    """One analysis frame as text.

    Parameters
    ----------
    frame
        The frame `view` draws: the one its library function returns (`gap_table` for the table view,
        `emergence`, `power_table`, `seed_plan` for ``power --effect``, ...).
    view
        What it shows: any `View`, such as a view of `rr_analysis.views.registry.VIEWS` (``VIEWS["table"]``).
    fmt
        One of `FORMATS`. csv and json hold the view's stable machine columns (`View.machine`:
        `TABLE_COLUMNS` for the table view, `EMERGENCE_COLUMNS` for emergence; every column of the frame for
        the others), missing values empty/null; the others hold the display columns, a legend of which test
        each column is, and the n/a reasons.
    width
        For text only: the widest line allowed (a terminal's width); prose columns (a note) wrap, then columns
        are dropped by rank to fit and a line below the table says which. None shows every column, unwrapped.
    columns
        These columns, in this order, by the names `column_names` gives (text, markdown, latex: e.g.
        ``["size", "baseline", "gap", "paired_95_ci"]``; csv, json: the machine columns); in text none is dropped
        to fit. None: the view's own.
    """
    v = filled(view, frame)
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    keys = machine_columns(view, frame)
    chosen = _chosen(view, fmt, frame, columns) if columns else None
    if chosen and fmt in ("csv", "json"):
        keys = [keys[i] for i in chosen]
    elif chosen:
        v = replace(v, columns=tuple(replace(v.columns[i], rank=0) for i in chosen))
    if fmt == "json":
        records = [{k: None if missing(r[k]) else plain(r[k]) for k in keys} for _, r in frame.iterrows()]
        return json.dumps(records, indent=2, allow_nan=False) + "\n"
    if fmt == "csv":
        return _csv(frame[keys])
    if fmt == "text":
        return _text(v, frame, width)
    return {"markdown": markdown, "latex": _latex}[fmt](v, frame)

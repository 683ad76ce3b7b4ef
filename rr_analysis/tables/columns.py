"""A view's columns and how their cells read: the `Col` and `View` records, the cells several views share
(a number, a p-value, an interval, a note per row), missing values (`missing`, spelt `NA`) and fixed decimals
through `rr_analysis.numbers`, and the comparison a frame states, the significance level and the power target
filled into titles, headers and legends (`filled`). What each view shows is its own module's
(`rr_analysis.views`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

import pandas as pd

from rr_analysis.comparison import ALPHA, METRIC, PARAMS_TOLERANCE, POWER, STAMP, for_reference
from rr_analysis.numbers import NA, fixed, missing, p_value, percent, percent_above, significant
from rr_core.variants import REFERENCE, label


def formatted(v, spec: str) -> str:
    """`v` in a format spec; fixed decimals ("+.4f") through `rr_analysis.numbers.fixed`, like every view."""
    decimals = re.fullmatch(r"(\+?)\.(\d+)f", spec)
    if decimals:
        return fixed(v, int(decimals[2]), sign=bool(decimals[1]))
    return format(v, spec)


def number(spec: str) -> Callable:
    return lambda v: NA if missing(v) else formatted(v, spec)


def p_cell(v) -> str:
    return NA if missing(v) else p_value(v)


@dataclass(frozen=True)
class Col:
    header: str  # "\n" splits a two-line header in text output
    cell: Callable[[pd.Series], str]
    rank: int = 1  # narrow text drops the highest rank first (rightmost first); 0 is never dropped
    wrap: bool = (
        False  # prose: narrow text wraps it (`rr_analysis.tables.grid.wrap_columns`) before dropping columns
    )


def cell_of(key: str, fmt: Callable) -> Callable[[pd.Series], str]:
    return lambda r: fmt(r[key])


def interval(low: str, high: str, spec: str) -> Callable[[pd.Series], str]:
    """The cell "[low, high]" of two columns in `spec`; `NA` when the low end is missing."""
    return lambda r: NA if missing(r[low]) else f"[{formatted(r[low], spec)}, {formatted(r[high], spec)}]"


def of_reference(key: str) -> Callable[[pd.Series], object]:
    """A row's value of one of the reference's own columns, by its paper name (``n_review``): the frame names it
    for its reference (`rr_analysis.comparison.for_reference`)."""
    return lambda r: r[for_reference(key, r["reference"]) if "reference" in r else key]


UNEQUAL = "\u2020"  # marks a gap whose arms differ in parameter count by more than PARAMS_TOLERANCE


def gap_cell(key: str = "gap", spec: str = ".4f") -> Callable[[pd.Series], str]:
    """A gap's cell, marked `UNEQUAL` where the row's arms differ in size (``params_flagged``, from
    `rr_analysis.comparison.cell_frame`), so the flag sits where the gap is read; `params_notes` says by how much."""
    show = number(spec)
    return lambda r: show(r[key]) + (UNEQUAL if bool(r.get("params_flagged", False)) else "")


def params_notes(t: pd.DataFrame) -> list[str]:
    """One note per flagged row of a frame with the arms' parameter counts: the sizes and by how much they
    differ, so a gap between unequal arms is never read as the rule's alone."""
    if "params_flagged" not in t:
        return []
    ref = label(t["reference"].iloc[0]) if "reference" in t and len(t) else label(REFERENCE)
    return [
        f"{UNEQUAL} {r['size']} {label(r['baseline'])}: the arms' parameter counts differ by "
        f"{percent_above(r['params_mismatch'], PARAMS_TOLERANCE)} ({ref} {fixed(r['params_M'], 2)}M, {label(r['baseline'])} "
        f"{fixed(r['baseline_params_M'], 2)}M), more than {percent(PARAMS_TOLERANCE)}: part of the gap may be "
        "capacity, not the rule"
        for _, r in t.iterrows()
        if bool(r["params_flagged"])
    ]


def row_notes(key: str) -> Callable[[pd.DataFrame], list[str]]:
    """The notes of a frame whose column `key` holds a note per row (empty: none): "SIZE BASELINE: note", each
    row named by the size and baseline columns it has."""

    def notes(t: pd.DataFrame) -> list[str]:
        def where(r: pd.Series) -> str:
            return " ".join(
                [*([r["size"]] if "size" in t else []), *([label(r["baseline"])] if "baseline" in t else [])]
            )

        return [f"{where(r)}: {r[key]}" for _, r in t.iterrows() if r[key]]

    return notes


@dataclass(frozen=True)
class View:
    """What a view shows, in every format: `rr_analysis.tables.render.render` draws any `View` it is given."""

    name: str  # how messages name it (`rr analyze NAME`)
    title: str
    columns: tuple[Col, ...]
    legend: tuple[str, ...]  # which test each column is
    notes: Callable[[pd.DataFrame], list[str]]
    stacked: bool = False  # text: one block of labelled lines per row instead of a table (long prose cells)
    machine: tuple[str, ...] = ()  # csv and json: these stable columns; () every column of the frame


GAP = "{gap}"  # the sign convention in words, for the frame's comparison (`context`)


def context(frame: pd.DataFrame) -> dict[str, str]:
    """What a view's texts say about the comparison, read from the frame's `STAMP` columns (the paper's when
    it has none): the reference's label, the metric, the response the tests ran on, and the gap in words;
    and the significance level and power target every test and plan uses (`ALPHA`, `POWER`).

    The published comparison reads as it always has ("Review", "val_loss", "(lower loss)"); any other states
    its metric and direction in the title and the gap line.
    """
    ref, metric, higher = REFERENCE, METRIC, False
    if len(frame) and set(STAMP) <= set(frame.columns):
        ref, metric, higher = (
            frame["reference"].iloc[0],
            frame["metric"].iloc[0],
            bool(frame["higher_is_better"].iloc[0]),
        )
    name = label(ref)
    if higher:
        gap = (
            f"gap = mean({name}) - mean(baseline) of {metric}; positive favours {name} (higher {metric} is "
            f"better; the tests run on -{metric})."
        )
    else:
        of = "" if metric == METRIC else f" of {metric}"
        gap = f"gap = mean(baseline) - mean({name}){of}; positive favours {name} (lower {'loss' if metric == METRIC else metric})."
    shown = f"{metric}, higher is better" if higher else metric
    return {
        "ref": name,
        "metric": shown,
        "response": f"-{metric}" if higher else metric,
        "gap": gap,
        "alpha": significant(ALPHA),
        "power": percent(POWER),
    }


def filled(view: View, frame: pd.DataFrame) -> View:
    """`view` with its title, headers and legend stating the frame's comparison (`context`).

    A title that does not name the reference gets the comparison appended when it is not the paper's, so
    every text view of another comparison says which it is in its first line.
    """
    ctx = context(frame)
    columns = tuple(replace(c, header=c.header.format(**ctx)) for c in view.columns)
    title = view.title
    if "{ref}" not in title and (ctx["ref"], ctx["metric"]) != (label(REFERENCE), METRIC):
        title += ": {ref} against each baseline, {metric}"
    return replace(
        view,
        title=title.format(**ctx),
        columns=columns,
        legend=tuple(t.format(**ctx) for t in view.legend),
    )

"""The card view (`rr analyze card`): the dataset card's generated headline table, the table view's main
columns, kept in step with the data. The card is rewritten in place only when the data changed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from rr_analysis.comparison import Comparison
from rr_analysis.stats.gap_tests import gap_table
from rr_analysis.tables.render import render
from rr_analysis.views import table_view
from rr_analysis.views.analysis_view import AnalysisView
from rr_core.errors import InputError
from rr_core.files.reading import read_regular
from rr_core.files.replacing import atomic_write
from rr_core.sweepfile.dataset import card_path

__all__ = [
    "VIEW",
    "card_block",
    "update_card",
    "write_card",
    "CARD_BEGIN",
    "CARD_END",
]


CARD_BEGIN = "<!-- BEGIN GENERATED: rr analyze --card; do not edit by hand -->"
CARD_END = "<!-- END GENERATED -->"
_SHOWN = (
    "size",
    "baseline",
    "n\nR/B",
    "{ref}\nmean",
    "baseline\nmean",
    "gap",
    "Welch\nt",
    "Welch\np",
    "paired*\np",
    "paired*\np adj",
    "sign-flip\np (floor)",
    "mixed\np",
    "mixed\np adj",
)


def card_block(table: pd.DataFrame) -> str:
    """The dataset card's generated block (markers included) for a `gap_table` frame."""
    return f"{CARD_BEGIN}\n{render(table, VIEW, 'markdown')}{CARD_END}"


def _split(text: str) -> tuple[str, str, str]:
    start, end = text.find(CARD_BEGIN), text.find(CARD_END)
    if start < 0 or end < start:
        raise InputError(
            f"the card has no generated block: expected the lines {CARD_BEGIN!r} ... {CARD_END!r}"
        )
    return text[:start], text[start : end + len(CARD_END)], text[end + len(CARD_END) :]


def write_card(path: str | os.PathLike, table: pd.DataFrame) -> bool:
    """Rewrite the generated block of the dataset card file `path` for `table`; False if already up to date.

    The card is replaced whole (`rr_core.files.replacing.atomic_write`), and only if it still holds what was
    read: an edit saved while the block was being rendered is kept and `rr_core.files.replacing.Foreign` raised.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such dataset card (set --card-file)")
    before = read_regular(path)
    text = before.decode("utf-8")
    new = update_card(text, table)
    if new != text:
        atomic_write(path, lambda f: f.write(new.encode("utf-8")), expect=before)
    return new != text


def update_card(text: str, table: pd.DataFrame) -> str:
    """The card text with its generated block replaced by `card_block(table)`."""
    head, _, tail = _split(text)
    return head + card_block(table) + tail


def _headline(
    df: pd.DataFrame, *, data: Path | None, card_file: Path | None, comparison: Comparison
) -> pd.DataFrame:
    """The card's table of `df`; the packaged card only for the published sweep and the paper's comparison."""
    if card_file is None and data is not None:
        raise InputError(
            f"the packaged card describes the published sweep, not {data}: give --card-file for {data}'s card"
        )
    if card_file is None and not comparison.published:
        raise InputError(
            "the packaged card shows the paper's comparison (review_neutral against highway and standard, "
            "val_loss): give --card-file for a card of another comparison"
        )
    return gap_table(df, comparison=comparison)


def _written(table: pd.DataFrame, *, card_file: Path | None) -> str:
    path = card_file or card_path()
    updated = write_card(path, table)
    return f"{path}: headline table {'updated' if updated else 'already up to date'}\n"


_TABLE = table_view.VIEW
VIEW = AnalysisView(
    name="card",
    title=_TABLE.title,
    columns=tuple(c for c in _TABLE.columns if c.header in _SHOWN),
    legend=_TABLE.legend,
    notes=_TABLE.notes,
    compute=_headline,
    show=_written,
)

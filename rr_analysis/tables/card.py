"""The dataset card's generated headline table: drawn from a `gap_table` frame between its markers, and
rewritten in place only when the data changed (`rr analyze card`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from rr_analysis.tables.columns import View, filled
from rr_analysis.tables.render import markdown
from rr_analysis.tables.views import VIEWS
from rr_core.errors import InputError
from rr_core.files import atomic_write, read_regular

__all__ = [
    "card_block",
    "update_card",
    "write_card",
    "card_mismatch",
    "CARD_BEGIN",
    "CARD_END",
]


CARD_BEGIN = "<!-- BEGIN GENERATED: rr analyze --card; do not edit by hand -->"
CARD_END = "<!-- END GENERATED -->"


def card_block(table: pd.DataFrame) -> str:
    """The dataset card's generated block (markers included) for a `gap_table` frame."""
    view = VIEWS["table"]
    keep = ("size", "baseline", "n\nR/B", "{ref}\nmean", "baseline\nmean", "gap", "Welch\nt",
            "Welch\np", "paired*\np", "paired*\np adj", "sign-flip\np (floor)", "mixed\np", "mixed\np adj")  # fmt: skip
    short = filled(
        View(view.title, tuple(c for c in view.columns if c.header in keep), view.legend, view.notes), table
    )
    return f"{CARD_BEGIN}\n{markdown(short, table)}{CARD_END}"


def _split(text: str) -> tuple[str, str, str]:
    start, end = text.find(CARD_BEGIN), text.find(CARD_END)
    if start < 0 or end < start:
        raise InputError(
            f"the card has no generated block: expected the lines {CARD_BEGIN!r} ... {CARD_END!r}"
        )
    return text[:start], text[start : end + len(CARD_END)], text[end + len(CARD_END) :]


def write_card(path: str | os.PathLike, table: pd.DataFrame) -> bool:
    """Rewrite the generated block of the dataset card file `path` for `table`; False if already up to date.

    The card is replaced whole (`rr_core.files.atomic_write`), and only if it still holds what was
    read: an edit saved while the block was being rendered is kept and `rr_core.files.Foreign` raised.
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


def card_mismatch(text: str, table: pd.DataFrame) -> str | None:
    """None when the card's generated block matches the data; otherwise what differs, as a short message."""
    current, expected = _split(text)[1].splitlines(), card_block(table).splitlines()
    if current == expected:
        return None
    diff = [
        f"line {i + 1}: card {a!r} != data {b!r}"
        for i, (a, b) in enumerate(zip(current, expected, strict=False))
        if a != b
    ]
    if len(current) != len(expected):
        diff.append(f"the card's block has {len(current)} lines, the data gives {len(expected)}")
    return "the card's headline table does not match the data (run `rr analyze --card`): " + "; ".join(
        diff[:3]
    )

"""The options the analysis views read, as one documented value (`ViewOptions`), beside the comparison.

Each field is an option of `rr analyze` (`rr_core.options`: its type, default and help are the option); a
view reads those its `compute` (or `show`) names (`rr_analysis.views.analysis_view.AnalysisView`), from
`ViewOptions.given`. A new option a view reads is a new field here, with no line of the command line's code.

Standard library at import (the command line reads the fields at start-up; no numpy or pandas).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from rr_analysis.comparison import POWER, Comparison  # light: no numpy or pandas at import
from rr_core.options import option

__all__ = ["ViewOptions"]

_LAYOUT = ("wide", "columns")  # how the output is laid out, not what a view reads


@dataclass(frozen=True)
class ViewOptions:
    """What the views read beyond the comparison and the sweep: each None (``at``: empty) when not given, and
    how the output is laid out (`wide`, `columns`)."""

    margin: float | None = field(
        default=None,
        metadata=option(
            "Equivalence margin in nats for equivalence and claims (default {margin}) and for reproduction's "
            "TOST of the mean offset (default: a tenth of the published between-seed SD)."
        ),
    )  # {margin}: rr_analysis.stats.equivalence.DEFAULT_MARGIN, filled in when the help is shown
    effect: float | None = field(
        default=None,
        metadata=option("power: plan seeds to detect this gap (nats) on the primary test, e.g. 0.003."),
    )
    at: tuple[str, ...] = field(
        default=(),
        metadata=option(
            "forecast: a size to forecast, a ladder name or a count such as 3B; repeat for more."
        ),
    )
    target_power: float = field(default=POWER, metadata=option("confirm: the power to plan for (0 to 1)."))
    steps: int | None = field(
        default=None,
        metadata=option("confirm: steps of the new runs. Default: the ladder's, else the largest size's."),
    )
    tokens_per_param: float | None = field(
        default=None,
        metadata=option(
            "forecast: the gap at this many training tokens per parameter (only a sweep that tells size from "
            "tokens per parameter can say); confirm: plan the design that can tell them apart, two sizes at "
            "this budget and at the sweep's own path (e.g. 20, about compute-optimal)."
        ),
    )
    ladder: Path | None = field(
        default=None,
        metadata=option(
            "forecast, confirm, fits: a ladder file (TOML, as rr sweep --ladder reads) giving forecast sizes "
            "their exact parameter counts and steps; tuning: whose recipe lr is its sizes' shared rate."
        ),
    )
    wide: bool = field(default=False, metadata=option("Text: every column, whatever the terminal's width."))
    columns: str | None = field(
        default=None,
        metadata=option(
            "These columns, comma-separated, in this order (e.g. size,gap,hedges_g). Text, markdown, latex: a "
            "header in lower case, its words joined by _ (paired_95_ci); csv, json: their own header's names. "
            "A wrong name lists the view's.",
            metavar="A,B,...",
        ),
    )
    claims_file: Path | None = field(
        default=None,
        metadata=option("claims: the claims to audit (TOML records). Default: the paper's, bundled with rr."),
    )
    noise: float | None = field(
        default=None,
        metadata=option(
            "reproduction: the SD of the difference between two runs of one seed. Default: assumed, a tenth "
            "of the published between-seed SD."
        ),
    )
    against: Path | None = field(
        default=None,
        metadata=option(
            "reproduction: the rows re-run. Default: the published ones; another re-run measures the "
            "same-seed noise."
        ),
    )
    card_file: Path | None = field(
        default=None,
        metadata=option(
            "The dataset card that the card view rewrites. Default: the published sweep's card, shipped in "
            "the package (with the published data only)."
        ),
    )

    def given(self, comparison: Comparison, adjust: str, data: Path | None) -> dict[str, Any]:
        """What the views read, by the names their `compute` and `show` take: every field but the layout's
        (``at`` as a list, ``ladder`` as a path's text), the `comparison`, the multiple-testing `adjust`ment
        and the sweep file `data`."""
        read = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _LAYOUT}
        at, ladder = list(self.at), self.ladder and str(self.ladder)
        return {"comparison": comparison, "adjust": adjust, **read, "at": at, "ladder": ladder, "data": data}

    @property
    def names(self) -> list[str] | None:
        """The columns asked for, in order (None: the view's own)."""
        return [c.strip() for c in self.columns.split(",") if c.strip()] if self.columns else None

    def width(self, text: bool) -> int | None:
        """The width a `text` output fits (the terminal's, unless `wide`); None: no limit."""
        return None if self.wide or not text else shutil.get_terminal_size().columns

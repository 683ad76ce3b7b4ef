"""The notes view: what a careful reader of the sweep must know (confounds, missing seeds, parameter drift)."""

from __future__ import annotations

import pandas as pd

from rr_analysis.comparison import Comparison
from rr_analysis.stats.notes import recipe_notes
from rr_analysis.tables.columns import Col, cell_of
from rr_analysis.views.analysis_view import AnalysisView


def _notes(df: pd.DataFrame, *, comparison: Comparison) -> pd.DataFrame:
    return recipe_notes(df, comparison)


VIEW = AnalysisView(
    name="notes",
    title="Recipe notes",
    columns=(
        Col("kind", cell_of("kind", str)),
        Col("size", cell_of("size", str)),
        Col("note", cell_of("message", str), wrap=True),
    ),
    legend=(),
    notes=lambda t: [],
    compute=_notes,
)

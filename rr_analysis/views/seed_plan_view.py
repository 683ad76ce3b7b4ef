"""The seed plan (`rr analyze power --effect GAP`): seeds per size for the target power
(`rr_analysis.comparison.POWER`) on the primary test to detect a target gap, and their GPU minutes. The power
view shows it when --effect is given.
"""

from __future__ import annotations

import pandas as pd

from rr_analysis.comparison import Comparison
from rr_analysis.stats.power import seed_plan
from rr_analysis.tables.columns import Col, cell_of, number, row_notes
from rr_analysis.views.analysis_view import AnalysisView


def _plan(df: pd.DataFrame, *, effect: float, comparison: Comparison) -> pd.DataFrame:
    return seed_plan(df, effect, comparison=comparison)


VIEW = AnalysisView(
    name="power --effect",
    title="Seeds per size for {power} power on the primary (seed-paired) test, from a target effect",
    columns=(
        Col("size", cell_of("size", str), 0),
        Col("target\neffect", cell_of("effect", number(".4f"))),
        Col("resid\nSD", cell_of("resid_sd", number(".5f"))),
        Col("dz", cell_of("dz", number(".2f"))),
        Col("seeds\nnow", cell_of("seeds_present", number("d")), 0),
        Col("power\nnow", cell_of("power_now", number(".2f"))),
        Col("seeds\nneeded", cell_of("seeds_needed", number("d")), 0),
        Col("seeds\nto add", cell_of("seeds_to_add", number("d")), 0),
        Col("GPU\nminutes", cell_of("gpu_minutes", number(".0f")), 0),
    ),
    legend=(
        "resid SD: within-seed residual SD pooled across sizes, one REML fit of {response} ~ 0 + size:variant "
        "+ (1 | size:seed); dz = effect / (sqrt(2) resid SD), the SD of a seed-matched difference.",
        "power: two-sided paired t-test at alpha {alpha} per test (noncentral t, statsmodels TTestPower's "
        "formula); each seed runs every variant; GPU minutes = seeds to add x the summed mean minutes of "
        "the size's variants, as recorded in the data (the published runs: B200).",
    ),
    notes=row_notes("note"),
    compute=_plan,
)

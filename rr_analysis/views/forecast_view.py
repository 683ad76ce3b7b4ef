"""The forecast view (`rr analyze forecast --at 3B`): the gap the primary size-level line predicts at sizes the
sweep has not run, with the run-level models beside it.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from rr_analysis.comparison import Comparison
from rr_analysis.numbers import NA, missing, significant
from rr_analysis.stats.forecast import forecast
from rr_analysis.stats.tokens import per_param
from rr_analysis.tables.columns import GAP, Col, cell_of, interval, number, row_notes
from rr_analysis.views.analysis_view import AnalysisView
from rr_core.variants import label


def per_param_cell(v) -> str:
    return NA if missing(v) else per_param(v)


def _forecast(
    df: pd.DataFrame,
    *,
    at: Sequence[str],
    ladder: str | None,
    tokens_per_param: float | None,
    comparison: Comparison,
) -> pd.DataFrame:
    return forecast(df, at, ladder=ladder, tokens_per_param=tokens_per_param, comparison=comparison)


VIEW = AnalysisView(
    name="forecast",
    title="Forecast: the gap at sizes the sweep has not run, from the primary size-level line",
    columns=(
        Col("at", cell_of("at", str), 0),
        Col("params", lambda r: f"{significant(r['params'], 4)} ({r['params_source']})", 2),
        Col("baseline", cell_of("baseline", label), 0),
        Col("decades\npast data", cell_of("decades_beyond", number(".2f")), 1),
        Col("D/N\nassumed", cell_of("tokens_per_param", per_param_cell), 1),
        Col("(c) gap*\npredicted", cell_of("pred", number(".4f")), 0),
        Col("(c)\nSE", cell_of("pred_se", number(".4f")), 2),
        Col("(c) 95% CI\nmean gap", interval("ci_low", "ci_high", ".4f"), 0),
        Col("(c) 95% PI\nnew size", interval("pi_low", "pi_high", ".4f"), 0),
        Col("(b) dev\ngap", cell_of("dev_pred", number(".4f")), 3),
        Col("(b) KR\ndf", cell_of("dev_df", number(".2f")), 5),
        Col("(b) 95% PI", interval("dev_pi_low", "dev_pi_high", ".4f"), 4),
        Col("(a) run\ngap", cell_of("run_pred", number(".4f")), 3),
        Col("(a) 95% CI", interval("run_ci_low", "run_ci_high", ".4f"), 4),
    ),
    legend=(
        GAP,
        "(c) PRIMARY: the emergence meta-regression (per-size seed-paired gaps on log10(params), REML tau2, "
        "Knapp-Hartung t on sizes - 2 df; metafor predict.rma): CI of the mean gap at that size; PI of the "
        "gap a new size there would show (tau2 included).",
        "(b) size-deviation and (a) per-run models lean on stronger assumptions: (b) pools seed and "
        "residual variances over every size (Kenward-Roger df; its PI adds the size-deviation variance), "
        "(a) puts every size exactly on the line (its PI is its CI).",
        "params: (ladder) the exact count of the ladder's shape; (label) the label's number. Every "
        "interval assumes the line stays straight in log10(params) out to that size.",
        "D/N assumed: the tokens per parameter the line speaks for there; along the sweep's path, log10(D/N) "
        "fitted on log10(params) over the sweep's cells and carried to that size (--tokens-per-param asks for "
        "another, which only a sweep that tells size from D/N can answer).",
    ),
    notes=lambda t: (
        [f"{r['at']}: {r['extrapolation']}" for _, r in t.drop_duplicates("at").iterrows()]
        + [
            f"{r['at']}: the line assumes {per_param_cell(r['tokens_per_param'])} tokens per parameter: {r['budget']}"
            for _, r in t.drop_duplicates("at").iterrows()
        ]
        + row_notes("note")(t.drop_duplicates("baseline"))
    ),
    compute=_forecast,
    summary="--at 3B: the gap the primary size-level line predicts there",
)

"""The pool-check view (`rr analyze pool-check --data merged.csv`): can new rows be pooled with the published
ones? Rows flagged off the published recipe, and the primary model fitted with a source term.
"""

from __future__ import annotations

import pandas as pd

from rr_analysis.comparison import Comparison
from rr_analysis.stats.pooling import pool_check
from rr_analysis.tables.columns import Col, cell_of, number, p_cell
from rr_analysis.views.analysis_view import AnalysisView
from rr_core.variants import label


def _pool_check(df: pd.DataFrame, *, comparison: Comparison) -> pd.DataFrame:
    return pool_check(df, comparison=comparison)


VIEW = AnalysisView(
    name="pool-check",
    title="Can the new rows be pooled with the published ones? (rows flagged, and a source term)",
    columns=(
        Col("term", cell_of("term", str), 0),
        Col("estimate", cell_of("estimate", number("+.5f")), 0),
        Col("SE", cell_of("se", number(".5f")), 1),
        Col("z", cell_of("z", number(".2f")), 2),
        Col("p", cell_of("p", p_cell), 0),
        Col("rows\npub/new", lambda r: f"{r['n_published']}/{r['n_new']}", 1),
        Col("flagged", cell_of("n_flagged", str), 0),
    ),
    legend=(
        "source term: the mean shift of the new rows (not published rows unchanged) in the primary test's "
        "twin pooled over sizes, val_loss ~ 0 + size:variant + new + (1 | size:seed), REML, Wald z, "
        "two-sided (statsmodels MixedLM).",
    ),
    notes=lambda t: [
        *(f"verdict: {v}" for v in t["verdict"]),
        *(n for n in t["note"] if n),
        *(
            f"{r['size']} {label(r['variant'])} seed {r['seed']}: {'; '.join(r['flags'])}"
            for rows in t["rows"]
            for r in rows
            if r["flags"]
        ),
        *(
            f"{r['size']} {label(r['variant'])} seed {r['seed']} was trained {', '.join(r['details'])}: "
            "implementation details, not off the recipe (the same steps up to float rounding), so not flagged"
            for rows in t["rows"]
            for r in rows
            if r.get("details")
        ),
    ],
    compute=_pool_check,
    summary="can new rows pool?",
)

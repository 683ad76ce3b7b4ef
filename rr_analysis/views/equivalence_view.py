"""The equivalence view: two one-sided tests per size and baseline, paired and Welch: is |gap| below --margin?"""

from __future__ import annotations

import pandas as pd

from rr_analysis.comparison import Comparison
from rr_analysis.stats.equivalence import DEFAULT_MARGIN, equivalence
from rr_analysis.tables.columns import (
    GAP,
    Col,
    cell_of,
    gap_cell,
    interval,
    number,
    p_cell,
    params_notes,
    row_notes,
)
from rr_analysis.views.analysis_view import AnalysisView
from rr_core.variants import label


def _equivalence(df: pd.DataFrame, *, margin: float | None, comparison: Comparison) -> pd.DataFrame:
    return equivalence(df, DEFAULT_MARGIN if margin is None else margin, comparison)


VIEW = AnalysisView(
    name="equivalence",
    title="Equivalence: is |gap| below the margin? Two one-sided tests (TOST), alpha {alpha}",
    columns=(
        Col("size", cell_of("size", str), 0),
        Col("baseline", cell_of("baseline", label), 0),
        Col("{ref}\nparams (M)", cell_of("params_M", number(".2f")), 5),
        Col("baseline\nparams (M)", cell_of("baseline_params_M", number(".2f")), 5),
        Col("margin", cell_of("margin", number("g")), 3),
        Col("gap", gap_cell(), 0),
        Col("paired* 90% CI", interval("paired_ci90_low", "paired_ci90_high", ".4f"), 2),
        Col("paired*\nTOST p", cell_of("paired_tost_p", p_cell), 0),
        Col("paired* verdict", cell_of("paired_verdict", str), 0),
        Col("Welch 90% CI", interval("welch_ci90_low", "welch_ci90_high", ".4f"), 3),
        Col("Welch\nTOST p", cell_of("welch_tost_p", p_cell), 2),
        Col("Welch verdict", cell_of("welch_verdict", str), 3),
    ),
    legend=(
        GAP,
        "TOST: H0 |gap| >= margin, rejected when both one-sided t-tests reject at 5%, i.e. when the 90% CI "
        "lies inside (-margin, margin); paired* (PRIMARY, statsmodels ttost_paired) and Welch (ttost_ind, "
        "unequal variances). Verdict: equivalent, different (t-test p < {alpha}), or not shown either way.",
        "A claim of equivalence in several cells at once needs every cell to pass (intersection-union: no "
        "multiplicity adjustment).",
    ),
    notes=lambda t: row_notes("paired_note")(t) + row_notes("welch_note")(t) + params_notes(t),
    compute=_equivalence,
    summary="--margin",
)

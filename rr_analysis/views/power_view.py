"""The power view: the seeds each size would need for the target power (`rr_analysis.comparison.POWER`) at
its observed effect, and the smallest gap detectable with the seeds at hand; with --effect, the seed plan
(`seed_plan_view`).
"""

from __future__ import annotations

import pandas as pd

from rr_analysis.comparison import Comparison
from rr_analysis.stats.power import MIN_PLAN_PAIRS, power_table
from rr_analysis.tables.columns import (
    GAP,
    Col,
    cell_of,
    gap_cell,
    number,
    of_reference,
    params_notes,
    row_notes,
)
from rr_analysis.views import seed_plan_view
from rr_analysis.views.analysis_view import AnalysisView
from rr_core.variants import label


def _power(df: pd.DataFrame, *, comparison: Comparison) -> pd.DataFrame:
    return power_table(df, comparison=comparison)


VIEW = AnalysisView(
    name="power",
    title="Seeds needed for {power} power at alpha {alpha} (two-sided), and the smallest gap detectable now",
    columns=(
        Col("size", cell_of("size", str)),
        Col("baseline", cell_of("baseline", label)),
        Col("{ref}\nparams (M)", cell_of("params_M", number(".2f")), 4),
        Col("baseline\nparams (M)", cell_of("baseline_params_M", number(".2f")), 4),
        Col("n\nR/B", lambda r: f"{of_reference('n_review')(r)}/{r['n_baseline']}"),
        Col("pairs", cell_of("n_pairs", str)),
        Col("gap", gap_cell()),
        Col("Cohen\nd", cell_of("cohens_d", number(".2f")), 3),
        Col("seeds/arm\nunpaired", cell_of("seeds_unpaired", number("d")), 2),
        Col("detectable\ngap now", cell_of("mde_unpaired", number(".4f")), 2),
        Col("paired*\ndz", cell_of("dz", number(".2f"))),
        Col("seeds\npaired*", cell_of("seeds_paired", number("d")), 0),
        Col("detectable\ngap paired*", cell_of("mde_paired", number(".4f"))),
    ),
    legend=(
        GAP,
        "unpaired: two-sample t-test, pooled SD, equal arms (statsmodels TTestIndPower's noncentral t); "
        "paired: t-test of seed-matched differences (TTestPower). Effects are the observed ones, from 2-3 "
        f"seeds: rough planning figures; a dz from fewer than {MIN_PLAN_PAIRS} seed-matched pairs gives no seed "
        "count (its note says why).",
    ),
    notes=lambda t: row_notes("note")(t) + params_notes(t),
    compute=_power,
    summary="with --effect: a seed plan",
    switches={"effect": seed_plan_view.VIEW},
)

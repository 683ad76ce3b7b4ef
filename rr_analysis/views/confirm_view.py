"""The confirm view (`rr analyze confirm --at 3B`): seeds per arm and GPU time for the run that would settle the
forecast gap on the primary test.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from rr_analysis.comparison import Comparison
from rr_analysis.numbers import NA, fixed, significant
from rr_analysis.stats.confirm import confirm_plan
from rr_analysis.tables.columns import GAP, Col, cell_of, missing, number, row_notes
from rr_analysis.views.analysis_view import AnalysisView
from rr_core.variants import label


def _confirm(
    df: pd.DataFrame,
    *,
    at: Sequence[str],
    target_power: float,
    steps: int | None,
    ladder: str | None,
    comparison: Comparison,
) -> pd.DataFrame:
    return confirm_plan(df, at, power=target_power, steps=steps, ladder=ladder, comparison=comparison)


VIEW = AnalysisView(
    name="confirm",
    title="Planning the confirming run: seeds per arm for the primary (seed-paired) test, and GPU time",
    columns=(
        Col("at", cell_of("at", str), 0),
        Col("baseline", cell_of("baseline", label), 0),
        Col(
            "forecast gap\n(PI low, pred, high)",
            lambda r: (
                NA
                if missing(r["pred"])
                else f"{fixed(r['pi_low'], 4)}, {fixed(r['pred'], 4)}, {fixed(r['pi_high'], 4)}"
            ),
            0,
        ),
        Col("resid\nSD", cell_of("resid_sd", number(".5f")), 3),
        Col(
            "seeds/arm at\nPI low, pred, high",
            lambda r: ", ".join(number("d")(r[f"seeds_at_{k}"]) for k in ("pi_low", "pred", "pi_high")),
            0,
        ),
        Col("steps", lambda r: f"{fixed(r['steps'], 0)} ({r['steps_source']})", 2),
        Col(
            "min/run\n(95% PI)",
            lambda r: (
                NA
                if missing(r["minutes_per_run"])
                else f"{fixed(r['minutes_per_run'], 1)} ({fixed(r['minutes_pi_low'], 1)}-{fixed(r['minutes_pi_high'], 1)})"
            ),
            1,
        ),
        Col(
            "GPU min at pred\n(95% CI)",
            lambda r: (
                NA
                if missing(r["gpu_minutes"])
                else f"{fixed(r['gpu_minutes'], 0)} ({fixed(r['gpu_minutes_low'], 0)}-{fixed(r['gpu_minutes_high'], 0)})"
            ),
            0,
        ),
    ),
    legend=(
        GAP,
        "forecast gap: the primary size-level line's prediction and its 95% prediction interval (rr "
        "analyze forecast). seeds/arm: smallest n >= 2 giving the target power to the two-sided paired "
        "t-test (noncentral t) if the true gap were the PI's low end, the prediction, the PI's high end; "
        "resid SD: the within-seed residual SD of the mixed model pooled over sizes; d_z = gap / (sqrt(2) "
        "resid SD).",
        "min/run: each size x variant cell's mean log(minutes) regressed on log(params x steps) (OLS), "
        "extrapolated; PI: one new run. GPU min: seeds at pred x variants per seed x min/run, CI from the "
        "fitted median; a seed runs every variant, so one size's total is its largest row. Minutes are the "
        "data's hardware's (published: B200).",
    ),
    notes=lambda t: (
        [
            f"{r['at']}: power {significant(r['power'])} at alpha {significant(r['alpha'])}; {r['variants_per_seed']} "
            f"variants per seed; time fit over {r['minutes_cells']} cells, minutes ~ work^"
            f"{fixed(r['minutes_slope'], 3)}"
            for _, r in t.drop_duplicates("at").iterrows()
        ]
        + row_notes("note")(t)
    ),
    compute=_confirm,
    summary="--at 3B: seeds and GPU time to settle it",
)

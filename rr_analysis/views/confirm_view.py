"""The confirm view (`rr analyze confirm --at 3B`): seeds per arm and GPU time for the run that would settle the
forecast gap on the primary test; with --tokens-per-param, the design that tells size from tokens per parameter.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from rr_analysis.comparison import Comparison
from rr_analysis.numbers import NA, count, fixed, percent, significant
from rr_analysis.stats.confirm import confirm_plan
from rr_analysis.stats.design import DESIGN_COLUMNS, confirm_design
from rr_analysis.stats.tokens import per_param
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


def _design(
    df: pd.DataFrame,
    *,
    at: Sequence[str],
    tokens_per_param: float,
    target_power: float,
    ladder: str | None,
    comparison: Comparison,
) -> pd.DataFrame:
    return confirm_design(df, at, tokens_per_param, power=target_power, ladder=ladder, comparison=comparison)


def _design_notes(t: pd.DataFrame) -> list[str]:
    """Per target: the effect planned for and the test, the total, and what to run after."""
    out = []
    for _, r in t.drop_duplicates("at").iterrows():
        cells = t[t["at"] == r["at"]]
        out.append(
            f"{r['at']}: the size effect at fixed tokens per parameter planned for is {fixed(r['effect'], 4)}, "
            f"{label(r['effect_baseline']) if r['effect_baseline'] else 'n/a'}'s size-only slope over the "
            f"{fixed(r['decades'], 2)} decades between {cells['size'].iloc[0]} and {r['at']} (the growth the sweep "
            f"reports, were it all size); resid SD {fixed(r['resid_sd'], 5)}, two-sided two-sample t-test of the "
            f"two cells' seed-paired differences at alpha {significant(r['alpha'])}, power {percent(r['power'])}; "
            f"total {fixed(r['gpu_minutes_total'], 0, grouped=True)} GPU minutes"
        )
    out.append(
        "then: train each cell at its steps, merge the rows with the sweep (rr merge) and read rr analyze "
        "emergence --data on the merged file: its two-moderator fit tells size from tokens per parameter"
    )
    return out + [
        f"{r['at']}: {r['size']} at {r['budget']}: {r['note']}" for _, r in t.iterrows() if r["note"]
    ]


DESIGN_VIEW = AnalysisView(
    name="confirm --tokens-per-param",
    title="A design that tells size from tokens per parameter: two sizes at two budgets, one the sweep's path",
    columns=(
        Col("at", cell_of("at", str), 0),
        Col("size", cell_of("size", str), 0),
        Col("budget", cell_of("budget", str), 0),
        Col("D/N", cell_of("tokens_per_param", per_param), 0),
        Col("tokens", cell_of("tokens", count), 1),
        Col("steps", cell_of("steps", lambda v: fixed(v, 0, grouped=True)), 0),
        Col(
            "seeds: in sweep,\nper cell, to run",
            lambda r: ", ".join(number("d")(r[k]) for k in ("seeds_in_sweep", "seeds", "seeds_to_run")),
            0,
        ),
        Col(
            "min/run\n(95% PI)",
            lambda r: (
                NA
                if missing(r["minutes_per_run"])
                else f"{fixed(r['minutes_per_run'], 0, grouped=True)} ({fixed(r['minutes_pi_low'], 0, grouped=True)}-"
                f"{fixed(r['minutes_pi_high'], 0, grouped=True)})"
            ),
            1,
        ),
        Col("GPU min", cell_of("gpu_minutes", lambda v: NA if missing(v) else fixed(v, 0, grouped=True)), 0),
    ),
    legend=(
        GAP,
        "Cells: the sweep's largest size and the target, each at the sweep's path budget (its tokens per "
        "parameter carried to that size; the largest size's own where it ran) and at --tokens-per-param. The "
        "size effect at fixed D/N is the difference of the two sizes' gaps at --tokens-per-param; the D/N effect "
        "at fixed size, each size's two budgets.",
        "seeds per cell: smallest n >= 2 giving the target power to the two-sided two-sample t-test of the two "
        "cells' seed-paired differences (SD sqrt(2) resid SD each; noncentral t); to run: beyond those in the "
        "sweep. steps: D/N x params / (batch x block), rounded.",
        "min/run: the sweep's time fit (OLS of log minutes on log(params x steps)) at the size's path budget, "
        "times tokens over the path's tokens; PI: one run's. GPU min: runs to make x min/run. Minutes are the "
        "data's hardware's (published: B200), and far past any timed run at a compute-optimal budget.",
    ),
    notes=_design_notes,
    machine=DESIGN_COLUMNS,
    compute=_design,
)


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
            "D/N\n(path)",
            lambda r: f"{per_param(r['tokens_per_param'])} ({per_param(r['path_tokens_per_param'])})",
            2,
        ),
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
        + [
            f"{r['at']}: runs of {fixed(r['steps'], 0)} steps train {count(r['tokens'])} tokens, "
            f"{per_param(r['tokens_per_param'])} per parameter; the forecast gap is the sweep's path's, "
            f"{per_param(r['path_tokens_per_param'])} tokens per parameter there (--tokens-per-param plans a design "
            "that tells size from tokens per parameter)"
            for _, r in t.drop_duplicates("at").iterrows()
        ]
        + row_notes("note")(t)
    ),
    compute=_confirm,
    summary="--at 3B: seeds and GPU time to settle it; --tokens-per-param 20: a design that tells size from D/N",
    switches={"tokens_per_param": DESIGN_VIEW},
)

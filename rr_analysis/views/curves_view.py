"""The curves view (`rr analyze curves --data RUNS.csv`): the seed-paired gap at every logged step of training,
whether it shrinks, holds or grows over the last half, and the tokens each arm needs to reach the other's
final loss. The runs' metrics logs are read beside the file (`NAME.metrics/`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rr_analysis.comparison import Comparison
from rr_analysis.numbers import fixed, missing, p_value, significant
from rr_analysis.stats.training_gap import SERIES, TRAINING_GAP_COLUMNS, training_gap
from rr_analysis.tables.columns import GAP, Col, cell_of, interval, number
from rr_analysis.views.analysis_view import AnalysisView
from rr_core.sweepfile.dataset import bundled_path
from rr_core.sweepfile.metrics_log import load_losses
from rr_core.variants import label


def _curves(
    df: pd.DataFrame, *, data: Path | None, ladder: str | None, comparison: Comparison
) -> pd.DataFrame:
    return training_gap(df, load_losses([data or bundled_path()]), comparison, ladder=ladder)


def _tokens(v) -> str:
    return fixed(v, 0, grouped=True)


def _trend(r: pd.Series) -> str:
    """The last half's trend in words, with the slope, its interval and its test."""
    if missing(r["trend_slope"]):
        return ""
    slope = f"{fixed(r['trend_slope'], 4, sign=True)} per decade of tokens"
    if missing(r["trend_ci_low"]):
        return f"over the last half (from step {r['trend_from']:.0f}) the gap moves {slope}"
    return (
        f"the gap {r['trend']} over the last half (from step {r['trend_from']:.0f}): {slope}, 95% CI "
        f"[{fixed(r['trend_ci_low'], 4)}, {fixed(r['trend_ci_high'], 4)}], p {p_value(r['trend_p'])} "
        f"({r['trend_n']:.0f} pairs' slopes)"
    )


def _target(r: pd.Series, ref: str) -> str:
    """The tokens to the level both arms reach (the higher final loss), and the multiplier, in words."""
    if missing(r["multiplier"]):
        return ""
    base = label(r["baseline"])
    if r["baseline_final"] >= r["reference_final"]:  # the reference ends lower: it reaches the baseline's
        who, whose, at, took = ref, base, r["reference_tokens_to_target"], base
    else:
        who, whose, at, took = base, ref, r["baseline_tokens_to_target"], ref
    level = max(r["baseline_final"], r["reference_final"])
    smoothed = f"EMA half-life {significant(r['half_life'], 3)} steps" if r["half_life"] else "raw"
    return (
        f"{who} reaches {whose}'s final loss ({fixed(level, 4)}) at {_tokens(at)} tokens, where {took} took "
        f"{_tokens(r['tokens'])}: multiplier {fixed(r['multiplier'], 3)} (mean curves, {smoothed})"
    )


def _notes(t: pd.DataFrame) -> list[str]:
    """Per cell, baseline and series: the trend, the tokens to target and why a number is missing."""
    ref = label(t["reference"].iloc[0]) if len(t) else ""
    notes = []
    for _, r in (
        t.groupby(["size", "steps", "baseline", "series"], sort=False, observed=True).tail(1).iterrows()
    ):
        where = f"{r['size']} ({r['steps']} steps) {label(r['baseline'])}, {SERIES[r['series']]}"
        said = [s for s in (_trend(r), _target(r, ref), r["cell_note"]) if s]
        notes += [f"{where}: {'; '.join(said)}"] if said else []
    return notes


VIEW = AnalysisView(
    name="curves",
    title="The gap over training: {ref} against each baseline at every logged step, seed-paired",
    columns=(
        Col("size", cell_of("size", str), 0),
        Col("steps", cell_of("steps", str), 2),
        Col("baseline", cell_of("baseline", label), 0),
        Col("series", cell_of("series", lambda s: SERIES[s].removesuffix(" loss")), 0),
        Col("step", cell_of("step", number(".0f")), 0),
        Col("tokens", cell_of("tokens", _tokens), 3),
        Col("n", cell_of("n", number(".0f")), 1),
        Col("{ref}\nmean", cell_of("reference_mean", number(".4f")), 2),
        Col("baseline\nmean", cell_of("baseline_mean", number(".4f")), 2),
        Col("gap", cell_of("gap", number("+.4f")), 0),
        Col("95% CI", interval("ci_low", "ci_high", ".4f"), 0),
        Col("note", cell_of("note", str), 4, wrap=True),
    ),
    legend=(
        GAP,
        "At each logged step: the losses of the runs of one seed (data_seed where the file has it), which "
        "read the same batches, paired; n pairs; gap = mean of the pairs' differences, 95% t CI (mean +- "
        "t(0.975, n-1) SD/sqrt(n)). training: the mean training loss of each log interval; validation: "
        "the periodic evaluations (--eval-every), where the runs logged them.",
        "Trend (a note per cell): each pair's least-squares slope of its gap on log10(tokens) over the "
        "logged steps of the last half of training (step >= steps / 2); their mean, 95% t CI on pairs - 1 df and "
        "the one-sample t-test's two-sided p, not adjusted (one test per cell, baseline and series). holds: "
        "the CI holds 0; shrinks: the slope points back to 0; grows: away from it.",
        "Tokens to target: each arm's mean curve (training loss smoothed by step distance, as rr plot curves "
        "draws; validation raw); the tokens at which it first reaches the other's final loss, interpolated "
        "linearly between readings; multiplier = the baseline's tokens over the reference's at the level "
        "both reach (above 1: the reference needs less compute). Descriptive, no interval.",
    ),
    notes=_notes,
    machine=TRAINING_GAP_COLUMNS,
    compute=_curves,
    summary="--data RUNS.csv: the seed-paired gap at every logged step",
)

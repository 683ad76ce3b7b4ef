"""The gap over training: the seed-paired gap at every logged step, from the metrics logs every run writes.

Within a cell (a size and a budget of steps), seed s fixes the data order identically for every variant
(`data_seed` where the file has that column), so the baseline's and the reference's runs of one seed read the
same batches in the same order, and their logged losses at a step differ by the rule and the initialisation,
not by what was read. `training_gap` pairs them at every logged step, as the primary per-size test pairs the
final losses (`rr_analysis.stats.gap_tests.paired_table`), and asks three questions of the curve: how large is
the gap at each step (mean over the pairs, 95% t interval); does it shrink, hold or grow over the last half of
training; and how many tokens does each arm need to reach the other's final loss (a compute multiplier)?

A rule that mainly speeds up early training shows a gap that shrinks as the runs go on; on a sweep where larger
models see fewer tokens per parameter, such a rule looks as if its advantage grew with size. The curve tells the
two apart within each cell.

The losses come from `rr_core.sweepfile.metrics_log.load_losses`: the training loss of each log interval and,
where runs evaluated periodically (``--eval-every``), the validation loss during training. `rr analyze curves`
renders the frame, `rr plot curves --gap` draws it (`rr_analysis.figures.gap_curves.gap_figure`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rr_analysis.cells import SIZE_NAME
from rr_analysis.comparison import (
    METRIC,
    PAIR,
    STAMP,
    Comparison,
    asked,
    compare,
    sizes_in_order,
    t_interval,
    t_sf2,
)
from rr_analysis.stats.smoothing import default_half_life, ema
from rr_core.errors import InputError
from rr_core.ladder import get_size
from rr_core.variants import label

__all__ = ["training_gap", "gap_slopes", "steps_to_reach", "TRAINING_GAP_COLUMNS", "SERIES", "LAST_HALF"]

# The columns of `training_gap`, in order (JSON and CSV emit them all): per step, then the cell's own
# (the same on every row of a size, steps, baseline and series), then the comparison's stamp.
TRAINING_GAP_COLUMNS: tuple[str, ...] = (
    "size", "steps", "baseline", "series", "step", "tokens", "n", "reference_mean", "baseline_mean", "gap",
    "sd", "ci_low", "ci_high", "note",
    "pairs", "pair_on", "tokens_per_step", "half_life",
    "trend_from", "trend_n", "trend_slope", "trend_ci_low", "trend_ci_high", "trend_p", "trend",
    "reference_final", "baseline_final", "reference_tokens_to_target", "baseline_tokens_to_target",
    "multiplier", "cell_note", *STAMP,
)  # fmt: skip

SERIES: dict[str, str] = {"train": "training loss", "val": "validation loss"}  # series -> in words
LAST_HALF = 0.5  # the trend is read over the logged steps at or after this share of the budget


def gap_slopes(steps: np.ndarray, gaps: np.ndarray) -> np.ndarray:
    """Each pair's least-squares slope of its gap on log10(step): one slope per row of `gaps`.

    Parameters
    ----------
    steps
        The logged steps (> 0), one per column of `gaps`.
    gaps
        Pairs x steps: baseline - reference at each step; NaN where a pair has no reading.

    Returns
    -------
    The slopes, in loss per decade of steps (of tokens too: tokens are steps x batch x block); NaN for a pair
    with fewer than two readings.

    Notes
    -----
    b_i = sum_t (x_t - xbar_i)(d_it - dbar_i) / sum_t (x_t - xbar_i)^2 with x = log10(step), over pair i's
    finite readings (means over the same readings).

    Example
    -------
    >>> gap_slopes(np.array([10, 100, 1000]), np.array([[0.3, 0.2, 0.1], [0.1, np.nan, 0.3]])).round(6).tolist()
    [-0.1, 0.1]
    """
    x = np.log10(np.asarray(steps, dtype=float))
    d = np.atleast_2d(np.asarray(gaps, dtype=float))
    ok = np.isfinite(d)
    count = ok.sum(axis=1)
    xs = np.where(ok, x, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        xbar = xs.sum(axis=1) / count
        dbar = np.where(ok, d, 0.0).sum(axis=1) / count
        dx = np.where(ok, x - xbar[:, None], 0.0)
        slope = (dx * np.where(ok, d - dbar[:, None], 0.0)).sum(axis=1) / (dx**2).sum(axis=1)
    return np.where(count >= 2, slope, np.nan)


def steps_to_reach(steps: np.ndarray, loss: np.ndarray, target: float) -> tuple[float, str]:
    """The step at which a falling curve first reaches `target`, interpolated linearly between the two
    readings around it; and, where there is none, why.

    Example
    -------
    >>> steps_to_reach(np.array([10, 20, 30]), np.array([5.0, 4.0, 3.0]), 3.5)
    (25.0, '')
    >>> steps_to_reach(np.array([10, 20, 30]), np.array([5.0, 4.0, 3.0]), 2.0)
    (nan, 'not reached within its 30 steps')
    """
    steps, loss = np.asarray(steps, dtype=float), np.asarray(loss, dtype=float)
    below = np.flatnonzero(loss <= target)
    if not len(below):
        return np.nan, f"not reached within its {steps[-1]:.0f} steps"
    k = below[0]
    if k == 0:
        return (
            np.nan,
            f"reached by its first reading (step {steps[0]:.0f}): no earlier step to interpolate from",
        )
    s0, s1, y0, y1 = steps[k - 1], steps[k], loss[k - 1], loss[k]
    return float(s0 + (y0 - target) * (s1 - s0) / (y0 - y1)), ""


def _tokens_per_step(runs: pd.DataFrame, size: str, ladder: str | None) -> tuple[float, str]:
    """Tokens one optimiser step reads: the file's ``tokens`` over ``steps`` where it has that column, else
    the size's recipe (batch x block, rr's ladder or `ladder`'s); NaN, saying why, for a size neither knows."""
    if "tokens" in runs and runs["tokens"].notna().all():
        return float((runs["tokens"] / runs["steps"]).mean()), ""
    try:
        recipe = get_size(size, ladder).recipe
    except InputError:
        return np.nan, f"tokens unknown: {size} is not on the ladder (give --ladder FILE, or a tokens column)"
    return float(recipe.batch_size * recipe.block_size), ""


def _wide(losses: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """An arm's losses as pairs x steps (runs of one pair key averaged, saying so)."""
    per_run = losses.groupby("pair", observed=True)[["seed"]].nunique()
    several = per_run.index[per_run["seed"] > 1].tolist()
    wide = losses.pivot_table(index="pair", columns="step", values="loss", aggfunc="mean", observed=True)
    return wide, [f"pair {p}: {per_run.loc[p, 'seed']} runs averaged" for p in several]


def _trend(steps: np.ndarray, d: np.ndarray, gap: np.ndarray, budget: int) -> dict:
    """The last half's slope of the gap on log10(step): each pair's slope (`gap_slopes`), their mean, 95% t
    interval and two-sided p, and the verdict."""
    late = steps >= LAST_HALF * budget
    out = {"trend_from": steps[late][0] if late.any() else np.nan, "trend": "", "trend_note": ""}
    slopes = gap_slopes(steps[late], d[:, late]) if late.sum() >= 2 else np.full(len(d), np.nan)
    slopes = slopes[np.isfinite(slopes)]
    n = len(slopes)
    mean = slopes.mean() if n else np.nan
    sd = slopes.std(ddof=1) if n >= 2 else np.nan
    low, high = (v.item() for v in t_interval(np.array([mean]), np.array([sd]), np.array([n])))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = t_sf2(mean / (sd / np.sqrt(n)), n - 1).item() if n >= 2 and sd > 0 else np.nan
    out |= {"trend_n": n, "trend_slope": mean, "trend_ci_low": low, "trend_ci_high": high, "trend_p": p}
    if late.sum() < 2:
        out["trend_note"] = "fewer than two logged steps in the last half: no trend"
    elif n < 2:
        out["trend_note"] = "one pair: no interval for the trend"
    elif low <= 0 <= high:
        out["trend"] = "holds"
    else:
        towards = np.sign(mean) != np.sign(np.nanmean(gap[late]))  # the slope points back to zero
        out["trend"] = "shrinks" if towards else "grows"
    return out


def _to_target(
    steps: np.ndarray, ref: np.ndarray, base: np.ndarray, names: tuple[str, str]
) -> tuple[dict, str]:
    """The steps each arm's mean curve needs to reach the other's final loss (and why one is missing), and the
    multiplier at the level both reach: the baseline's steps there over the reference's."""
    ref_final, base_final = ref[-1], base[-1]
    ref_at, ref_why = steps_to_reach(steps, ref, base_final)
    base_at, base_why = steps_to_reach(steps, base, ref_final)
    multiplier = steps[-1] / ref_at if base_final >= ref_final else base_at / steps[-1]
    why = [
        f"{a} to {b}'s final loss: {w}" for a, b, w in (names + (ref_why,), names[::-1] + (base_why,)) if w
    ]
    out = {"reference_final": ref_final, "baseline_final": base_final, "reference_at": ref_at}
    return out | {"baseline_at": base_at, "multiplier": multiplier}, "; ".join(why)


def _series(
    ref: pd.DataFrame, base: pd.DataFrame, series: str, budget: int, names: tuple[str, str]
) -> tuple[list[dict], dict]:
    """The per-step rows and the cell's summary of one series of one baseline in one cell."""
    (r, r_notes), (b, b_notes) = _wide(ref), _wide(base)
    keys = r.index.intersection(b.index)
    steps = r.columns.union(b.columns)
    r, b = r.reindex(index=keys, columns=steps), b.reindex(index=keys, columns=steps)
    d = (b - r).to_numpy(float)
    ok = np.isfinite(d)
    n = ok.sum(axis=0)
    keep = n > 0
    steps, d, ok, n = steps.to_numpy()[keep], d[:, keep], ok[:, keep], n[keep]
    r, b = r.to_numpy(float)[:, keep], b.to_numpy(float)[:, keep]
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = np.nanmean(d, axis=0) if len(keys) else np.full(len(steps), np.nan)
        sd = np.array([d[ok[:, j], j].std(ddof=1) if n[j] >= 2 else np.nan for j in range(len(steps))])
    low, high = t_interval(gap, sd, n)
    rows = [
        {
            "step": int(s),
            "n": int(n[j]),
            "reference_mean": r[ok[:, j], j].mean(),
            "baseline_mean": b[ok[:, j], j].mean(),
            "gap": gap[j],
            "sd": sd[j],
            "ci_low": low[j],
            "ci_high": high[j],
            "note": "" if n[j] >= 2 else "one pair: no interval",
        }
        for j, s in enumerate(steps)
    ]
    notes = [*r_notes, *b_notes]
    if not len(steps):
        return [], {"pairs": 0, "cell_note": "no seed has both arms' logs"}
    full = ok.all(axis=0)  # the steps every pair logged in both arms: the mean curves' common support
    half_life = default_half_life(steps[full]) if series == "train" else 0.0

    def curve(x: np.ndarray) -> np.ndarray:
        return np.mean([ema(steps[full], row[full], half_life) for row in x], axis=0)

    summary = {"pairs": len(keys), "half_life": half_life, **_trend(steps, d, gap, budget)}
    reached, why = {}, "no step logged by every pair: no mean curves, no tokens to target"
    if full.any():
        reached, why = _to_target(steps[full].astype(float), curve(r), curve(b), names)
    summary |= reached
    summary["cell_note"] = "; ".join(filter(None, [*notes, summary.pop("trend_note"), why]))
    return rows, summary


def _cell(
    cell: pd.DataFrame, logs: pd.DataFrame, c: Comparison, ladder: str | None, where: dict
) -> list[dict]:
    """The rows of one cell (a size and a budget: `where`), every baseline and series; `cell` its runs,
    `logs` their losses."""
    per_step, why_tokens = _tokens_per_step(cell, where["size"], ladder)
    logged = cell.merge(logs[["variant", "seed"]].drop_duplicates(), how="left", indicator=True)
    unlogged = logged[logged["_merge"] == "left_only"]
    out = []
    for baseline in c.baselines:
        names = (label(c.reference), label(baseline))
        missing = [
            f"no metrics log for {label(r.variant)} seed {r.seed}"
            for r in unlogged.itertuples()
            if r.variant in (c.reference, baseline)
        ]
        for series in SERIES:
            arms = [
                logs[(logs["variant"] == v) & (logs["series"] == series)] for v in (c.reference, baseline)
            ]
            if series != "train" and any(a.empty for a in arms):
                continue  # no periodic validation in an arm: the training loss alone
            rows, summary = _series(*arms, series, int(where["steps"]), names)
            summary["cell_note"] = "; ".join(filter(None, [*missing, why_tokens, summary["cell_note"]]))
            values = {**where, "baseline": baseline, "series": series, "tokens_per_step": per_step, **summary}
            out += [{**values, **r} for r in rows] or [values]
    return out


def _runs(
    df: pd.DataFrame, losses: pd.DataFrame, c: Comparison
) -> tuple[pd.DataFrame, pd.DataFrame, str, Comparison]:
    """The compared runs of the sweep with their pair key (an empty data_seed is the seed), their logged
    losses joined, the key's name and the comparison with its baselines resolved."""
    rows, c = compare(df, c)
    pair_on = "data_seed" if "data_seed" in rows else "seed"
    extra = ["tokens"] if "tokens" in rows else []
    # the size as the logs name it (compare labels a file of several budgets' cells SIZE@STEPS; the steps
    # keep them apart here), and the pair key compare gives every paired analysis (data_seed, else seed)
    size = rows[SIZE_NAME] if SIZE_NAME in rows else rows["size"]
    runs = rows.assign(size=size.astype(str), pair=rows[PAIR].astype("int64"))[
        ["size", "variant", "seed", "steps", "params_M", "pair", *extra]
    ]
    logged = losses.dropna(subset=["steps"]).astype({"steps": "int64", "seed": "int64", "size": str})
    key = ["size", "variant", "seed", "steps"]
    joined = runs.merge(logged.drop(columns="source"), on=key, how="inner")
    return runs, joined, pair_on, c


def training_gap(
    df: pd.DataFrame,
    losses: pd.DataFrame,
    comparison: Comparison | None = None,
    *,
    ladder: str | None = None,
) -> pd.DataFrame:
    """The seed-paired gap over training, per cell (size and steps), baseline and loss series.

    Parameters
    ----------
    df
        A validated sweep (`rr_core.sweepfile.dataset.load_sweep`): which runs finished, their steps, their
        pair key (``data_seed`` where the file has it, else ``seed``) and ``tokens`` where it has it.
    losses
        `rr_core.sweepfile.metrics_log.load_losses` of the sweep's runs; each row of `df` is matched to the
        log of its (size, variant, seed, steps).
    comparison
        The reference and the baselines (`rr_analysis.comparison.Comparison`; default the paper's). The losses
        are the logs', lower is better: another metric, or higher_is_better, is refused.
    ladder
        A ladder file whose recipes give the tokens per step of sizes rr's ladder does not know, where the
        file has no ``tokens`` column.

    Returns
    -------
    DataFrame with `TRAINING_GAP_COLUMNS`, one row per size, steps (the cell's budget), baseline, series
    ("train": the training loss of each log interval; "val": the validation loss of each periodic
    evaluation, where the runs logged one) and logged step, in ladder order, then steps, baselines' and
    series' order. Per step: ``tokens`` (step x tokens_per_step), ``n`` (pairs with both readings),
    ``reference_mean`` and ``baseline_mean`` (over those pairs), ``gap`` (baseline - reference, positive
    favours the reference), ``sd`` of the pairs' gaps, ``ci_low, ci_high`` (95% t interval) and ``note``
    (why there is no interval). Per cell, baseline and series (repeated on each of its rows): ``pairs``
    (pair keys with both arms logged), ``pair_on`` (data_seed or seed), ``tokens_per_step``, ``half_life``
    (steps; 0: raw readings); ``trend_from`` (the first logged step of the last half), ``trend_n`` (pairs
    with a slope), ``trend_slope`` (mean slope of the gap per decade of tokens over the last half),
    ``trend_ci_low, trend_ci_high, trend_p`` and ``trend`` ("shrinks", "holds", "grows" or "" where
    untested); ``reference_final, baseline_final`` (each arm's final loss on its mean curve),
    ``reference_tokens_to_target`` (tokens the reference needs to reach the baseline's final loss),
    ``baseline_tokens_to_target`` (the baseline's, to reach the reference's), ``multiplier`` (the baseline's
    tokens over the reference's at the level both reach: above 1, the reference needs less compute),
    ``cell_note`` (why a number is missing); then `rr_analysis.comparison.STAMP`. A cell where no seed has
    both arms' logs is one row with its reason.

    Notes
    -----
    Per step t of a cell: d_it = L(baseline, i, t) - L(reference, i, t) over the pair keys i logged by both
    arms (runs sharing a key within an arm averaged first); gap_t = mean_i d_it, 95% CI gap_t +- t(0.975,
    n_t - 1) sd_t / sqrt(n_t). The raw readings are paired, not smoothed ones: the two runs of a pair read
    the same batch, so its noise largely cancels in d.

    Trend: the logged steps with t >= `LAST_HALF` x steps; each pair's least-squares slope b_i of d_it on
    log10 t (`gap_slopes`; log tokens differ by a constant); the mean slope with its 95% t interval on
    pairs - 1 df and the one-sample t-test's two-sided p (one test per cell, baseline and series, not
    adjusted for multiplicity). The pairs, not the steps, are the replicates: a run's readings are
    autocorrelated. "holds" where the interval holds 0; otherwise "shrinks" where the slope's sign is
    opposite to that of the last half's mean gap (the gap moves towards 0), "grows" where it is the same.

    Tokens to target: each arm's curve is the mean over the pairs of its runs' curves at the steps every pair
    logged, the training loss smoothed by step distance first (`rr_analysis.stats.smoothing.ema`, half-life
    `default_half_life` of those steps: 1% of their span, as `rr plot curves` draws) and the validation loss
    raw. An arm's tokens to a target loss: the first logged step at or below it, interpolated linearly from
    the reading before (`steps_to_reach`), x tokens_per_step. The level both arms reach is the higher of the
    two final losses; multiplier = (baseline's tokens to it) / (reference's): T / T_ref where the reference
    ends lower, T_base / T where the baseline does (T: the last step's tokens). Descriptive: no interval.

    Example
    -------
    Three seeds, the baseline's gap falling as 1/sqrt(step), a little larger for each seed:

    >>> runs = pd.DataFrame({"size": "tiny", "variant": ["review_neutral", "standard"] * 3,
    ...                      "seed": [0, 0, 1, 1, 2, 2], "params_M": 1.1, "steps": 40, "val_loss": 2.0})
    >>> steps = np.array([10, 20, 30, 40])
    >>> losses = pd.concat([
    ...     pd.DataFrame({"size": "tiny", "variant": v, "seed": s, "steps": 40, "series": "train",
    ...                   "step": steps, "loss": (10 + g * (1 + 0.1 * s)) / steps**0.5, "source": ""})
    ...     for v, g in (("review_neutral", 0.0), ("standard", 0.3)) for s in (0, 1, 2)])
    >>> from rr_analysis.comparison import Comparison
    >>> t = training_gap(runs, losses, Comparison(baselines=["standard"]))
    >>> t[["step", "n", "gap"]].round(4).values.tolist()[-1]
    [40.0, 3.0, 0.0522]
    >>> t["trend"].iloc[0], round(float(t["multiplier"].iloc[0]), 3)
    ('shrinks', 1.056)
    """
    c = asked(comparison)
    if c.metric != METRIC or c.higher_is_better:
        raise InputError(
            "the gap over training compares the losses the runs logged (lower is better): --metric and "
            "--higher-is-better do not apply to it"
        )
    runs, joined, pair_on, c = _runs(df, losses, c)
    out = []
    for size in sizes_in_order(runs):
        for budget in sorted(runs.loc[runs["size"] == size, "steps"].unique()):
            at = (runs["size"] == size) & (runs["steps"] == budget)
            logs = joined[(joined["size"] == size) & (joined["steps"] == budget)]
            out += _cell(runs[at], logs, c, ladder, {"size": size, "steps": int(budget), "pair_on": pair_on})
    frame = pd.DataFrame(out)
    for arm in ("reference", "baseline"):
        frame[f"{arm}_tokens_to_target"] = frame.get(f"{arm}_at", np.nan) * frame["tokens_per_step"]
    frame["tokens"] = frame.get("step", np.nan) * frame["tokens_per_step"]
    frame = frame.reindex(columns=[k for k in TRAINING_GAP_COLUMNS if k not in STAMP])
    for text in ("note", "trend", "cell_note"):
        frame[text] = frame[text].fillna("")
    return c.stamp(frame)

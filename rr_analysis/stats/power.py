"""Planning: how many seeds a comparison needs, and what the seeds at hand can detect.

`seed_plan` plans from a target effect (the declared one, not the observed one) with the residual SD of the
mixed model; `power_table` reads the observed effects, for orientation only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rr_analysis.comparison import (
    ALPHA,
    PAIR,
    PARAMS_COLUMNS,
    POWER,
    RESPONSE,
    Comparison,
    asked,
    compare,
    for_reference,
    sizes_in_order,
)
from rr_analysis.numbers import fixed
from rr_analysis.stats.gap_tests import paired_table, welch_table
from rr_analysis.stats.mixed import BlockModel
from rr_core.errors import InputError
from rr_core.sweepfile.dataset import next_seeds, run_keys
from rr_core.variants import COMPARED

__all__ = [
    "power_table",
    "seed_plan",
    "pooled_resid_sd",
    "t_test_power",
    "seeds_needed",
    "MAX_SEEDS",
    "MIN_PLAN_PAIRS",
    "seeds_for_effect",
]

MAX_SEEDS = 100_000  # beyond this a requirement is reported as n/a: the effect is practically zero


def t_test_power(effect: float, n1: float, n2: float | None = None, alpha: float = ALPHA) -> float:
    """Power of the two-sided t-test: two-sample (n1, n2 runs) or, with n2=None, one-sample/paired (n1 pairs).

    Notes
    -----
    The noncentral-t formula of statsmodels' `TTestIndPower.power` (pooled SD, df = n1 + n2 - 2,
    nc = effect sqrt(n1 n2 / (n1 + n2))) and `TTestPower.power` (df = n - 1, nc = effect sqrt(n)):
    power = P(T'_{df,nc} > c) + P(T'_{df,nc} < -c), c = t_{1-alpha/2, df}. Unlike statsmodels, a lower
    tail that underflows counts as 0 instead of turning the power into NaN (statsmodels returns NaN for
    dz = 5.1 with 3 pairs).

    Example
    -------
    >>> round(t_test_power(1.0, 10, 10), 4)
    0.562
    """
    from scipy.special import nctdtr, stdtrit

    if n2 is None:
        dof, nc = n1 - 1.0, effect * np.sqrt(n1)
    else:
        dof, nc = n1 + n2 - 2.0, effect * np.sqrt(n1 * n2 / (n1 + n2))
    c = stdtrit(dof, 1 - alpha / 2)
    upper, lower = 1.0 - nctdtr(dof, nc, c), nctdtr(dof, nc, -c)
    return float(np.nan_to_num(upper) + np.nan_to_num(lower))


def seeds_needed(effect: float, paired: bool, alpha: float, power: float) -> float:
    """Smallest integer n >= 2 per arm (or pairs) whose power reaches `power`; NaN beyond MAX_SEEDS.

    `effect` is standardised (d_z for `paired`, Cohen's d otherwise); power is `t_test_power`'s, two-sided.

    Example
    -------
    >>> seeds_needed(1.17, True, 0.05, 0.8)
    8.0
    """

    def enough(n: int) -> bool:
        return t_test_power(effect, n, None if paired else n, alpha) >= power

    lo, hi = 1, 2
    while not enough(hi):
        if hi > MAX_SEEDS:
            return np.nan
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return float(hi)


MIN_PLAN_PAIRS = 3  # an observed dz from fewer seed-matched pairs is too noisy to turn into a seed count


def _detectable(n1: float, n2: float | None, alpha: float, power: float) -> float:
    """Smallest standardised effect reaching `power` with these n (root of the increasing power curve)."""
    from scipy.optimize import brentq

    return brentq(lambda e: t_test_power(e, n1, n2, alpha) - power, 1e-9, 1e4, xtol=1e-12)


def power_table(
    df: pd.DataFrame,
    power: float = POWER,
    alpha: float = ALPHA,
    comparison: Comparison | None = None,
) -> pd.DataFrame:
    """Seeds per arm needed to detect the observed gap, and the smallest gap the seeds at hand detect.

    Parameters
    ----------
    df
        A validated sweep (`load_sweep`).
    power, alpha
        Target power and two-sided significance level.
    comparison
        The comparison (`rr_analysis.comparison.Comparison`; default the paper's):
        the reference variant, the baselines in order (None: every other variant present), the numeric
        column compared and whether higher is better.

    Returns
    -------
    DataFrame, one row per (size, baseline), with columns ``size, baseline``, the arms' parameter counts
    (`rr_analysis.comparison.PARAMS_COLUMNS`, as `rr_analysis.comparison.cell_frame` gives them),
    ``n_review, n_baseline, n_pairs,
    gap, cohens_d`` (gap / pooled SD), ``seeds_unpaired`` (runs per arm for the two-sample t-test),
    ``mde_unpaired`` (smallest gap detectable with n_review, n_baseline runs), ``dz`` (mean / SD of the
    seed-matched differences), ``seeds_paired`` (seeds, each run with both variants, for the paired t-test),
    ``mde_paired`` (with n_pairs seeds), ``note`` (why a value is n/a; "" otherwise), then
    `rr_analysis.comparison.STAMP`. Seed counts are nullable integers; ``n_review`` counts the reference's runs
    (named for the reference when it is another: `rr_analysis.comparison.for_reference`).

    Notes
    -----
    Two-sided t-tests at `alpha`, power from the noncentral t (`t_test_power`, statsmodels' formulas for
    `TTestIndPower` with equal arms when planning, and `TTestPower` on the differences). A requirement is
    the smallest integer n >= 2 reaching `power`. Smallest detectable gap = the standardised effect that
    reaches `power` with the n at hand times the observed pooled SD (unpaired) or SD of the differences
    (paired). The observed effect comes from 2-3 seeds and is noisy: read these as rough planning figures;
    a small observed effect gives a very large requirement. A dz from fewer than `MIN_PLAN_PAIRS` pairs is
    shown but planned from by nothing (``seeds_paired`` missing, the reason in ``note``): the SD of 2
    differences has 1 df, so a dz of 25 from 2 seeds (published 320M Standard) would read as "2 seeds".

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> p = power_table(load_sweep())
    >>> p.loc[(p["size"] == "1B") & (p["baseline"] == "highway"), ["seeds_unpaired", "seeds_paired"]].values
    array([[6, 2]], dtype=object)
    """
    c = asked(comparison)
    w, pr = welch_table(df, c), paired_table(df, c)
    n_ref = for_reference("n_review", c.reference)
    out = w[["size", "baseline", *PARAMS_COLUMNS, n_ref, "n_baseline"]].copy()
    out["n_pairs"] = pr["n_pairs"].to_numpy()
    out["gap"] = w["gap"].to_numpy()
    s_pool, sd_diff = w["pooled_sd"].to_numpy(float), pr["paired_sd"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["cohens_d"] = np.where(s_pool > 0, w["gap"].to_numpy(float) / s_pool, np.nan)
        out["dz"] = np.where(pr["paired_note"] == "", pr["paired_diff"].to_numpy(float) / sd_diff, np.nan)
    cols = {c: [] for c in ("seeds_unpaired", "mde_unpaired", "seeds_paired", "mde_paired", "note")}
    rows = zip(out["cohens_d"], out["dz"], out[n_ref], out["n_baseline"], out["n_pairs"], strict=True)
    for (d, dz, nr, nb, npair), sp, sdd in zip(rows, s_pool, sd_diff, strict=True):
        notes, nu, mu, npd, md = [], np.nan, np.nan, np.nan, np.nan
        if np.isfinite(d) and d != 0:
            nu, mu = seeds_needed(abs(d), False, alpha, power), _detectable(nr, nb, alpha, power) * sp
        else:
            notes.append("unpaired: needs 2 runs per arm and a nonzero gap")
        if np.isfinite(dz) and dz != 0:
            md = _detectable(npair, None, alpha, power) * sdd
            if npair >= MIN_PLAN_PAIRS:
                npd = seeds_needed(abs(dz), True, alpha, power)
            else:
                notes.append(
                    f"paired: the observed dz ({fixed(dz, 2)}) comes from {npair} seed-matched pairs ({npair - 1} "
                    f"df), too few to plan from: no seed count (at least {MIN_PLAN_PAIRS} pairs; or give --effect, "
                    "which plans from the pooled residual SD)"
                )
        else:
            notes.append("paired: needs 2 seed-matched pairs with varying differences")
        if (np.isfinite(d) and np.isnan(nu)) or (
            np.isfinite(dz) and npair >= MIN_PLAN_PAIRS and np.isnan(npd)
        ):
            notes.append(f"effect too small: more than {fixed(MAX_SEEDS, 0, grouped=True)} seeds")
        for c, v in zip(cols, (nu, mu, npd, md, "; ".join(notes)), strict=True):
            cols[c].append(v)
    for c, v in cols.items():
        out[c] = (
            pd.array([None if x != x else int(x) for x in v], dtype="Int64") if c.startswith("seeds") else v
        )
    return out.assign(**w[["reference", "metric", "higher_is_better"]])


def pooled_resid_sd(
    df: pd.DataFrame,
    comparison: Comparison | None = None,
) -> tuple[float, str]:
    """The within-seed residual SD pooled across sizes, and "" or a sentence saying why there is none.

    Parameters
    ----------
    df
        A validated sweep (`load_sweep`).
    comparison
        The comparison (`rr_analysis.comparison.Comparison`): its rows and its
        metric are the ones fitted.

    Notes
    -----
    One REML fit of ``y ~ 0 + size:variant + (1 | size:seed)`` over the compared rows, y the metric
    (val_loss by default; its sign does not change the SD) (`rr_analysis.stats.mixed.BlockModel`):
    every (size, variant) cell has its own mean, seeds are blocks within a size, and one residual variance
    sigma^2 is shared by all sizes. sigma is the run-to-run noise left once the seed's data order is fixed.
    """
    df = compare(df, comparison)[0]
    cells = df.groupby(["size", "variant"], sort=False, observed=True).ngroup().to_numpy()
    blocks = df.groupby(["size", PAIR], sort=False, observed=True).ngroup().to_numpy()
    X = np.eye(cells.max() + 1)[cells]
    if len(df) - X.shape[1] < 1:
        return (
            np.nan,
            "one run per (size, variant): no residual df, the within-seed residual SD cannot be estimated",
        )
    if np.bincount(blocks).max() < 2:
        return np.nan, "no seed ran two variants at one size: the within-seed residual SD cannot be estimated"
    y = df[RESPONSE].to_numpy(float)
    fit = BlockModel(y, X, blocks).fit(reml=True)
    # zero relative to the losses' scale: rounding leaves ~1e-30 where every residual is 0
    if not np.sqrt(fit.sigma2) > 1e-12 * np.abs(y).mean():
        return 0.0, "the residual variance is 0: the paired test is undefined and power cannot be planned"
    return float(np.sqrt(fit.sigma2)), ""


def seed_plan(
    df: pd.DataFrame,
    effect: float,
    power: float = POWER,
    alpha: float = ALPHA,
    comparison: Comparison | None = None,
) -> pd.DataFrame:
    """Seeds per size for the primary (seed-paired) test to detect a target gap, and what they cost.

    Parameters
    ----------
    df
        A validated sweep (`load_sweep`).
    effect
        The target gap in the metric's units (val_loss: nats), > 0: the smallest difference worth detecting.
    power, alpha
        Target power and two-sided level of each per-size paired t-test.
    comparison
        The comparison (`rr_analysis.comparison.Comparison`; default the paper's):
        the reference variant, the baselines in order (None: every other variant present), the numeric
        column compared and whether higher is better.

    Returns
    -------
    DataFrame, one row per size with Review runs, with columns ``size, effect, resid_sd`` (pooled within-seed
    residual SD, `pooled_resid_sd`), ``dz`` (effect / (sqrt(2) resid_sd)), ``seeds_present`` (seeds on which
    Review and every baseline ran), ``power_now`` (power with those seeds), ``seeds_needed, seeds_to_add``
    (nullable integers), ``gpu_minutes`` (seeds_to_add x the summed mean `minutes` of the size's variants)
    ``note`` (a sentence where a value is n/a; "" otherwise), then `rr_analysis.comparison.STAMP`.

    Notes
    -----
    Under the mixed model a seed-matched difference has SD sqrt(2) sigma (the seed effect cancels), so the
    standardised effect is d_z = effect / (sqrt(2) sigma), and the requirement is the smallest n >= 2 whose
    paired t-test power (`t_test_power`, statsmodels' `TTestPower` formula) reaches `power`. Every seed added
    runs every variant at the size. alpha is per test: Holm over a family of m tests asks for more seeds.

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> seed_plan(load_sweep(), 0.003)["seeds_needed"].tolist()
    [8, 8, 8, 8, 8]
    """
    if not (np.isfinite(effect) and effect > 0):
        raise InputError(f"the target effect must be a positive gap in nats (e.g. 0.003), got {effect!r}")
    rows, comparison = compare(df, comparison)
    sd, why = pooled_resid_sd(df, comparison)
    dz = effect / (np.sqrt(2) * sd) if sd > 0 else np.nan
    needed = seeds_needed(dz, True, alpha, power) if np.isfinite(dz) else np.nan
    if np.isfinite(dz) and np.isnan(needed):
        why = f"the effect is too small for this noise: more than {fixed(MAX_SEEDS, 0, grouped=True)} seeds"
    variants = [comparison.reference, *comparison.baselines]
    plan = []
    for size in sizes_in_order(rows):
        cell = rows[rows["size"] == size]
        by_seed = cell.groupby(PAIR, observed=True)["variant"].agg(set)
        present = int(sum(set(variants) <= seeds for seeds in by_seed))
        minutes = (
            cell.groupby("variant", observed=True)["minutes"]
            .mean()
            .reindex(variants)
            .sum(min_count=len(variants))
        )
        add = max(int(needed) - present, 0) if np.isfinite(needed) else None
        note = why or (
            "" if np.isfinite(minutes) else "no `minutes` recorded for every variant here: no cost"
        )
        now = t_test_power(dz, present) if present >= 2 and np.isfinite(dz) else np.nan
        plan.append(
            {
                "size": size,
                "effect": effect,
                "resid_sd": sd,
                "dz": dz,
                "seeds_present": present,
                "power_now": now,
                "seeds_needed": None if add is None else int(needed),
                "seeds_to_add": add,
                "gpu_minutes": np.nan if add is None else add * minutes,
                "note": note,
            }
        )
    out = pd.DataFrame(plan)
    for c in ("seeds_needed", "seeds_to_add"):
        out[c] = pd.array(out[c].tolist(), dtype="Int64")
    return comparison.stamp(out)


def seeds_for_effect(
    df: pd.DataFrame,
    effect: float,
    sizes: Sequence[str] | None = None,
    variants: Sequence[str] = COMPARED,
    comparison: Comparison | None = None,
) -> pd.DataFrame:
    """The new seeds each size needs for the primary (seed-paired) test to detect a gap: what `rr sweep
    --effect` trains.

    Parameters
    ----------
    df
        A validated sweep (`load_sweep`): the runs present.
    effect
        The target gap in val_loss (nats), > 0 (see `seed_plan`).
    sizes
        Only these sizes (default: every size `seed_plan` reports).
    variants
        The variants each new seed runs.
    comparison
        The comparison the plan's power is for (default the paper's: Review against its baselines); the
        sweep's `--reference` names its reference.

    Returns
    -------
    `seed_plan`'s frame for those sizes (``seeds_to_add`` 0 where n/a), with ``new_seeds``: the
    ``seeds_to_add`` lowest seeds on which some of `variants` has no run (`rr_core.sweepfile.dataset.next_seeds`:
    a seed a crash left incomplete comes first, so every added seed completes a pairable block).

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> seeds_for_effect(load_sweep(), 0.003, ["1B"])[["size", "seeds_present", "new_seeds"]].values.tolist()
    [['1B', 3, [3, 4, 5, 6, 7]]]
    """
    plan = seed_plan(df, effect, comparison=comparison)
    plan = plan[plan["size"].isin(sizes)].copy() if sizes else plan
    keys = run_keys(df)
    plan["seeds_to_add"] = plan["seeds_to_add"].fillna(0)
    plan["new_seeds"] = [
        next_seeds(keys, r.size, int(r.seeds_to_add), tuple(variants)) for r in plan.itertuples()
    ]
    return plan

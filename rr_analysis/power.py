"""Planning: how many seeds a comparison needs, and what the seeds at hand can detect."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rr_analysis.stats import paired_table, welch_table

__all__ = ["power_table", "t_test_power", "MAX_SEEDS"]

MAX_SEEDS = 100_000  # beyond this a requirement is reported as n/a: the effect is practically zero


def t_test_power(effect: float, n1: float, n2: float | None = None, alpha: float = 0.05) -> float:
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


def _seeds_needed(effect: float, paired: bool, alpha: float, power: float) -> float:
    """Smallest integer n >= 2 per arm (or pairs) whose power reaches `power`; NaN beyond MAX_SEEDS."""

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


def _detectable(n1: float, n2: float | None, alpha: float, power: float) -> float:
    """Smallest standardised effect reaching `power` with these n (root of the increasing power curve)."""
    from scipy.optimize import brentq

    return brentq(lambda e: t_test_power(e, n1, n2, alpha) - power, 1e-9, 1e4, xtol=1e-12)


def power_table(df: pd.DataFrame, power: float = 0.8, alpha: float = 0.05) -> pd.DataFrame:
    """Seeds per arm needed to detect the observed gap, and the smallest gap the seeds at hand detect.

    Parameters
    ----------
    df
        A validated sweep (`load_sweep`).
    power, alpha
        Target power and two-sided significance level.

    Returns
    -------
    DataFrame, one row per (size, baseline), with columns ``size, baseline, n_review, n_baseline, n_pairs,
    gap, cohens_d`` (gap / pooled SD), ``seeds_unpaired`` (runs per arm for the two-sample t-test),
    ``mde_unpaired`` (smallest gap detectable with n_review, n_baseline runs), ``dz`` (mean / SD of the
    seed-matched differences), ``seeds_paired`` (seeds, each run with both variants, for the paired t-test),
    ``mde_paired`` (with n_pairs seeds), and ``note`` (why a value is n/a; "" otherwise). Seed counts are
    nullable integers.

    Notes
    -----
    Two-sided t-tests at `alpha`, power from the noncentral t (`t_test_power`, statsmodels' formulas for
    `TTestIndPower` with equal arms when planning, and `TTestPower` on the differences). A requirement is
    the smallest integer n >= 2 reaching `power`. Smallest detectable gap = the standardised effect that
    reaches `power` with the n at hand times the observed pooled SD (unpaired) or SD of the differences
    (paired). The observed effect comes from 2-3 seeds and is noisy: read these as rough planning figures;
    a small observed effect gives a very large requirement.

    Example
    -------
    >>> p = power_table(load_sweep())
    >>> p.loc[(p["size"] == "1B") & (p["baseline"] == "highway"), ["seeds_unpaired", "seeds_paired"]].values
    array([[6, 2]], dtype=object)
    """
    w, pr = welch_table(df), paired_table(df)
    out = w[["size", "baseline", "n_review", "n_baseline"]].copy()
    out["n_pairs"] = pr["n_pairs"].to_numpy()
    out["gap"] = w["gap"].to_numpy()
    s_pool, sd_diff = w["pooled_sd"].to_numpy(float), pr["paired_sd"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["cohens_d"] = np.where(s_pool > 0, w["gap"].to_numpy(float) / s_pool, np.nan)
        out["dz"] = np.where(pr["paired_note"] == "", pr["paired_diff"].to_numpy(float) / sd_diff, np.nan)
    cols = {c: [] for c in ("seeds_unpaired", "mde_unpaired", "seeds_paired", "mde_paired", "note")}
    rows = zip(out["cohens_d"], out["dz"], out["n_review"], out["n_baseline"], out["n_pairs"], strict=True)
    for (d, dz, nr, nb, npair), sp, sdd in zip(rows, s_pool, sd_diff, strict=True):
        notes, nu, mu, npd, md = [], np.nan, np.nan, np.nan, np.nan
        if np.isfinite(d) and d != 0:
            nu, mu = _seeds_needed(abs(d), False, alpha, power), _detectable(nr, nb, alpha, power) * sp
        else:
            notes.append("unpaired: needs 2 runs per arm and a nonzero gap")
        if np.isfinite(dz) and dz != 0:
            npd, md = _seeds_needed(abs(dz), True, alpha, power), _detectable(npair, None, alpha, power) * sdd
        else:
            notes.append("paired: needs 2 seed-matched pairs with varying differences")
        if (np.isfinite(d) and np.isnan(nu)) or (np.isfinite(dz) and np.isnan(npd)):
            notes.append(f"effect too small: more than {MAX_SEEDS:,} seeds")
        for c, v in zip(cols, (nu, mu, npd, md, "; ".join(notes)), strict=True):
            cols[c].append(v)
    for c, v in cols.items():
        out[c] = (
            pd.array([None if x != x else int(x) for x in v], dtype="Int64") if c.startswith("seeds") else v
        )
    return out

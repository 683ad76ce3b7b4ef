"""Descriptive scaling fits: each variant's per-size mean loss fitted by L(N) = E + A N^-alpha, with intervals
from a parametric bootstrap over seeds and a plain statement of when the fit is not identified.

Nothing here tests a difference between variants or claims a crossover: five sizes, three parameters and a
step budget that falls with size describe the curves, they do not extrapolate them reliably.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rr_analysis.comparison import STAMP, Comparison, compare, sizes_in_order
from rr_analysis.numbers import significant
from rr_analysis.stats.forecast import LEVEL
from rr_analysis.stats.targets import forecast_size
from rr_core.errors import InputError

__all__ = ["scaling_fits", "power_law", "SCALING_COLUMNS"]

N0 = 1e9  # the fit works in N / 1e9 so that A's scale stays near the losses'; A is reported per parameter
ALPHA_BOUNDS = (1e-3, 5.0)  # exponents outside are not a scaling law of these losses
B_DEFAULT = 500

SCALING_COLUMNS: tuple[str, ...] = (
    "variant",
    "n_sizes",
    "E",
    "A",
    "alpha",
    "E_low",
    "E_high",
    "A_low",
    "A_high",
    "alpha_low",
    "alpha_high",
    "chi2",
    "resid_df",
    "boot",
    "boot_ok",
    "identified",
    "at",
    "params",
    "loss_pred",
    "loss_low",
    "loss_high",
    "df_warning",
    "confound",
    "note",
    *STAMP,
)


def power_law(N: np.ndarray, y: np.ndarray, se: np.ndarray) -> tuple[float, float, float, float]:
    """Weighted least squares of L(N) = E + A N^-alpha: (E, A, alpha, chi2 = sum ((y - L) / se)^2).

    Notes
    -----
    For a fixed alpha the model is linear in (E, A), so the weighted fit is exact there; alpha minimises the
    profiled chi2 on `ALPHA_BOUNDS` (a grid, then bounded Brent; variable projection, Golub & Pereyra 1973).
    The same minimum as `scipy.optimize.least_squares` on the three parameters, without its starting-point
    sensitivity.

    Example
    -------
    >>> N = np.array([1e8, 3e8, 1e9, 3e9])
    >>> E, A, alpha, chi2 = power_law(N, 1.5 + 40 * N**-0.3, np.full(4, 0.01))
    >>> round(E, 4), round(alpha, 4)
    (1.5, 0.3)
    """
    from scipy.optimize import minimize_scalar

    x, w = N / N0, 1.0 / se

    def linear(alpha: float) -> tuple[np.ndarray, float]:
        X = np.column_stack([np.ones(len(x)), x**-alpha]) * w[:, None]
        coef = np.linalg.lstsq(X, y * w, rcond=None)[0]
        return coef, float(np.sum((y * w - X @ coef) ** 2))

    grid = np.geomspace(*ALPHA_BOUNDS, 60)
    i = int(np.argmin([linear(a)[1] for a in grid]))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    alpha = float(
        minimize_scalar(lambda a: linear(a)[1], bounds=(lo, hi), method="bounded", options={"xatol": 1e-10}).x
    )
    (E, a), chi2 = linear(alpha)
    return float(E), float(a * N0**alpha), alpha, chi2


def _cells(df: pd.DataFrame, variant: str, metric: str) -> pd.DataFrame:
    """Per size with runs of `variant`: the parameter count, mean metric, seed SD, runs, SE and steps."""
    g = df[df["variant"] == variant].groupby("size", sort=False, observed=True)
    c = g.agg(
        N=("params_M", "mean"),
        y=(metric, "mean"),
        sd=(metric, "std"),
        n=(metric, "count"),
        steps=("steps", "median"),
    )
    c["N"] *= 1e6
    c["se"] = c["sd"] / np.sqrt(c["n"])
    return c.reindex([s for s in sizes_in_order(df) if s in c.index])


def _bootstrap(c: pd.DataFrame, fit: tuple, xs: np.ndarray, B: int, rng: np.random.Generator) -> np.ndarray:
    """B refits to seeds drawn from each size's fitted mean and observed seed SD: rows (E, A, alpha, L(xs)...)."""
    E, A, alpha, _ = fit
    mean = E + A * c["N"].to_numpy() ** -alpha
    n, sd = c["n"].to_numpy(int), c["sd"].to_numpy(float)
    out = np.full((B, 3 + len(xs)), np.nan)
    for b in range(B):
        draws = [rng.normal(m, s, k) for m, s, k in zip(mean, sd, n, strict=True)]
        y = np.array([d.mean() for d in draws])
        se = np.array([d.std(ddof=1) / np.sqrt(len(d)) for d in draws])
        if (se > 0).all():
            e, a, al, _ = power_law(c["N"].to_numpy(), y, se)
            out[b] = [e, a, al, *(e + a * xs**-al)]
    return out


def _confound(c: pd.DataFrame) -> str:
    steps = c["steps"].astype(int).tolist()
    if len(set(steps)) < 2:
        return ""
    return (
        f"steps {'/'.join(map(str, steps))} at {'/'.join(c.index)}: the larger sizes trained for fewer "
        "steps, so the curve mixes model size with training length"
    )


def _identified(r: dict) -> tuple[bool, str]:
    why = []
    if r["E"] < 0:
        why.append(f"E = {significant(r['E'], 3)} is negative (a loss floor below zero)")
    if r["alpha_low"] > 0 and np.log10(r["alpha_high"] / r["alpha_low"]) > 1:
        why.append(
            f"alpha's interval [{significant(r['alpha_low'], 3)}, {significant(r['alpha_high'], 3)}] spans more than a decade"
        )
    if min(abs(r["alpha"] - b) / b for b in ALPHA_BOUNDS) < 1e-3:
        why.append(f"alpha sits at its bound {significant(r['alpha'], 3)}")
    return not why, ("not identified: " + "; ".join(why)) if why else ""


def _variant_rows(df, v, at, B, rng, metric: str) -> list[dict]:
    c = _cells(df, v, metric)
    skipped = sorted(set(df.loc[df["variant"] == v, "size"]) - set(c.index[c["n"] >= 2]))
    c = c[(c["n"] >= 2) & (c["se"] > 0)]
    base = {
        "variant": v,
        "n_sizes": len(c),
        "boot": B,
        "confound": _confound(c),
        "note": f"left out {', '.join(skipped)} (fewer than 2 runs or equal losses)" if skipped else "",
    }
    xs = np.array([n for _, n, _ in at])
    if len(c) < 4:
        few = f"{len(c)} sizes with 2+ runs: three parameters need 4 or more to leave a residual"
        base["note"] = "; ".join(filter(None, [base["note"], few]))
        return [{**base, "at": a, "params": n} for a, n, _ in at] or [base]
    fit = power_law(c["N"].to_numpy(), c["y"].to_numpy(), c["se"].to_numpy())
    boot = _bootstrap(c, fit, xs, B, rng)
    ok = np.isfinite(boot[:, 0])
    q = (
        np.nanquantile(boot[ok], [(1 - LEVEL) / 2, (1 + LEVEL) / 2], axis=0)
        if ok.any()
        else np.full((2, boot.shape[1]), np.nan)
    )
    r = {
        **base,
        "E": fit[0],
        "A": fit[1],
        "alpha": fit[2],
        "chi2": fit[3],
        "resid_df": len(c) - 3,
        "boot_ok": int(ok.sum()),
    }
    for k, name in enumerate(("E", "A", "alpha")):
        r[f"{name}_low"], r[f"{name}_high"] = q[0, k], q[1, k]
    r["identified"], why = _identified(r)
    r["df_warning"] = (
        f"{len(c)} sizes, 3 parameters: {len(c) - 3} residual df; the intervals come from "
        "the seeds' noise only, not from doubt about the curve's form"
    )
    misfit = ""
    if r["resid_df"] > 0 and r["chi2"] > 2 * r["resid_df"]:
        misfit = (
            f"chi2 = {significant(r['chi2'], 3)} on {r['resid_df']} df: the sizes scatter around the curve beyond "
            "their seeds' noise, so the intervals understate the uncertainty"
        )
    r["note"] = "; ".join(filter(None, [why, misfit, r["note"]]))
    rows = [
        {
            **r,
            "at": a,
            "params": n,
            "loss_pred": fit[0] + fit[1] * n ** -fit[2],
            "loss_low": q[0, 3 + i],
            "loss_high": q[1, 3 + i],
        }
        for i, (a, n, _) in enumerate(at)
    ]
    return rows or [r]


def scaling_fits(
    df: pd.DataFrame,
    at: Sequence[str] = (),
    *,
    boot: int = B_DEFAULT,
    seed: int = 0,
    ladder: str | None = None,
    comparison: Comparison | None = None,
) -> pd.DataFrame:
    """L(N) = E + A N^-alpha fitted to each variant's per-size mean loss, weighted by their SE; descriptive.

    Parameters
    ----------
    df
        A validated sweep (`load_sweep`).
    at
        Sizes to predict each variant's loss at (`rr_analysis.stats.targets.forecast_size`); none: no
        predictions.
    boot, seed
        Parametric bootstrap replicates and the seed of their random draws (the same seed, the same numbers).
    ladder
        A ladder file giving forecast sizes their exact counts (`forecast_size`); None: rr's ladder.
    comparison
        The comparison (`rr_analysis.comparison.Comparison`): its reference and
        then its baselines are fitted, on its metric itself (a curve of the metric, whichever way is better).

    Returns
    -------
    DataFrame, one row per (variant, forecast size), or per variant without `at`; columns `SCALING_COLUMNS`:
    ``variant, n_sizes`` (sizes with 2+ runs), ``E, A, alpha`` (A per parameter, N in parameters) and their
    95% percentile intervals ``*_low, *_high``, ``chi2`` (weighted residual sum of squares) on ``resid_df``
    (n_sizes - 3), ``boot, boot_ok`` (replicates drawn and refitted), ``identified`` (False when E < 0,
    alpha's interval spans more than a decade or alpha sits at a bound), ``at, params, loss_pred, loss_low,
    loss_high`` (the curve at the forecast size and its bootstrap interval), ``df_warning``, ``confound`` (steps
    that change with size), ``note`` (why not identified, sizes left out) and `rr_analysis.comparison.STAMP`.

    Notes
    -----
    y_i = mean loss at size i, se_i = sd_i / sqrt(n_i) over its seeds, N_i the variant's parameter count;
    (E, A, alpha) minimise sum ((y_i - E - A N_i^-alpha) / se_i)^2 (`power_law`). The bootstrap draws each
    size's n_i seeds from N(fitted L(N_i), sd_i^2), recomputes the means and SEs, and refits; the intervals
    are the 2.5% and 97.5% quantiles of the refits. Descriptive only: no test between variants, no
    crossover; with 5 sizes and 3 parameters the curve's form is assumed, not checked.

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> s = scaling_fits(load_sweep(), boot=50)
    >>> s[["variant", "identified"]].values.tolist()
    [['review_neutral', True], ['highway', True], ['standard', True]]
    """
    if boot < 1:
        raise InputError(f"the bootstrap needs at least 1 replicate, got {boot}")
    rows, cmp = compare(df, comparison)
    parsed = [forecast_size(a, cmp.reference, ladder) for a in dict.fromkeys(at)]
    rng = np.random.default_rng(seed)
    variants = [cmp.reference, *cmp.baselines]
    out = pd.DataFrame(
        [row for v in variants for row in _variant_rows(rows, v, parsed, boot, rng, cmp.metric)]
    )
    for c in SCALING_COLUMNS:
        if c not in out and c not in STAMP:
            out[c] = np.nan
    out["identified"] = [v is True or v == 1.0 for v in out["identified"]]
    for c in ("df_warning", "confound", "note"):
        out[c] = [v if isinstance(v, str) else "" for v in out[c]]
    out["at"] = [v if isinstance(v, str) else None for v in out["at"]]
    return cmp.stamp(out)[list(SCALING_COLUMNS)]

"""Does Review's advantage grow with size? The gap's slope per decade of parameters, per baseline."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rr_analysis.cells import baselines_in_order, sizes_in_order, t_sf2
from rr_analysis.mixed import SINGULAR_RATIO, BlockModel
from rr_analysis.stats import welch_table
from rr_model.variants import REFERENCE

__all__ = ["emergence", "EMERGENCE_COLUMNS"]

# The columns of `emergence` that `rr analyze --emergence --format json/csv` emits, in order.
EMERGENCE_COLUMNS: tuple[str, ...] = (
    "baseline", "slope_per_decade", "se", "df", "p", "lrt_chi2", "lrt_p", "gap_regression_slope",
    "gap_regression_p",
)  # fmt: skip


def _gap_regression(w: pd.DataFrame, lx: pd.Series) -> dict:
    """WLS of the per-size Welch gaps on log10(params), weights 1/SE^2, scale estimated (statsmodels WLS)."""
    x = w["size"].map(lx).to_numpy(float)
    y, se = w["gap"].to_numpy(float), w["welch_se"].to_numpy(float)
    ok = np.isfinite(x) & np.isfinite(y) & (se > 0)
    x, y, wt = x[ok], y[ok], 1.0 / se[ok] ** 2
    n = len(x)
    if n < 3:
        return {"gap_regression_df": np.nan}
    xm, ym = np.average(x, weights=wt), np.average(y, weights=wt)
    sxx = float(wt @ (x - xm) ** 2)
    slope = float(wt @ ((x - xm) * (y - ym))) / sxx
    resid = y - ym - slope * (x - xm)
    s2 = float(wt @ resid**2) / (n - 2)
    se_slope = np.sqrt(s2 / sxx)
    p = float(t_sf2(np.array(slope / se_slope), np.array(n - 2.0))) if se_slope > 0 else np.nan
    return {"gap_regression_slope": slope, "gap_regression_se": se_slope, "gap_regression_df": n - 2.0,
            "gap_regression_p": p}  # fmt: skip


def emergence(df: pd.DataFrame) -> pd.DataFrame:
    """Does Review's advantage grow with scale? The gap's slope per decade of parameters, per baseline.

    Parameters
    ----------
    df
        A validated sweep (`load_sweep`).

    Returns
    -------
    DataFrame, one row per baseline, with columns ``baseline, slope_per_decade`` (change of the gap per
    decade of parameters, positive: Review's advantage grows), ``se, df`` (Satterthwaite), ``p`` (two-sided),
    ``gap_at_centre`` (the gap at the mean log10 size), ``lrt_chi2, lrt_df, lrt_p`` (joint likelihood-ratio
    test of all slopes, the same in every row), ``gap_regression_slope, gap_regression_se,
    gap_regression_df, gap_regression_p`` (the simple view), ``n_sizes`` and ``note`` (why n/a, or a
    singular fit). `EMERGENCE_COLUMNS` lists the stable subset the CLI emits as JSON/CSV.

    Notes
    -----
    ``val_loss ~ 0 + C(size) + sum_v (x_v + x_v:lxc) + (1 | size:seed)`` by REML, x_v the 0/1 indicator of
    baseline v (for the paper: hw, std) and lxc = log10(Review's parameter count at the size), centred on its
    mean over the sizes used. Sizes without Review runs are left out; a baseline seen at one size gets no
    slope. p from the t distribution with Satterthwaite df (lmerTest's method). The LRT compares ML refits
    with and without the x_v:lxc terms: chi2 = -2 (logL_without - logL_with) on as many df as slopes.
    The simple view regresses the per-size Welch gaps on log10(params) by weighted least squares,
    weights 1/SE_welch^2, residual scale estimated, t with (sizes - 2) df.

    Example
    -------
    >>> e = emergence(load_sweep())
    >>> e["baseline"].tolist()
    ['highway', 'standard']
    """
    baselines = baselines_in_order(df)
    out = pd.DataFrame({"baseline": baselines}, dtype=object)
    sizes = [s for s in sizes_in_order(df) if ((df["size"] == s) & (df["variant"] == REFERENCE)).any()]
    lx = np.log10(1e6 * df[df["variant"] == REFERENCE].groupby("size")["params_M"].mean())
    data = df[df["size"].isin(sizes)]
    lxc = data["size"].map(lx - lx[sizes].mean()).to_numpy(float)
    at = {v: data.loc[data["variant"] == v, "size"].nunique() for v in baselines}
    sloped = [v for v in baselines if at[v] >= 2]
    notes = {
        v: ("" if at[v] >= 2 else f"present at {at[v]} size(s) with {REFERENCE}: no slope") for v in baselines
    }
    ind = {v: (data["variant"] == v).to_numpy(float) for v in baselines if at[v] >= 1}
    X0 = np.column_stack([(data["size"] == s).to_numpy(float) for s in sizes] + list(ind.values()))
    X = np.column_stack([X0] + [ind[v] * lxc for v in sloped]) if sloped else X0
    blocks = data.groupby(["size", "seed"], sort=False).ngroup().to_numpy()
    y = data["val_loss"].to_numpy(float)
    why = ""
    if len(sizes) < 2:
        why = f"needs at least 2 sizes with {REFERENCE} runs"
    elif len(y) - X.shape[1] < 1:
        why = "no residual degrees of freedom"
    elif np.bincount(blocks).max() < 2:
        why = "no size:seed block holds two runs: seed and residual variance are not separable"
    elif np.linalg.matrix_rank(X.T @ X) < X.shape[1]:
        why = "the fixed effects are not identifiable from these cells"
    cols = {c: np.full(len(out), np.nan) for c in ("slope_per_decade", "se", "df", "p", "gap_at_centre")}
    lrt = {"lrt_chi2": np.nan, "lrt_df": np.nan, "lrt_p": np.nan}
    if not why:
        fit = BlockModel(y, X, blocks).fit(reml=True)
        se = np.sqrt(np.diag(fit.cov))
        names = [*sizes, *ind, *sloped]
        for i, v in enumerate(out["baseline"]):
            if v in ind:
                cols["gap_at_centre"][i] = fit.beta[names.index(v)]
            if v in sloped:
                j = len(sizes) + len(ind) + sloped.index(v)
                cols["slope_per_decade"][i], cols["se"][i], cols["df"][i] = fit.beta[j], se[j], fit.df[j]
        t = cols["slope_per_decade"] / cols["se"]
        ok = np.isfinite(t)
        cols["p"] = np.where(ok, t_sf2(np.where(ok, t, 0.0), np.where(ok, cols["df"], 1.0)), np.nan)
        if sloped:
            from scipy.special import chdtrc

            chi2 = max(
                BlockModel(y, X0, blocks).fit(reml=False).deviance
                - BlockModel(y, X, blocks).fit(reml=False).deviance,
                0.0,
            )
            lrt = {"lrt_chi2": chi2, "lrt_df": float(len(sloped)), "lrt_p": float(chdtrc(len(sloped), chi2))}
        if fit.ratio < SINGULAR_RATIO:
            notes = {v: (n + "; " if n else "") + f"singular fit: sd(seed)/sd(residual) = {fit.ratio:.1e}"
                     for v, n in notes.items()}  # fmt: skip
    for c, vals in cols.items():
        out[c] = vals
    for c, val in lrt.items():
        out[c] = val
    w = welch_table(df)
    reg = pd.DataFrame([_gap_regression(w[w["baseline"] == v], lx) for v in baselines])
    for c in ("gap_regression_slope", "gap_regression_se", "gap_regression_df", "gap_regression_p"):
        out[c] = reg[c].to_numpy(float) if c in reg else np.nan
    out["n_sizes"] = [int(at[v]) for v in baselines]
    out["note"] = [why or notes[v] for v in baselines]
    return out

"""Linear mixed models with a random intercept per seed block, and the per-size comparison built on them.

Both models have one random intercept, y = X beta + u_block + e with u ~ N(0, tau^2), e ~ N(0, sigma^2).
`BlockModel` fits them by REML or ML from sufficient statistics (per-block sums, summed again per distinct
block size), so a likelihood evaluation costs O(block sizes x p^2) whatever the number of rows, and reports Satterthwaite degrees
of freedom the way lmerTest does. For complete seed blocks per size the REML answer has a closed form
(`mixed_table` uses it: exact, and fast for thousands of seeds). Tests cross-check both against
statsmodels' MixedLM with a tightened optimiser.

statsmodels is not used here: its default optimiser stops early on variances of ~1e-5, its boundary
warning uses an absolute 0.01 threshold, and it has no Satterthwaite df. Singularity is judged on a
relative scale instead: lme4's rule, sd(seed) / sd(residual) < 1e-4.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rr_analysis.comparison import (
    PAIR,
    RESPONSE,
    Comparison,
    cell_frame,
    compare,
    t_quantile,
    t_sf2,
)
from rr_analysis.numbers import significant

__all__ = ["BlockModel", "Fit", "mixed_table", "SINGULAR_RATIO"]

SINGULAR_RATIO = 1e-4  # lme4's isSingular tolerance on theta = sd(seed) / sd(residual)


@dataclass(frozen=True)
class Fit:
    """A fitted BlockModel: fixed effects, their covariance and Satterthwaite df, variance ratio, deviance."""

    beta: np.ndarray
    cov: np.ndarray
    df: np.ndarray  # Satterthwaite df per coefficient (REML fits only; NaN for ML)
    sigma2: float  # residual variance
    tau2: float  # random-intercept variance
    deviance: float  # -2 log-likelihood at the optimum (REML or ML, constants included)

    @property
    def ratio(self) -> float:
        return float(np.sqrt(self.tau2 / self.sigma2)) if self.sigma2 > 0 else np.nan


class BlockModel:
    """y = X beta + u_block + e, held as the sufficient statistics of the random-intercept likelihood.

    With H = I + theta^2 Z Z' (V = sigma^2 H) and delta_g = 1 / (m_g (1 + m_g theta^2)), Woodbury splits
    every quadratic form into a within-block part (centred on block means, computed once) and a between-block
    part: X'H^-1 X = W_xx + S' diag(delta) S, r'H^-1 r = W_rr + sum delta_g (t_g - S_g beta)^2 and
    log|H| = sum log(1 + m_g theta^2), where m_g, S = Z'X and t = Z'y are per-block counts and sums.
    The split avoids the cancellation of the textbook form when seed variance dominates (theta ~ 20 here).
    """

    def __init__(self, y: np.ndarray, X: np.ndarray, blocks: np.ndarray):
        codes = np.unique(blocks, return_inverse=True)[1].ravel()
        self.n, self.p = X.shape
        m = np.bincount(codes).astype(float)
        S = np.column_stack([np.bincount(codes, weights=X[:, j]) for j in range(self.p)])
        ybar = np.bincount(codes, weights=y) / m
        Xw, yw = X - (S / m[:, None])[codes], y - ybar[codes]
        Wxx = Xw.T @ Xw
        # Work on the residuals r = y - X beta0 of ordinary least squares (the GLS at theta = 0, from the
        # block sums) and add beta0 back: beta = beta0 + d is exact for a linear model, and the expanded
        # quadratic forms below then cancel at the residuals' scale, not at the loss's summed over a block.
        self.beta0 = np.linalg.solve(Wxx + (S / m[:, None]).T @ S, Xw.T @ yw + S.T @ ybar)
        t = np.bincount(codes, weights=y - X @ self.beta0)
        rw = yw - Xw @ self.beta0
        self.Wxx, self.Wxy, self.Wyy = Wxx, Xw.T @ rw, float(rw @ rw)
        # delta depends on a block only through m_g: sum the between-block products per distinct block size
        # once, so a likelihood evaluation costs O(sizes x p^2), whatever the number of rows or blocks.
        self.sizes, size_of, self.counts = np.unique(m, return_inverse=True, return_counts=True)
        groups = [size_of.ravel() == k for k in range(len(self.sizes))]
        self.SS = np.stack([S[g].T @ S[g] for g in groups])
        self.St = np.stack([S[g].T @ t[g] for g in groups])
        self.tt = np.array([t[g] @ t[g] for g in groups])

    def _gls(self, theta2: float):
        delta = 1.0 / (self.sizes * (1.0 + self.sizes * theta2))
        A = self.Wxx + np.tensordot(delta, self.SS, axes=1)
        d = np.linalg.solve(A, self.Wxy + delta @ self.St)
        # sum_g delta_g (t_g - S_g d)^2, summed per block size from the products held
        between = self.tt - 2 * self.St @ d + np.einsum("j,kjl,l->k", d, self.SS, d)
        rss = self.Wyy - d @ (2 * self.Wxy - self.Wxx @ d) + float(delta @ between)
        return A, self.beta0 + d, max(rss, 0.0), float(self.counts @ np.log1p(self.sizes * theta2))

    def _profiled(self, theta2: float, reml: bool) -> float:
        """-2 log-likelihood with beta and sigma^2 profiled out."""
        A, _, rss, logdet_h = self._gls(theta2)
        dof = self.n - self.p if reml else self.n
        dev = dof * (1.0 + np.log(2 * np.pi * rss / dof)) + logdet_h
        return dev + np.linalg.slogdet(A)[1] if reml else dev

    def _deviance(self, theta: float, sigma: float) -> float:
        """REML -2 log-likelihood at (theta, sigma), lme4's parameters, constants dropped."""
        A, _, rss, logdet_h = self._gls(theta * theta)
        return (self.n - self.p) * np.log(sigma**2) + logdet_h + np.linalg.slogdet(A)[1] + rss / sigma**2

    def _var_beta(self, theta: float, sigma: float) -> np.ndarray:
        A = self._gls(theta * theta)[0]
        return sigma**2 * np.diag(np.linalg.inv(A))

    def fit(self, reml: bool = True) -> Fit:
        from scipy.optimize import minimize_scalar

        # log(theta^2) on a coarse grid, then Brent on the best bracket; theta = 0 is tried on its own.
        grid = np.linspace(-25.0, 12.0, 38)
        devs = [self._profiled(np.exp(e), reml) for e in grid]
        i = int(np.argmin(devs))
        lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
        res = minimize_scalar(
            lambda e: self._profiled(np.exp(e), reml),
            bounds=(lo, hi),
            method="bounded",
            options={"xatol": 1e-10},
        )
        theta2 = float(np.exp(res.x)) if res.fun < self._profiled(0.0, reml) else 0.0
        A, beta, rss, _ = self._gls(theta2)
        sigma2 = rss / (self.n - self.p if reml else self.n)
        cov = sigma2 * np.linalg.inv(A)
        dof = self._satterthwaite(np.sqrt(theta2), np.sqrt(sigma2)) if reml else np.full(self.p, np.nan)
        return Fit(beta, cov, dof, sigma2, theta2 * sigma2, self._profiled(theta2, reml))

    def _satterthwaite(self, theta: float, sigma: float) -> np.ndarray:
        """lmerTest's df: 2 Var(b_j)^2 / (g' C g), g the gradient of Var(b_j) in (theta, sigma) and C = 2 H^-1
        the asymptotic covariance of (theta, sigma) from the Hessian H of the REML deviance.

        Derivatives are central differences with one Richardson step. At theta = 0 the deviance and Var(b_j)
        are even in theta, so the theta gradient and cross term vanish and only sigma remains.
        """
        x0 = np.array([theta, sigma])
        steps = np.array([1e-3 * max(theta, 1.0), 1e-3 * sigma])
        dims = [1] if theta == 0.0 else [0, 1]

        def derivs(h: np.ndarray):
            def f(dx, fun):
                return fun(*(x0 + dx))

            e = [np.eye(2)[k] * h[k] for k in range(2)]
            grad = np.array([(f(e[k], self._var_beta) - f(-e[k], self._var_beta)) / (2 * h[k]) for k in dims])
            d0 = self._deviance(*x0)
            hess = np.empty((len(dims), len(dims)))
            for a, k in enumerate(dims):
                for b, j in enumerate(dims):
                    if k == j:
                        hess[a, b] = (f(e[k], self._deviance) - 2 * d0 + f(-e[k], self._deviance)) / h[k] ** 2
                    elif a < b:
                        pp, pm = f(e[k] + e[j], self._deviance), f(e[k] - e[j], self._deviance)
                        mp, mm = f(-e[k] + e[j], self._deviance), f(-e[k] - e[j], self._deviance)
                        hess[a, b] = hess[b, a] = (pp - pm - mp + mm) / (4 * h[k] * h[j])
            return grad, hess

        (g1, h1), (g2, h2) = derivs(steps), derivs(steps / 2)
        grad, hess = (4 * g2 - g1) / 3, (4 * h2 - h1) / 3
        var = self._var_beta(*x0)
        with np.errstate(divide="ignore", invalid="ignore"):
            quad = np.einsum("ki,kl,li->i", grad, 2 * np.linalg.inv(hess), grad)
            return np.where(quad > 0, 2 * var**2 / quad, np.nan)


def _closed_form(wide: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, float, float, float]:
    """REML for complete seed blocks (rows: seeds, columns: variants, the reference first, no gaps).

    The randomised-complete-block ANOVA: SSE with (n-1)(k-1) df and the seed sum of squares with n-1 df.
    When MS_seed >= MSE, sigma^2 = MSE and tau^2 = (MS_seed - MSE)/k; otherwise tau^2 = 0 (the boundary)
    and sigma^2 pools both. Variant contrasts are within-block, so coef = difference of means,
    SE = sqrt(2 sigma^2 / n) and the Satterthwaite df is the df of sigma^2.
    """
    y = wide.to_numpy(dtype=float)
    n, k = y.shape
    col, row, grand = y.mean(axis=0), y.mean(axis=1), y.mean()
    sse = float(((y - col[None, :] - row[:, None] + grand) ** 2).sum())
    ss_seed = float(k * ((row - grand) ** 2).sum())
    df_e, df_s = (n - 1) * (k - 1), n - 1
    mse, ms_seed = sse / df_e, ss_seed / df_s
    if ms_seed >= mse:
        sigma2, tau2, dof = mse, (ms_seed - mse) / k, df_e
    else:
        sigma2, tau2, dof = (sse + ss_seed) / (df_e + df_s), 0.0, df_e + df_s
    return col[1:] - col[0], np.full(k - 1, np.sqrt(2 * sigma2 / n)), float(dof), sigma2, tau2


def _size_fit(g: pd.DataFrame, reference: str) -> dict[str, dict]:
    """Per-baseline mixed-model results for one size's rows (the reference present), on the response; the
    blocks are `PAIR`'s (the data seed where the file records one, else the seed)."""
    # an arm with several runs of one block (init seeds apart): each run is a row of the numerical fit
    repeated = g.duplicated([PAIR, "variant"]).any()
    wide = None if repeated else g.pivot(index=PAIR, columns="variant", values=RESPONSE)
    others = [v for v in (sorted(g["variant"].unique()) if repeated else wide.columns) if v != reference]
    if not repeated and not wide.isna().any().any():
        wide = wide[[reference, *others]]
        if len(wide) < 2:
            return {v: {"mixed_note": "one seed: no residual degrees of freedom"} for v in others}
        coef, se, dof, sigma2, tau2 = _closed_form(wide)
        dof, method = np.full(len(others), dof), "closed form, complete seed blocks"
    else:
        if repeated:
            long = g[[PAIR, "variant", RESPONSE]].rename(columns={RESPONSE: "y"}).reset_index(drop=True)
        else:
            long = wide[[reference, *others]].stack().dropna().rename("y").reset_index()
        if len(long) - 1 - len(others) < 1:
            return {
                v: {"mixed_note": "as many variants as runs: no residual degrees of freedom"} for v in others
            }
        if long.groupby(PAIR, observed=True).size().max() < 2:
            return {
                v: {
                    "mixed_note": "no seed is shared by two variants: seed and residual variance are "
                    "not separable"
                }
                for v in others
            }
        X = np.column_stack([np.ones(len(long))] + [(long["variant"] == v).to_numpy(float) for v in others])
        fit = BlockModel(long["y"].to_numpy(float), X, long[PAIR].to_numpy()).fit(reml=True)
        coef, se, dof = fit.beta[1:], np.sqrt(np.diag(fit.cov))[1:], fit.df[1:]
        method = "REML, data-seed blocks, repeated runs" if repeated else "REML, incomplete seed blocks"
        sigma2, tau2 = fit.sigma2, fit.tau2
    ratio = np.sqrt(tau2 / sigma2) if sigma2 > 0 else np.nan
    singular = bool(ratio < SINGULAR_RATIO)
    out = {}
    for v, c, s, d in zip(others, coef, se, dof, strict=True):
        row = {"mixed_method": method, "seed_var": tau2, "resid_var": sigma2, "seed_sd_ratio": ratio}
        row["singular"] = singular
        if not (s > 0 and np.isfinite(d)):
            row["mixed_note"] = "zero residual variance"
        else:
            row.update(mixed_coef=c, mixed_se=s, mixed_df=d)
            if singular:
                row["mixed_note"] = (
                    f"singular: sd(seed)/sd(residual) = {significant(ratio, 2, scientific=True)} < {significant(SINGULAR_RATIO)} (relative scale, "
                    "lme4's rule); the fit equals a fixed-effects ANOVA"
                )
        out[v] = row
    return out


def mixed_table(
    df: pd.DataFrame,
    comparison: Comparison | None = None,
) -> pd.DataFrame:
    """Mixed model per size, ``val_loss ~ variant + (1 | seed)`` by REML, the reference (Review) as reference level.

    Parameters
    ----------
    df
        A validated sweep (`load_sweep`).
    comparison
        The comparison (`rr_analysis.comparison.Comparison`; default the paper's):
        the reference variant, the baselines in order (None: every other variant present), the numeric
        column compared and whether higher is better.

    Returns
    -------
    DataFrame, one row per (size, baseline), with columns ``size, baseline, mixed_coef`` (baseline - reference
    of the response, positive favours the reference), ``mixed_se, mixed_df`` (Satterthwaite), ``mixed_p`` (two-sided, t distribution),
    ``mixed_ci_low, mixed_ci_high`` (coef -/+ t_{0.975, df} SE: the interval of mixed_p),
    ``seed_var, resid_var`` (REML variance components), ``seed_sd_ratio`` (sd(seed)/sd(residual)),
    ``singular`` (ratio < `SINGULAR_RATIO`), ``mixed_method`` and ``mixed_note`` (why n/a, or the singular
    fit; "" otherwise), then `rr_analysis.comparison.STAMP`.

    Notes
    -----
    y_vs = mu + beta_v + u_s + e_vs, u_s ~ N(0, tau^2), e_vs ~ N(0, sigma^2), y the response (the metric, or
    minus it when higher is better), fitted to the reference and every baseline present at the size, so all
    of them inform sigma^2 (with the default baselines: every variant present). t = beta_v / SE, p = 2 P(T_df > |t|) with Satterthwaite df,
    as lmerTest reports (not the Wald z of statsmodels). Complete seed blocks (every seed of the size ran
    every variant there) use the closed-form REML solution of the block ANOVA: coef = difference of means,
    SE = sqrt(2 sigma^2 / n), df = (n-1)(k-1), or (n-1)k when tau^2 sits on the boundary at 0. Incomplete
    blocks are fitted numerically (`BlockModel`).

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> m = mixed_table(load_sweep())
    >>> m.loc[(m["size"] == "1B") & (m["baseline"] == "highway"), "mixed_df"].item()
    4.0
    """
    data, comparison = compare(df, comparison)
    out = cell_frame(data, comparison)[["size", "baseline"]]
    rows: dict[tuple[str, str], dict] = {}
    for size, g in data.groupby("size", sort=False, observed=True):
        if (g["variant"] == comparison.reference).any():
            rows.update({(size, v): r for v, r in _size_fit(g, comparison.reference).items()})
    cols = ["mixed_coef", "mixed_se", "mixed_df", "seed_var", "resid_var", "seed_sd_ratio"]
    recs = [rows.get(k, {}) for k in zip(out["size"], out["baseline"], strict=True)]
    for c in cols:
        out[c] = np.array([r.get(c, np.nan) for r in recs], dtype=float)
    t = out["mixed_coef"].to_numpy() / out["mixed_se"].to_numpy()
    ok = np.isfinite(t)
    out["mixed_p"] = np.where(ok, t_sf2(np.where(ok, t, 0.0), np.where(ok, out["mixed_df"], 1.0)), np.nan)
    half = t_quantile(0.975, np.where(ok, out["mixed_df"], 1.0)) * out["mixed_se"].to_numpy()
    out["mixed_ci_low"] = np.where(ok, out["mixed_coef"] - half, np.nan)
    out["mixed_ci_high"] = np.where(ok, out["mixed_coef"] + half, np.nan)
    out["singular"] = [bool(r.get("singular", False)) for r in recs]
    out["mixed_method"] = [r.get("mixed_method", "") for r in recs]
    present = set(data[["size", "variant"]].drop_duplicates().itertuples(index=False, name=None))
    out["mixed_note"] = [
        r.get("mixed_note", "")
        or ("" if (s, comparison.reference) in present else f"no {comparison.reference} runs at this size")
        or ("" if (s, b) in present else "no runs of this baseline at this size")
        for r, s, b in zip(recs, out["size"], out["baseline"], strict=True)
    ]
    return comparison.stamp(out)

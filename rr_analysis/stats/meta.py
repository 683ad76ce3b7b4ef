"""Two-stage random-effects meta-regression: per-size estimates with known standard errors, regressed on a
moderator with a between-size variance tau^2 (REML) and the Knapp-Hartung adjustment.

What R's ``metafor::rma(yi, sei = sei, mods = ~ x, method = "REML", test = "knha")`` computes; the tests
compare the two. The weighted fits are statsmodels' WLS: at a fixed tau^2, WLS with weights 1/(v_i + tau^2)
and its residual scale estimated is exactly the Knapp-Hartung fit (scale = the weighted residual mean square,
t on k - 2 df), and with weights 1/v_i its weighted residual sum of squares is Cochran's Q_E.
"""

from __future__ import annotations

import numpy as np

__all__ = ["meta_regression", "meta_moderators", "meta_predict"]


def _reml_score(tau2: float, y: np.ndarray, v: np.ndarray, X: np.ndarray) -> float:
    """y'P^2 y - tr(P) at tau2: twice the derivative of the restricted log-likelihood in tau^2."""
    w = 1.0 / (v + tau2)
    WX = X * w[:, None]
    P = np.diag(w) - WX @ np.linalg.solve(X.T @ WX, WX.T)
    Py = P @ y
    return float(Py @ Py - np.trace(P))


def _reml_tau2(y: np.ndarray, v: np.ndarray, X: np.ndarray) -> float:
    """The REML tau^2: the root of the score equation, or 0 when the score is not positive there.

    The score is positive at 0 exactly when the restricted likelihood rises away from the boundary; it turns
    negative for large tau^2 (y'P^2 y falls as 1/tau^4, tr(P) as 1/tau^2), so a bracket always exists.
    metafor's Fisher scoring converges to the same root, truncated at 0.
    """
    from scipy.optimize import brentq

    if _reml_score(0.0, y, v, X) <= 0:
        return 0.0
    hi = max(float(np.var(y)), float(v.mean()))
    while _reml_score(hi, y, v, X) > 0:
        hi *= 4.0
    return float(brentq(_reml_score, 0.0, hi, args=(y, v, X), xtol=1e-15 * hi, rtol=1e-15, maxiter=500))


def _design(x: np.ndarray) -> np.ndarray:
    """The intercept and the moderators: x is one moderator (k,) or several (k, p)."""
    x = np.asarray(x, dtype=float)
    return np.column_stack([np.ones(len(x)), x.reshape(len(x), -1)])


def meta_moderators(y: np.ndarray, se: np.ndarray, x: np.ndarray) -> dict:
    """Random-effects meta-regression of estimates `y` (standard errors `se`) on one or more moderators `x`.

    Parameters
    ----------
    y, se
        One entry per study (here: per cell): the estimate and its standard error (> 0).
    x
        The moderators: shape (k,) for one, (k, p) for p of them (the emergence view's log10 N and log10 D/N).

    Returns
    -------
    dict with arrays ``coef, se, p`` (one entry per moderator, the intercept left out; Knapp-Hartung: t on
    k - p - 1 df, two-sided) and floats ``df`` (k - p - 1), ``tau2`` (REML between-study variance), ``qe,
    qe_df, qe_p`` (Cochran's residual heterogeneity Q_E with weights 1/se^2, chi-square on k - p - 1 df).

    Notes
    -----
    y_i = b0 + x_i'b + u_i + e_i, u_i ~ N(0, tau^2), e_i ~ N(0, se_i^2) with se_i taken as known: metafor's
    ``rma(yi, sei = sei, mods = ~ x1 + x2, method = "REML", test = "knha")``. tau^2 maximises the restricted
    likelihood; then b = WLS with w_i = 1/(se_i^2 + tau^2) and Var(b) = s^2 (X'WX)^-1 with s^2 = sum w_i r_i^2 /
    (k - p - 1) (Knapp & Hartung 2003, no truncation of s^2, metafor's default). Needs k >= p + 2 and a design
    of full rank.

    Example
    -------
    >>> x = np.array([[1, 0], [2, 0], [1, 1], [2, 1], [3, 1]])
    >>> r = meta_moderators(np.array([0.0, 0.01, 0.02, 0.03, 0.04]), np.full(5, 0.01), x)
    >>> r["coef"].round(4).tolist(), r["df"]
    ([0.01, 0.02], 2.0)
    """
    from scipy.special import chdtrc
    from statsmodels.regression.linear_model import WLS

    X = _design(x)
    v = se**2
    tau2 = _reml_tau2(y, v, X)
    knha = WLS(y, X, weights=1.0 / (v + tau2)).fit()
    fixed = WLS(y, X, weights=1.0 / v).fit()
    qe_df = float(len(y) - X.shape[1])
    return {
        "coef": np.asarray(knha.params[1:]),
        "se": np.asarray(knha.bse[1:]),
        "p": np.asarray(knha.pvalues[1:]),
        "df": qe_df,
        "tau2": tau2,
        "qe": float(fixed.ssr),
        "qe_df": qe_df,
        "qe_p": float(chdtrc(qe_df, fixed.ssr)),
    }


def meta_regression(y: np.ndarray, se: np.ndarray, x: np.ndarray) -> dict[str, float]:
    """Random-effects meta-regression of estimates `y` (standard errors `se`) on one moderator `x`.

    Parameters
    ----------
    y, se, x
        One entry per study (here: per size): the estimate, its standard error (> 0), the moderator.

    Returns
    -------
    dict with ``slope, se, df, p`` (Knapp-Hartung: t on k - 2 df), ``tau2`` (REML between-study variance),
    ``qe, qe_df, qe_p`` (Cochran's residual heterogeneity Q_E with weights 1/se^2, chi-square on k - 2 df).

    Notes
    -----
    `meta_moderators` with one moderator: y_i = b0 + b1 x_i + u_i + e_i, u_i ~ N(0, tau^2), e_i ~ N(0,
    se_i^2) with se_i taken as known. tau^2 maximises the restricted likelihood; then b = WLS with w_i =
    1/(se_i^2 + tau^2) and Var(b) = s^2 (X'WX)^-1 with s^2 = sum w_i r_i^2 / (k - 2) (Knapp & Hartung 2003, no
    truncation of s^2, metafor's default). Needs k >= 3 and two distinct x.

    Example
    -------
    >>> r = meta_regression(np.array([0.0, 0.01, 0.03]), np.array([0.01, 0.01, 0.02]), np.array([1, 2, 3]))
    >>> round(r["slope"], 4), r["df"]
    (0.0133, 1.0)
    """
    r = meta_moderators(y, se, np.asarray(x, dtype=float))
    return {
        "slope": float(r["coef"][0]),
        "se": float(r["se"][0]),
        "df": r["df"],
        "p": float(r["p"][0]),
        "tau2": r["tau2"],
        "qe": r["qe"],
        "qe_df": r["qe_df"],
        "qe_p": r["qe_p"],
    }


def meta_predict(y: np.ndarray, se: np.ndarray, x: np.ndarray, at: np.ndarray, level: float = 0.95) -> dict:
    """The fitted line (or plane) of `meta_moderators` at new moderator values `at`, with confidence and
    prediction intervals.

    Parameters
    ----------
    y, se, x
        As for `meta_moderators`: one estimate and its standard error per study (cell), and the moderator(s):
        shape (k,) for one, (k, p) for p.
    at
        Moderator values to predict at: shape (m,) for one moderator, (m, p) for p.
    level
        Coverage of both intervals.

    Returns
    -------
    dict of arrays, one entry per point of `at`: ``pred`` (b0 + at'b), ``se`` (its Knapp-Hartung SE),
    ``ci_low, ci_high`` (the mean's interval), ``pi_low, pi_high`` (a new study's interval, tau^2 included);
    and the floats ``tau2`` and ``df`` (k - p - 1).

    Notes
    -----
    metafor's ``predict(rma(yi, sei = sei, mods = ~ x, method = "REML", test = "knha"), newmods = at)``:
    with x0 = (1, at), pred = x0'b, se = sqrt(x0' V x0) with V the Knapp-Hartung-scaled covariance of
    `meta_moderators`; CI = pred -/+ t_{(1+level)/2, k-p-1} se; PI = pred -/+ t_{(1+level)/2, k-p-1}
    sqrt(se^2 + tau^2) (Riley et al. 2011; t on the model's df, as metafor does under Knapp-Hartung).

    Example
    -------
    >>> p = meta_predict(np.array([0.0, 0.01, 0.03]), np.array([0.01, 0.01, 0.02]), np.array([1, 2, 3]), [4.0])
    >>> round(float(p["pred"][0]), 4), p["df"]
    (0.0389, 1.0)
    """
    from scipy.special import stdtrit
    from statsmodels.regression.linear_model import WLS

    X = _design(x)
    v = se**2
    tau2 = _reml_tau2(y, v, X)
    knha = WLS(y, X, weights=1.0 / (v + tau2)).fit()
    at = np.asarray(at, dtype=float)
    X0 = _design(at if X.shape[1] > 2 else np.atleast_1d(at)).reshape(-1, X.shape[1])
    pred = X0 @ knha.params
    se0 = np.sqrt(np.einsum("ia,ab,ib->i", X0, knha.cov_params(), X0))
    dof = float(len(y) - X.shape[1])
    q = stdtrit(dof, 0.5 + level / 2)
    half_pi = q * np.sqrt(se0**2 + tau2)
    return {
        "pred": pred,
        "se": se0,
        "ci_low": pred - q * se0,
        "ci_high": pred + q * se0,
        "pi_low": pred - half_pi,
        "pi_high": pred + half_pi,
        "tau2": tau2,
        "df": dof,
    }

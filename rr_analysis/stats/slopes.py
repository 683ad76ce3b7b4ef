"""A linear mixed model in which each size's gap may leave the line: seed blocks plus one size deviation per
baseline, by REML, with lmerTest's Satterthwaite df.

The model, for the emergence question (`rr_analysis.stats.emergence`):

    val_loss ~ 0 + size + hw + std + hw:lxc + std:lxc + (1 | size:seed) + (0 + hw | size) + (0 + std | size)

that is y = X beta + Z u + sum_v diag(x_v) Z_size w_v + e with independent u ~ N(0, theta_0^2 sigma^2) per
size:seed block, w_v ~ N(0, theta_v^2 sigma^2) per size and e ~ N(0, sigma^2). Rows of different sizes are
independent, so V = sigma^2 H is block-diagonal by size. Within a size, H0 = I + theta_0^2 Z Z' is inverted
in closed form per block (as in `rr_analysis.stats.mixed.BlockModel`) and the baselines' size deviations are a
rank-k update of it (Woodbury, written with L = diag(theta_v) so that theta_v = 0 stays finite). A likelihood
evaluation then costs O(sizes x block sizes x d^2), d = p + k + 1, whatever the number of rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SizeModel", "SizeFit", "kenward_roger"]


@dataclass(frozen=True)
class SizeFit:
    """A fitted SizeModel: fixed effects, lme4's covariance of them, Satterthwaite df, variance components."""

    beta: np.ndarray
    cov: np.ndarray  # sigma^2 (X' H^-1 X)^-1, as lme4's vcov
    df: np.ndarray  # Satterthwaite df per coefficient, lmerTest's method
    theta: np.ndarray  # sd / sigma: the seed block first, then one per random-slope column
    sigma2: float  # residual variance
    deviance: float  # REML criterion at the optimum, lme4's constants included


def _block_sums(codes: np.ndarray, W: np.ndarray) -> np.ndarray:
    return np.column_stack([np.bincount(codes, weights=W[:, j]) for j in range(W.shape[1])])


class SizeModel:
    """The REML likelihood of the model above, held as per-size sufficient statistics.

    Parameters
    ----------
    y, X
        Response and fixed-effects design (full column rank).
    sizes, blocks
        Integer codes of each row's size and size:seed block (a block lies within one size).
    U
        The columns whose effect varies randomly by size (the baseline indicators), one variance each.
    """

    def __init__(self, y: np.ndarray, X: np.ndarray, sizes: np.ndarray, blocks: np.ndarray, U: np.ndarray):
        self.n, self.p = X.shape
        self.k = U.shape[1]
        self.X, self.U, self.sizes, self.blocks = X, U, sizes, blocks
        # Work on the residuals of ordinary least squares and add beta0 back: the quadratic forms then
        # cancel at the residuals' scale, not the loss's (see BlockModel).
        self.beta0 = np.linalg.lstsq(X, y, rcond=None)[0]
        W = np.column_stack([X, U, y - X @ self.beta0])
        codes = np.unique(blocks, return_inverse=True)[1].ravel()
        m = np.bincount(codes).astype(float)
        S = _block_sums(codes, W)
        Ww = W - (S / m[:, None])[codes]
        size_codes = np.unique(sizes, return_inverse=True)[1].ravel()
        n_sizes = size_codes.max() + 1
        block_size = np.zeros(len(m), dtype=int)
        block_size[codes] = size_codes
        # H0^-1 = within-block centring + delta_g S_g S_g' with delta_g = 1 / (m_g (1 + m_g theta_0^2)):
        # hold the within cross-products per size and the between ones per (size, block size m).
        self.within = np.stack([Ww[size_codes == s].T @ Ww[size_codes == s] for s in range(n_sizes)])
        self.m, m_of = np.unique(m, return_inverse=True)
        self.between = np.zeros((n_sizes, len(self.m), W.shape[1], W.shape[1]))
        self.counts = np.zeros((n_sizes, len(self.m)))
        for g in range(len(m)):
            s, j = block_size[g], m_of.ravel()[g]
            self.between[s, j] += np.outer(S[g], S[g])
            self.counts[s, j] += 1

    def _gls(self, theta: np.ndarray):
        """X'H^-1X, the GLS correction d to beta0, the weighted RSS and log|H| at theta."""
        p, k = self.p, self.k
        delta = 1.0 / (self.m * (1.0 + self.m * theta[0] ** 2))
        M = self.within + np.einsum("j,sjab->sab", delta, self.between)
        logdet = float(self.counts.sum(axis=0) @ np.log1p(self.m * theta[0] ** 2))
        lam = theta[1:]
        MU = M[:, :, p : p + k] * lam  # M_[X U r],U L
        K = np.eye(k) + lam[:, None] * M[:, p : p + k, p : p + k] * lam
        sol = np.linalg.solve(K, np.swapaxes(MU, 1, 2))  # K^-1 L M_U,[X U r]
        M = M - MU @ sol
        logdet += float(np.linalg.slogdet(K)[1].sum())
        idx = [*range(p), p + k]
        T = M[:, idx][:, :, idx].sum(axis=0)
        A, b, c = T[:p, :p], T[:p, p], T[p, p]
        d = np.linalg.solve(A, b)
        return A, d, max(c - b @ d, 0.0), logdet

    def profiled(self, theta: np.ndarray) -> float:
        """The REML criterion with beta and sigma^2 profiled out (lme4's, constants included)."""
        A, _, rss, logdet = self._gls(np.asarray(theta, float))
        dof = self.n - self.p
        return dof * (1.0 + np.log(2 * np.pi * rss / dof)) + logdet + np.linalg.slogdet(A)[1]

    def _deviance(self, vp: np.ndarray) -> float:
        """REML -2 log-likelihood at (theta, sigma), lmerTest's variance parameters, constants dropped."""
        A, _, rss, logdet = self._gls(vp[:-1])
        return (self.n - self.p) * np.log(vp[-1] ** 2) + logdet + np.linalg.slogdet(A)[1] + rss / vp[-1] ** 2

    def _var_beta(self, vp: np.ndarray) -> np.ndarray:
        return vp[-1] ** 2 * np.diag(np.linalg.inv(self._gls(vp[:-1])[0]))

    def fit(self) -> SizeFit:
        """REML by bounded quasi-Newton on theta >= 0 from several starts (lme4's parameters and bounds)."""
        from scipy.optimize import minimize

        starts = [np.full(1 + self.k, s) for s in (0.5, 2.0, 10.0)]
        starts += [np.r_[t0, np.full(self.k, 0.5)] for t0 in (5.0, 20.0)]
        best = None
        for x0 in starts:
            res = minimize(
                self.profiled,
                x0,
                method="L-BFGS-B",
                bounds=[(0.0, None)] * len(x0),
                options={"ftol": 1e-15, "gtol": 1e-11, "maxiter": 5000},
            )
            if best is None or res.fun < best.fun:
                best = res
        theta = self._polish(best.x)
        A, d, rss, _ = self._gls(theta)
        sigma2 = rss / (self.n - self.p)
        vp = np.r_[theta, np.sqrt(sigma2)]
        return SizeFit(
            self.beta0 + d,
            sigma2 * np.linalg.inv(A),
            self._satterthwaite(vp),
            theta,
            sigma2,
            self.profiled(theta),
        )

    def _polish(self, theta: np.ndarray) -> np.ndarray:
        """Nelder-Mead from the quasi-Newton optimum, with components below 1e-6 set to the boundary at 0."""
        from scipy.optimize import minimize

        theta = np.where(theta < 1e-6, 0.0, theta)
        free = theta > 0
        if free.any():

            def f(x):
                t = theta.copy()
                t[free] = np.abs(x)
                return self.profiled(t)

            res = minimize(
                f,
                theta[free],
                method="Nelder-Mead",
                options={"xatol": 1e-12, "fatol": 1e-15, "maxiter": 20000},
            )
            if res.fun <= self.profiled(theta):
                theta[free] = np.abs(res.x)
        return theta

    def _satterthwaite(self, vp: np.ndarray) -> np.ndarray:
        """lmerTest's df: 2 Var(b_j)^2 / (g' C g), g the gradient of Var(b_j) in (theta, sigma), C = 2 H^+ with
        H the Hessian of the REML deviance. Components at theta = 0 are left out: the deviance and Var(b) are
        even in them, so their gradient and cross terms vanish (lmerTest's pseudo-inverse drops them too).
        """
        dims = [i for i in range(len(vp)) if vp[i] != 0.0 or i == len(vp) - 1]
        h = np.array([1e-3 * max(abs(vp[i]), 1.0) if i < len(vp) - 1 else 1e-3 * vp[i] for i in dims])
        grad = _richardson(lambda s: _central_grad(self._var_beta, vp, dims, s), h)
        hess = _richardson(lambda s: _central_hess(self._deviance, vp, dims, s), h)
        w, Q = np.linalg.eigh(hess)
        pos = w > 1e-8
        C = 2 * (Q[:, pos] / w[pos]) @ Q[:, pos].T
        var = self._var_beta(vp)
        with np.errstate(divide="ignore", invalid="ignore"):
            quad = np.einsum("ki,kl,li->i", grad, C, grad)
            return np.where(quad > 0, 2 * var**2 / quad, np.nan)


def _kr_terms(model: SizeModel, fit: SizeFit, rows: np.ndarray):
    """One size's dense share of pbkrtest's sums: X'S^-1 G_r S^-1 X, X'S^-1 G_r S^-1 G_s S^-1 X, tr(H_r H_s)."""
    X, U = model.X[rows], model.U[rows]
    b = model.blocks[rows]
    G = [(b[:, None] == b[None, :]).astype(float), *(np.outer(u, u) for u in U.T), np.eye(len(b))]
    gamma = fit.sigma2 * np.r_[fit.theta**2, 1.0]
    Sinv = np.linalg.inv(sum(g * G_i for g, G_i in zip(gamma, G, strict=True)))
    H = [G_i @ Sinv for G_i in G]
    HX = [H_i @ X for H_i in H]
    P = np.stack([-O_r.T @ Sinv @ X for O_r in HX])
    Q = np.stack([np.stack([O_r.T @ Sinv @ O_s for O_s in HX]) for O_r in HX])
    K = np.array([[np.sum(H_r.T * H_s) for H_s in H] for H_r in H])
    return P, Q, K


def kenward_roger(model: SizeModel, fit: SizeFit) -> tuple[np.ndarray, np.ndarray]:
    """Kenward-Roger's adjusted SE and df of each coefficient, computed as pbkrtest's vcovAdj and Lb_ddf do.

    The variance parameters are the variances (sigma^2 theta^2 per component, then sigma^2), including those
    at the boundary. With Phi = lme4's vcov, P_r = -X'S^-1 G_r S^-1 X, Q_rs = X'S^-1 G_r S^-1 G_s S^-1 X:
    I_rs = tr(S^-1 G_r S^-1 G_s) - 2 tr(Phi Q_rs) + tr(Phi P_r Phi P_s), W = 2 I^-1 (pseudo-inverse when
    near-singular), Phi_A = Phi + 2 Phi (sum_rs W_rs (Q_rs - P_r Phi P_s)) Phi. For one coefficient j
    (q = 1) pbkrtest's Lb_ddf reduces exactly to df = 2 / (t'Wt), t_r = (Phi P_r Phi)_jj / Phi_jj.
    Dense per size: O(sum of n_size^3).
    """
    parts = [_kr_terms(model, fit, model.sizes == s) for s in np.unique(model.sizes)]
    P, Q, K = (sum(part[i] for part in parts) for i in range(3))
    Phi = fit.cov
    PhiP = np.einsum("ab,rbc->rac", Phi, P)
    info = K - 2 * np.einsum("ab,rsab->rs", Phi, Q) + np.einsum("rab,sba->rs", PhiP, PhiP)
    ev = np.linalg.eigvalsh(info)
    W = 2 * (np.linalg.inv(info) if np.min(np.abs(ev)) > 1e-10 else np.linalg.pinv(info))
    PPhiP = np.einsum("rab,sbc->rsac", P, PhiP)
    Phi_a = Phi + 2 * Phi @ np.einsum("rs,rsab->ab", W, Q - PPhiP) @ Phi
    t = np.einsum("rjj->rj", PhiP @ Phi) / np.diag(Phi)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt(np.diag(Phi_a)), 2.0 / np.einsum("rj,rs,sj->j", t, W, t)


def _richardson(f, h: np.ndarray):
    """One Richardson step on a central difference: (4 f(h/2) - f(h)) / 3, error O(h^4)."""
    return (4 * f(h / 2) - f(h)) / 3


def _central_grad(fun, x0: np.ndarray, dims: list[int], h: np.ndarray) -> np.ndarray:
    rows = []
    for a, i in enumerate(dims):
        e = np.zeros(len(x0))
        e[i] = h[a]
        rows.append((fun(x0 + e) - fun(x0 - e)) / (2 * h[a]))
    return np.array(rows)


def _central_hess(fun, x0: np.ndarray, dims: list[int], h: np.ndarray) -> np.ndarray:
    E = np.zeros((len(dims), len(x0)))
    for a, i in enumerate(dims):
        E[a, i] = h[a]
    f0 = fun(x0)
    H = np.empty((len(dims), len(dims)))
    for a in range(len(dims)):
        H[a, a] = (fun(x0 + E[a]) - 2 * f0 + fun(x0 - E[a])) / h[a] ** 2
        for b in range(a):
            pp, pm = fun(x0 + E[a] + E[b]), fun(x0 + E[a] - E[b])
            mp, mm = fun(x0 - E[a] + E[b]), fun(x0 - E[a] - E[b])
            H[a, b] = H[b, a] = (pp - pm - mp + mm) / (4 * h[a] * h[b])
    return H

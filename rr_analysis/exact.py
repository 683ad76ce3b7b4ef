"""The exact paired sign-flip test: no normality, no df, and a floor that says how little 3 seeds can show."""

from __future__ import annotations

import numpy as np

__all__ = ["sign_flip", "EXACT_MAX_PAIRS", "MONTE_CARLO_DRAWS"]

EXACT_MAX_PAIRS = 16  # 2^16 sign vectors enumerated at most; more pairs draw random sign vectors instead
MONTE_CARLO_DRAWS = 20_000


def sign_flip(d) -> tuple[float, float, str]:
    """Two-sided sign-flip (permutation) test that the seed-matched differences `d` are centred on 0.

    Parameters
    ----------
    d
        The differences baseline - Review over the seeds both arms ran.

    Returns
    -------
    (p, floor, method): the p-value, the smallest p this many pairs can give, and ``"exact"`` or
    ``"Monte Carlo, N sign vectors"``; (NaN, NaN, "") when there is no pair.

    Notes
    -----
    Under H0 each difference is as likely to be +d_s as -d_s (exchangeability of the two variants within a
    seed). The statistic is |sum_s e_s d_s|; p is the share of the 2^n sign vectors e whose statistic
    reaches the observed one (the identity and its mirror always do, hence the floor 2 / 2^n: 0.25 with 3
    seeds, 0.5 with 2, whatever the gap). Above `EXACT_MAX_PAIRS` pairs, `MONTE_CARLO_DRAWS` random sign
    vectors (seed 0) give p = (1 + hits) / (1 + draws) and floor 1 / (1 + draws). A relative tolerance of
    1e-9 counts ties that rounding would split.

    Example
    -------
    >>> sign_flip([0.01, 0.012, 0.009])
    (0.25, 0.25, 'exact')
    """
    d = np.asarray(d, dtype=float)
    n = len(d)
    if n == 0:
        return np.nan, np.nan, ""
    observed = abs(d.sum())
    tol = 1e-9 * max(float(np.abs(d).sum()), np.finfo(float).tiny)
    if n <= EXACT_MAX_PAIRS:
        bits = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
        hits = int((np.abs((1 - 2 * bits) @ d) >= observed - tol).sum())
        return hits / 2**n, 2.0 / 2**n, "exact"
    signs = np.random.default_rng(0).choice([-1.0, 1.0], size=(MONTE_CARLO_DRAWS, n))
    hits = int((np.abs(signs @ d) >= observed - tol).sum())
    draws = MONTE_CARLO_DRAWS
    return (1 + hits) / (1 + draws), 1.0 / (1 + draws), f"Monte Carlo, {draws:,} sign vectors"

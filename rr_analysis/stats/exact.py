"""The exact paired sign-flip test: no normality, no df, and a floor that says how little 3 seeds can show."""

from __future__ import annotations

import math

import numpy as np

from rr_analysis.numbers import fixed

__all__ = ["sign_flip", "monte_carlo_sign_flip", "EXACT_MAX_PAIRS", "MONTE_CARLO_DRAWS", "NORMAL_MAX_ERROR"]

EXACT_MAX_PAIRS = 16  # 2^16 sign vectors enumerated at most; more pairs draw random sign vectors instead
MONTE_CARLO_DRAWS = 20_000
NORMAL_MAX_ERROR = 0.01  # the normal limit replaces drawing once its Berry-Esseen error bound is this small
_CHUNK = 1 << 20  # sign matrix entries drawn at once: 8 MiB, whatever the number of pairs


def sign_flip(d) -> tuple[float, float, str]:
    """Two-sided sign-flip (permutation) test that the seed-matched differences `d` are centred on 0.

    Parameters
    ----------
    d
        The differences baseline - Review over the seeds both arms ran.

    Returns
    -------
    (p, floor, method): the p-value, the smallest p this many pairs can give, and ``"exact"`` or
    ``"Monte Carlo, N sign vectors"`` or ``"normal approximation, N pairs"``; (NaN, NaN, "") when there
    is no pair.

    Notes
    -----
    Under H0 each difference is as likely to be +d_s as -d_s (exchangeability of the two variants within a
    seed). The statistic is |sum_s e_s d_s|; p is the share of the 2^n sign vectors e whose statistic
    reaches the observed one (the identity and its mirror always do, hence the floor 2 / 2^n: 0.25 with 3
    seeds, 0.5 with 2, whatever the gap). Above `EXACT_MAX_PAIRS` pairs, `MONTE_CARLO_DRAWS` random sign
    vectors (seed 0, drawn in blocks of bounded memory) give p = (1 + hits) / (1 + draws) and floor
    1 / (1 + draws). Drawing costs draws x pairs per cell (a 10^6-row sweep: minutes), while the
    statistic's permutation distribution is a sum of n independent +-d_s of variance V = sum d_s^2, whose
    CDF is within B = 0.56 sum |d_s|^3 / V^(3/2) of the normal one (Berry-Esseen, Shevtsova's constant for
    non-identical terms). Once B <= `NORMAL_MAX_ERROR` (about 3,000 pairs of even size; never while one
    pair dominates) p = erfc(|sum d| / sqrt(2 V)), within 2 B of the exact p, and the floor stays the exact
    2 / 2^n (0 in floating point). A relative tolerance of 1e-9 counts ties that rounding would split.

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
    variance = d @ d
    if variance > 0 and 0.56 * (np.abs(d) ** 3).sum() / variance**1.5 <= NORMAL_MAX_ERROR:
        p = math.erfc(observed / math.sqrt(2 * variance))
        return p, 2.0 ** (1 - n), f"normal approximation, {fixed(n, 0, grouped=True)} pairs"
    return monte_carlo_sign_flip(d, observed - tol)


def monte_carlo_sign_flip(d, reach: float) -> tuple[float, float, str]:
    """The sign-flip test by drawing: `sign_flip`'s method above `EXACT_MAX_PAIRS` pairs.

    Parameters
    ----------
    d
        The seed-matched differences.
    reach
        The |statistic| a sign vector must reach to count (`sign_flip` passes |sum d| less its tie tolerance).

    Returns
    -------
    (p, floor, method) as `sign_flip` returns them, method ``"Monte Carlo, N sign vectors"``.

    Notes
    -----
    `MONTE_CARLO_DRAWS` random sign vectors e (seed 0, drawn in blocks of bounded memory); with hits the
    number of them whose |sum_s e_s d_s| >= `reach`, p = (1 + hits) / (1 + draws) and floor 1 / (1 + draws).
    `sign_flip` uses the normal limit instead where it is close enough; this draws on any `d`, to check it.

    Example
    -------
    >>> monte_carlo_sign_flip(np.full(30, 0.01), 0.3 - 1e-12)  # only all-equal signs reach: 2 in 2^30
    (4.999750012499375e-05, 4.999750012499375e-05, 'Monte Carlo, 20,000 sign vectors')
    """
    d = np.asarray(d, dtype=float)
    rng, draws, hits = np.random.default_rng(0), MONTE_CARLO_DRAWS, 0
    block = max(1, _CHUNK // len(d))
    for start in range(0, draws, block):
        signs = rng.integers(0, 2, size=(min(block, draws - start), len(d)), dtype=np.int8)
        hits += int((np.abs((1 - 2 * signs.astype(float)) @ d) >= reach).sum())
    return (
        (1 + hits) / (1 + draws),
        1.0 / (1 + draws),
        f"Monte Carlo, {fixed(draws, 0, grouped=True)} sign vectors",
    )

"""Judging one reported number: recomputing its statistic from the data, its rounding interval, the
statcheck-style verdict (consistent, only by rounding, value error, decision error), GRIM for means, and
the verdicts of the claims that are about a pattern (growth, emergence, no advantage, budget).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from rr_analysis.claims.reported import DATA_DECIMALS, Reported
from rr_analysis.comparison import ALPHA
from rr_analysis.numbers import significant

__all__ = [
    "recompute",
    "judge",
    "grim_possible",
    "VERDICTS",
    "NOT_RUN",
    "primary_verdict",
    "grows_verdict",
    "equivalence_verdict",
    "budget_verdict",
]


CONSISTENT, BY_ROUNDING = "consistent", "consistent only by rounding"
VALUE_ERROR, DECISION_ERROR = "value error", "decision error"
VERDICTS: tuple[str, ...] = (CONSISTENT, BY_ROUNDING, VALUE_ERROR, DECISION_ERROR)
NOT_RUN = "n/a: the test does not run on these data (see `rr analyze table` for the reason)"


def statistic_of(test: str, sided: str) -> Callable[[list[np.ndarray]], tuple[float, float, float]]:
    """(statistic, df, p) of one cell's arrays: Welch t (baseline, Review), paired t, or the mean."""
    from scipy import stats

    alt = {"two-sided": "two-sided", "greater": "greater", "less": "less"}[sided]
    if test == "mean":
        return lambda a: (float(np.mean(a[0])), math.nan, math.nan)
    fn = (
        stats.ttest_rel if test == "paired" else lambda b, r, **k: stats.ttest_ind(b, r, equal_var=False, **k)
    )

    def t_test(a: list[np.ndarray]) -> tuple[float, float, float]:
        res = fn(a[0], a[1], alternative=alt)
        return float(res.statistic), float(res.df), float(res.pvalue)

    return t_test


def recompute(
    f: Callable[[list[np.ndarray]], float], arrays: list[np.ndarray], decimals: int = DATA_DECIMALS
):
    """f on the data, and its range when each input may be off by its own rounding (half a unit of `decimals`).

    Notes
    -----
    Each value y_i stands for [y_i - h, y_i + h], h = 0.5 10^-decimals. The range is f at the two corners
    y +/- h sign(df/dy_i), the signs from central differences: exact for f monotone in each input (a mean),
    first-order otherwise (t, p: their curvature over h is negligible next to the seed SD).

    Example
    -------
    >>> v, lo, hi = recompute(lambda a: float(np.mean(a[0])), [np.array([1.0, 2.0])])
    >>> (v, round(lo, 6), round(hi, 6))
    (1.5, 1.49995, 1.50005)
    """
    h = 0.5 * 10.0**-decimals
    sizes = [len(a) for a in arrays]
    flat = np.concatenate(arrays).astype(float)

    def at(y: np.ndarray) -> float:
        return f(np.split(y, np.cumsum(sizes)[:-1]))

    signs = np.array([np.sign(at(flat + h * e) - at(flat - h * e)) for e in np.eye(len(flat))])
    ends = sorted([at(flat + h * signs), at(flat - h * signs)])
    return at(flat), ends[0], ends[1]


def claims_significant(rep: Reported, dof: float, sided: str) -> bool | None:
    """The significance at ALPHA that the reported number states, or None where it states none."""
    if rep.statistic == "t" and rep.relation == "=" and np.isfinite(dof):
        from scipy import stats

        p = {
            "two-sided": 2 * stats.t.sf(abs(rep.value), dof),
            "greater": stats.t.sf(rep.value, dof),
            "less": stats.t.cdf(rep.value, dof),
        }[sided]
        return bool(p < ALPHA)
    if rep.statistic != "p":
        return None
    if rep.relation == "=":
        return rep.value < ALPHA
    if rep.relation in ("<", "<=") and rep.value <= ALPHA:
        return True
    return False if rep.relation in (">", ">=") and rep.value >= ALPHA else None


def judge(
    rep: Reported, value: float, low: float, high: float, claimed: bool | None, found: bool | None
) -> str:
    """statcheck's judgement of one reported number against its recomputed value.

    Parameters
    ----------
    rep
        The reported number (`parse_reported`).
    value, low, high
        The recomputed value and its range within the data's own rounding (`recompute`).
    claimed, found
        The significance at 0.05 the report states and the one recomputed (None where there is none).

    Returns
    -------
    "consistent" (the value lies in the reported interval), "consistent only by rounding" (only some value
    within the data's rounding does), "decision error" (neither, and the significance verdict flips) or
    "value error" (neither, the verdict stands).

    Example
    -------
    >>> from rr_analysis.claims.reported import parse_reported
    >>> judge(parse_reported("t=3.3"), 3.28, 3.27, 3.29, True, True)
    'consistent'
    >>> judge(parse_reported("0.07", "p"), 0.083, 0.082, 0.084, False, False)
    'value error'
    """
    if np.isnan(value):
        return NOT_RUN
    if rep.holds(value):
        return CONSISTENT
    a, b = rep.interval()
    if rep.holds(low) or rep.holds(high) or (low < a and high >= b):
        return BY_ROUNDING
    return DECISION_ERROR if None not in (claimed, found) and claimed != found else VALUE_ERROR


def grim_possible(rep: Reported, n: int, decimals: int = DATA_DECIMALS) -> bool:
    """GRIM: can a mean of `n` values written at `decimals` decimals round to the reported mean?

    Notes
    -----
    With values on a grid of u = 10^-decimals, a mean is S u / n for an integer S; the reported mean m at d
    decimals stands for [m - h, m + h), h = 0.5 10^-d. Possible iff an integer S lies in [n (m - h)/u,
    n (m + h)/u) (Brown & Heathers 2017, for integer data; here u is the sweep file's last decimal). When d
    <= decimals every mean of n >= 1 values is possible: the check can only fail for means written finer
    than the data.

    Example
    -------
    >>> from rr_analysis.claims.reported import parse_reported
    >>> grim_possible(parse_reported("mean=1.68912"), 3)
    False
    """
    low, high = rep.interval()
    u = 10.0**-decimals
    first = math.ceil(round(n * low / u, 9))
    return first < round(n * high / u, 9)


def primary_verdict(adjusted_p: float, claimed: bool | None, alpha: float = ALPHA) -> str:
    """What the primary test (seed-paired, adjusted over its family) says of a claim's significance.

    Example
    -------
    >>> primary_verdict(0.009, False)
    'understated: significant under the primary test'
    """
    if np.isnan(adjusted_p):
        return NOT_RUN
    sig = adjusted_p < alpha
    if claimed is None:
        return "significant under the primary test" if sig else "not significant under the primary test"
    if claimed:
        return "holds under the primary test" if sig else "not shown: not significant under the primary test"
    return (
        "understated: significant under the primary test"
        if sig
        else "supported: not significant under the primary test"
    )


def grows_verdict(falls: Sequence[str]) -> str:
    """ "the gap grows across every size", given the consecutive pairs of sizes where it falls.

    Example
    -------
    >>> grows_verdict([])
    'supported'
    """
    return "not supported: the gap falls between some sizes" if len(falls) else "supported"


def equivalence_verdict(tost_p: Sequence[float], margin: float, alpha: float = ALPHA) -> str:
    """ "no advantage": every cell's TOST rejects |gap| >= margin (intersection-union, no adjustment).

    Example
    -------
    >>> equivalence_verdict([0.01, 0.2], 0.005)
    'not shown: equivalence within ±0.005 fails in 1 of 2 cells'
    """
    passed = np.asarray(tost_p, dtype=float) < alpha
    if passed.all():
        return f"supported: equivalent within ±{significant(margin)} in every cell"
    return f"not shown: equivalence within ±{significant(margin)} fails in {int((~passed).sum())} of {len(passed)} cells"


def budget_verdict(across_sizes: str, differs_within_a_size: bool) -> str:
    """ "identical token budget": tokens per run, across sizes and between the variants of one size.

    Parameters
    ----------
    across_sizes
        How the tokens per run differ across sizes, in words ("" where they do not).
    differs_within_a_size
        Whether the variants of one size trained on different numbers of tokens.

    Example
    -------
    >>> budget_verdict("tokens per run 131M at 60M-320M, 98.3M at 1B", False)
    'contradicted across sizes: tokens per run 131M at 60M-320M, 98.3M at 1B; identical within each size only'
    """
    if differs_within_a_size:
        return "not supported"
    return (
        f"contradicted across sizes: {across_sizes}; identical within each size only"
        if across_sizes
        else "supported"
    )

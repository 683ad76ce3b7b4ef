"""The one way rr writes a number in words and tables: fixed decimals, rounded half away from zero.

Every view (tables, claims, report, notes), every command's table and the numbers the docs quote go through
`fixed`, `p_value` and `significant`, so one value never prints two ways. A float is first cut to 12
significant digits: the float noise of a difference of 4-decimal losses (0.00405 held as
0.0040499999999999998 or 0.0040500000000001) then rounds the same way, as the decimal it stands for.

A value that is not there is `missing` (None, NaN, pandas' NA) and reads as one of two spellings, one per
context: `NA` ("n/a") where a statistic does not exist (the analysis views, claims, report), `BLANK` ("-")
where a run or a plan has no such value (the training commands' plan and results tables). Standard library
only.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

__all__ = [
    "fixed",
    "p_value",
    "significant",
    "percent",
    "percent_above",
    "count",
    "duration",
    "missing",
    "cut",
    "NA",
    "BLANK",
    "P_FLOOR",
]

P_FLOOR = 1e-4  # a p below this prints as "<0.0001": four decimals cannot tell it from zero
NA = "n/a"  # a statistic that does not exist (views, claims, report)
BLANK = "-"  # a value a run or a plan does not have (the training commands' tables)
EXACT_DIGITS = 12  # a computed float's significant digits that stand for a decimal; past them: float noise


def missing(v: object) -> bool:
    """Whether `v` is no value: None, a NaN (Python's or numpy's) or pandas' NA; the one test rr uses.

    Example
    -------
    >>> [missing(v) for v in (None, float("nan"), 0.0, "n/a")]
    [True, True, False, False]
    """
    if v is None:
        return True
    try:
        return bool(math.isnan(v))  # type: ignore[arg-type]
    except TypeError:  # not a number: pandas' NA (whose truth is ambiguous), or text
        return type(v).__name__ == "NAType"


def cut(v: float) -> float:
    """`v` cut to `EXACT_DIGITS` significant digits: the decimal a computed value stands for, so that a
    value on the edge of a rounding interval is judged the same whichever way float noise moved it.

    Example
    -------
    >>> cut(1.5041499999999999), cut(1.5041500000000002), cut(0.0040499999999999998)
    (1.50415, 1.50415, 0.00405)
    """
    return float(f"{v:.{EXACT_DIGITS}g}")


def fixed(
    v: float | None, decimals: int, *, sign: bool = False, grouped: bool = False, none: str = NA
) -> str:
    """`v` with `decimals` decimals, half away from zero; `none` when missing; a "+" before positives if
    `sign`; thousands separated by commas if `grouped`.

    Examples
    --------
    >>> fixed(0.0040499999999999998, 4), fixed(0.00405000000000011, 4), fixed(0.0774555, 3)
    ('0.0041', '0.0041', '0.077')
    >>> fixed(-0.00865, 4, sign=True), fixed(0.0164, 4, sign=True), fixed(float("nan"), 2)
    ('-0.0087', '+0.0164', 'n/a')
    >>> fixed(59470848, 0, grouped=True), fixed(None, 1, none=BLANK)
    ('59,470,848', '-')
    """
    if missing(v):
        return none
    if math.isinf(v):
        return format(v, "+" if sign else "")
    # a count keeps every digit; a float is cut to the decimal it stands for (`cut`)
    exact = Decimal(v) if isinstance(v, int) else Decimal(f"{v:.{EXACT_DIGITS}g}")
    q = exact.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    return format(q + 0, ("+" if sign else "") + ("," if grouped else ""))  # + 0: -0.0000 is 0.0000


def significant(v: float | None, digits: int = 6, *, scientific: bool = False, none: str = NA) -> str:
    """`v` to `digits` significant digits, in the shorter of fixed and scientific notation (Python's "g"), or
    always scientific; `none` when missing. For values whose size varies over decades (a p in prose, a chi2,
    a variance ratio).

    Example
    -------
    >>> significant(0.0012345, 3), significant(5e-07, 2), significant(0.05), significant(3e-5, 2, scientific=True)
    ('0.00123', '5e-07', '0.05', '3.0e-05')
    """
    return none if missing(v) else format(v, f".{digits - 1}e" if scientific else f".{digits}g")


def p_value(v: float | None) -> str:
    """A p-value: four decimals, "<0.0001" below `P_FLOOR`, "n/a" when missing.

    Examples
    --------
    >>> p_value(0.0774555), p_value(3e-7), p_value(None)
    ('0.0775', '<0.0001', 'n/a')
    """
    if missing(v):
        return NA
    return "<0.0001" if v < P_FLOOR else fixed(v, 4)


def percent(v: float, decimals: int = 0) -> str:
    """A fraction as a percentage with fixed decimals (`fixed`).

    Example
    -------
    >>> percent(0.8), percent(0.025, 1)
    ('80%', '2.5%')
    """
    return f"{fixed(100 * v, decimals)}%"


def percent_above(value: float, limit: float) -> str:
    """`value` as a percentage with the decimals it needs to read above `limit` (2.04%, not 2.0%, over 2%): a
    figure said to exceed a threshold must not print as the threshold.

    Example
    -------
    >>> percent_above(0.0204, 0.02), percent_above(0.031, 0.02)
    ('2.04%', '3.1%')
    """
    decimals = 1
    while round(value * 100, decimals) <= limit * 100 and decimals < 6:
        decimals += 1
    return f"{value:.{decimals}%}"


def count(v: float | None, digits: int = 3) -> str:
    """A large count (tokens, parameters) to `digits` significant digits with K, M, B or T: 131072000 is
    "131M". `NA` when missing.

    Example
    -------
    >>> count(131072000), count(98304000), count(6.0e10), count(512)
    ('131M', '98.3M', '60B', '512')
    """
    if missing(v):
        return NA
    v = float(f"{v:.{digits}g}")  # rounded first, so 999.6M reads 1B
    for scale, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(v) >= scale:
            return f"{significant(v / scale, digits)}{unit}"
    return significant(v, digits)


def duration(minutes: float) -> str:
    """Minutes in the unit a reader plans with: seconds under a minute (a tiny run's "about 0.0 minutes"
    said nothing), minutes up to 90, hours up to two days, then days.

    Example
    -------
    >>> duration(0.5), duration(12.34), duration(90), duration(48 * 60)
    ('30 seconds', '12.3 minutes', '1.5 hours', '2.0 days')
    """
    if minutes < 1:
        seconds = round(minutes * 60)
        return f"{seconds} seconds" if seconds >= 1 else "under a second"
    if minutes < 90:
        return f"{fixed(minutes, 1)} minutes"
    if minutes < 48 * 60:
        return f"{fixed(minutes / 60, 1)} hours"
    return f"{fixed(minutes / 1440, 1, grouped=True)} days"

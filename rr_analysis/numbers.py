"""The one way rr writes a number in words and tables: fixed decimals, rounded half away from zero.

Every view (tables, claims, report, notes) and the numbers the docs quote go through `fixed` and `p_value`,
so one value never prints two ways. A float is first cut to 12 significant digits: the float noise of a
difference of 4-decimal losses (0.00405 held as 0.0040499999999999998 or 0.0040500000000001) then rounds the
same way, as the decimal it stands for. Standard library only.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

__all__ = ["fixed", "p_value", "P_FLOOR"]

P_FLOOR = 1e-4  # a p below this prints as "<0.0001": four decimals cannot tell it from zero


def _missing(v: object) -> bool:
    try:
        return v is None or math.isnan(v)  # type: ignore[arg-type]
    except TypeError:  # pandas' NA and other missing markers
        return True


def fixed(v: float | None, decimals: int, *, sign: bool = False) -> str:
    """`v` with `decimals` decimals, half away from zero; "n/a" when missing; a "+" before positives if `sign`.

    Examples
    --------
    >>> fixed(0.0040499999999999998, 4), fixed(0.00405000000000011, 4), fixed(0.0774555, 3)
    ('0.0041', '0.0041', '0.077')
    >>> fixed(-0.00865, 4, sign=True), fixed(0.0164, 4, sign=True), fixed(float("nan"), 2)
    ('-0.0087', '+0.0164', 'n/a')
    """
    if _missing(v):
        return "n/a"
    if math.isinf(v):
        return format(v, "+" if sign else "")
    q = Decimal(f"{v:.12g}").quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    return format(q + 0, "+" if sign else "")  # + 0 turns -0.0000 into 0.0000


def p_value(v: float | None) -> str:
    """A p-value: four decimals, "<0.0001" below `P_FLOOR`, "n/a" when missing.

    Examples
    --------
    >>> p_value(0.0774555), p_value(3e-7), p_value(None)
    ('0.0775', '<0.0001', 'n/a')
    """
    if _missing(v):
        return "n/a"
    return "<0.0001" if v < P_FLOOR else fixed(v, 4)

"""Each variant's colour: its registered one (Okabe-Ito for rr's own, colour-blind safe and fixed across every
figure), else one of the extra colours (`EXTRA_COLOURS`), never two of one figure alike while they last.
"""

from __future__ import annotations

from collections.abc import Iterable

from rr_core.variants import VARIANTS

__all__ = ["EXTRA_COLOURS", "palette", "colour"]


# Colours of variants that bring none (unregistered, or registered without one): Paul Tol's "muted"
# qualitative scheme (https://personal.sron.nl/~pault/), colour-blind safe and distinct from Okabe-Ito's.
EXTRA_COLOURS: tuple[str, ...] = (
    "#CC6677",
    "#332288",
    "#DDCC77",
    "#117733",
    "#88CCEE",
    "#882255",
    "#44AA99",
    "#999933",
    "#AA4499",
)


def palette(names: Iterable[str]) -> dict[str, str]:
    """The colour of each variant in one figure: its registered colour, or an extra one.

    Variants without a registered colour take `EXTRA_COLOURS` in sorted order of their names, skipping any
    colour a registered variant of the figure holds, so no two variants of a figure share a colour while
    the extras last (past them the extras repeat, still never a registered variant's colour).

    Example
    -------
    >>> palette(["standard", "myrule", "another"])
    {'standard': '#009E73', 'another': '#CC6677', 'myrule': '#332288'}
    """
    names = list(dict.fromkeys(names))
    fixed = {n: VARIANTS[n].colour for n in names if n in VARIANTS and VARIANTS[n].colour}
    free = [c for c in EXTRA_COLOURS if c.upper() not in {f.upper() for f in fixed.values()}]
    free = free or list(EXTRA_COLOURS)
    rest = sorted(n for n in names if n not in fixed)
    return {**fixed, **{n: free[i % len(free)] for i, n in enumerate(rest)}}


def colour(name: str) -> str:
    """Colour for a variant shown alone; in a figure of several, use `palette` so extras do not collide."""
    return palette([name])[name]

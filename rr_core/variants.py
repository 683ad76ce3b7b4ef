"""The registry of residual variants: names, roles and colours. The one source of truth.

The model maps each name to its residual rule (rr_model.model.RESIDUALS, and the rules plugins register
through `rr_core.plugins.register_residual`); analysis, plots and the CLI read names, roles and colours
from here. Variants are open: a sweep file may hold any name that `VARIANT_NAME` accepts; a name nobody
registered is labelled by itself and coloured from `EXTRA_COLOURS`. Torch-free on purpose.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "Variant",
    "VARIANTS",
    "REFERENCE",
    "BASELINES",
    "COMPARED",
    "NAMES",
    "VARIANT_NAME",
    "VARIANT_RULE",
    "EXTRA_COLOURS",
    "register",
    "colour",
    "palette",
    "label",
    "matched",
    "order_key",
    "nearest",
    "variant_problem",
    "unknown_variant",
]


@dataclass(frozen=True)
class Variant:
    name: str
    label: str  # for legends and tables
    colour: str | None  # Okabe-Ito palette for rr's own: colour-blind safe, fixed across every figure
    matched: bool  # widened in steps of n_head to Review's parameter count (paper's baselines)
    module: str | None = None  # the plugin module that registered it; None for rr's own


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("review_neutral", "Review", "#0072B2", False),
        Variant("highway", "Highway", "#E69F00", True),
        Variant("standard", "Standard", "#009E73", True),
        Variant("review_convex", "Review (convex)", "#D55E00", False),
        Variant("layerscale", "LayerScale", "#CC79A7", False),
        Variant("rezero", "ReZero", "#56B4E9", False),
    )
}

NAMES: tuple[str, ...] = tuple(VARIANTS)  # rr's own variants; plugins add theirs to VARIANTS after these
REFERENCE = "review_neutral"  # the variant every gap is measured against
BASELINES: tuple[str, ...] = ("highway", "standard")  # the paper's parameter-matched baselines
COMPARED: tuple[str, ...] = (REFERENCE, *BASELINES)  # one seed of the sweep trains these three

# A variant name a sweep file may hold: ASCII only, so that a look-alike ('hіghway' with a Cyrillic i,
# 'Highway', 'high way') is refused rather than analysed as a variant of its own.
VARIANT_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}", re.ASCII)
VARIANT_RULE = "a variant name: a lower-case ASCII letter, then at most 39 lower-case letters, digits or _"

# Colours of variants that bring none (unregistered, or registered without one): Paul Tol's "muted"
# qualitative scheme (https://personal.sron.nl/~pault/), colour-blind safe and distinct from Okabe-Ito's.
EXTRA_COLOURS: tuple[str, ...] = (
    "#CC6677", "#332288", "#DDCC77", "#117733", "#88CCEE", "#882255", "#44AA99", "#999933", "#AA4499",
)  # fmt: skip


def register(variant: Variant) -> None:
    """Add a variant to the registry (`rr_core.plugins.register_residual` is the way in for a rule)."""
    VARIANTS[variant.name] = variant


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


def label(name: str) -> str:
    """A variant's name for legends and tables; an unknown name stands as it is, so new variants still show."""
    v = VARIANTS.get(name)
    return v.label if v else name


def matched(name: str) -> bool:
    """Whether a variant is widened to Review's parameter count (False for a name nobody registered)."""
    v = VARIANTS.get(name)
    return bool(v and v.matched)


def order_key(name: str) -> tuple[int, str]:
    """Sort key for variants: registry order first (rr's own, then plugins'), then other names by name."""
    order = list(VARIANTS)
    return (order.index(name), "") if name in VARIANTS else (len(order), name)


def _folded(name: str) -> str:
    """`name` as a look-alike of a registered name reads: NFKC, case folded, spaces and hyphens gone."""
    return re.sub(r"[\s\-]+", "", unicodedata.normalize("NFKC", name).casefold())


def nearest(name: str) -> str | None:
    """The registered variant `name` most looks like ('Highway', 'high way', 'hіghway' -> highway), or None."""
    folded = _folded(name)
    if folded in VARIANTS:
        return folded
    close = difflib.get_close_matches(folded, list(VARIANTS), 1, 0.6)
    return close[0] if close else None


def variant_problem(name: str) -> str | None:
    """Why `name` may not stand in a sweep file's variant column, naming the nearest registered name."""
    if VARIANT_NAME.fullmatch(name):
        return None
    near = nearest(name)
    return f"must be {VARIANT_RULE}" + (f" (did you mean {near}?)" if near else "")


def unknown_variant(name: str) -> str:
    """What to say of a variant that has no residual rule to train: the nearest name and the registered."""
    near = nearest(name)
    hint = f" (did you mean {near}?)" if near and near != name else ""
    return f"unknown variant {name!r}{hint}; registered: {', '.join(VARIANTS)}"

"""The registry of residual variants: names, roles and colours. The one source of truth.

The model maps each name to its residual rule (rr_model.model.RESIDUALS); analysis, plots and the CLI
read names, roles and colours from here. Torch-free on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Variant", "VARIANTS", "REFERENCE", "BASELINES", "COMPARED", "NAMES", "colour", "label"]


@dataclass(frozen=True)
class Variant:
    name: str
    label: str  # for legends and tables
    colour: str  # Okabe-Ito palette: colour-blind safe, fixed per variant across every figure
    matched: bool  # widened in steps of n_head to Review's parameter count (paper's baselines)


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

NAMES: tuple[str, ...] = tuple(VARIANTS)
REFERENCE = "review_neutral"  # the variant every gap is measured against
BASELINES: tuple[str, ...] = ("highway", "standard")  # the paper's parameter-matched baselines
COMPARED: tuple[str, ...] = (REFERENCE, *BASELINES)  # one seed of the sweep trains these three


def colour(name: str) -> str:
    """Colour for a variant; unknown names get a neutral grey so new variants still plot."""
    v = VARIANTS.get(name)
    return v.colour if v else "#7F7F7F"


def label(name: str) -> str:
    """A variant's name for legends and tables; an unknown name stands as it is, so new variants still show."""
    v = VARIANTS.get(name)
    return v.label if v else name

"""The views `rr analyze` offers, by the name each goes by on the command line.

Adding a view is one module of this package that defines it as ``VIEW`` (an `AnalysisView`) and one line in
`MODULES` below; `register_view` adds one from outside rr (a notebook, a test). `rr analyze --help` lists the
views in this order, with the summary each gives.
"""

from __future__ import annotations

import importlib

from rr_analysis.views.analysis_view import AnalysisView

__all__ = ["MODULES", "VIEWS", "register_view"]

# One line per view: the module that defines it as VIEW, in the order the help lists them.
MODULES: tuple[str, ...] = (
    "rr_analysis.views.table_view",
    "rr_analysis.views.emergence_view",
    "rr_analysis.views.power_view",
    "rr_analysis.views.notes_view",
    "rr_analysis.views.equivalence_view",
    "rr_analysis.views.claims_view",
    "rr_analysis.views.reproduction_view",
    "rr_analysis.views.pool_check_view",
    "rr_analysis.views.forecast_view",
    "rr_analysis.views.confirm_view",
    "rr_analysis.views.fits_view",
    "rr_analysis.views.curves_view",
    "rr_analysis.views.card_view",
    "rr_analysis.views.tuning_view",
    "rr_analysis.views.seeds_view",
)

VIEWS: dict[str, AnalysisView] = {}  # name on the command line -> the view


def register_view(view: AnalysisView) -> None:
    """Make `view` one of `rr analyze`'s, under its name.

    Raises
    ------
    ValueError
        A view of that name is registered already, or the name is not a command-line word (lower-case
        letters, digits and -, starting with a letter).
    """
    name = view.name
    if not (name[:1].isalpha() and name.islower() and all(c.isalnum() or c == "-" for c in name)):
        raise ValueError(
            f"a view's name is a command-line word (lower-case letters, digits, -), not {name!r}"
        )
    if name in VIEWS:
        raise ValueError(f"a view named {name!r} is registered already ({VIEWS[name].compute.__module__})")
    VIEWS[name] = view


for _module in MODULES:
    register_view(importlib.import_module(_module).VIEW)

"""The closed sets of values that options share, spelled once for every command.

Each mirrors a tuple of the library (named beside it; tests/test_cli_model.py checks they agree). They are
spelled here, not imported, because command modules load only typer and the standard library at import
time: `rr --help` must not load pandas to list the choices.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["Format", "Adjust", "Stat"]


class Format(str, Enum):  # rr_analysis.tables.render.FORMATS
    text = "text"
    markdown = "markdown"
    latex = "latex"
    csv = "csv"
    json = "json"


class Adjust(str, Enum):  # rr_analysis.stats.gap_tests.ADJUST_METHODS
    holm = "holm"
    bonferroni = "bonferroni"
    fdr_bh = "fdr_bh"
    none = "none"


# rr_analysis.figures.estimates.STATS; the declared primary is rr_analysis.stats.gap_tests.PRIMARY_TEST
class Stat(str, Enum):
    welch = "welch"
    paired = "paired"
    mixed = "mixed"

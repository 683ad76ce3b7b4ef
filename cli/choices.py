"""The closed sets of values that options share, as the choices typer lists: each made from the library's
own tuple (light homes: `rr_analysis.comparison` and `rr_analysis.tables.grid` load no pandas), so a new
format, test or adjustment there is a choice here with no line of this file.
"""

from __future__ import annotations

from enum import Enum

from rr_analysis.comparison import ADJUST_METHODS, TESTS
from rr_analysis.tables.grid import FORMATS

__all__ = ["Format", "Adjust", "Stat"]


def _choices(name: str, values: tuple[str, ...]) -> type[Enum]:
    """A str Enum whose members are `values`, each named and valued as itself (typer's choices)."""
    return Enum(name, [(v, v) for v in values], type=str)


Format = _choices("Format", FORMATS)  # the output formats of tables and records
Adjust = _choices("Adjust", ADJUST_METHODS)  # multiple-testing adjustments of a family
Stat = _choices("Stat", TESTS)  # the per-size tests; the declared primary is PRIMARY_TEST

"""rr's own error classes: the mistakes a user can fix, as opposed to bugs.

The CLI turns these (and OSErrors about paths) into one `rr: error:` paragraph and exit 2; any other
exception is a bug in rr and keeps its traceback. Each class also derives from ValueError so notebook code
that catches ValueError keeps working.
"""

from __future__ import annotations

__all__ = ["RRError", "InputError", "RecipeError", "PlotError"]


class RRError(Exception):
    """Base of every error rr raises on purpose: bad input, not a bug."""


class InputError(RRError, ValueError):
    """An option, argument or setting that rr cannot use (unknown size, bad seed list, no such device)."""


class RecipeError(RRError, ValueError):
    """A run that would differ from the recipe of the rows it is written beside."""


class PlotError(RRError, ValueError):
    """Data that lacks what a figure needs, or a path a figure cannot be written to."""

"""rr's own error classes: the mistakes a user can fix, as opposed to bugs.

The CLI turns these (and OSErrors about paths) into one `rr: error:` paragraph and exit 2; any other
exception is a bug in rr and keeps its traceback. Each class also derives from ValueError so notebook code
that catches ValueError keeps working. A `Note` is not an error: a warning (Python's `warnings`) of
something rr read and set aside, such as a torn line it skipped, which the CLI prints as one `rr: note:`.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterable, Iterator

__all__ = [
    "RRError",
    "InputError",
    "RecipeError",
    "PlotError",
    "StoppedElsewhere",
    "Interrupted",
    "InterruptSaid",
    "Note",
    "notes_said",
    "nearest",
    "did_you_mean",
]

CUTOFF = 0.6  # difflib's similarity ratio a name must reach to be offered (difflib's own default)


class RRError(Exception):
    """Base of every error rr raises on purpose: bad input, not a bug."""


class InputError(RRError, ValueError):
    """An option, argument or setting that rr cannot use (unknown size, bad seed list, no such device)."""


class RecipeError(RRError, ValueError):
    """A run that would differ from the recipe of the rows it is written beside."""


class PlotError(RRError, ValueError):
    """Data that lacks what a figure needs, or a path a figure cannot be written to."""


class Interrupted(RRError):
    """A command the user stopped (Ctrl-C) mid-way; its message says what was kept and how to go on. The CLI
    prints it as it is and exits 130, as a shell does for SIGINT."""


class StoppedElsewhere(RRError):
    """This process stopped because another process of the same run failed and reported why (e.g. a sharded
    run's process that ran out of memory): the CLI exits with an error and no message of its own, so a run
    of many processes ends with one line."""


class InterruptSaid(KeyboardInterrupt):
    """An interrupt (Ctrl-C) that a child process has said already, with what it keeps for the next run: the
    command stops (exit 130) without a line of its own, so one interrupt is one line."""


def nearest(name: str, names: Iterable[str]) -> str | None:
    """The one of `names` that `name` most looks like (difflib's ratio at least `CUTOFF`), or None: the one
    matching behind every "did you mean" rr says.

    Example
    -------
    >>> nearest("stpes", ["steps", "seed", "size"]), nearest("zzz", ["steps"])
    ('steps', None)
    """
    import difflib  # here: only a refusal pays for it

    close = difflib.get_close_matches(name, list(names), 1, CUTOFF)
    return close[0] if close else None


def did_you_mean(near: str | None) -> str:
    """The one spelling of a hint at a nearest name (`nearest`): " (did you mean NAME?)", or "" for None.

    Example
    -------
    >>> f"unknown size '15OM'{did_you_mean('150M')}"
    "unknown size '15OM' (did you mean 150M?)"
    """
    return f" (did you mean {near}?)" if near else ""


class Note(UserWarning):
    """Something rr set aside while reading and goes on without (a torn line skipped): said, not raised."""


@contextlib.contextmanager
def notes_said() -> Iterator[None]:
    """Within the block, each distinct `Note` is printed once to stderr as one ``rr: note: ...`` line (the
    command line's and a sweep child's way of saying them); other warnings show as Python shows them."""
    shown: set[str] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("always", Note)
        default = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None) -> None:
            if not issubclass(category, Note):
                default(message, category, filename, lineno, file, line)
            elif str(message) not in shown:
                shown.add(str(message))
                print(f"rr: note: {message}", file=sys.stderr, flush=True)

        warnings.showwarning = show
        yield

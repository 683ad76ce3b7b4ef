"""Values a command line gives as comma-separated lists (``--seed 3,4``, ``--at 3B``), read in one place so
a command line and a notebook refuse the same text with the same words. Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable

from rr_core.errors import InputError

__all__ = ["items", "seed_list"]


def items(text: str | None) -> list[str] | None:
    """A comma-separated value's items, stripped; None when not given or empty.

    Example
    -------
    >>> items(" 3B, 7B,,"), items(""), items(None)
    (['3B', '7B'], None, None)
    """
    return [item.strip() for item in text.split(",") if item.strip()] if text else None


def seed_list(given: str | Iterable[str | int] | None, flag: str) -> list[int] | None:
    """Seeds (integers >= 0) given as one comma-separated text or several (texts or numbers); None when none
    are given. Anything else is an InputError naming `flag` and the text as given.

    Example
    -------
    >>> seed_list("3,4", "--seed"), seed_list(["5", 6], "--seed"), seed_list(None, "--seed")
    ([3, 4], [5, 6], None)
    """
    text = given if isinstance(given, str) or given is None else ",".join(map(str, given))
    if not text:
        return None
    if not all(s.isdigit() for s in items(text)):
        raise InputError(f"{flag} {text!r}: expected comma-separated integers >= 0, e.g. 3,4")
    return [int(s) for s in items(text)]

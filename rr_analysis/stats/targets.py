"""Where a forecast is read: a size beyond the sweep (a ladder name or a count such as 3B, with its parameter
count) and the training budget the size-level line assumes there (the sweep's own path of tokens per
parameter, or a budget asked that only a sweep telling size from tokens per parameter can speak for).

`rr_analysis.stats.forecast` reads the line at these sizes; `rr_analysis.stats.confirm` plans runs there, and
`rr_analysis.stats.scaling` predicts each variant's loss there.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rr_analysis.numbers import significant
from rr_analysis.stats.tokens import cell_budgets, per_param, size_and_tokens
from rr_core.errors import InputError
from rr_core.ladder import canonical_size, ladder_sizes, size_sort_key
from rr_core.shapes import model_config
from rr_core.variants import REFERENCE

__all__ = ["forecast_size", "sizes_at", "at_budget", "path_words", "PATH_FACTOR"]

# A budget within this factor of the sweep's own tokens per parameter there is on its path (the published
# budgets lie within 10% of their line; 3B runs at the largest size's 6000 steps train 0.033 against the path's
# 0.032); one further off is another budget, which a sweep of one budget per size cannot speak for
PATH_FACTOR = 2.0


def forecast_size(
    label: str, reference: str = REFERENCE, ladder: str | None = None
) -> tuple[str, float, str]:
    """A forecast size's label, parameter count and where the count comes from.

    Parameters
    ----------
    label
        A ladder size (any case, e.g. ``"1b"``) or a parameter count ``<number><K|M|B>`` above zero.
    reference
        The variant whose parameter count a ladder size stands for.
    ladder
        A ladder file (`rr_core.ladder.load_ladder`) whose sizes are looked up; None: rr's ladder.

    Returns
    -------
    (label in its one spelling, parameter count, ``"ladder"`` or ``"label"``): a ladder size has the exact
    count of `reference` at that shape (`rr_core.shapes.model_config`); any other label its number
    (``"3B"`` is 3e9). InputError, with a sentence, for a label that is neither.

    Example
    -------
    >>> forecast_size("3B"), forecast_size("1b")
    (('3B', 3000000000.0, 'label'), ('1B', 984038400.0, 'ladder'))
    """
    sizes = ladder_sizes(ladder)
    names = {n.lower(): n for n in sizes}
    canon = canonical_size(label) or ""
    name = names.get(label.strip().lower()) or names.get(canon.lower())
    if name is not None:
        return name, float(model_config(name, reference, ladder=ladder).n_params), "ladder"
    if not canon:
        raise InputError(
            f"the forecast size {label!r} is not a size: give a ladder size ({', '.join(sizes)}) or a "
            "parameter count above zero written <number><K|M|B>, such as 3B or 7B"
        )
    return canon, size_sort_key(canon), "label"


def sizes_at(df: pd.DataFrame, at: Sequence[str], reference: str, ladder) -> list[tuple[str, float, str]]:
    """Each forecast size parsed (`forecast_size`), checked against the data's smallest size, in the order
    given, once each."""
    if not at:
        raise InputError("no forecast size: name one or more, such as 3B")
    ref = df[df["variant"] == reference].groupby("size", observed=True)["params_M"].mean() * 1e6
    parsed = list(dict.fromkeys(forecast_size(a, reference, ladder) for a in at))
    for name, n, _ in parsed:
        if len(ref) and n < ref.min():
            raise InputError(
                f"the forecast size {name} ({significant(n, 4)} parameters) is below the smallest size in the data "
                f"({ref.idxmin()}, {significant(ref.min(), 4)}): a forecast reads the line up the ladder, not below it"
            )
    return parsed


def at_budget(
    df: pd.DataFrame, reference: str, tokens_per_param: float | None, at: Sequence[str] = ()
) -> str:
    """What a forecast's line assumes about tokens per parameter, or InputError where a stated budget is one
    the sweep cannot speak for.

    Parameters
    ----------
    df
        `compare`'s rows (a file of several budgets read per cell).
    reference
        The reference, whose tokens and parameter count make each cell's D/N.
    tokens_per_param
        The budget asked for (D/N at every forecast size), or None: the sweep's own path.
    at
        The forecast sizes, named in the refusal.

    Returns
    -------
    "path" (no budget asked: the size-only line, along the sweep's path), "constant" (the sweep's D/N is the
    same in every cell and the one asked, within a factor `PATH_FACTOR`) or "separable" (the cells tell size
    from D/N: the fit on both is read at the budget asked).

    Raises
    ------
    InputError
        A budget asked of a sweep that cannot tell size from tokens per parameter (one budget per size): its
        line runs along the path where D/N falls with N, so the gap at another D/N is not in it; the message
        names the path and the design that could say (`rr analyze confirm --tokens-per-param`).
    """
    if tokens_per_param is None:
        return "path"
    if not (np.isfinite(tokens_per_param) and tokens_per_param > 0):
        raise InputError(f"--tokens-per-param must be a number above 0, got {tokens_per_param!r}")
    budgets = cell_budgets(df, reference)
    reading = size_and_tokens(budgets)
    if reading["separable"]:
        return "separable"
    dn = budgets["tokens_per_param"].to_numpy(float)
    if (
        len(dn)
        and not reading["varies"]
        and abs(np.log10(tokens_per_param / np.median(dn))) <= np.log10(PATH_FACTOR)
    ):
        return "constant"
    where = ", ".join(at) or "a new size"
    path = path_words(budgets)
    raise InputError(
        f"the sweep cannot say what the gap is at {significant(tokens_per_param, 3)} tokens per parameter: {path}, "
        f"so its size-level line runs along that path and no cell tells size from tokens per parameter; rr will "
        f"not carry it to another budget. Plan runs that can: rr analyze confirm --at {where.split(', ')[0]} "
        f"--tokens-per-param {significant(tokens_per_param, 3)}"
    )


def path_words(budgets: pd.DataFrame) -> str:
    """The sweep's budgets in words: "tokens per parameter fall with size, from 2.20 at 60M to 0.10 at 1B"
    (or are the same in every cell, or differ by cell)."""
    if budgets.empty:
        return "no cell with reference runs"
    first, last = budgets.iloc[0], budgets.iloc[-1]
    if np.ptp(budgets["tokens_per_param"].to_numpy(float)) == 0:
        return f"tokens per parameter are {per_param(first['tokens_per_param'])} in every cell"
    if size_and_tokens(budgets)["sizes_with_budgets"]:
        return (
            "the cells hold several budgets at some sizes, which the size-only line mixes (--tokens-per-param "
            "reads the fit on size and tokens per parameter at one)"
        )
    way = "fall" if last["tokens_per_param"] < first["tokens_per_param"] else "rise"
    return (
        f"tokens per parameter {way} with size, from {per_param(first['tokens_per_param'])} at {first['size']} "
        f"to {per_param(last['tokens_per_param'])} at {last['size']}"
    )

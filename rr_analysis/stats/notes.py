"""Recipe notes: facts about a sweep's design that change how its comparisons should be read."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rr_analysis.cells import SIZE_NAME
from rr_analysis.comparison import PARAMS_TOLERANCE, Comparison, compare, sizes_in_order
from rr_analysis.numbers import count, fixed, percent, percent_above
from rr_analysis.stats.tokens import cell_budgets, per_param, size_and_tokens
from rr_core.variants import label

__all__ = ["recipe_notes", "PARAMS_TOLERANCE"]


def _steps(df: pd.DataFrame, sizes: list[str]) -> list[dict]:
    steps = df.groupby(["size", "variant"], observed=True)["steps"].first()
    out = []
    for size in sizes:
        s = steps[size]
        if s.nunique() > 1:
            shown = ", ".join(f"{v} {n}" for v, n in s.items())
            message = (
                f"{size}: variants trained for different numbers of steps ({shown}); the gap is confounded "
                "with training length"
            )
            out.append({"kind": "steps_within_size", "size": size, "message": message})
    per_size = steps.groupby(level="size", observed=True).max().reindex(sizes)
    if per_size.nunique() > 1 and SIZE_NAME not in df.columns:  # several budgets: steps differ by design
        groups = per_size.groupby(per_size, sort=False, observed=True).groups
        shown = "; ".join(f"{', '.join(idx)}: {n}" for n, idx in groups.items())
        message = (
            f"steps differ across sizes ({shown}): any trend with size is confounded with the token budget "
            "(tokens = steps x batch x block)"
        )
        out.append({"kind": "token_budget", "size": "", "message": message})
    return out


def _tokens(df: pd.DataFrame, c: Comparison) -> list[dict]:
    """Each cell's tokens per run and tokens per parameter, and whether log N and log D/N move together."""
    budgets = cell_budgets(df, c.reference)
    if budgets.empty:
        return []
    ref = label(c.reference)
    out = []
    for b in budgets.itertuples():
        run = {
            "recipe": f"{fixed(b.steps, 0)} steps x {b.batch} x {b.block}, from the recipe",
            "file": "the file's tokens column",
        }.get(b.tokens_source, "the file's tokens column, else the recipe's")
        counted = f"{ref}'s {fixed(b.params, 0, grouped=True)} parameters" + (
            "" if b.params_source == "shape" else ", its params_M"
        )
        out.append(
            {
                "kind": "tokens",
                "size": b.size,
                "message": f"{b.size}: {count(b.tokens)} tokens per run "
                f"({run}), {per_param(b.tokens_per_param)} tokens per parameter (of {counted})",
            }
        )
    reading = size_and_tokens(budgets)
    if not reading["varies"]:
        return out
    first, last = budgets.iloc[0], budgets.iloc[-1]
    way = "fall" if last["tokens_per_param"] < first["tokens_per_param"] else "rise"
    r = (
        f"log10 N and log10 D/N correlate at r = {fixed(reading['r'], 3)} over the {len(budgets)} cells"
        if np.isfinite(reading["r"])
        else f"{len(budgets)} cells"
    )
    if reading["separable"]:
        said = (
            f"{r}, and {reading['sizes_with_budgets']} sizes hold two budgets or more: the emergence view fits "
            "size and tokens per parameter apart"
        )
    else:
        held = "no size holds" if reading["sizes_with_budgets"] == 0 else "fewer than two sizes hold"
        said = (
            f"tokens per parameter {way} with size, from {per_param(first['tokens_per_param'])} ({first['size']}) "
            f"to {per_param(last['tokens_per_param'])} ({last['size']}), against a compute-optimal ~20 "
            f"(Hoffmann et al. 2022): {r} and {held} two budgets, so a trend with size cannot be told from one "
            "with tokens per parameter"
        )
    return [*out, {"kind": "size_and_tokens", "size": "", "message": said}]


def _non_monotone(df: pd.DataFrame, sizes: list[str], c: Comparison) -> list[dict]:
    means = df.groupby(["size", "variant"], observed=True)[c.metric].mean().unstack("variant").reindex(sizes)
    sign, more = (-1, "lower") if c.higher_is_better else (1, "higher")
    out = []
    for i, larger in enumerate(sizes):
        for smaller in sizes[:i]:
            worse = [v for v in means.columns if sign * means.at[larger, v] > sign * means.at[smaller, v]]
            if worse:
                shown = ", ".join(
                    f"{v} {fixed(means.at[larger, v], 4)} vs {fixed(means.at[smaller, v], 4)}" for v in worse
                )
                out.append(
                    {
                        "kind": "larger_size_higher_loss",
                        "size": larger,
                        "message": f"{larger} has a {more} mean {c.metric} than the smaller {smaller} ({shown})",
                    }
                )
    return out


def _fewer_seeds(df: pd.DataFrame, sizes: list[str]) -> list[dict]:
    n = df.groupby(["size", "variant"], observed=True).size()
    most = int(n.max())
    out = []
    for size in sizes:
        short = n[size][n[size] < most]
        if len(short):
            shown = ", ".join(f"{v} {k}" for v, k in short.items())
            out.append(
                {
                    "kind": "fewer_seeds",
                    "size": size,
                    "message": f"{size}: fewer seeds than the other cells ({shown}; most cells have {most})",
                }
            )
    return out


def _params(df: pd.DataFrame, sizes: list[str]) -> list[dict]:
    p = df.groupby(["size", "variant"], observed=True)["params_M"].mean()
    out = []
    for size in sizes:
        s = p[size]
        spread = s.max() / s.min() - 1
        if spread > PARAMS_TOLERANCE:
            message = (
                f"{size}: parameter counts differ by {percent_above(spread, PARAMS_TOLERANCE)} "
                f"({s.idxmin()} {fixed(s.min(), 2)}M, {s.idxmax()} {fixed(s.max(), 2)}M), more than "
                f"{percent(PARAMS_TOLERANCE)}: part of a gap may be capacity"
            )
            out.append({"kind": "params_mismatch", "size": size, "message": message})
    return out


def recipe_notes(
    df: pd.DataFrame,
    comparison: Comparison | None = None,
) -> pd.DataFrame:
    """What a careful reader must know about the design of a sweep, computed from the data.

    Parameters
    ----------
    df
        A validated sweep (`load_sweep`).
    comparison
        The comparison (`rr_analysis.comparison.Comparison`; descriptive: by default every variant, and a
        sweep without the reference is described too): the rows noted and the metric whose means should fall
        with size.

    Returns
    -------
    DataFrame with columns ``kind, size, message`` (``size`` is "" for a note about the whole sweep), one row
    per finding, in this order of kinds: ``token_budget`` and ``steps_within_size`` (steps differ across
    sizes, or across variants of one size; across sizes not said of a file of several budgets, whose cells
    differ in steps by design), ``tokens`` (each cell's tokens per run and tokens per parameter of its
    reference, `rr_analysis.stats.tokens.cell_budgets`), ``size_and_tokens`` (where D/N varies over the
    cells: the correlation of log10 N and log10 D/N, and whether the cells can tell them apart,
    `rr_analysis.stats.tokens.size_and_tokens`), ``larger_size_higher_loss`` (a variant's mean metric at a larger
    size worse than its mean at a smaller one: higher, or lower when higher is better), ``fewer_seeds`` (a (size, variant) cell with fewer runs than the
    fullest cell), ``params_mismatch`` (parameter counts within a size differ by more than
    `PARAMS_TOLERANCE` relative to the smallest); then `rr_analysis.comparison.STAMP`. Empty when none applies.

    Notes
    -----
    Sizes are ordered by mean parameter count (`sizes_in_order`). Means are over seeds.

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> recipe_notes(load_sweep())["kind"].unique().tolist()
    ['token_budget', 'tokens', 'size_and_tokens', 'larger_size_higher_loss', 'fewer_seeds', 'params_mismatch']
    """
    df, c = compare(df, comparison, require_reference=False)
    sizes = sizes_in_order(df)
    rows = [
        *_steps(df, sizes),
        *_tokens(df, c),
        *_non_monotone(df, sizes, c),
        *_fewer_seeds(df, sizes),
        *_params(df, sizes),
    ]
    return c.stamp(pd.DataFrame(rows, columns=["kind", "size", "message"]))

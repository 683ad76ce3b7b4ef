"""A sweep's cells: each (size, training budget) that its per-size analyses read as one size. A file of one
budget per size has a cell per size; a file where a run appears at several step counts (a token-budget
ladder, cooldown branches) has a cell per (size, steps), labelled ``SIZE@STEPS``. And the sizes a comparison
reads (`of_sizes`, `sizes_left_out`): the one place ``--sizes`` selects rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from rr_core.errors import InputError, did_you_mean
from rr_core.variants import nearest

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SIZE_NAME", "budget_cells", "cell_size", "of_sizes", "sizes_left_out"]


class Comparison(Protocol):
    """What the sizes' selection reads of `rr_analysis.comparison.Comparison` (a floor above this module)."""

    sizes: tuple[str, ...] | None


SIZE_NAME = "size_name"  # the column `budget_cells` keeps each row's size label in, beside its cell's


def budget_cells(df: pd.DataFrame) -> pd.DataFrame:
    """`df` with each (size, budget) a cell of its own, where the file holds several budgets per size.

    A file where a run appears at several step counts (`rr_core.sweepfile.schema.several_budgets`: a
    token-budget ladder, cooldown branches) is read per (size, steps): its ``size`` becomes the cell's label
    ``SIZE@STEPS`` (``60M@2000``), ordered by parameter count then steps, and the column `SIZE_NAME` keeps the
    size's own label (for the recipe and shape it trained with). Every per-size analysis then runs per cell.
    Any other file, and a frame already read so, is returned as it is: a file of one budget per size reads
    exactly as before.

    Example
    -------
    >>> import pandas as pd
    >>> runs = pd.DataFrame({"size": ["60M"] * 4, "variant": ["highway"] * 4, "seed": [0, 0, 1, 1],
    ...                      "params_M": [60.7] * 4, "steps": [16000, 2000] * 2})
    >>> budget_cells(runs)["size"].cat.categories.tolist()
    ['60M@2000', '60M@16000']
    """
    import pandas as pd

    from rr_core.sweepfile.dataset import size_order
    from rr_core.sweepfile.schema import several_budgets

    if SIZE_NAME in df.columns or not several_budgets(df):
        return df
    names = df["size"].astype(str)
    cells = names + "@" + df["steps"].astype(str)
    order = size_order(df.assign(size=cells))
    return df.assign(size=pd.Categorical(cells, categories=order, ordered=True), **{SIZE_NAME: names})


def cell_size(cell: str) -> str:
    """The size label of a cell `budget_cells` names (``60M@2000`` -> ``60M``); a size label is its own.

    Example
    -------
    >>> cell_size("60M@2000"), cell_size("1B")
    ('60M', '1B')
    """
    return cell.split("@", 1)[0]


def of_sizes(df: pd.DataFrame, comparison: Comparison) -> pd.DataFrame:
    """The rows of `df` whose size the comparison reads: every row when its ``sizes`` is None, else the rows of
    those sizes (named in any case; a size's budgets, ``60M@2000``, go with it), the size categories of the
    others dropped, so no table, family, figure or note counts them.

    The one place a comparison's sizes select rows: `compare` calls it (every analysis and figure function),
    and so do the views and the report before the analyses that take no comparison. Raises InputError naming
    a size with no runs in the data (with the nearest present) or an empty list.

    Example
    -------
    >>> from rr_analysis.comparison import Comparison
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> sorted(of_sizes(load_sweep(), Comparison(sizes=["60m", "1B"]))["size"].unique())
    ['1B', '60M']
    """
    import pandas as pd

    if comparison.sizes is None:
        return df
    labels = df["size"].astype(str).map(cell_size)
    present = list(dict.fromkeys(labels))
    by_case = {s.lower(): s for s in present}
    if not comparison.sizes:
        raise InputError(
            "no size named: give at least one, or leave the sizes out to read every size present"
        )
    for name in comparison.sizes:
        if name.lower() not in by_case:
            hint = did_you_mean(nearest(name, present))
            raise InputError(
                f"the size {name!r}{hint} has no runs in the data (the sizes present: {', '.join(present)})"
            )
    keep = labels.isin({by_case[n.lower()] for n in comparison.sizes}).to_numpy()
    kept = df[keep]
    if isinstance(kept["size"].dtype, pd.CategoricalDtype):
        kept = kept.assign(size=kept["size"].cat.remove_unused_categories())
    kept.attrs = dict(df.attrs)
    if (lines := df.attrs.get("lines")) is not None:  # each row's line in the file: the kept rows' own
        kept.attrs["lines"] = type(lines)(line for line, k in zip(lines, keep, strict=True) if k)
    return kept


def sizes_left_out(df: pd.DataFrame, comparison: Comparison) -> str:
    """What the comparison's sizes leave out of `df`, as the sentence every view and the report state ("" when
    it reads every size), so a result of some sizes is never read as the whole file's.

    Example
    -------
    >>> from rr_analysis.comparison import Comparison
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> sizes_left_out(load_sweep(), Comparison(sizes=["60M", "1B"]))
    'sizes read: 60M, 1B (--sizes); left out: 150M, 320M, 590M (24 rows)'
    """
    if comparison.sizes is None:
        return ""
    kept = of_sizes(df, comparison)
    if len(kept) == len(df):
        return ""
    from rr_core.sweepfile.dataset import size_order

    read = set(kept["size"].astype(str))
    out = [s for s in size_order(df) if s not in read]
    shown = [s for s in size_order(df) if s in read]
    return (
        f"sizes read: {', '.join(shown)} (--sizes); left out: {', '.join(out)} ({len(df) - len(kept)} rows)"
    )

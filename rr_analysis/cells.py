"""A sweep's cells: each (size, training budget) that its per-size analyses read as one size. A file of one
budget per size has a cell per size; a file where a run appears at several step counts (a token-budget
ladder, cooldown branches) has a cell per (size, steps), labelled ``SIZE@STEPS``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SIZE_NAME", "budget_cells", "cell_size"]

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

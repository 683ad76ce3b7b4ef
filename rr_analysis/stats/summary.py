"""Short descriptions of a loaded sweep, for one-line CLI output."""

from __future__ import annotations

import pandas as pd

from rr_analysis.comparison import sizes_in_order


def describe(df: pd.DataFrame) -> str:
    """'42 rows, 5 sizes (60M..1B), 3 variants (...), seeds per cell 2-3 over 15 cells'."""
    sizes = sizes_in_order(df)
    per_cell = df.groupby(["size", "variant"], observed=True).size()
    seeds = f"{per_cell.min()}" if per_cell.min() == per_cell.max() else f"{per_cell.min()}-{per_cell.max()}"
    variants = list(dict.fromkeys(df["variant"]))
    return (
        f"{len(df)} rows, {len(sizes)} sizes ({', '.join(sizes)}), {len(variants)} variants "
        f"({', '.join(variants)}), seeds per cell {seeds} over {len(per_cell)} cells"
    )

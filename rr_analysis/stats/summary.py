"""Short descriptions of a loaded sweep, for one-line CLI output."""

from __future__ import annotations

import pandas as pd

from rr_analysis.comparison import sizes_in_order
from rr_core.sweepfile.schema import several_budgets


def _span(counts: pd.Series) -> str:
    return f"{counts.min()}" if counts.min() == counts.max() else f"{counts.min()}-{counts.max()}"


def describe(df: pd.DataFrame) -> str:
    """'42 rows, 5 sizes (60M..1B), 3 variants (...), seeds per cell 2-3 over 15 cells'.

    Seeds are counted once per cell: a tuning file (`rr tune`) trains a seed at several learning rates, and
    says so ('..., at 1-4 learning rates per seed') rather than counting each rate as a seed; a file of several
    budgets says how many a size holds ('..., at 3 budgets (step counts) per size')."""
    sizes = sizes_in_order(df)
    cells = df.groupby(["size", "variant"], observed=True)
    per_cell = cells["seed"].nunique()
    variants = list(dict.fromkeys(df["variant"]))
    rates = ""
    if "lr" in df.columns and df.duplicated(["size", "variant", "seed"]).any():
        per_seed = df.groupby(["size", "variant", "seed"], observed=True).size()
        rates = f", at {_span(per_seed)} learning rates per seed"
    elif several_budgets(df):  # one run at several step counts: say how many budgets, not more seeds
        rates = f", at {_span(df.groupby('size', observed=True)['steps'].nunique())} budgets (step counts) per size"
    return (
        f"{len(df)} rows, {len(sizes)} sizes ({', '.join(sizes)}), {len(variants)} variants "
        f"({', '.join(variants)}), seeds per cell {_span(per_cell)} over {len(per_cell)} cells{rates}"
    )

"""The numbers the figures draw, gathered from the statistics tables into one tidy shape.

`gap_estimates` puts one test's view of the gap (estimate, SE, 95% CI, df, p) in the same columns whatever
the test, so a figure can switch between Welch, paired and mixed views without knowing their column names.
`cell_means` is the per-(size, variant) summary the raw-data figures draw as lines. Nothing here runs a
test: the tests are `rr_analysis.stats.gap_tests` and `rr_analysis.stats.mixed`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rr_analysis.comparison import ALPHA, TESTS
from rr_core.errors import InputError

__all__ = ["gap_estimates", "require_gap_table", "test_name", "adjust_name", "cell_means"]

# Each test's columns (`rr_analysis.comparison.TESTS`) in `rr_analysis.stats.gap_tests.gap_table`: estimate, SE,
# df, p, note.
_COLUMNS = {
    "welch": ("gap", "welch_se", "welch_df", "welch_p", "welch_note"),
    "paired": ("paired_diff", "paired_se", "paired_df", "paired_p", "paired_note"),
    "mixed": ("mixed_coef", "mixed_se", "mixed_df", "mixed_p", "mixed_note"),
}
_TEST_NAME = {
    "welch": "Welch t-test",
    "paired": "Paired t-test (seed-matched)",
    "mixed": "Mixed model, seed as random intercept",
}


_ADJUST_NAME = {
    "holm": "Holm-adjusted",
    "bonferroni": "Bonferroni-adjusted",
    "fdr_bh": "Benjamini-Hochberg-adjusted",
    "none": "unadjusted",
}


def test_name(stat: str) -> str:
    """How a figure or report names the test behind a view, e.g. 'Welch t-test'."""
    return _TEST_NAME[stat]


def adjust_name(method: str) -> str:
    """How a figure names the p-values a multiple-testing method gives, e.g. 'Holm-adjusted'."""
    return _ADJUST_NAME[method]


def require_gap_table(table: pd.DataFrame, caller: str) -> None:
    """Raise InputError, naming the function that makes it, unless `table` is a `rr_analysis.stats.gap_tests.gap_table`.

    A sweep passed instead (the rows `load_sweep` returns) is named as such, so the fix is one call away.
    """
    columns = set(getattr(table, "columns", ()))
    if {"size", "baseline", "adjust"} <= columns:
        return
    what = "a sweep (the rows of load_sweep)" if {"seed", "val_loss"} <= columns else "this table"
    raise InputError(
        f"{caller} reads the per-size gap table that rr_analysis.stats.gap_tests.gap_table makes, not {what}: "
        f"pass it gap_table(df), e.g. {caller}(gap_table(load_sweep()))"
    )


def gap_estimates(table: pd.DataFrame, stat: str = "welch") -> pd.DataFrame:
    """One test's estimate of each (size, baseline) gap, with its SE, 95% CI, df and p.

    Parameters
    ----------
    table
        `rr_analysis.stats.gap_tests.gap_table`.
    stat
        ``"welch"`` (the paper's test), ``"paired"`` (seed-matched) or ``"mixed"`` (per-size mixed model).

    Returns
    -------
    DataFrame, one row per row of `table`, with columns ``size, baseline, params_M`` (Review's parameter
    count), ``params_flagged`` (the arms' counts differ by more than `rr_analysis.comparison.PARAMS_TOLERANCE`),
    ``estimate`` (baseline - Review, positive favours Review), ``se, ci_low, ci_high, df, p``,
    ``p_adj`` (the table's adjusted p; the method is its ``adjust`` column), ``significant`` (p_adj <
    `ALPHA`) and ``note`` (why the test is n/a, "" when it ran). Missing values are NaN.

    Notes
    -----
    Welch: the gap of the means, its Welch SE. Paired: the mean seed-matched difference and its SE,
    sd(d) / sqrt(n_pairs). Mixed: the baseline's coefficient and SE. Each CI is the table's own for that test
    (``welch_ci_*``, ``paired_ci_*``, ``mixed_ci_*``): estimate -/+ t_{0.975, df} SE with the test's own df,
    matching the p drawn.

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> from rr_analysis.stats.gap_tests import gap_table
    >>> e = gap_estimates(gap_table(load_sweep(), adjust="none"), "welch")
    >>> e.loc[e["significant"], "size"].unique().tolist()
    ['590M']
    """
    if stat not in _COLUMNS:
        raise InputError(f"unknown statistic {stat!r}; choose one of {', '.join(TESTS)}")
    require_gap_table(table, "gap_estimates")
    est, se_col, df_col, p_col, note_col = _COLUMNS[stat]
    out = table[["size", "baseline", "params_M"]].copy()
    out["params_flagged"] = (
        table["params_flagged"].to_numpy(dtype=bool) if "params_flagged" in table else False
    )
    out["estimate"] = table[est].to_numpy(dtype=float)
    se = table[se_col].to_numpy(dtype=float)
    dof, p = table[df_col].to_numpy(dtype=float), table[p_col].to_numpy(dtype=float)
    ran = np.isfinite(p)
    out["se"] = np.where(ran, se, np.nan)
    out["ci_low"] = table[f"{stat}_ci_low"].to_numpy(float)
    out["ci_high"] = table[f"{stat}_ci_high"].to_numpy(float)
    out["df"], out["p"] = np.where(ran, dof, np.nan), p
    out["p_adj"] = table[f"p_adj_{stat}"].to_numpy(dtype=float)
    out["significant"] = ran & (out["p_adj"] < ALPHA)
    out["note"] = table[note_col].to_numpy(dtype=object)
    return out.reset_index(drop=True)


def cell_means(df: pd.DataFrame, column: str = "val_loss") -> pd.DataFrame:
    """Per (size, variant): the parameter count, the number of runs with a value and their mean.

    Parameters
    ----------
    df
        A loaded sweep (`load_sweep`).
    column
        The measured column to average (``val_loss`` or ``ece``); missing values are left out.

    Returns
    -------
    DataFrame with columns ``size, variant, params_M, n, mean``, one row per cell with at least one value.
    """
    rows = df[df[column].notna()]
    out = rows.groupby(["size", "variant"], sort=False, observed=True).agg(
        params_M=("params_M", "first"), n=(column, "count"), mean=(column, "mean")
    )
    return out.reset_index()

"""Equivalence: can "no advantage" be claimed? Two one-sided tests (TOST) per size and baseline.

A t-test that fails to reject says "not shown different", never "the same". TOST turns "the same within
+/-M" into the hypothesis to be shown: it rejects |gap| >= M when both one-sided tests reject at alpha.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rr_analysis.comparison import (
    ALPHA,
    PAIR,
    PARAMS_COLUMNS,
    RESPONSE,
    Comparison,
    compare,
    t_quantile,
)
from rr_analysis.numbers import significant
from rr_analysis.stats.gap_tests import paired_table, welch_table
from rr_core.errors import InputError

__all__ = ["equivalence", "DEFAULT_MARGIN"]

# Half of the smallest gap the paper calls an advantage (590M Highway, 0.0094 nats): a difference
# below this is what "no advantage" can reasonably mean. State your own with --margin.
DEFAULT_MARGIN = 0.005


def _arms(
    rows: pd.DataFrame, size: str, baseline: str, reference: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(baseline runs, reference runs, then both arms on the seeds they share, seed-aligned) at one size, of
    the response (`rows`: what `rr_analysis.comparison.compare` returns). The seeds are `PAIR`'s (the data
    seed where the file records one); an arm's several runs of one data seed pair as their mean."""
    cell = rows[rows["size"] == size]
    b = cell[cell["variant"] == baseline].set_index(PAIR)[RESPONSE]
    r = cell[cell["variant"] == reference].set_index(PAIR)[RESPONSE]
    b_pair, r_pair = (
        s.groupby(level=0, observed=True).mean() if s.index.duplicated().any() else s for s in (b, r)
    )
    shared = b_pair.index.intersection(r_pair.index)
    return (
        b.to_numpy(float),
        r.to_numpy(float),
        b_pair[shared].to_numpy(float),
        r_pair[shared].to_numpy(float),
    )


def _tost(
    rows: pd.DataFrame, reference: str, cells: pd.DataFrame, margin: float
) -> tuple[list[float], list[float]]:
    """statsmodels' TOST p per cell, paired and Welch (usevar="unequal"); NaN where the t-test is n/a."""
    from statsmodels.stats.weightstats import ttost_ind, ttost_paired

    paired, welch = [], []
    for r in cells.itertuples():
        b, a, b_pair, a_pair = _arms(rows, r.size, r.baseline, reference)
        ok_p, ok_w = r.paired_note == "", r.welch_note == ""
        paired.append(float(ttost_paired(b_pair, a_pair, -margin, margin)[0]) if ok_p else np.nan)
        welch.append(float(ttost_ind(b, a, -margin, margin, usevar="unequal")[0]) if ok_w else np.nan)
    return paired, welch


def _verdict(tost_p: float, p: float, margin: float) -> str:
    if np.isnan(tost_p):
        return "n/a"
    if tost_p < ALPHA:
        return f"equivalent within ±{significant(margin)}" + ("; nonzero" if p < ALPHA else "")
    return "different" if p < ALPHA else "not shown either way"


def equivalence(
    df: pd.DataFrame,
    margin: float = DEFAULT_MARGIN,
    comparison: Comparison | None = None,
) -> pd.DataFrame:
    """TOST of |gap| < margin for each (size, baseline), on the paired (primary) test and on Welch.

    Parameters
    ----------
    df
        A validated sweep (`load_sweep`).
    margin
        The equivalence margin M in the metric's units (val_loss: nats), > 0.
    comparison
        The comparison (`rr_analysis.comparison.Comparison`; default the paper's):
        the reference variant, the baselines in order (None: every other variant present), the numeric
        column compared and whether higher is better.

    Returns
    -------
    DataFrame, one row per (size, baseline), with columns ``size, baseline``, the arms' parameter counts
    (`rr_analysis.comparison.PARAMS_COLUMNS`), ``margin, gap`` (baseline - reference
    of the response, positive favours the reference),
    ``paired_diff, paired_ci90_low, paired_ci90_high, paired_tost_p, paired_verdict`` and
    ``welch_ci90_low, welch_ci90_high, welch_tost_p, welch_verdict``, ``paired_note, welch_note`` (why a
    test is n/a), then `rr_analysis.comparison.STAMP`. A verdict is "equivalent within ±M" (TOST p < 0.05; "; nonzero" is added when the t-test
    also rejects 0), "different" (the t-test's p < 0.05, not equivalent), "not shown either way" or "n/a".

    Notes
    -----
    H0: gap <= -M or gap >= M. TOST: t_lo = (gap + M)/SE and t_hi = (gap - M)/SE, each one-sided on the
    test's df; p = max of the two (statsmodels' `ttost_paired`, and `ttost_ind` with ``usevar="unequal"``,
    i.e. Welch SE and df). Equivalent at 5% exactly when the 90% CI lies inside (-M, M). For the claim
    "equivalent in every cell of a set", the intersection-union principle needs no multiplicity adjustment:
    each cell must pass at 5%.

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> e = equivalence(load_sweep(), 0.005)
    >>> e.loc[e["size"] == "1B", "paired_verdict"].tolist()
    ['different', 'different']
    """
    if not (np.isfinite(margin) and margin > 0):
        raise InputError(f"the equivalence margin must be a positive number of nats, got {margin!r}")
    rows, comparison = compare(df, comparison)
    w, p = welch_table(df, comparison), paired_table(df, comparison)
    cells = w[
        ["size", "baseline", *PARAMS_COLUMNS, "gap", "welch_se", "welch_df", "welch_p", "welch_note"]
    ].merge(
        p[["size", "baseline", "paired_diff", "paired_se", "paired_df", "paired_p", "paired_note"]],
        on=["size", "baseline"],
    )
    out = cells[["size", "baseline", *PARAMS_COLUMNS]].copy()
    out["margin"], out["gap"], out["paired_diff"] = margin, cells["gap"], cells["paired_diff"]
    cells["paired_tost_p"], cells["welch_tost_p"] = _tost(rows, comparison.reference, cells, margin)
    for test, est in (("paired", "paired_diff"), ("welch", "gap")):
        half = t_quantile(0.95, np.nan_to_num(cells[f"{test}_df"], nan=1.0)) * cells[f"{test}_se"]
        out[f"{test}_ci90_low"], out[f"{test}_ci90_high"] = cells[est] - half, cells[est] + half
        out[f"{test}_tost_p"] = cells[f"{test}_tost_p"]
        out[f"{test}_verdict"] = [
            _verdict(tp, pp, margin)
            for tp, pp in zip(cells[f"{test}_tost_p"], cells[f"{test}_p"], strict=True)
        ]
    out["paired_note"], out["welch_note"] = cells["paired_note"], cells["welch_note"]
    return comparison.stamp(out)

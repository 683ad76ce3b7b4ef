"""The table view (`rr analyze`, `rr analyze table`): per size and baseline, the primary seed-paired t-test,
its exact sign-flip twin, the mixed model and the paper's Welch test, each family adjusted.
"""

from __future__ import annotations

import pandas as pd

from rr_analysis.comparison import Comparison
from rr_analysis.numbers import NA, fixed, significant
from rr_analysis.stats.gap_tests import TABLE_COLUMNS, gap_table
from rr_analysis.tables.columns import (
    GAP,
    Col,
    cell_of,
    gap_cell,
    interval,
    missing,
    number,
    of_reference,
    p_cell,
    params_notes,
)
from rr_analysis.views.analysis_view import AnalysisView
from rr_core.variants import label


def _flip(r) -> str:
    return (
        NA
        if missing(r["signflip_p"])
        else f"{significant(r['signflip_p'], 3)} ({significant(r['signflip_floor'], 3)})"
    )


def _families(t: pd.DataFrame) -> str:
    """The multiple-testing families in words: method, which is primary, and each family's m."""
    method = t["adjust"].iloc[0] if len(t) else "holm"
    sizes = ", ".join(
        f"{test}{' (primary)' if test == t['primary'].iloc[0] else ''} m = {t[f'family_m_{test}'].iloc[0]}"
        for test in ("paired", "mixed", "welch")
    )
    how = "no adjustment" if method == "none" else f"{method} adjustment"
    return (
        f"p adj: {how}, separately for each test over its family of size x baseline cells where it "
        f"ran: {sizes}; n/a cells (below) are not counted"
    )


def _table_notes(t: pd.DataFrame) -> list[str]:
    out = [_families(t)] if len(t) else []
    for _, r in t.iterrows():
        if not missing(r["paired_ci_low"]) and fixed(r["paired_diff"], 4) != fixed(r["gap"], 4):
            out.append(
                f"{r['size']} {label(r['baseline'])}: the paired* 95% CI is about the mean of the "
                f"{r['n_pairs']} seed-matched differences, {fixed(r['paired_diff'], 4)}, not the gap of "
                f"all runs, {fixed(r['gap'], 4)}"
            )
        for view in ("welch", "paired", "mixed"):
            if r[f"{view}_note"]:
                out.append(f"{r['size']} {label(r['baseline'])}, {view}: {r[f'{view}_note']}")
    out += params_notes(t)
    methods = sorted(set(t["mixed_method"]) - {""})
    out.append("mixed model fitted by: " + "; ".join(methods) if methods else "mixed model: not fitted")
    return out


def _table(df: pd.DataFrame, *, adjust: str, comparison: Comparison) -> pd.DataFrame:
    return gap_table(df, adjust, comparison)


VIEW = AnalysisView(
    name="table",
    title="{ref} vs each baseline, {metric} (primary test: paired*, seed-matched)",
    columns=(
        Col("size", cell_of("size", str), 0),
        Col("baseline", cell_of("baseline", label), 0),
        Col("{ref}\nparams (M)", cell_of("params_M", number(".2f")), 6),
        Col("baseline\nparams (M)", cell_of("baseline_params_M", number(".2f")), 6),
        Col("n\nR/B", lambda r: f"{of_reference('n_review')(r)}/{r['n_baseline']}", 5),
        Col("{ref}\nmean", lambda r: number(".4f")(of_reference("review_mean")(r)), 6),
        Col("baseline\nmean", cell_of("baseline_mean", number(".4f")), 6),
        Col("gap", gap_cell(), 0),
        Col("paired*\n95% CI", interval("paired_ci_low", "paired_ci_high", ".4f"), 0),
        Col("Hedges\ng", cell_of("hedges_g", number(".2f")), 2),
        Col("95% CI\nof g", interval("g_ci_low", "g_ci_high", ".2f"), 6),
        Col("Welch\nt", cell_of("welch_t", number(".2f")), 1),  # the paper's Table 2, shown at 80 columns
        Col("Welch\ndf", cell_of("welch_df", number(".2f")), 5),
        Col("Welch\n95% CI", interval("welch_ci_low", "welch_ci_high", ".4f"), 2),
        Col("Welch\np", cell_of("welch_p", p_cell), 1),
        Col("Welch\np adj", cell_of("p_adj_welch", p_cell), 3),
        Col("paired*\nt", cell_of("paired_t", number(".2f")), 4),
        Col("paired*\ndf", cell_of("paired_df", number(".0f")), 3),
        Col("paired*\np", cell_of("paired_p", p_cell), 2),
        Col("paired*\np adj", cell_of("p_adj_paired", p_cell), 0),
        Col("sign-flip\np (floor)", _flip, 2),
        Col("mixed\ncoef", cell_of("mixed_coef", number(".4f")), 6),
        Col("mixed\nSE", cell_of("mixed_se", number(".5f")), 6),
        Col("mixed\n95% CI", interval("mixed_ci_low", "mixed_ci_high", ".4f"), 6),
        Col("mixed\ndf", cell_of("mixed_df", number(".2f")), 5),
        Col("mixed\np", cell_of("mixed_p", p_cell), 3),
        Col("mixed\np adj", cell_of("p_adj_mixed", p_cell), 2),
    ),
    legend=(
        GAP,
        "paired* (PRIMARY): t-test of the seed-matched differences (same seed = same data order), "
        "df = pairs - 1, two-sided; paired* 95% CI: their mean -/+ t(0.975, pairs - 1) x SE, the interval "
        "of the paired* p. The design blocks by seed; this is the test that uses the blocks with the fewest "
        "assumptions.",
        "sign-flip: exact permutation test of the same differences; it cannot go below its floor 2/2^pairs "
        "(0.25 with 3 seeds), whatever the gap.",
        "mixed: the primary test's twin, {response} ~ variant + (1 | seed) per size, REML, {ref} as "
        "reference; coef = baseline - {ref}, t-test with Satterthwaite df, two-sided; its 95% CI from the "
        "same t.",
        "Welch: the paper's Table 2, two-sample t-test, unequal variances, Welch-Satterthwaite df, "
        "two-sided; Welch 95% CI of the gap from the same t. Hedges' g: gap / pooled SD times the exact J; "
        "its 95% CI inverts the noncentral t.",
    ),
    notes=_table_notes,
    machine=TABLE_COLUMNS,
    compute=_table,
    summary="per size: paired* primary, sign-flip, mixed, Welch",
)

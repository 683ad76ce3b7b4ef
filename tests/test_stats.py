"""The comparison table against independent references: scipy's t-tests, the paper's Table 2, statsmodels'
Holm, a constructed sweep whose answer is known in closed form, and edge frames that must not crash."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rr_analysis.comparison import compare
from rr_analysis.stats.gap_tests import TABLE_COLUMNS, adjust_p, gap_table, paired_table, welch_table
from rr_analysis.tables.render import render
from rr_analysis.views.registry import VIEWS

# Paper Table 2 and its published script: sizes by parameter count, highway then standard within a size.
PUBLISHED_T = [0.42, -1.01, 0.81, -0.53, 0.50, 0.39, 3.28, 3.67, 2.31, 2.36]
PUBLISHED_ORDER = [(s, b) for s in ("60M", "150M", "320M", "590M", "1B") for b in ("highway", "standard")]
PUBLISHED_MEANS = {  # (review, highway, standard) at 4 dp
    "60M": (1.6891, 1.6923, 1.6805),
    "150M": (1.5576, 1.5625, 1.5548),
    "320M": (1.5001, 1.5042, 1.5037),
    "590M": (1.4795, 1.4889, 1.4901),
    "1B": (1.4876, 1.5031, 1.5040),
}


def quiet_table(df: pd.DataFrame) -> pd.DataFrame:
    """gap_table with every warning turned into an error: none may reach the user unexplained."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return gap_table(df)


def no_inf(t: pd.DataFrame) -> None:
    num = t.select_dtypes("number").to_numpy(float)
    assert not np.isinf(num).any()


def constructed(eps: float = 1e-3, seed_step: float = 0.1) -> pd.DataFrame:
    """4 seeds x 3 variants, complete blocks: y = 1.5 + variant + seed + eps * E, E with zero row/column sums."""
    effects = {"review_neutral": 0.0, "highway": 0.01, "standard": -0.02}
    E = np.array([[1, -1, 0], [-1, 1, 0], [1, -1, 0], [-1, 1, 0]], dtype=float)
    rows = []
    for s in range(4):
        for j, (v, a) in enumerate(effects.items()):
            y = 1.5 + a + seed_step * s + eps * E[s, j]
            rows.append({"size": "7M", "variant": v, "seed": s, "params_M": 7.0, "steps": 100, "val_loss": y})
    return pd.DataFrame(rows).assign(ece=np.nan, minutes=np.nan)


# --- the published table --------------------------------------------------------------------------------


def test_published_t_values_and_their_order(table):
    assert list(zip(table["size"], table["baseline"], strict=True)) == PUBLISHED_ORDER
    assert table["welch_t"].round(2).tolist() == PUBLISHED_T


def test_published_means_and_gaps(table):
    for size, (r, h, s) in PUBLISHED_MEANS.items():
        rows = table[table["size"] == size].set_index("baseline")
        assert rows["review_mean"].round(4).tolist() == [r, r]
        assert rows.loc["highway", "baseline_mean"].round(4) == h
        assert rows.loc["standard", "baseline_mean"].round(4) == s
    assert np.allclose(table["gap"], table["baseline_mean"] - table["review_mean"])
    assert table.loc[table["size"] == "1B", "gap"].round(4).tolist() == [0.0155, 0.0164]


def test_published_table_columns_and_no_missing_values(table):
    assert set(TABLE_COLUMNS) <= set(table.columns)
    assert not table[list(TABLE_COLUMNS)].isna().any().any()
    assert (table["mixed_method"] == "closed form, complete seed blocks").all()
    assert not table["singular"].any()


def test_welch_matches_scipy(sweep, table):
    for r in table.itertuples():
        cell = sweep[sweep["size"] == r.size]
        b = cell.loc[cell["variant"] == r.baseline, "val_loss"]
        a = cell.loc[cell["variant"] == "review_neutral", "val_loss"]
        ref = stats.ttest_ind(b, a, equal_var=False)
        assert r.welch_t == pytest.approx(ref.statistic, rel=1e-12)
        assert r.welch_p == pytest.approx(ref.pvalue, rel=1e-10)
        assert r.welch_df == pytest.approx(ref.df, rel=1e-12)
        ci = ref.confidence_interval(0.95)
        assert (r.welch_ci_low, r.welch_ci_high) == pytest.approx((ci.low, ci.high), rel=1e-10)


def test_paired_matches_scipy(sweep, table):
    for r in table.itertuples():
        cell = sweep[sweep["size"] == r.size].pivot(index="seed", columns="variant", values="val_loss")
        ref = stats.ttest_rel(cell[r.baseline], cell["review_neutral"])
        assert r.paired_t == pytest.approx(ref.statistic, rel=1e-9)
        assert r.paired_p == pytest.approx(ref.pvalue, rel=1e-9)
        assert r.paired_df == ref.df
        assert r.paired_se == pytest.approx(r.paired_diff / ref.statistic, rel=1e-9)  # t = diff / SE
        ci = ref.confidence_interval(0.95)
        assert (r.paired_ci_low, r.paired_ci_high) == pytest.approx((ci.low, ci.high), rel=1e-9)


def test_each_p_has_its_own_tests_interval(table):
    """The table's cells pair a p with its own test's 95% CI: the paired CI excludes 0 exactly where the paired
    p < 0.05, Welch's exactly where Welch's p < 0.05, the mixed model's where its p is. On the published 1B
    Highway cell Welch's CI spans 0 while the paired p is 0.0011: the two must not stand side by side."""
    for test in ("paired", "welch", "mixed"):
        excludes = (table[f"{test}_ci_low"] > 0) | (table[f"{test}_ci_high"] < 0)
        assert (excludes == (table[f"{test}_p"] < 0.05)).all(), test
    r = table[(table["size"] == "1B") & (table["baseline"] == "highway")].iloc[0]
    assert r.welch_ci_low < 0 < r.paired_ci_low


def test_hedges_g_by_hand(sweep, table):
    r = table[(table["size"] == "590M") & (table["baseline"] == "standard")].iloc[0]
    b = sweep[(sweep["size"] == "590M") & (sweep["variant"] == "standard")]["val_loss"]
    a = sweep[(sweep["size"] == "590M") & (sweep["variant"] == "review_neutral")]["val_loss"]
    sp = np.sqrt((2 * b.var() + 2 * a.var()) / 4)
    j = math.gamma(2) / (math.sqrt(2) * math.gamma(1.5))  # exact J on 4 df
    assert r["hedges_g"] == pytest.approx((b.mean() - a.mean()) / sp * j, rel=1e-12)


def test_holm_by_hand_and_the_published_welch_family(table):
    p = table["welch_p"].to_numpy()
    order = np.argsort(p)
    by_hand = np.minimum(1, np.maximum.accumulate((10 - np.arange(10)) * p[order]))
    assert table["p_adj_welch"].to_numpy()[order] == pytest.approx(by_hand, rel=1e-12)
    # the issue's numbers: 590M after Holm over the paper's ten Welch tests
    assert table.loc[table["size"] == "590M", "p_adj_welch"].round(2).tolist() == [0.28, 0.21]
    assert (table[["family_m_welch", "family_m_paired", "family_m_mixed"]] == 10).all().all()
    assert (table["primary"] == "paired").all() and (table["adjust"] == "holm").all()


def test_adjust_methods_skip_missing_p():
    p = [0.01, np.nan, 0.04, 0.03]
    assert adjust_p(p)[[0, 2, 3]] == pytest.approx([0.03, 0.06, 0.06])
    assert adjust_p(p, "bonferroni")[[0, 2, 3]] == pytest.approx([0.03, 0.12, 0.09])
    assert adjust_p(p, "fdr_bh")[[0, 2, 3]] == pytest.approx([0.03, 0.04, 0.04])
    assert np.isnan(adjust_p(p, "none")[1]) and adjust_p(p, "none")[0] == 0.01
    with pytest.raises(ValueError, match="choose one of holm, bonferroni, fdr_bh, none"):
        adjust_p(p, "sidak")


def test_primary_family_holm_on_published_data(table):
    # 1B: the seed-paired (primary) test is Holm-significant where Welch reads "a trend"
    one_b = table[table["size"] == "1B"]
    assert one_b["p_adj_paired"].round(4).tolist() == [0.009, 0.0018]
    assert (one_b["welch_p"].round(3).tolist()) == [0.083, 0.077]


# --- a sweep whose answer is known exactly ----------------------------------------------------------------


def test_constructed_sweep_closed_form():
    eps = 1e-3
    t = quiet_table(constructed(eps)).set_index("baseline")
    sigma2 = 8 * eps**2 / 6  # SSE = 8 eps^2 on (4-1)(3-1) = 6 df
    se = np.sqrt(2 * sigma2 / 4)
    assert t.loc["highway", "mixed_coef"] == pytest.approx(0.01, rel=1e-9)
    assert t.loc["standard", "mixed_coef"] == pytest.approx(-0.02, rel=1e-9)
    assert t["mixed_se"].tolist() == pytest.approx([se, se], rel=1e-9)
    assert t["mixed_df"].tolist() == [6.0, 6.0]
    assert t.loc["highway", "mixed_p"] == pytest.approx(2 * stats.t.sf(0.01 / se, 6), rel=1e-9)
    assert t["resid_var"].tolist() == pytest.approx([sigma2] * 2, rel=1e-9)
    assert t.loc["highway", "seed_var"] == pytest.approx((3 * 0.05 / 3 - sigma2) / 3, rel=1e-9)
    # Paired: d_s = 0.01 + eps * (-2, 2, -2, 2): mean 0.01, sd = 2 eps sqrt(4/3)
    assert t.loc["highway", "paired_t"] == pytest.approx(0.01 / (2 * eps * np.sqrt(4 / 3) / 2), rel=1e-9)
    assert t.loc["highway", "paired_df"] == 3


def test_constructed_sweep_on_the_boundary_pools_the_seed_df():
    t = quiet_table(constructed(1e-3, seed_step=0.0))
    assert (t["seed_var"] == 0).all() and t["singular"].all()
    assert t["mixed_df"].tolist() == [9.0, 9.0]  # (n-1)(k-1) + (n-1) once tau^2 = 0
    assert t["mixed_se"].tolist() == pytest.approx([np.sqrt(2 * (8e-6 / 9) / 4)] * 2, rel=1e-9)
    assert t["mixed_note"].str.contains("singular").all()
    assert t["mixed_note"].str.contains("relative scale").all()


# --- edge frames ------------------------------------------------------------------------------------------


def test_missing_cell_gets_a_row_with_reasons(sweep):
    df = sweep[~((sweep["size"] == "1B") & (sweep["variant"] == "standard"))]
    t = quiet_table(df)
    no_inf(t)
    r = t[(t["size"] == "1B") & (t["baseline"] == "standard")].iloc[0]
    assert r["n_baseline"] == 0 and np.isnan(r["welch_t"]) and np.isnan(r["mixed_p"])
    assert r["welch_note"] == "no runs of this baseline at this size"
    assert r["mixed_note"] == "no runs of this baseline at this size"
    assert t["p_adj_welch"].notna().sum() == 9 and (t["family_m_welch"] == 9).all()


def test_one_seed_cells(sweep):
    df = sweep[(sweep["size"] != "590M") | (sweep["seed"] == 0)]
    t = quiet_table(df)
    no_inf(t)
    rows = t[t["size"] == "590M"]
    assert rows["welch_t"].isna().all() and rows["paired_t"].isna().all() and rows["mixed_p"].isna().all()
    assert (rows["welch_note"] == "fewer than 2 runs in an arm: no variance").all()
    assert (rows["paired_note"] == "fewer than 2 seed-matched pairs").all()
    assert (rows["mixed_note"] == "one seed: no residual degrees of freedom").all()


def test_unbalanced_seeds(sweep):
    df = sweep.drop(
        index=sweep[(sweep["size"] == "1B") & (sweep["variant"] == "standard") & (sweep["seed"] == 2)].index
    )
    t = quiet_table(df)
    r = t[(t["size"] == "1B") & (t["baseline"] == "standard")].iloc[0]
    b = df[(df["size"] == "1B") & (df["variant"] == "standard")]["val_loss"]
    a = df[(df["size"] == "1B") & (df["variant"] == "review_neutral")]["val_loss"]
    assert (r["n_review"], r["n_baseline"], r["n_pairs"]) == (3, 2, 2)
    assert r["welch_t"] == pytest.approx(stats.ttest_ind(b, a, equal_var=False).statistic, rel=1e-12)
    assert r["paired_df"] == 1
    assert r["mixed_method"] == "REML, incomplete seed blocks" and r["mixed_note"] == ""
    # the paired CI is about the 2 seed-matched differences, not the gap of all runs: the table says so
    pairs = stats.ttest_rel(b.to_numpy(), a.iloc[:2].to_numpy()).confidence_interval()
    assert (r["paired_ci_low"], r["paired_ci_high"]) == pytest.approx((pairs.low, pairs.high), rel=1e-9)
    assert (
        "note: 1B Standard: the paired* 95% CI is about the mean of the 2 seed-matched differences, "
        f"{r['paired_diff']:.4f}, not the gap of all runs, {r['gap']:.4f}"
    ) in render(t, VIEWS["table"], "text")


def test_size_with_two_variants_mixed_equals_paired(sweep):
    df = sweep[~((sweep["size"] == "150M") & (sweep["variant"] == "standard"))]
    t = quiet_table(df)
    r = t[(t["size"] == "150M") & (t["baseline"] == "highway")].iloc[0]
    # Two variants in complete blocks off the boundary: the mixed-model t-test is the paired t-test.
    assert r["mixed_coef"] / r["mixed_se"] == pytest.approx(r["paired_t"], rel=1e-9)
    assert r["mixed_df"] == r["paired_df"] == 2
    assert r["mixed_p"] == pytest.approx(r["paired_p"], rel=1e-9)


def test_zero_variance_differences_are_na_with_reason():
    df = constructed()
    df.loc[df["variant"] == "highway", "val_loss"] = (
        df.loc[df["variant"] == "review_neutral", "val_loss"].to_numpy() + 0.01
    )
    p = paired_table(df).set_index("baseline")
    assert np.isnan(p.loc["highway", "paired_t"])
    assert p.loc["highway", "paired_note"] == "the seed-matched differences have zero variance"


def test_non_ladder_size_and_extra_variant(sweep):
    extra = sweep[sweep["size"] == "1B"].assign(size="2B", params_M=lambda d: d["params_M"] * 2)
    layer = sweep[(sweep["size"] == "60M") & (sweep["variant"] == "highway")].assign(variant="layerscale")
    df = pd.concat([sweep, extra, layer], ignore_index=True)
    assert compare(df)[1].baselines == (
        "highway",
        "standard",
        "layerscale",
    )  # BASELINES first, then the registry's order
    t = quiet_table(df)
    no_inf(t)
    assert t["size"].unique().tolist() == ["60M", "150M", "320M", "590M", "1B", "2B"]
    assert len(t) == 18
    assert t[(t["size"] == "60M") & (t["baseline"] == "layerscale")]["gap"].item() == pytest.approx(
        0.0032, abs=1e-4
    )
    assert t[(t["size"] == "2B") & (t["baseline"] == "layerscale")]["welch_note"].item() != ""


def test_no_reference_or_no_baseline_is_a_clear_error(sweep):
    with pytest.raises(ValueError, match="no review_neutral runs"):
        welch_table(sweep[sweep["variant"] != "review_neutral"])
    with pytest.raises(ValueError, match="no baseline"):
        welch_table(sweep[sweep["variant"] == "review_neutral"])


def test_large_sweep_is_vectorised():
    rng = np.random.default_rng(0)
    sizes, variants, seeds = (
        [f"{10 * (i + 1)}M" for i in range(20)],
        ["review_neutral", "highway", "standard"],
        200,
    )
    idx = pd.MultiIndex.from_product([sizes, variants, range(seeds)], names=["size", "variant", "seed"])
    df = idx.to_frame(index=False)
    df["params_M"] = df["size"].str[:-1].astype(float)
    df["steps"] = 100
    df["val_loss"] = 2.0 + rng.normal(0, 0.01, len(df)) + df["seed"] * 1e-4
    t = quiet_table(df.assign(ece=np.nan, minutes=np.nan))
    assert len(t) == 40 and (t["mixed_df"] == (seeds - 1) * 2).all()

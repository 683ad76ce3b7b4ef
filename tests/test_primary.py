"""The primary analysis' companions against independent references: Hedges' exact J and its noncentral-t CI
(scipy.stats), the sign-flip test (brute force over sign vectors), TOST (the formula by hand against
statsmodels), the seed plan (statsmodels' TTestPower). The claims audit: tests/test_claims.py."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from rr_analysis.stats.effect import hedges_g, hedges_j
from rr_analysis.stats.equivalence import equivalence
from rr_analysis.stats.exact import NORMAL_MAX_ERROR, monte_carlo_sign_flip, sign_flip
from rr_analysis.stats.gap_tests import gap_table, paired_table, welch_table
from rr_analysis.stats.power import pooled_resid_sd, seed_plan, t_test_power

# --- Hedges' g ---------------------------------------------------------------------------------------------


def test_exact_j_against_gamma_and_the_approximation():
    for df in (2, 4, 7, 50):
        want = math.gamma(df / 2) / (math.sqrt(df / 2) * math.gamma((df - 1) / 2))
        assert hedges_j(df) == pytest.approx(want, rel=1e-12)
    assert hedges_j(2.0) == pytest.approx(1 / math.sqrt(math.pi), rel=1e-12)
    assert (1 - 3 / (4 * 2 - 1)) / hedges_j(2.0) - 1 == pytest.approx(0.0128, abs=1e-4)  # 1.3% off at df 2
    assert np.isfinite(hedges_j(5000.0)) and np.isnan(hedges_j(1.0))


def test_g_interval_inverts_the_noncentral_t(sweep):
    w = welch_table(sweep)
    for r in w.itertuples():
        scale = math.sqrt(r.n_review * r.n_baseline / (r.n_review + r.n_baseline))
        t, df = r.gap / r.pooled_sd * scale, r.n_review + r.n_baseline - 2
        assert stats.nct.cdf(t, df, r.g_ci_low * scale) == pytest.approx(0.975, abs=1e-5)
        assert stats.nct.cdf(t, df, r.g_ci_high * scale) == pytest.approx(0.025, abs=1e-5)
    g, lo, hi = hedges_g(np.nan, 0.0, 1, 3)
    assert np.isnan(g) and np.isnan(lo) and np.isnan(hi)


# --- the sign-flip test ------------------------------------------------------------------------------------


def test_sign_flip_equals_brute_force_and_has_its_floor():
    rng = np.random.default_rng(1)
    for n in (1, 2, 3, 5, 8):
        d = rng.normal(0.002, 0.003, n)
        flips = [
            abs(sum(s * x for s, x in zip(e, d, strict=True))) for e in itertools.product([1, -1], repeat=n)
        ]
        want = np.mean([f >= abs(d.sum()) - 1e-15 for f in flips])
        p, floor, method = sign_flip(d)
        assert (p, floor, method) == (pytest.approx(want), 2 / 2**n, "exact")
    assert sign_flip([0.01, 0.02, 0.03])[0] == 0.25  # 3 seeds all one way: still only 0.25
    assert np.isnan(sign_flip([])[0])
    p, floor, method = sign_flip(np.full(30, 0.01))
    assert method.startswith("Monte Carlo") and p == floor == pytest.approx(1 / 20_001)


def test_sign_flip_on_many_pairs_reads_the_normal_limit_and_agrees_with_drawing():
    """With many pairs no sign matrix is drawn (a 10^6-row sweep stays fast and small); the limit agrees
    with the Monte Carlo draw it replaces within its bound, which keeps drawing while the bound is loose
    (fewer pairs, or one pair dominating the sum)."""
    rng = np.random.default_rng(3)
    d = rng.normal(0.00003, 0.003, 10_000)
    p, floor, method = sign_flip(d)
    assert method == "normal approximation, 10,000 pairs" and floor == 0.0  # 2^-9999 underflows
    drawn, _, _ = monte_carlo_sign_flip(d, abs(d.sum()))
    assert 0.05 < p < 0.95 and p == pytest.approx(drawn, abs=2 * NORMAL_MAX_ERROR)
    assert sign_flip(d[:2000])[2].startswith("Monte Carlo")  # bound ~0.02: still drawn
    assert sign_flip(np.r_[1.0, d])[2].startswith("Monte Carlo")


def test_published_sign_flips_sit_on_their_floor(sweep):
    t = gap_table(sweep)
    assert (t["signflip_floor"] == np.where(t["n_pairs"] == 3, 0.25, 0.5)).all()
    assert (t["signflip_p"] >= t["signflip_floor"]).all()
    one_b = t[t["size"] == "1B"]
    assert (one_b["signflip_p"] == 0.25).all()  # every 1B seed favours Review: the floor, not "p < 0.05"


# --- equivalence -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("margin", [0.003, 0.01])
def test_tost_matches_the_formula_by_hand(sweep, margin):
    e = equivalence(sweep, margin)
    p, w = paired_table(sweep), welch_table(sweep)
    for test, est, se, dof in (
        ("paired", p["paired_diff"], p["paired_se"], p["paired_df"]),
        ("welch", w["gap"], w["welch_se"], w["welch_df"]),
    ):
        lower = stats.t.sf((est + margin) / se, dof)
        upper = stats.t.cdf((est - margin) / se, dof)
        assert e[f"{test}_tost_p"].to_numpy() == pytest.approx(np.maximum(lower, upper), rel=1e-9)
        half = stats.t.ppf(0.95, dof) * se
        assert e[f"{test}_ci90_low"].to_numpy() == pytest.approx(est - half, rel=1e-9)
        inside = (e[f"{test}_ci90_low"] > -margin) & (e[f"{test}_ci90_high"] < margin)
        assert (inside == (e[f"{test}_tost_p"] < 0.05)).all()


def test_equivalence_verdicts_on_published_data(sweep):
    e = equivalence(sweep, 0.005).set_index(["size", "baseline"])
    assert e.loc[("320M", "standard"), "paired_verdict"].startswith("equivalent within ±0.005")
    assert e.loc[("60M", "highway"), "paired_verdict"] == "not shown either way"
    assert e.loc[("1B", "highway"), "paired_verdict"] == "different"
    with pytest.raises(ValueError, match="positive number of nats"):
        equivalence(sweep, -0.01)


# --- planning from a target effect -------------------------------------------------------------------------


def test_pooled_residual_sd_is_the_df_weighted_block_anova(sweep):
    from rr_analysis.stats.mixed import mixed_table

    m = mixed_table(sweep).drop_duplicates("size")
    pooled = np.sqrt((m["resid_var"] * m["mixed_df"]).sum() / m["mixed_df"].sum())
    assert pooled_resid_sd(sweep) == (pytest.approx(pooled, rel=1e-6), "")


def test_seed_plan_reaches_the_power_and_costs_the_recorded_minutes(sweep):
    from statsmodels.stats.power import TTestPower

    plan = seed_plan(sweep, 0.003).set_index("size")
    dz = plan["dz"].iloc[0]
    n = plan["seeds_needed"].iloc[0]
    assert TTestPower().power(dz, n, 0.05) >= 0.8 > TTestPower().power(dz, n - 1, 0.05)
    assert plan.loc["320M", "seeds_present"] == 2 and plan.loc["320M", "seeds_to_add"] == n - 2
    per_seed = sweep[sweep["size"] == "1B"].groupby("variant")["minutes"].mean().sum()
    assert plan.loc["1B", "gpu_minutes"] == pytest.approx(plan.loc["1B", "seeds_to_add"] * per_seed)
    assert plan.loc["1B", "power_now"] == pytest.approx(t_test_power(dz, 3))
    assert list(plan.reset_index().columns[:1]) == ["size"] and (plan["note"] == "").all()


def test_seed_plan_degenerate_cases_say_a_sentence(sweep):
    one_seed = sweep[sweep["seed"] == 0]
    plan = seed_plan(one_seed, 0.003)
    assert plan["seeds_needed"].isna().all() and plan["note"].str.contains("no residual df").all()
    tiny = seed_plan(sweep, 1e-9)
    assert tiny["seeds_to_add"].isna().all() and tiny["note"].str.contains("too small").all()
    flat = sweep.assign(val_loss=sweep.groupby(["size", "variant"])["val_loss"].transform("mean"))
    assert seed_plan(flat, 0.003)["note"].str.contains("residual variance is 0").all()
    with pytest.raises(ValueError, match="positive gap"):
        seed_plan(sweep, 0.0)

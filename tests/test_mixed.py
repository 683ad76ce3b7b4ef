"""Mixed models: the sufficient-statistics REML against the closed form and statsmodels' MixedLM (tightened),
Satterthwaite df, and the emergence model with its likelihood-ratio test and gap regression."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from rr_analysis.emergence import EMERGENCE_COLUMNS, emergence
from rr_analysis.mixed import BlockModel, mixed_table
from rr_analysis.stats import welch_table
from rr_model.dataset import load_sweep


@pytest.fixture(scope="module")
def sweep() -> pd.DataFrame:
    return load_sweep()


def statsmodels_fit(df: pd.DataFrame, formula: str, groups, reml: bool = True):
    """MixedLM pushed to convergence: its default (and lbfgs) stop early at variances of ~1e-5; bfgs with a
    tight gradient tolerance reaches the optimum to ~1e-8."""
    import statsmodels.formula.api as smf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the absolute-0.01 boundary warning; irrelevant at these scales
        model = smf.mixedlm(formula, df, groups=groups)
        return model.fit(reml=reml, method=["bfgs"], gtol=1e-14, maxiter=50_000)


def design(g: pd.DataFrame) -> np.ndarray:
    others = [v for v in ("highway", "standard") if v in set(g["variant"])]
    return np.column_stack([np.ones(len(g))] + [(g["variant"] == v).to_numpy(float) for v in others])


def test_numerical_reml_equals_closed_form_on_complete_blocks(sweep):
    closed = mixed_table(sweep)
    for size, g in sweep.groupby("size"):
        fit = BlockModel(g["val_loss"].to_numpy(float), design(g), g["seed"].to_numpy()).fit()
        want = closed[closed["size"] == size]
        assert fit.beta[1:] == pytest.approx(want["mixed_coef"].to_numpy(), rel=1e-7)
        assert np.sqrt(np.diag(fit.cov))[1:] == pytest.approx(want["mixed_se"].to_numpy(), rel=1e-6)
        assert fit.df[1:] == pytest.approx(want["mixed_df"].to_numpy(), rel=1e-6)  # Satterthwaite = within df
        assert fit.tau2 == pytest.approx(want["seed_var"].iloc[0], rel=1e-6)


@pytest.mark.parametrize("size", ["60M", "1B"])
def test_incomplete_blocks_agree_with_tightened_statsmodels(sweep, size):
    g = sweep[sweep["size"] == size]
    g = g.drop(index=g[(g["variant"] == "standard") & (g["seed"] == 2)].index).copy()
    g["variant"] = pd.Categorical(g["variant"], ["review_neutral", "highway", "standard"])
    ref = statsmodels_fit(g, "val_loss ~ variant", g["seed"])
    fit = BlockModel(g["val_loss"].to_numpy(float), design(g), g["seed"].to_numpy()).fit()
    assert fit.beta == pytest.approx(ref.fe_params.to_numpy(), rel=1e-6)
    assert fit.sigma2 == pytest.approx(ref.scale, rel=1e-6)
    assert fit.tau2 == pytest.approx(ref.cov_re.iloc[0, 0], rel=1e-6)
    # lme4's vcov is (X'V^-1 X)^-1 at the variance estimates; statsmodels' bse_fe comes from the full observed
    # Hessian instead (they differ for incomplete blocks), so build lme4's from statsmodels' variances, densely.
    X, z = design(g), g["seed"].to_numpy()
    V = ref.scale * np.eye(len(g)) + ref.cov_re.iloc[0, 0] * (z[:, None] == z[None, :])
    lme4_cov = np.linalg.inv(X.T @ np.linalg.solve(V, X))
    assert np.sqrt(np.diag(fit.cov)) == pytest.approx(np.sqrt(np.diag(lme4_cov)), rel=1e-6)
    assert -fit.deviance / 2 == pytest.approx(ref.llf, rel=1e-10)
    row = mixed_table(g.astype({"variant": str})).query("size == @size and baseline == 'standard'").iloc[0]
    assert row["mixed_method"] == "REML, incomplete seed blocks"
    assert 1.0 < row["mixed_df"] < 4.0  # between the 2 complete pairs and the complete-block df


def test_singular_fit_on_the_boundary_uses_the_pooled_df():
    rng = np.random.default_rng(3)
    y = rng.normal(0, 1e-3, 12)  # no seed effect at all: REML puts tau^2 on the boundary
    X = np.column_stack([np.ones(12), np.repeat([0.0, 1.0], 6)])
    seeds = np.tile(np.arange(6), 2)
    seeds_r = np.r_[seeds[:6], seeds[6:][::-1]]
    for blocks in (seeds, seeds_r):
        fit = BlockModel(y, X, blocks).fit()
        if fit.tau2 == 0:
            assert fit.df[1] == pytest.approx(10.0, rel=1e-6)  # N - p once the seed variance is 0


def test_emergence_on_published_data(sweep):
    e = emergence(sweep).set_index("baseline")
    assert e.loc["highway", "slope_per_decade"] == pytest.approx(0.009072, abs=1e-6)
    assert e.loc["standard", "slope_per_decade"] == pytest.approx(0.020714, abs=1e-6)
    assert e["df"].tolist() == pytest.approx([24.0, 24.0], rel=1e-6)  # 42 runs - 14 blocks - 4 variant terms
    assert (e["p"] < 1e-4).all()
    assert e["lrt_df"].tolist() == [2.0, 2.0]
    assert e["note"].tolist() == ["", ""]


def test_emergence_matches_statsmodels_and_lrt(sweep):
    d = sweep.copy()
    lx = np.log10(1e6 * d[d["variant"] == "review_neutral"].groupby("size")["params_M"].mean())
    d["lxc"] = d["size"].map(lx - lx.mean())
    d["hw"], d["std"] = (d["variant"] == "highway") * 1.0, (d["variant"] == "standard") * 1.0
    d["block"] = d["size"] + ":" + d["seed"].astype(str)
    full = "val_loss ~ 0 + C(size) + hw + std + hw:lxc + std:lxc"
    ref = statsmodels_fit(d, full, d["block"])
    e = emergence(sweep).set_index("baseline")
    assert e.loc["highway", "slope_per_decade"] == pytest.approx(ref.fe_params["hw:lxc"], rel=1e-6)
    assert e.loc["standard", "se"] == pytest.approx(ref.bse_fe["std:lxc"], rel=1e-6)
    ml_full = statsmodels_fit(d, full, d["block"], reml=False)
    ml_null = statsmodels_fit(d, "val_loss ~ 0 + C(size) + hw + std", d["block"], reml=False)
    assert e["lrt_chi2"].iloc[0] == pytest.approx(2 * (ml_full.llf - ml_null.llf), rel=1e-5)


def test_gap_regression_matches_statsmodels_wls(sweep):
    import statsmodels.api as sm

    w = welch_table(sweep)
    e = emergence(sweep).set_index("baseline")
    for b in ("highway", "standard"):
        rows = w[w["baseline"] == b]
        x = sm.add_constant(np.log10(rows["params_M"].to_numpy() * 1e6))
        ref = sm.WLS(rows["gap"].to_numpy(), x, weights=1 / rows["welch_se"].to_numpy() ** 2).fit()
        assert e.loc[b, "gap_regression_slope"] == pytest.approx(ref.params[1], rel=1e-9)
        assert e.loc[b, "gap_regression_p"] == pytest.approx(ref.pvalues[1], rel=1e-8)


def test_emergence_general_sweeps(sweep):
    extra = sweep[sweep["size"] == "1B"].assign(size="2B", params_M=lambda d: d["params_M"] * 2)
    layer = sweep[sweep["variant"] == "highway"].assign(variant="layerscale")
    lone = sweep[(sweep["size"] == "60M") & (sweep["variant"] == "highway")].assign(variant="rezero")
    e = emergence(pd.concat([sweep, extra, layer, lone], ignore_index=True)).set_index("baseline")
    assert list(e.index) == ["highway", "standard", "layerscale", "rezero"]
    assert e.loc["layerscale", "n_sizes"] == 5 and np.isfinite(e.loc["layerscale", "slope_per_decade"])
    assert np.isnan(e.loc["rezero", "slope_per_decade"]) and "no slope" in e.loc["rezero", "note"]
    assert e["lrt_df"].iloc[0] == 3.0
    assert set(EMERGENCE_COLUMNS) <= set(e.reset_index().columns)


def test_emergence_with_one_size_explains_itself(sweep):
    e = emergence(sweep[sweep["size"] == "1B"])
    assert e["slope_per_decade"].isna().all()
    assert (e["note"] == "needs at least 2 sizes with review_neutral runs").all()

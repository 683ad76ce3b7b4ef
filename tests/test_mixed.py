"""Mixed models: the sufficient-statistics REML against the closed form and statsmodels' MixedLM (tightened),
and Satterthwaite df. The emergence models are in test_emergence.py."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from rr_analysis.stats.mixed import BlockModel, mixed_table


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

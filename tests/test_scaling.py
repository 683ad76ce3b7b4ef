"""Scaling fits L(N) = E + A N^-alpha per variant: the weighted fit against scipy's least_squares, the seeded
parametric bootstrap, the identification rule, few sizes, and the fits view."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import rr

from rr_analysis.stats.scaling import SCALING_COLUMNS, power_law, scaling_fits
from rr_analysis.tables.render import render
from rr_analysis.views.registry import VIEWS


@pytest.fixture(scope="module")
def fits(sweep) -> pd.DataFrame:
    return scaling_fits(sweep, ["3B"], boot=60)


def test_power_law_is_the_weighted_least_squares_minimum(sweep):
    from scipy.optimize import least_squares

    c = sweep[sweep["variant"] == "highway"].groupby("size")["val_loss"].agg(["mean", "std", "count"])
    N = sweep[sweep["variant"] == "highway"].groupby("size")["params_M"].mean() * 1e6
    se = c["std"] / np.sqrt(c["count"])
    E, A, alpha, chi2 = power_law(N.to_numpy(), c["mean"].to_numpy(), se.to_numpy())

    def resid(p):
        return (c["mean"].to_numpy() - p[0] - p[1] * (N.to_numpy() / 1e9) ** -p[2]) / se.to_numpy()

    ref = least_squares(resid, [E, A * 1e9**-alpha, alpha], xtol=1e-15, ftol=1e-15, gtol=1e-15)
    assert 2 * ref.cost == pytest.approx(chi2, rel=1e-8)
    assert [E, alpha] == pytest.approx([ref.x[0], ref.x[2]], rel=1e-5)


def test_bootstrap_is_seeded_and_brackets_the_fit(sweep, fits):
    again = scaling_fits(sweep, ["3B"], boot=60)
    pd.testing.assert_frame_equal(fits, again)
    assert not scaling_fits(sweep, ["3B"], boot=60, seed=1)["alpha_low"].equals(fits["alpha_low"])
    assert (fits["boot_ok"] == 60).all() and (fits["resid_df"] == 2).all()
    for k in ("E", "alpha"):
        assert ((fits[f"{k}_low"] <= fits[k]) & (fits[k] <= fits[f"{k}_high"])).all()
    assert (fits["loss_pred"] == fits["E"] + fits["A"] * 3e9 ** -fits["alpha"]).all()
    assert fits["df_warning"].str.startswith("5 sizes, 3 parameters: 2 residual df").all()
    assert fits["confound"].str.startswith("steps 8000/8000/8000/7000/6000").all()
    assert fits["note"].str.contains("the intervals understate the uncertainty").all()


def test_a_curve_the_data_cannot_pin_is_said_to_be_not_identified():
    rng = np.random.default_rng(3)
    rows = [
        (s, v, seed, n, 8000, 2.0 + rng.normal(0, 0.01), 1.0)
        for s, n in (("60M", 60), ("150M", 150), ("320M", 320), ("590M", 590), ("1B", 1000))
        for v in ("review_neutral", "highway")
        for seed in range(3)
    ]
    d = pd.DataFrame(rows, columns=["size", "variant", "seed", "params_M", "steps", "val_loss", "minutes"])
    f = scaling_fits(d, boot=40)
    assert (~f["identified"]).all() and f["note"].str.startswith("not identified:").all()


def test_fewer_than_four_sizes_fit_nothing_and_say_why(sweep):
    f = scaling_fits(sweep[sweep["size"].isin(["60M", "150M", "590M"])], ["3B"], boot=10)
    assert f["E"].isna().all() and (~f["identified"]).all()
    assert f["note"].str.contains("three parameters need 4 or more").all()
    for fmt in ("text", "markdown", "latex", "csv", "json"):
        render(f, VIEWS["fits"], fmt)


def test_every_number_in_the_text_is_in_the_json(fits):
    records = json.loads(render(fits, VIEWS["fits"], "json"))
    assert [list(r) for r in records] == [list(SCALING_COLUMNS)] * 3
    text = render(fits, VIEWS["fits"], "text")
    for r in records:
        assert f"{r['E']:.4f}" in text and f"{r['alpha_high']:.3f}" in text and f"{r['loss_low']:.4f}" in text


@pytest.mark.slow
def test_cli_fits():
    ok = rr("analyze", "fits", "--format", "json")
    assert ok.exit_code == 0 and [r["variant"] for r in json.loads(ok.output)][0] == "review_neutral"

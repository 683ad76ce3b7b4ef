"""The forecast view: the primary size-level line's prediction at sizes the sweep has not run, against
metafor's predict.rma on the published data (R numbers below; tests/test_r_oracle.py runs R itself on
generated sweeps), where a size's parameter count comes from, the extrapolation warning, bad input."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from conftest import rr

from rr_analysis.comparison import Comparison
from rr_analysis.stats.forecast import FORECAST_COLUMNS, forecast
from rr_analysis.stats.targets import forecast_size
from rr_analysis.tables.render import render
from rr_analysis.views.registry import VIEWS
from rr_core.errors import InputError
from rr_core.shapes import model_config

# R 4 / metafor on the published CSV: predict(rma(yi, sei = sei, mods = ~ log10(params), method = "REML",
# test = "knha", control = list(threshold = 1e-14)), newmods = log10(3e9)): pred, se, ci.lb, ci.ub, pi.lb, pi.ub
R_3B = {
    "highway": (
        0.0178717406301,
        0.00356979338746,
        0.0065110648535,
        0.0292324164066,
        0.00365205644142,
        0.0320914248187,
    ),
    "standard": (
        0.0256337080187,
        0.00181529419687,
        0.0198566317089,
        0.0314107843285,
        0.0183181334242,
        0.0329492826132,
    ),
}


@pytest.fixture(scope="module")
def at_3b_7b(sweep) -> pd.DataFrame:
    return forecast(sweep, ["3B", "7B"])


def test_primary_forecast_matches_metafor_predict(at_3b_7b):
    f = at_3b_7b[at_3b_7b["at"] == "3B"].set_index("baseline")
    for b, want in R_3B.items():
        got = f.loc[b, ["pred", "pred_se", "ci_low", "ci_high", "pi_low", "pi_high"]].to_numpy(float)
        assert got == pytest.approx(np.array(want), rel=1e-6), b
    assert (f["meta_df"] == 3.0).all() and (f["meta_sizes"] == 5).all()


def test_prediction_interval_holds_the_confidence_interval(at_3b_7b):
    f = at_3b_7b
    assert ((f["pi_low"] <= f["ci_low"]) & (f["ci_high"] <= f["pi_high"])).all()
    assert ((f["run_ci_low"] < f["run_pred"]) & (f["dev_pi_low"] <= f["dev_ci_low"])).all()


def test_parameter_count_says_where_it_comes_from(sweep):
    assert forecast_size("3B") == ("3B", 3e9, "label")
    assert forecast_size("1b") == ("1B", float(model_config("1B", "review_neutral").n_params), "ladder")
    assert forecast_size("2.50B") == ("2.5B", 2.5e9, "label")
    f = forecast(sweep, ["1B"])
    assert (f["params_source"] == "ladder").all() and (f["decades_beyond"].abs() < 1e-5).all()


def test_extrapolation_warning_grows_with_the_decades(sweep):
    f = forecast(sweep, ["590M", "3B", "7B", "30B"]).drop_duplicates("at").set_index("at")
    assert f.loc["590M", "extrapolation"].startswith("within the data's range")
    assert f.loc["3B", "extrapolation"].startswith("extrapolation: 0.48 decades past 1B")
    assert f.loc["7B", "extrapolation"].startswith("strong extrapolation: 0.85 decades")
    assert f.loc["30B", "extrapolation"].startswith("far extrapolation: 1.48 decades")


@pytest.mark.parametrize(
    ("at", "says"),
    [
        ("0M", "is not a size: give a ladder size"),
        ("three billion", "is not a size"),
        ("30M", "below the smallest size in the data (60M"),
    ],
)
def test_bad_forecast_sizes_get_a_sentence(sweep, at, says):
    with pytest.raises(InputError) as e:
        forecast(sweep, [at])
    assert says in str(e.value)


def test_fewer_than_three_sizes_give_no_forecast_and_say_why(sweep):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = forecast(sweep[sweep["size"].isin(["60M", "1B"])], ["3B"])
        for fmt in ("text", "markdown", "latex", "csv", "json"):
            render(f, VIEWS["forecast"], fmt)
    assert f["pred"].isna().all() and f["dev_pred"].isna().all()
    assert f["note"].str.contains("a line needs 3 or more").all()


def test_every_number_in_the_text_is_in_the_json(at_3b_7b):
    records = json.loads(render(at_3b_7b, VIEWS["forecast"], "json"))
    assert [list(r) for r in records] == [list(FORECAST_COLUMNS)] * 4
    text = render(at_3b_7b, VIEWS["forecast"], "text")
    for r in records:
        for key in ("pred", "pred_se", "ci_low", "pi_high", "dev_pi_low", "run_ci_high"):
            assert f"{r[key]:.4f}" in text, key
        assert r["extrapolation"] in text and f"{r['decades_beyond']:.2f}" in text


def test_cli_forecast_and_its_errors():
    ok = rr("analyze", "forecast", "--at", "3B", "--format", "json")
    assert ok.exit_code == 0 and {r["at"] for r in json.loads(ok.output)} == {"3B"}
    bad = rr("analyze", "forecast", "--at", "0M")
    assert bad.exit_code == 2 and "not a size" in bad.output
    none = rr("analyze", "forecast")
    assert none.exit_code == 2 and "no forecast size" in none.output


# --- planning the confirming run (rr_analysis.stats.confirm) ---


def test_seeds_per_arm_match_statsmodels_solve_power(sweep):
    from statsmodels.stats.power import TTestPower

    from rr_analysis.stats.confirm import confirm_plan

    p = confirm_plan(sweep, ["3B", "7B"])
    for _, r in p.iterrows():
        for k in ("pi_low", "pred", "pi_high"):
            dz, n = r[k] / (np.sqrt(2) * r["resid_sd"]), r[f"seeds_at_{k}"]
            # the two-sided test's upper tail (statsmodels' two-sided power is NaN where its lower tail
            # underflows, at large dz); the lower tail is below 1e-6 for every gap here
            power = [
                TTestPower().power(dz, m, 0.025, alternative="larger") if m >= 2 else 0.0 for m in (n - 1, n)
            ]
            assert power[1] >= 0.8 and (n == 2 or power[0] < 0.8), (r["at"], r["baseline"], k)
    assert (p["seeds_at_pi_low"] >= p["seeds_at_pred"]).all() and (
        p["seeds_at_pred"] >= p["seeds_at_pi_high"]
    ).all()


def test_minutes_extrapolate_a_log_log_fit_of_the_cells(sweep):
    from rr_analysis.stats.confirm import confirm_plan, minutes_fit

    cells = sweep.assign(w=np.log(sweep["params_M"] * 1e6 * sweep["steps"]), m=np.log(sweep["minutes"]))
    cells = cells.groupby(["size", "variant"])[["w", "m"]].mean()
    slope, icpt = np.polyfit(cells["w"], cells["m"], 1)
    m = minutes_fit(sweep, np.array([3e9 * 6000]))
    assert m["slope"] == pytest.approx(slope, rel=1e-9) and m["cells"] == 15
    assert m["minutes"][0] == pytest.approx(np.exp(icpt + slope * np.log(1.8e13)), rel=1e-9)
    assert m["pi_low"][0] < m["ci_low"][0] < m["minutes"][0] < m["ci_high"][0] < m["pi_high"][0]
    p = confirm_plan(sweep, ["3B"])
    assert p["gpu_minutes"].tolist() == pytest.approx((p["seeds_at_pred"] * 3 * m["minutes"][0]).tolist())


def test_steps_come_from_the_ladder_the_option_or_the_largest_size(sweep):
    from rr_analysis.stats.confirm import confirm_plan

    p = confirm_plan(sweep, ["1B", "3B"]).drop_duplicates("at").set_index("at")
    assert p.loc["1B", ["steps", "steps_source"]].tolist() == [6000.0, "ladder"]
    assert p.loc["3B", "steps_source"] == "assumed: the largest size's (1B)"
    assert confirm_plan(sweep, ["3B"], steps=9000)["steps_source"].eq("given").all()


def test_an_interval_reaching_zero_gets_no_seed_count_and_a_sentence(sweep):
    from rr_analysis.stats.confirm import confirm_plan

    p = confirm_plan(sweep[sweep["size"].isin(["60M", "150M", "320M"])], ["3B"]).set_index("baseline")
    assert pd.isna(p.loc["highway", "seeds_at_pi_low"]) and p.loc["highway", "seeds_at_pred"] >= 2
    assert "no number of seeds shows a gap > 0" in p.loc["highway", "note"]
    records = json.loads(render(p.reset_index(), VIEWS["confirm"], "json"))
    text = render(p.reset_index(), VIEWS["confirm"], "text")
    for r in records:
        assert f"{r['pred']:.4f}" in text and f"{r['gpu_minutes']:.0f}" in text and r["note"] in text


def test_cli_confirm():
    ok = rr("analyze", "confirm", "--at", "3B", "--target-power", "0.9", "--format", "json")
    assert ok.exit_code == 0 and {r["power"] for r in json.loads(ok.output)} == {0.9}
    bad = rr("analyze", "confirm", "--at", "3B", "--target-power", "1.5")
    assert bad.exit_code == 2 and "between 0 and 1" in bad.output


def test_any_comparison_forecasts_its_own_paired_gaps(sweep):
    from rr_analysis.stats.forecast import size_gaps
    from rr_analysis.stats.meta import meta_predict

    f = forecast(sweep, ["3B"], comparison=Comparison("highway", ["standard"]))
    assert f[["reference", "metric", "higher_is_better"]].values.tolist() == [["highway", "val_loss", False]]
    g = size_gaps(sweep, "standard", Comparison("highway", ("standard",)))[0]
    want = meta_predict(g["gap"].to_numpy(), g["se"].to_numpy(), g["lx"].to_numpy(), [np.log10(3e9)])
    assert f["pred"].iloc[0] == pytest.approx(want["pred"][0], rel=1e-12)
    assert np.isfinite(f[["run_pred", "dev_pred"]].to_numpy(float)).all()


def test_a_ladder_file_gives_a_forecast_size_its_exact_count_and_steps(sweep, tmp_path):
    from rr_analysis.stats.confirm import confirm_plan

    ladder = tmp_path / "next.toml"
    ladder.write_text('["3B"]\nd_model = 2560\nn_layer = 32\nn_head = 20\nsteps = 5000\nseeds = 3\n')
    n = model_config("3B", "review_neutral", ladder=ladder).n_params
    assert forecast_size("3B", ladder=str(ladder)) == ("3B", float(n), "ladder")
    p = confirm_plan(sweep, ["3B"], ladder=str(ladder))
    assert (p["params"] == n).all() and p[["steps", "steps_source"]].iloc[0].tolist() == [5000.0, "ladder"]

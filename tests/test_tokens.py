"""Tokens as a first-class quantity (issue 44): each run's tokens and each cell's tokens per parameter,
checked by arithmetic on the published sweep; files of several budgets read per (size, budget) cell; and the
size-level fit on size and tokens per parameter together, on the constructed 3 sizes x 3 budgets sweep of
docs/statistics.md ("Scale or tokens?") where the gap depends on tokens per parameter only."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import budget_grid, rr

from rr_analysis.cells import SIZE_NAME, budget_cells
from rr_analysis.stats.emergence import emergence
from rr_analysis.stats.gap_tests import gap_table
from rr_analysis.stats.tokens import cell_budgets, path_tokens_per_param, run_tokens, size_and_tokens
from rr_core.shapes import model_config

PUBLISHED_STEPS = {"60M": 8000, "150M": 8000, "320M": 8000, "590M": 7000, "1B": 6000}


def test_published_tokens_per_parameter_by_arithmetic(sweep):
    """Tokens = steps x 64 x 256; D/N = tokens / Review's exact parameter count: 2.20, 0.86, 0.41, 0.19, 0.10,
    and log10 N and log10 D/N correlate at r = -0.998 (the paper's sweep, issue 44)."""
    b = cell_budgets(sweep, "review_neutral").set_index("size")
    tokens = {s: n * 64 * 256 for s, n in PUBLISHED_STEPS.items()}
    assert tokens == {
        "60M": 131_072_000,
        "150M": 131_072_000,
        "320M": 131_072_000,
        "590M": 114_688_000,
        "1B": 98_304_000,
    }
    assert b["tokens"].to_dict() == pytest.approx(tokens, rel=0)
    exact = {s: model_config(s, "review_neutral").n_params for s in PUBLISHED_STEPS}
    assert exact["60M"] == 59_470_848 and exact["1B"] == 984_038_400
    dn = {s: tokens[s] / exact[s] for s in PUBLISHED_STEPS}
    assert [round(v, 2) for v in dn.values()] == [2.20, 0.86, 0.41, 0.19, 0.10]
    assert b["tokens_per_param"].to_dict() == pytest.approx(dn, rel=1e-12)
    assert (b["params_source"] == "shape").all() and (b["tokens_source"] == "recipe").all()
    lx, lz = np.log10(list(exact.values())), np.log10(list(dn.values()))
    r = ((lx - lx.mean()) @ (lz - lz.mean())) / np.sqrt(
        ((lx - lx.mean()) ** 2).sum() * ((lz - lz.mean()) ** 2).sum()
    )
    assert round(r, 3) == -0.998
    reading = size_and_tokens(b.reset_index())
    assert reading["r"] == pytest.approx(r, rel=1e-12) and not reading["separable"]
    # the sweep's path carried to 3B: log10 D/N on log10 N by least squares, as numpy's polyfit fits it
    slope, icept = np.polyfit(lx, lz, 1)
    assert path_tokens_per_param(b.reset_index(), [3e9])[0] == pytest.approx(
        10 ** (icept + slope * np.log10(3e9))
    )


def test_a_tokens_column_wins_over_the_recipe_and_says_so(sweep):
    d = sweep.assign(tokens=np.where(sweep["size"] == "60M", 2.0e9, np.nan))
    tokens, source = run_tokens(d)
    big = (sweep["size"] == "1B").to_numpy()
    assert tokens[0] == 2.0e9 and source[0] == "file" and set(source[big]) == {"recipe"}
    b = cell_budgets(d, "review_neutral").set_index("size")
    assert b.loc["60M", "tokens_per_param"] == pytest.approx(2.0e9 / 59_470_848)
    assert b.loc["60M", "tokens_source"] == "file" and b.loc["1B", "tokens_source"] == "recipe"


def test_a_size_rr_does_not_know_divides_by_the_files_count():
    d = budget_grid()
    b = cell_budgets(budget_cells(d), "review_neutral")
    assert (b["params_source"] == "file").all() and b["params"].iloc[0] == 10e6
    assert b["tokens_per_param"].iloc[0] == pytest.approx(1000 * 64 * 256 / 10e6)


def test_a_file_of_one_budget_per_size_is_read_as_it_is(sweep):
    assert budget_cells(sweep) is sweep


def test_several_budgets_are_cells_ordered_by_size_then_steps():
    cells = budget_cells(budget_grid())
    assert cells["size"].cat.categories.tolist() == [
        f"{s}@{n}" for s in ("10M", "30M", "100M") for n in (1000, 3000, 9000)
    ]
    assert cells[SIZE_NAME].iloc[0] == "10M" and budget_cells(cells) is cells
    t = gap_table(budget_grid()).set_index("size")
    assert len(t) == 9 and t.loc["30M@3000", "n_pairs"] == 4
    assert t.loc["30M@3000", "steps"] == 3000 and t.loc["30M@3000", "tokens"] == 3000 * 64 * 256
    assert t.loc["30M@3000", "tokens_per_param"] == pytest.approx(3000 * 64 * 256 / 30e6)


def test_two_moderators_find_tokens_per_parameter_and_no_size_slope():
    """The worked example: the gap depends on D/N only. The two-moderator fit finds the D/N slope (-0.006 per
    decade) and no size slope, while the size-only line reads growth with size."""
    e = emergence(budget_grid()).iloc[0]
    assert e["dn_reading"] == "separable" and e["dn_sizes_with_budgets"] == 3
    assert round(e["dn_r"], 3) == -0.724 and e["meta2_df"] == 6.0
    assert e["meta2_dn_slope"] == pytest.approx(-0.006, abs=2 * e["meta2_dn_se"]) and e["meta2_dn_p"] < 1e-4
    assert e["meta2_size_p"] > 0.5 and abs(e["meta2_size_slope"]) < 2 * e["meta2_size_se"]
    assert e["meta_slope"] > 0 and e["meta_p"] < 0.05  # the size-only line, tokens per parameter left out
    assert e["verdict"].startswith(
        "size and tokens per parameter told apart (r = -0.724): at fixed tokens per parameter, no evidence that "
        "the gap changes with size (p = 0.74); at fixed size, the gap shrinks with tokens per parameter (p = "
    )
    assert e["verdict"].endswith(
        "the size-only line would read: grows with size: robust (primary p = 0.026, "
        "size-deviation model p = 0.026)"
    )
    assert e["confound"] == ""


def test_one_size_at_two_budgets_cannot_separate_them():
    """Two budgets at one size only: the cells vary in both, but fewer than two sizes hold two budgets."""
    d = budget_grid()
    d = d[(d["size"] == "100M") | (d["steps"] == 3000)]
    e = emergence(d).iloc[0]
    assert e["dn_reading"] == "confounded" and e["dn_sizes_with_budgets"] == 1
    assert "so the data cannot attribute it to size" in e["verdict"] or "nor could the data" in e["verdict"]


def test_the_tables_json_holds_each_cells_budget():
    out = rr("analyze", "table", "--format", "json")
    rows = json.loads(out.output)
    assert [(r["size"], r["steps"], r["tokens"], r["tokens_source"]) for r in rows[::2]] == [
        (s, n, n * 64 * 256, "recipe") for s, n in PUBLISHED_STEPS.items()
    ]
    assert round(rows[-1]["tokens_per_param"], 2) == 0.10


@pytest.mark.slow
def test_a_grid_file_reads_end_to_end(tmp_path):
    path = tmp_path / "grid.csv"
    budget_grid().to_csv(path, index=False)
    out = rr("analyze", "emergence", "--data", path, "--format", "json")
    assert out.exit_code == 0, out.output
    (row,) = json.loads(out.output)
    assert row["dn_reading"] == "separable" and set(row["tokens_per_param"]) == set(
        pd.Categorical(budget_cells(budget_grid())["size"]).categories
    )


# --- forecast and confirm at a stated budget (issue 44.5) -----------------------------------------------------


def test_the_forecast_says_which_tokens_per_parameter_its_line_assumes(sweep):
    from rr_analysis.stats.forecast import forecast

    f = forecast(sweep, ["3B"])
    b = cell_budgets(sweep, "review_neutral")
    slope, icept = np.polyfit(b["log_params"], b["log_tokens_per_param"], 1)
    assert f["tokens_per_param"].tolist() == pytest.approx([10 ** (icept + slope * np.log10(3e9))] * 2)
    assert round(f["tokens_per_param"].iloc[0], 3) == 0.032
    assert f["budget"].iloc[0] == (
        "the sweep's path, where tokens per parameter fall with size, from 2.20 at 60M to 0.10 at 1B"
    )
    text = rr("analyze", "forecast", "--at", "3B").output
    assert "note: 3B: the line assumes 0.032 tokens per parameter: the sweep's path" in text


def test_a_sweep_of_one_budget_per_size_is_not_carried_to_another_budget(sweep):
    out = rr("analyze", "forecast", "--at", "3B", "--tokens-per-param", "20")
    assert out.exit_code == 2 and "Traceback" not in out.output
    assert (
        "rr: error: the sweep cannot say what the gap is at 20 tokens per parameter: tokens per parameter "
        "fall with size, from 2.20 at 60M to 0.10 at 1B" in out.output
    )
    assert "rr analyze confirm --at 3B --tokens-per-param 20" in out.output
    off = rr("analyze", "confirm", "--at", "3B", "--steps", "60000")
    assert off.exit_code == 2 and "runs of 60000 steps at 3B train 0.33 tokens per parameter" in off.output
    assert "(about 0.032 at 3B)" in off.output


def test_the_confirm_plan_states_its_runs_budget_beside_the_paths(sweep):
    from rr_analysis.stats.confirm import confirm_plan

    p = confirm_plan(sweep, ["3B"])
    assert p["tokens"].tolist() == [6000 * 64 * 256] * 2  # the largest size's steps, as before
    assert p["tokens_per_param"].iloc[0] == pytest.approx(6000 * 64 * 256 / 3e9)
    assert p["path_tokens_per_param"].iloc[0] == pytest.approx(0.0321, abs=5e-5)


@pytest.mark.slow
def test_a_grid_forecasts_at_a_stated_budget_from_the_fit_on_both():
    from rr_analysis.stats.forecast import forecast

    f = forecast(budget_grid(), ["300M"], tokens_per_param=20).iloc[0]
    e = emergence(budget_grid()).iloc[0]
    assert f["budget"].startswith("asked") and f["tokens_per_param"] == 20
    assert f["meta_df"] == e["meta2_df"] == 6.0 and np.isnan(f["run_pred"]) and np.isnan(f["dev_pred"])
    assert "size-only: not read at a stated budget" in f["note"]


def test_the_design_that_tells_size_from_tokens_per_parameter(sweep):
    """`confirm --at 3B --tokens-per-param 20` on the published sweep, by arithmetic: 1B and 3B at the path and
    at 20 tokens per parameter; seeds for the size effect at fixed D/N by statsmodels' two-sample power."""
    from statsmodels.stats.power import TTestIndPower

    from rr_analysis.stats.confirm import minutes_fit
    from rr_analysis.stats.design import confirm_design
    from rr_analysis.stats.power import pooled_resid_sd

    d = confirm_design(sweep, ["3B"], 20).set_index(["size", "budget"])
    n1b = model_config("1B", "review_neutral").n_params
    x = "20 tokens per parameter"
    assert d.loc[("1B", "path"), "steps"] == 6000 and d.loc[("1B", "path"), "seeds_in_sweep"] == 3
    assert d.loc[("1B", x), "steps"] == round(20 * n1b / (64 * 256))
    assert d.loc[("3B", x), "steps"] == round(20 * 3e9 / (64 * 256))
    assert d.loc[("3B", "path"), "tokens_per_param"] == pytest.approx(0.0321, abs=5e-5)
    e = emergence(sweep).set_index("baseline")
    effect = e.loc["highway", "meta_slope"] * np.log10(3e9 / n1b)  # highway's growth is the smaller
    assert d["effect"].iloc[0] == pytest.approx(effect) and d["effect_baseline"].iloc[0] == "highway"
    sd = pooled_resid_sd(sweep)[0]
    n = next(n for n in range(2, 100) if TTestIndPower().power(effect / (np.sqrt(2) * sd), n, 0.05) >= 0.8)
    assert (d["seeds"] == n).all() and d.loc[("1B", "path"), "seeds_to_run"] == n - 3
    at_path = minutes_fit(sweep, np.array([n1b * 6000]))["minutes"][0]
    assert d.loc[("1B", "path"), "minutes_per_run"] == pytest.approx(at_path)
    scaled = at_path * d.loc[("1B", x), "steps"] / 6000  # the same size: minutes scale with tokens
    assert d.loc[("1B", x), "minutes_per_run"] == pytest.approx(scaled)
    assert d.loc[("1B", x), "gpu_minutes"] == pytest.approx(n * 3 * scaled)
    assert d["gpu_minutes_total"].iloc[0] == pytest.approx(d["gpu_minutes"].sum())
    out = rr("analyze", "confirm", "--at", "3B", "--tokens-per-param", "20", "--format", "json")
    assert out.exit_code == 0 and len(json.loads(out.output)) == 4


def test_validate_says_how_many_budgets_a_size_holds(tmp_path):
    path = tmp_path / "grid.csv"
    budget_grid().to_csv(path, index=False)
    out = rr("validate", path)
    assert out.exit_code == 0
    assert "seeds per cell 4 over 6 cells, at 3 budgets (step counts) per size" in out.output


def test_the_emergence_figure_of_several_budgets_draws_a_line_per_budget():
    from rr_analysis.figures.gaps import emergence_figure

    ax = emergence_figure(gap_table(budget_grid())).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["10M", "30M", "100M"]
    labels = ax.get_legend_handles_labels()[1]
    assert [f"Standard (parameter-matched), {n} steps" for n in (1000, 3000, 9000)] == labels[-3:]
    assert ax.get_xlabel().endswith("; a line per budget (steps)")

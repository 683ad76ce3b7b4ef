"""`rr analyze tuning` and `rr plot tuning` on a constructed tuning file, checked against scipy: the curve of
each variant on its selection seeds (mean, 95% t CI), the rate chosen, and the seed-paired test of the gap at
the tuned rates on the comparison seeds only, beside the gap at the shared rate."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import rr
from scipy import stats

from rr_analysis.stats.tuning import tuning_table
from rr_core.sweepfile.dataset import load_sweep

GRID = (1e-4, 2e-4, 4e-4)
# selection seeds 0, 1: review is best at 4e-4, highway at 2e-4 (and ahead of review there)
SELECTION = {
    "review_neutral": {1e-4: [1.731, 1.735], 2e-4: [1.712, 1.716], 4e-4: [1.701, 1.709]},
    "highway": {1e-4: [1.720, 1.726], 2e-4: [1.705, 1.707], 4e-4: [1.711, 1.715]},
}
# comparison seeds 2, 3, 4: at each variant's chosen rate, and both at the shared 2e-4
COMPARISON = {
    ("review_neutral", 4e-4): [1.7000, 1.7040, 1.6990],
    ("highway", 2e-4): [1.7060, 1.7071, 1.7085],
    ("review_neutral", 2e-4): [1.7140, 1.7120, 1.7161],
}


def _write(path, selection=SELECTION):
    params = {"review_neutral": "59.47", "highway": "59.98"}
    lines = ["size,variant,seed,params_M,steps,val_loss,ece,minutes,lr,role"]
    for v, curve in selection.items():
        lines += [
            f"60M,{v},{s},{params[v]},8000,{x},,,{lr!r},selection"
            for lr, xs in curve.items()
            for s, x in enumerate(xs)
        ]
    for (v, lr), xs in COMPARISON.items():
        lines += [
            f"60M,{v},{s},{params[v]},8000,{x},,,{lr!r},comparison"
            for s, x in zip((2, 3, 4), xs, strict=True)
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def tune_csv(tmp_path):
    return _write(tmp_path / "tune.csv")


def _ci(xs):
    return stats.t.interval(0.95, len(xs) - 1, loc=np.mean(xs), scale=stats.sem(xs))


def test_the_curves_and_chosen_rates_match_scipy(tune_csv):
    t = tuning_table(load_sweep(tune_csv))
    sel = t[t["part"] == "selection"].set_index(["variant", "lr"])
    for v, curve in SELECTION.items():
        for lr, xs in curve.items():
            row = sel.loc[(v, lr)]
            assert row["n"] == 2 and row["estimate"] == pytest.approx(np.mean(xs), abs=1e-12)
            assert (row["ci_low"], row["ci_high"]) == pytest.approx(_ci(xs), abs=1e-12)
    chosen = sel[sel["chosen"]].reset_index()
    assert dict(zip(chosen["variant"], chosen["lr"], strict=True)) == {
        "review_neutral": 4e-4,
        "highway": 2e-4,
    }
    assert (
        sel.loc[("review_neutral", 4e-4), "edge"] == "highest"
        and "extend the grid" in sel.loc[("review_neutral", 4e-4), "note"]
    )
    assert sel.loc[("highway", 2e-4), "edge"] == ""


def test_tuning_plot_draws_each_rates_selection_mean_and_rings_the_rate_chosen(tune_csv):
    """`rr plot tuning`'s one call: each variant's curve is its selection seeds' mean at each rate (by hand
    here), the chosen rate ringed, hollow at the grid's edge."""
    from rr_analysis.figures.tuning_curves import tuning_plot

    (ax,) = tuning_plot(load_sweep(tune_csv)).axes
    curves = {c.lines[0].get_gid(): c.lines[0] for c in ax.containers}
    rings = {ln.get_gid(): ln for ln in ax.get_lines() if str(ln.get_gid()).startswith("chosen:")}
    for variant, curve in SELECTION.items():
        x, y = curves[f"curve:{variant}"].get_data()
        assert list(x) == list(GRID) and list(y) == pytest.approx([np.mean(xs) for xs in curve.values()])
    assert rings["chosen:review_neutral"].get_xdata() == [4e-4] and rings["chosen:highway"].get_xdata() == [
        2e-4
    ]
    assert rings["chosen:review_neutral"].get_markerfacecolor() == "none"  # 4e-4 is the grid's highest
    assert rings["chosen:highway"].get_markerfacecolor() != "none"


def test_the_tuned_gap_is_the_paired_t_test_of_the_comparison_seeds_at_the_chosen_rates(tune_csv):
    t = tuning_table(load_sweep(tune_csv))
    tuned = t[t["part"] == "tuned"].iloc[0]
    base, ref = COMPARISON[("highway", 2e-4)], COMPARISON[("review_neutral", 4e-4)]
    d = np.subtract(base, ref)
    test = stats.ttest_rel(base, ref)
    assert (tuned["variant"], tuned["lr"], tuned["reference_lr"], tuned["n"]) == ("highway", 2e-4, 4e-4, 3)
    assert tuned["estimate"] == pytest.approx(d.mean(), abs=1e-12)
    assert (tuned["t"], tuned["p"], tuned["df"]) == pytest.approx((test.statistic, test.pvalue, 2), rel=1e-9)
    assert (tuned["ci_low"], tuned["ci_high"]) == pytest.approx(_ci(d), abs=1e-12)
    assert tuned["p_adj"] == pytest.approx(test.pvalue) and tuned["family_m"] == 1  # one baseline: Holm is p

    shared = t[t["part"] == "shared"].iloc[0]
    at_shared = stats.ttest_rel(COMPARISON[("highway", 2e-4)], COMPARISON[("review_neutral", 2e-4)])
    assert (shared["lr"], shared["reference_lr"], shared["n"]) == (2e-4, 2e-4, 3)
    assert (shared["t"], shared["p"]) == pytest.approx((at_shared.statistic, at_shared.pvalue), rel=1e-9)
    assert shared["estimate"] < 0 < tuned["estimate"]
    assert tuned["verdict"].startswith(
        "ranking flips with tuning: Highway ahead at the shared rate, Review once"
    )


def test_the_selection_seeds_never_enter_a_test(tmp_path, tune_csv):
    before = tuning_table(load_sweep(tune_csv))
    shift = {"review_neutral": 0.0004, "highway": -0.0003}  # each curve moved whole: the same rates chosen
    moved = {v: {lr: [x + shift[v] for x in xs] for lr, xs in c.items()} for v, c in SELECTION.items()}
    after = tuning_table(load_sweep(_write(tmp_path / "moved.csv", moved)))
    tests = ["estimate", "t", "p", "ci_low", "ci_high"]
    gaps = before["part"] != "selection"
    assert after.loc[gaps, tests].equals(before.loc[gaps, tests])
    assert not after.loc[~gaps, "estimate"].equals(before.loc[~gaps, "estimate"])


@pytest.mark.slow
def test_every_format_and_the_figure(tune_csv, tmp_path):
    for fmt in ("text", "markdown", "latex", "csv", "json"):
        result = rr("analyze", "tuning", "--data", tune_csv, "--format", fmt)
        assert result.exit_code == 0, result.output
        assert "nan" not in result.output.lower().replace("nan,", "")
    rows = json.loads(rr("analyze", "tuning", "--data", tune_csv, "--format", "json").output)
    tuned = next(r for r in rows if r["part"] == "tuned")
    assert tuned["p"] == pytest.approx(
        stats.ttest_rel(COMPARISON[("highway", 2e-4)], COMPARISON[("review_neutral", 4e-4)]).pvalue
    )
    text = rr("analyze", "tuning", "--data", tune_csv, "--wide").output
    assert "ranking flips with tuning" in text and "yes, high" in text

    from rr_analysis.figures.tuning_curves import tuning_figure

    fig = tuning_figure(tuning_table(load_sweep(tune_csv)))
    marks = {line.get_gid(): line.get_xydata().tolist() for line in fig.axes[0].get_lines()}
    assert marks["chosen:highway"] == [[2e-4, pytest.approx(1.706)]]
    assert marks["chosen:review_neutral"] == [[4e-4, pytest.approx(1.705)]]
    result = rr("plot", "tuning", "--data", tune_csv, "--out", tmp_path / "t.png")
    assert result.exit_code == 0 and (tmp_path / "t.png").stat().st_size > 0


def test_a_file_that_is_not_a_tuning_is_one_error(published_copy):
    result = rr("analyze", "tuning", "--data", published_copy)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "not a tuning file: it lacks the column(s) lr, role" in result.output


def test_a_view_that_pairs_by_seed_refuses_a_file_of_several_rates(tune_csv):
    result = rr("analyze", "table", "--data", tune_csv)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "holds runs of one (size, variant, seed) at several learning rates" in result.output
    assert "use rr analyze tuning" in result.output


@pytest.mark.parametrize(
    "command",
    [
        ("plot", "emergence"),
        ("plot", "forecast", "--at", "1B"),
        ("plot", "scaling"),
        ("plot", "seeds"),
        ("report",),
    ],
)
def test_a_figure_or_report_of_a_file_of_several_rates_is_one_error(tune_csv, tmp_path, command):
    """The figures pair or pool a cell's seeds through `compare`, as the views do: a tuning file is refused
    there, once, before anything is drawn or written."""
    out = tmp_path / ("report" if command == ("report",) else "f.png")
    result = rr(*command, "--data", tune_csv, "--out", out)
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert "holds runs of one (size, variant, seed) at several learning rates" in result.output
    assert "use rr analyze tuning or rr plot tuning" in result.output
    assert not out.exists()


def test_validate_counts_a_tuning_file_s_seeds_once_and_says_it_has_several_rates(tune_csv):
    # each (variant, seed) at several rates counted once: review_neutral has seeds 0-4 (12 rows), highway 0-4 (9)
    result = rr("validate", tune_csv)
    assert result.exit_code == 0, result.output
    assert (
        "21 rows, 1 sizes (60M), 2 variants (review_neutral, highway), seeds per cell 5 over 2 cells, "
        in result.output
    )
    assert "at 1-3 learning rates per seed;" in result.output


def test_a_nan_learning_rate_is_refused_not_read_as_the_recipe_s(tmp_path):
    # an empty lr cell means the recipe's rate: a cell spelled NaN (another tool's missing value) was read as
    # empty, so a selection row at 1e-4 silently became a row at the shared rate
    text = _write(tmp_path / "t.csv").read_text().replace(",0.0001,selection", ",nan,selection", 1)
    bad = tmp_path / "nan.csv"
    bad.write_text(text)
    result = rr("analyze", "tuning", "--data", bad)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "line 2, column lr: 'nan' - holds NaN: lr must be a finite number > 0 or empty (the recipe's)" in (
        " ".join(result.output.split())
    )


def test_the_tuning_table_fits_80_columns_and_names_what_it_leaves_out(tune_csv):
    """Issue 49.10: the rows ran to 100 columns at a terminal of 80 (the columns that always show, with
    "chosen (highest of grid)" and rates written 0.0004); rates are now 4e-4, the part and the chosen mark
    short, and the three columns dropped by rank are named under the table."""
    text = rr("analyze", "tuning", "--data", tune_csv, env={"COLUMNS": "80"}).output
    lines = text.splitlines()
    assert max(map(len, lines)) <= 80
    header = next(line for line in lines if line.startswith("size"))
    assert header.split() == ["size", "part", "variant", "lr", "gap", "95%", "CI", "p", "adj", "chosen"]
    assert "not shown at width 80: Review lr, n, paired* t p (--wide shows all, --columns" in text
    chosen = [
        (line.split()[2:4], line.rsplit("  ", 1)[-1]) for line in lines if line.endswith(("yes", "high"))
    ]
    assert chosen == [(["Review", "4e-4"], "yes, high"), (["Highway", "2e-4"], "yes")]  # 4e-4: the grid's top
    wide = rr("analyze", "tuning", "--data", tune_csv, "--wide").output
    assert "paired* t" in wide and max(map(len, wide.splitlines())) > 80  # every column, whatever the width

"""Figures: what is drawn (read back from the Axes) against the statistics library, files, and `rr plot`."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import rr
from matplotlib.colors import same_color
from matplotlib.figure import Figure

from rr_analysis import figures as plots
from rr_analysis.stats.gap_tests import gap_table
from rr_core.palette import colour
from rr_core.sweepfile.dataset import load_sweep
from rr_core.variants import BASELINES

SIZES = ["60M", "150M", "320M", "590M", "1B"]
SIGNATURES = {"png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF-"}


@pytest.fixture(scope="module")
def raw(sweep) -> pd.DataFrame:
    return gap_table(sweep, adjust="none")  # the paper's stars: unadjusted p


def drawn(fig: Figure) -> dict[str, dict]:
    """Per baseline: x and y of its line, its error-bar ends and the x of its stars, as drawn."""
    ax = fig.axes[0]
    out = {}
    for c in ax.containers:
        line, _, (bars,) = c.lines
        name = line.get_gid()
        ends = np.array([seg[:, 1] if len(seg) else [np.nan, np.nan] for seg in bars.get_segments()])
        stars = [t.xy[0] for t in ax.texts if t.get_gid() == f"star:{name}"]
        out[name] = {
            "x": np.asarray(line.get_xdata(), float),
            "y": np.asarray(line.get_ydata(), float),
            "lo": ends[:, 0],
            "hi": ends[:, 1],
        }
        out[name] |= {"stars": stars, "colour": line.get_color(), "label": c.get_label()}
    return out


def t_quantile(df) -> np.ndarray:
    """t_{0.975, df} from scipy, independent of the figures' own helpers."""
    from scipy import stats

    return stats.t.ppf(0.975, np.asarray(df, float))


def rows(table: pd.DataFrame, baseline: str) -> pd.DataFrame:
    return table[table["baseline"] == baseline]


def test_emergence_draws_the_welch_gaps_bars_and_stars(raw):
    fig = plots.emergence_figure(raw, stat="welch")
    got = drawn(fig)
    assert list(got) == list(BASELINES)
    for b in BASELINES:
        want = rows(raw, b)
        np.testing.assert_allclose(got[b]["x"], want["params_M"])
        np.testing.assert_allclose(got[b]["y"], want["gap"])
        half = t_quantile(want["welch_df"]) * want["welch_se"]  # issue 49.8: 95% CIs, Welch's own df
        np.testing.assert_allclose(got[b]["lo"], want["gap"] - half, rtol=1e-9)
        np.testing.assert_allclose(got[b]["hi"], want["gap"] + half, rtol=1e-9)
        assert got[b]["stars"] == list(want.loc[want["welch_p"] < 0.05, "params_M"])
        assert same_color(got[b]["colour"], colour(b))
        assert got[b]["label"] == f"{b.capitalize()} (parameter-matched)"
    subtitle = fig.axes[0].get_title(loc="left")
    assert subtitle == "Welch t-test; bars 95% CI; * unadjusted p < 0.05"


def test_emergence_is_the_papers_figure_on_the_published_data(raw):
    """Review behind Standard at 60M, ahead at 590M and 1B; under Welch only 590M reaches p < 0.05."""
    got = drawn(plots.emergence_figure(raw, stat="welch"))
    at = dict(zip(SIZES, rows(raw, "standard")["params_M"], strict=True))
    assert got["standard"]["y"][0] < 0 < got["standard"]["y"][3] < got["standard"]["y"][4]
    assert got["highway"]["y"][3] > 0 and got["highway"]["y"][4] > 0
    assert got["standard"]["stars"] == got["highway"]["stars"] == [at["590M"]]


def test_emergence_default_is_the_primary_holm_adjusted_paired_test(table):
    """Stars from Holm over the 10 paired p-values: 590M Highway and 1B both (adjusted 0.003, 0.009, 0.002)."""
    fig = plots.emergence_figure(table)
    got = drawn(fig)
    at = dict(zip(SIZES, rows(table, "highway")["params_M"], strict=True))
    assert got["highway"]["stars"] == [at["590M"], at["1B"]] and got["standard"]["stars"] == [at["1B"]]
    for b in BASELINES:
        np.testing.assert_allclose(got[b]["y"], rows(table, b)["paired_diff"])
    subtitle = fig.axes[0].get_title(loc="left")
    assert subtitle == "Paired t-test (seed-matched); bars 95% CI; * Holm-adjusted p < 0.05 over 10 cells"


def test_a_star_sits_on_the_side_of_zero_where_its_estimate_lies(raw):
    """Mixed model, unadjusted: 60M Standard is significant with a negative gap; its star hangs below."""
    ax = plots.emergence_figure(raw, stat="mixed").axes[0]
    got = drawn(ax.figure)
    stars = [t for t in ax.texts if t.get_gid() == "star:standard"]
    (below,) = [t for t in stars if t.xy[0] == got["standard"]["x"][0]]
    assert got["standard"]["y"][0] < 0
    assert below.xy[1] == pytest.approx(got["standard"]["lo"][0]) and below.get_va() == "top"
    for t in stars[1:]:
        i = list(got["standard"]["x"]).index(t.xy[0])
        assert got["standard"]["y"][i] > 0 and t.xy[1] == pytest.approx(got["standard"]["hi"][i])
        assert t.get_va() == "bottom"


@pytest.mark.parametrize(
    ("stat", "estimate", "p"), [("paired", "paired_diff", "paired_p"), ("mixed", "mixed_coef", "mixed_p")]
)
def test_emergence_other_views_draw_their_own_estimate_se_and_stars(table, stat, estimate, p):
    got = drawn(plots.emergence_figure(table, stat=stat))
    for b in BASELINES:
        want = rows(table, b)
        se = want["paired_sd"] / np.sqrt(want["n_pairs"]) if stat == "paired" else want["mixed_se"]
        df = want["n_pairs"] - 1 if stat == "paired" else want["mixed_df"]
        np.testing.assert_allclose(got[b]["y"], want[estimate])
        np.testing.assert_allclose(got[b]["hi"] - got[b]["y"], t_quantile(df) * se, rtol=1e-9)
        np.testing.assert_allclose(got[b]["y"] - got[b]["lo"], t_quantile(df) * se, rtol=1e-9)
        assert got[b]["stars"] == list(want.loc[want[f"p_adj_{stat}"] < 0.05, "params_M"])
    # The seed-matched views find what Welch cannot: the 1B gaps stay significant after Holm.
    assert rows(table, "highway")["params_M"].iloc[-1] in got["highway"]["stars"]


def test_emergence_with_a_missing_cell_and_a_one_pair_cell(sweep):
    """No Standard at 320M: its line skips that size. One seed per arm at 150M: a point without a bar."""
    cut = sweep[~((sweep["size"] == "320M") & (sweep["variant"] == "standard"))]
    cut = cut[~((cut["size"] == "150M") & (cut["seed"] > 0))]
    got = drawn(plots.emergence_figure(gap_table(cut), stat="paired"))
    assert len(got["standard"]["x"]) == 4 and len(got["highway"]["x"]) == 5
    assert np.isnan(got["highway"]["hi"][1]) and np.isfinite(got["highway"]["y"][1])


def test_scaling_draws_every_run_and_the_seed_means(sweep):
    ax = plots.scaling_figure(sweep).axes[0]
    assert ax.get_xscale() == "log"
    steps = sweep.groupby("size")["steps"].first().loc[SIZES]
    assert [t.get_text() for t in ax.get_xticklabels()] == [f"{s}\n{n} steps" for s, n in steps.items()]
    assert steps.loc["1B"] == 6000 and steps.loc["60M"] == 8000  # the confound the labels show
    (runs,) = ax.collections  # seaborn's scatter: one point per run, coloured by its variant
    points = pd.DataFrame(runs.get_offsets(), columns=["params_M", "val_loss"])
    want = sweep.sort_values(["params_M", "val_loss"]).reset_index(drop=True)
    got = points.assign(c=list(runs.get_facecolor())).sort_values(["params_M", "val_loss"]).reset_index()
    np.testing.assert_allclose(got[["params_M", "val_loss"]], want[["params_M", "val_loss"]])
    assert all(same_color(c[:3], colour(v)) for c, v in zip(got["c"], want["variant"], strict=True))
    for v in ("review_neutral", *BASELINES):
        (line,) = [
            ln for ln in ax.get_lines() if len(ln.get_xdata()) and same_color(ln.get_color(), colour(v))
        ]
        cells = sweep[sweep["variant"] == v].groupby("size")[["params_M", "val_loss"]].mean().loc[SIZES]
        np.testing.assert_allclose(line.get_xdata(), cells["params_M"])
        np.testing.assert_allclose(line.get_ydata(), cells["val_loss"])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["Review", "Highway", "Standard"]


def t_interval(x: pd.Series) -> tuple[float, float]:
    """The 95% t interval of a mean, from scipy.stats: independent of the figure's own helper."""
    from scipy import stats

    return stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))


def test_seeds_has_one_facet_per_size_with_runs_means_intervals_and_seed_lines(sweep):
    fig = plots.seeds_figure(sweep)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == [s + " (2 seeds)" * (s == "320M") for s in SIZES]
    order = ["review_neutral", *BASELINES]
    for ax, size in zip(panels, SIZES, strict=True):
        assert [t.get_text() for t in ax.get_xticklabels()] == ["Review", "Highway", "Standard"]
        runs = sweep[sweep["size"] == size]
        for x, (v, strip) in enumerate(zip(order, ax.collections, strict=True)):  # strips, in registry order
            mine = runs[runs["variant"] == v]
            assert same_color(strip.get_facecolor()[0], colour(v))
            np.testing.assert_allclose(strip.get_offsets(), np.c_[[x] * len(mine), mine["val_loss"]])
            (mean,) = [
                ln
                for ln in ax.get_lines()
                if ln.get_marker() == "D" and same_color(ln.get_color(), colour(v))
            ]
            assert mean.get_ydata()[x] == pytest.approx(mine["val_loss"].mean())
            (bar,) = [
                ln
                for ln in ax.get_lines()
                if ln.get_marker() in (None, "None")
                and same_color(ln.get_color(), colour(v))
                and ln.get_gid() is None
                and np.isfinite(ln.get_ydata()).any()
            ]
            np.testing.assert_allclose(np.nanmin(bar.get_ydata()), t_interval(mine["val_loss"])[0])
            np.testing.assert_allclose(np.nanmax(bar.get_ydata()), t_interval(mine["val_loss"])[1])
        seeds = {ln.get_gid(): ln for ln in ax.get_lines() if (ln.get_gid() or "").startswith("seed:")}
        assert sorted(seeds) == [f"seed:{s}" for s in sorted(runs["seed"].unique())]
        for s, g in runs.groupby("seed"):
            want = g.set_index("variant")["val_loss"].reindex(order).dropna()
            np.testing.assert_allclose(seeds[f"seed:{s}"].get_ydata(), want)


def test_scaling_says_nothing_of_steps_when_every_size_trained_alike(sweep):
    ax = plots.scaling_figure(sweep.assign(steps=8000)).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == SIZES


def test_emergence_marks_the_sizes_with_fewer_seeds_and_each_sizes_tokens_per_parameter(table):
    """Issue 44: under each size, its tokens per parameter, so the budget is read with the trend."""
    ax = plots.emergence_figure(table).axes[0]
    dn = ["2.20", "0.86", "0.41", "0.19", "0.10"]
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        f"{s}\nD/N {d}" + "\n2 seeds" * (s == "320M") for s, d in zip(SIZES, dn, strict=True)
    ]
    assert ax.get_xlabel() == "Parameters (Review, log scale); D/N: training tokens per parameter"


def test_calibration_draws_ece_means_where_measured(sweep):
    partial = sweep.assign(ece=sweep["ece"].where(sweep["size"] != "1B"))
    ax = plots.calibration_figure(partial).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == SIZES[:-1]
    assert ax.get_xscale() == "log"  # parameters, as in the other figures
    review = partial[partial["variant"] == "review_neutral"].groupby("size")["params_M"].mean()
    np.testing.assert_allclose(ax.get_xticks(), review.loc[SIZES[:-1]])
    assert "calibration error" in ax.get_ylabel()
    means = {ln.get_gid(): ln.get_ydata() for ln in ax.get_lines()}
    want = partial[partial["variant"] == "standard"].groupby("size")["ece"].mean().loc[SIZES[:-1]]
    np.testing.assert_allclose(means["standard"], want)


@pytest.mark.parametrize("fmt", plots.FORMATS)
def test_each_format_has_its_signature(sweep, tmp_path, fmt):
    path = plots.save_figure(plots.scaling_figure(sweep), tmp_path / f"s.{fmt}", dpi=40)
    head = path.read_bytes()[:400]
    assert head.startswith(SIGNATURES[fmt]) if fmt in SIGNATURES else b"<svg" in head
    assert [p.name for p in tmp_path.iterdir()] == [f"s.{fmt}"]


def test_a_failed_write_leaves_no_file_and_keeps_the_old_one(sweep, tmp_path, monkeypatch):
    path = tmp_path / "s.png"
    path.write_bytes(b"old")

    def broken(self, fname, **kwargs):
        fname.write(b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", broken)
    with pytest.raises(plots.PlotError, match="No space left on device"):
        plots.save_figure(plots.scaling_figure(sweep), path)
    assert [p.name for p in tmp_path.iterdir()] == ["s.png"] and path.read_bytes() == b"old"


# ------------------------------------------------------------------ the command line


@pytest.mark.parametrize(
    ("kind", "fmt"), [("emergence", "svg"), ("scaling", "pdf"), ("seeds", "png"), ("calibration", "png")]
)
def test_plot_commands_write_the_file_and_print_its_path(tmp_path, kind, fmt):
    out = tmp_path / f"{kind}.{fmt}"
    result = rr("plot", kind, "--out", str(out), "--dpi", "40", "--title", "T")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(out)
    head = out.read_bytes()[:400]
    assert head.startswith(SIGNATURES[fmt]) if fmt in SIGNATURES else b"<svg" in head


def test_default_file_name_is_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = rr("plot", "emergence", "--stat", "mixed", "--ci", "--dpi", "30")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "emergence.png"
    assert (tmp_path / "emergence.png").read_bytes().startswith(SIGNATURES["png"])
    assert result.stderr == f"rr plot: wrote emergence.png in {tmp_path.resolve()} (a new file)\n"
    again = rr("plot", "emergence", "--dpi", "30")
    assert again.stderr.endswith("(replacing the file that was there)\n")


def one_size(tmp_path, sweep):
    path = tmp_path / "one.csv"
    sweep[sweep["size"] == "590M"].to_csv(path, index=False)
    return path


def no_ece(tmp_path, sweep):
    path = tmp_path / "no_ece.csv"
    sweep.assign(ece=np.nan).to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["emergence", "--out", "{tmp}/fig.jpg"],
            "the file name has '.jpg'; end it in one of .png, .pdf, .svg",
        ),
        (["scaling", "--out", "{tmp}/fig"], "the file name has no suffix"),
        (["seeds", "--out", "{tmp}/missing/fig.png"], "the folder {tmp}/missing does not exist"),
        (["scaling", "--out", "{tmp}/dir.png"], "it is a directory"),
        (["emergence", "--data", "{one}", "--out", "{tmp}/fig.png"], "needs the gap at two sizes or more"),
        (
            ["scaling", "--data", "{one}", "--out", "{tmp}/fig.png"],
            "needs at least 2 sizes to draw a trend; the data have 1 (590M)",
        ),
        (["calibration", "--data", "{no_ece}", "--out", "{tmp}/fig.png"], "needs ECE values"),
        (["seeds", "--data", "{tmp}/absent.csv", "--out", "{tmp}/fig.png"], "absent.csv: no such file"),
    ],
)
def test_plot_errors_exit_2_with_a_message_and_leave_no_file(tmp_path, sweep, args, message):
    (tmp_path / "dir.png").mkdir()
    names = {"tmp": tmp_path, "one": one_size(tmp_path, sweep), "no_ece": no_ece(tmp_path, sweep)}
    before = sorted(p.name for p in tmp_path.iterdir())
    result = rr("plot", *(a.format(**names) for a in args))
    assert result.exit_code == 2, result.output
    assert "rr: error: " in result.output and message.format(**names) in result.output
    assert "Traceback" not in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ([], "Paired t-test (seed-matched); bars 95% CI; * Holm-adjusted p &lt; 0.05 over 10 cells"),
        (["--stat", "welch", "--adjust", "none"], "Welch t-test; bars 95% CI; * unadjusted p &lt; 0.05"),
    ],
)
def test_emergence_file_says_which_p_values_its_stars_use(tmp_path, args, says):
    out = tmp_path / "e.svg"
    result = rr("plot", "emergence", "--out", str(out), *args)
    assert result.exit_code == 0, result.output
    assert says in out.read_text()  # SVG keeps its text as text


def test_unknown_stat_is_a_usage_error():
    result = rr("plot", "emergence", "--stat", "bayes")
    assert result.exit_code == 2 and "bayes" in result.output


def test_help_does_not_import_matplotlib():
    code = "import sys; from cli.main import app; print('matplotlib' in sys.modules)"
    assert (
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.strip()
        == "False"
    )


def test_an_unregistered_variant_is_labelled_by_its_name_in_a_colour_no_registered_one_has(sweep):
    mine = sweep[sweep["variant"] == "standard"].assign(
        variant="myrule", val_loss=lambda d: d["val_loss"] + 0.01
    )
    ax = plots.scaling_figure(pd.concat([sweep, mine], ignore_index=True)).axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["Review", "Highway", "Standard", "myrule"]
    drawn_colours = [ln.get_color() for ln in ax.get_legend().get_lines()]
    assert same_color(drawn_colours[3], "#CC6677")  # the first extra colour
    assert not any(same_color(drawn_colours[3], c) for c in drawn_colours[:3])


def test_a_sweep_given_for_a_gap_table_is_told_which_function_makes_one():
    from rr_core.errors import InputError

    with pytest.raises(InputError) as err:
        plots.emergence_figure(load_sweep())
    assert str(err.value) == (
        "emergence_figure reads the per-size gap table that rr_analysis.stats.gap_tests.gap_table makes, not a sweep "
        "(the rows of load_sweep): pass it gap_table(df), e.g. emergence_figure(gap_table(load_sweep()))"
    )


# ------------------------------------------------------------------ the fitted line and the forecast figure


def test_emergence_draws_the_primary_line_and_its_band_when_given(sweep, table):
    from rr_analysis.stats.forecast import forecast, meta_line

    line = meta_line(sweep)
    ax = plots.emergence_figure(table, line=line).axes[0]
    fits = {a.get_gid(): a for a in ax.lines if (a.get_gid() or "").startswith("fit:")}
    assert set(fits) == {"fit:highway", "fit:standard"}
    at_1b = forecast(sweep, ["1B"]).set_index("baseline")["pred"]
    for b in BASELINES:
        assert fits[f"fit:{b}"].get_ydata()[-1] == pytest.approx(at_1b[b], rel=1e-4)
    assert {c.get_gid() for c in ax.collections} >= {"fit_ci:highway", "fit_ci:standard"}
    assert any("meta-regression" in t.get_text() for t in ax.get_legend().get_texts())
    plain = plots.emergence_figure(table).axes[0]
    assert not [a for a in plain.lines if (a.get_gid() or "").startswith("fit:")]


def test_forecast_figure_draws_both_intervals_past_the_shaded_range(sweep, table):
    from rr_analysis.stats.forecast import forecast, meta_line

    fc = forecast(sweep, ["3B", "7B"])
    fig = plots.forecast_figure(table, meta_line(sweep, ["3B", "7B"]), fc)
    assert [ax.get_title() for ax in fig.axes] == ["Review vs. Highway", "Review vs. Standard"]
    ax = fig.axes[0]
    pi = next(c for c in ax.containers if c.lines[0] is None)  # fmt="none": the PI bars alone
    ends = np.array([seg[:, 1] for seg in pi.lines[2][0].get_segments()])
    hw = fc[fc["baseline"] == "highway"]
    assert ends[:, 0] == pytest.approx(hw["pi_low"].to_numpy()) and ends[:, 1] == pytest.approx(hw["pi_high"])
    beyond = next(p for p in ax.patches if p.get_gid() == "beyond")  # a Polygon before matplotlib 3.9
    corners = beyond.get_patch_transform().transform(beyond.get_path().vertices)
    assert corners[:, 0].min() == pytest.approx(table["params_M"].max())
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[0] == "60M\n2.20" and labels[-2:] == ["3B\n0.032", "7B\n0.013"]  # D/N: the path's past 1B


def test_forecast_figure_without_a_line_says_why(sweep):
    from rr_analysis.stats.forecast import forecast, meta_line

    cut = sweep[sweep["size"].isin(["60M", "1B"])]
    with pytest.raises(plots.PlotError, match="needs a size-level line"):
        plots.forecast_figure(gap_table(cut), meta_line(cut, ["3B"]), forecast(cut, ["3B"]))


def test_plot_forecast_and_emergence_without_the_fit(tmp_path):
    out = tmp_path / "f.png"
    result = rr("plot", "forecast", "--at", "3B", "--out", str(out), "--dpi", "30")
    assert result.exit_code == 0, result.output
    assert out.read_bytes().startswith(SIGNATURES["png"])
    bad = rr("plot", "forecast", "--at", "0M", "--out", str(out))
    assert bad.exit_code == 2 and "not a size" in bad.output
    plain = rr("plot", "emergence", "--no-fit", "--out", str(tmp_path / "e.png"))
    assert plain.exit_code == 0


def test_six_sizes_draw_one_facet_each_in_a_grid_of_five_columns(published_copy):
    """Issue 49.2: the published five sizes and a user's tiny runs made 6 facets over a 2 x 5 grid, which
    the facet loop zipped strictly (ValueError); the spare axes are hidden, not zipped."""
    from rr_core.sweepfile.dataset import load_sweep

    rows = [
        f"tiny,{v},{s},{p},100,{2.2 + 0.01 * s + d:.4f},,"
        for v, p, d in (("review_neutral", 1.13, 0.0), ("highway", 1.14, 0.02), ("standard", 1.12, 0.03))
        for s in (0, 1)
    ]
    with open(published_copy, "a") as f:
        f.write("\n".join(rows) + "\n")
    fig = plots.seeds_figure(load_sweep(published_copy))
    shown = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert len(fig.axes) == 6 and len(shown) == 6
    assert shown[0].startswith("tiny") and shown[1:] == [s + " (2 seeds)" * (s == "320M") for s in SIZES]
    assert [ax.get_subplotspec().rowspan.start for ax in fig.axes] == [0] * 5 + [1]


def test_seeds_facets_are_as_wide_as_the_variants_they_hold(published_copy):
    """Issue 49.8: every facet had one width, so a 2-variant size was drawn as wide as a 3-variant one; each
    facet now spans a column per variant, and the drawn widths follow."""
    rows = [
        f"tiny,{v},{s},{p},100,{2.2 + 0.01 * s:.4f},,"
        for v, p in (("review_neutral", 1.13), ("standard", 1.12))
        for s in (0, 1)
    ]
    with open(published_copy, "a") as f:
        f.write("\n".join(rows) + "\n")
    fig = plots.seeds_figure(load_sweep(published_copy))
    fig.draw_without_rendering()
    spans = [len(ax.get_subplotspec().colspan) for ax in fig.axes]
    ticks = [len(ax.get_xticklabels()) for ax in fig.axes]
    assert spans == ticks == [2, 3, 3, 3, 3, 3]
    widths = np.array([ax.get_position().width for ax in fig.axes])
    np.testing.assert_allclose(widths[1:], widths[1], rtol=1e-6)  # the 3-variant facets alike
    assert 0.5 < widths[0] / widths[1] < 0.75  # 2/3, less the tick labels' margin of one facet


def overlaps(fig: Figure) -> list[str]:
    """What each legend of `fig` covers, by the renderer's extents: any axes' data area, and any drawn line,
    collection or patch (an interval bar, a band, a point) of any axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + fig.legends
    assert legends
    found = []
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            if box.overlaps(ax.get_window_extent(renderer)):
                found.append(f"axes {ax.get_title()}")
            for a in (*ax.lines, *ax.collections, *ax.patches):
                if a.get_visible() and any(box.overlaps(e) for e in extents(a)):
                    found.append(f"{type(a).__name__} {a.get_gid()}")
    return found


def extents(a) -> list:
    """Where an artist draws on the canvas: each of its paths' bounding box in display coordinates."""
    from matplotlib.collections import Collection
    from matplotlib.patches import Patch
    from matplotlib.transforms import Bbox

    if isinstance(a, Patch):  # its transform includes the patch's own
        paths = [a.get_path().vertices]
    else:
        paths = [p.vertices for p in a.get_paths()] if isinstance(a, Collection) else [a.get_xydata()]
    out = []
    for v in paths:
        v = a.get_transform().transform(np.asarray(v, float))
        v = v[np.isfinite(v).all(axis=1)]
        if len(v):
            out.append(Bbox([v.min(axis=0), v.max(axis=0)]))
    return out


def test_no_legend_hides_data_in_the_forecast_and_emergence_figures(sweep, table):
    """Issue 49.8: the forecast's legend sat over the first facet and crossed the 7B interval."""
    from rr_analysis.stats.forecast import forecast, meta_line

    fc = forecast(sweep, ["3B", "7B"])
    fig = plots.forecast_figure(table, meta_line(sweep, ["3B", "7B"]), fc)
    assert overlaps(fig) == []
    kept = fig.axes[-1].get_legend().get_texts()
    assert len(kept) == 4  # every entry: the rings, the line, observed, forecast
    assert overlaps(plots.emergence_figure(table, line=meta_line(sweep))) == []


def test_one_gap_has_the_same_bars_in_the_emergence_and_forecast_figures(sweep, table):
    """Issue 49.8: 320M Highway was drawn [0.0025, 0.0057] (+-1 SE) beside [-0.0156, 0.0237] (95% CI)."""
    from rr_analysis.stats.forecast import forecast, meta_line

    emergence = drawn(plots.emergence_figure(table))["highway"]
    ax = plots.forecast_figure(table, meta_line(sweep, ["3B"]), forecast(sweep, ["3B"])).axes[0]
    observed = next(c for c in ax.containers if c.get_label().startswith("observed"))
    ends = np.array([seg[:, 1] for seg in observed.lines[2][0].get_segments()])
    np.testing.assert_allclose(ends[:, 0], emergence["lo"], rtol=1e-12)
    np.testing.assert_allclose(ends[:, 1], emergence["hi"], rtol=1e-12)
    hw = rows(table, "highway").set_index("size")
    half = t_quantile(1) * hw.loc["320M", "paired_sd"] / np.sqrt(2)  # two pairs: t_{0.975, 1} = 12.71
    assert emergence["lo"][2] == pytest.approx(-0.0156, abs=5e-5) == hw.loc["320M", "paired_diff"] - half
    assert emergence["hi"][2] == pytest.approx(0.0237, abs=5e-5)


def gate_readings(layers: int = 12) -> pd.DataFrame:
    """Made-up gate readings of two seeds of one size and variant: r fanning out with depth over 5 steps."""
    steps, seeds = np.arange(0, 500, 100), (0, 1)
    grid = pd.MultiIndex.from_product(
        [seeds, steps, range(layers), ["attn", "mlp"]], names=["seed", "step", "layer", "sublayer"]
    )
    out = grid.to_frame(index=False).assign(size="60M", variant="review_neutral")
    out["mean"] = 0.5 + 0.3 * (out["layer"] / (layers - 1) - 0.5) * out["step"] / 400 + 0.01 * out["seed"]
    out["std"] = 0.05 + 0.01 * out["layer"] + 0.0002 * out["step"]
    return out


def test_the_gates_figure_draws_a_line_per_layer_and_one_summary_band_per_panel():
    """Issue 49.8: a band per layer and run stacked 24 shaded bands in a panel; now each layer is a line
    coloured by depth (its colour bar beside) and each panel has one band, the layers' mean r -/+ their
    mean std at each step."""
    from rr_analysis.figures.curves import gates_figure

    gates = gate_readings()
    fig = gates_figure(gates)
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["60M Review: attention", "60M Review: MLP"]
    for ax, sublayer in zip(panels, ("attn", "mlp"), strict=True):
        (band,) = ax.collections
        assert band.get_gid() == f"spread:60M:review_neutral:{sublayer}"
        part = gates[gates["sublayer"] == sublayer]
        at = part.groupby("step")[["mean", "std"]].mean()
        y = band.get_paths()[0].vertices[:, 1]
        assert y.min() == pytest.approx((at["mean"] - at["std"]).min())
        assert y.max() == pytest.approx((at["mean"] + at["std"]).max())
        lines = {ln.get_gid(): ln for ln in ax.get_lines()}
        assert len(lines) == 2 * 12  # a line per seed and layer
        deep = part[(part["seed"] == 1) & (part["layer"] == 11)]
        np.testing.assert_allclose(lines[f"r:60M:review_neutral:1:11:{sublayer}"].get_ydata(), deep["mean"])
        first, last = (lines[f"r:60M:review_neutral:0:{i}:{sublayer}"].get_color() for i in (0, 11))
        assert not same_color(first, last)  # depth coloured
    (bar,) = [ax for ax in fig.axes if ax.get_ylabel() == "Layer"]
    assert bar.get_ylim() == (0, 12)


def test_a_two_seed_facet_shows_its_runs_and_marks_the_intervals_it_cuts(sweep):
    """Issue 49.8: with two seeds a mean's 95% t interval is +-12.71 SE, and drawn whole it squashed 320M's
    runs into a tenth of the facet; the facet now spans its runs' range and 1.5 times it either side, and a
    triangle marks each interval end cut there. The bars' data stay whole; the 3-seed facets are as before."""
    fig = plots.seeds_figure(sweep)
    for ax, size in zip(fig.axes, SIZES, strict=True):
        runs = sweep.loc[sweep["size"] == size, "val_loss"]
        cuts = [ln for ln in ax.get_lines() if (ln.get_gid() or "").startswith("cut:")]
        if size != "320M":
            assert cuts == []
            for v in ("review_neutral", *BASELINES):
                lo, hi = t_interval(sweep.loc[(sweep["size"] == size) & (sweep["variant"] == v), "val_loss"])
                assert ax.get_ylim()[0] <= lo and hi <= ax.get_ylim()[1]
            continue
        span = runs.max() - runs.min()
        assert ax.get_ylim() == pytest.approx((runs.min() - 1.5 * span, runs.max() + 1.5 * span))
        assert sorted((ln.get_gid(), ln.get_marker()) for ln in cuts) == sorted(
            (f"cut:{name}", m) for name in ("Review", "Highway", "Standard") for m in ("^", "v")
        )
        assert all(
            same_color(ln.get_color(), colour(v))
            for ln, v in zip(cuts[::2], ("review_neutral", *BASELINES), strict=True)
        )
    assert "a triangle: the interval runs on past the facet's edge" in fig.get_supxlabel()


GATE_KEYS = ["layer", "sublayer", "mean", "std"]  # a gate reading in a metrics log's train event


def test_gates_plot_draws_what_the_runs_logged_of_the_sizes_asked(tmp_path):
    """`rr plot gates`'s one call: the logs read (a log per run, as the trainer writes them), the sizes the
    comparison asks for kept, each line the r logged."""
    from rr_analysis.comparison import Comparison

    gates = gate_readings(layers=2)
    for size in ("60M", "150M"):
        for seed, run in gates.groupby("seed"):
            events = [{"event": "start", "step": 0, "size": size, "variant": "review_neutral", "seed": seed}]
            events += [
                {"event": "train", "step": int(step), "loss": 5.0, "gates": at[GATE_KEYS].to_dict("records")}
                for step, at in run.groupby("step")
            ]
            log = tmp_path / f"{size}-review_neutral-seed{seed}.jsonl"
            log.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    fig = plots.gates_plot([tmp_path], comparison=Comparison(sizes=["60M"]))
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["60M Review: attention", "60M Review: MLP"]
    lines = {ln.get_gid(): ln for ln in panels[1].get_lines()}
    deep = gates[(gates["seed"] == 1) & (gates["layer"] == 1) & (gates["sublayer"] == "mlp")]
    np.testing.assert_allclose(lines["r:60M:review_neutral:1:1:mlp"].get_xdata(), deep["step"])
    np.testing.assert_allclose(lines["r:60M:review_neutral:1:1:mlp"].get_ydata(), deep["mean"], rtol=1e-12)


def test_forecast_plot_draws_the_sweeps_paired_gaps_and_the_forecast(sweep):
    """`rr plot forecast`'s one call: the observed points are the seed-paired mean gaps (by hand here), the
    diamonds the forecast's predictions; the published data carry no footnote."""
    from rr_analysis.stats.forecast import forecast

    fig = plots.forecast_plot(sweep, ["3B"])
    fc = forecast(sweep, ["3B"]).set_index("baseline")
    loss = sweep.pivot_table(index=["size", "seed"], columns="variant", values="val_loss", observed=True)
    for ax, baseline in zip(fig.axes, ("highway", "standard"), strict=True):
        marks = {c.lines[0].get_gid(): c.lines[0] for c in ax.containers if c.lines[0] is not None}
        gaps = (loss[baseline] - loss["review_neutral"]).dropna().groupby(level="size", observed=True).mean()
        np.testing.assert_allclose(marks["observed"].get_ydata(), gaps[SIZES], rtol=1e-9)
        assert marks["forecast"].get_ydata() == pytest.approx([fc.loc[baseline, "pred"]], rel=1e-12)
    assert not any("provenance" in t.get_text() for t in fig.texts)


def test_write_figure_says_whether_it_replaced_a_file(tmp_path):
    fig = Figure(figsize=(1, 1))
    first = plots.write_figure(fig, tmp_path / "f.png", dpi=20)
    assert first == plots.Written(path=tmp_path / "f.png", replaced=False)
    assert plots.write_figure(fig, tmp_path / "f.png", dpi=20).replaced
    assert first.path.read_bytes() == plots.save_figure(fig, tmp_path / "g.png", dpi=20).read_bytes()
    with pytest.raises(ValueError, match="end it in one of .png, .pdf, .svg"):
        plots.write_figure(fig, tmp_path / "f.txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.png", "g.png"]

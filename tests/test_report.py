"""`rr report`: one Markdown file with the library's tables and links to figure files that exist."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import rr

from rr_analysis.stats.emergence import emergence
from rr_analysis.stats.gap_tests import gap_table
from rr_analysis.stats.notes import recipe_notes
from rr_analysis.stats.power import power_table
from rr_analysis.tables.render import render
from rr_analysis.views.registry import VIEWS
from rr_core.sweepfile.dataset import bundled_path, load_sweep

LINK = re.compile(r"!\[[^\]]*\]\(([^)]+)\)")
FIGURES = [
    "emergence.png",
    "emergence_welch.png",
    "emergence_mixed.png",
    "scaling.png",
    "seeds.png",
    "calibration.png",
]


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "rr-report"
    result = rr("report", "--out", str(out), "--dpi", "30")
    assert result.exit_code == 0, result.output
    return out, result.output


def test_report_holds_the_librarys_tables(published):
    out, printed = published
    assert printed.strip() == str(out / "report.md")
    text = (out / "report.md").read_text(encoding="utf-8")
    df = load_sweep()
    for frame, view in (
        (gap_table(df), "table"),
        (emergence(df), "emergence"),
        (recipe_notes(df), "notes"),
        (power_table(df), "power"),
    ):
        assert render(frame, VIEWS[view], "markdown") in text
    assert "42 rows, 5 sizes" in text and "published rows 42/42 present and unchanged" in text


def test_report_links_every_figure_and_each_file_exists(published):
    out, _ = published
    links = LINK.findall((out / "report.md").read_text(encoding="utf-8"))
    assert links == FIGURES
    for name in links:
        assert (out / name).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert sorted(p.name for p in out.iterdir()) == sorted([*FIGURES, "report.md"])


@pytest.mark.parametrize(
    ("name", "options"),
    [("emergence.png", []), ("emergence_welch.png", ["--stat", "welch", "--adjust", "none", "--no-fit"])],
)
def test_a_report_figure_is_the_one_rr_plot_emergence_draws_under_its_name(
    published, tmp_path, name, options
):
    """One file name, one figure: the report's emergence.png is `rr plot emergence`'s default (the primary
    paired figure with the size-level line and its band), its emergence_welch.png the paper's figure as
    `rr plot emergence --stat welch --adjust none --no-fit` draws it; the same PNG bytes at the same dpi."""
    out, _ = published
    plot = tmp_path / name
    result = rr("plot", "emergence", *options, "--dpi", "30", "--out", plot)
    assert result.exit_code == 0, result.output
    assert (out / name).read_bytes() == plot.read_bytes()
    text = (out / "report.md").read_text(encoding="utf-8")
    if name == "emergence.png":  # the report's primary line is on its primary figure
        assert "the line is the primary size-level model's fit with its 95% CI band" in text
    else:
        assert "The paper's Figure 2 (`rr plot emergence --stat welch --adjust none --no-fit`)" in text
        assert "its bars are 95% CIs where the paper drew ±1 SE" in text  # issue 49.8: one convention


@pytest.mark.slow
def test_a_report_folder_from_an_earlier_version_is_replaced(tmp_path):
    """A folder holding emergence_paired.png, which earlier reports wrote, is still rr's own: replaced whole."""
    out = tmp_path / "r"
    out.mkdir()
    for name in ("report.md", "emergence.png", "emergence_paired.png"):
        (out / name).write_bytes(b"from an earlier version")
    result = rr("report", "--out", out, "--dpi", "20")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == sorted([*FIGURES, "report.md"])


def test_report_on_one_size_without_ece_says_which_figures_it_cannot_draw(tmp_path):
    df = load_sweep()
    data = tmp_path / "one.csv"
    df[df["size"] == "590M"].assign(ece=np.nan).to_csv(data, index=False)
    out = tmp_path / "r"
    out.mkdir()
    (out / "emergence.png").write_bytes(b"stale, from an earlier run")
    result = rr("report", "--data", str(data), "--out", str(out), "--dpi", "30")
    assert result.exit_code == 0, result.output
    text = (out / "report.md").read_text(encoding="utf-8")
    assert LINK.findall(text) == ["seeds.png"]
    assert text.count("*Not drawn: the emergence plot needs the gap at two sizes or more") == 3
    assert "*Not drawn: the calibration plot needs ECE values" in text
    assert sorted(p.name for p in out.iterdir()) == ["report.md", "seeds.png"]


def test_report_into_a_file_exits_2_and_writes_nothing(tmp_path):
    target = tmp_path / "taken"
    target.write_text("x")
    result = rr("report", "--out", str(target))
    assert result.exit_code == 2
    assert f"rr: error: cannot write the report into {target}: it is a file, not a folder" in result.output
    assert [p.name for p in tmp_path.iterdir()] == ["taken"]


def test_report_on_bad_data_exits_2_before_creating_the_folder(tmp_path):
    result = rr("report", "--data", str(tmp_path / "absent.csv"), "--out", str(tmp_path / "r"))
    assert result.exit_code == 2 and "absent.csv: no such file" in result.output
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_a_backtick_in_the_data_path_cannot_inject_markup(tmp_path):
    data = tmp_path / "x`](evil.html)`.csv"
    data.write_bytes(bundled_path().read_bytes())
    result = rr("report", "--data", str(data), "--out", str(tmp_path / "r"), "--dpi", "20")
    assert result.exit_code == 0, result.output
    text = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert f"Data: ``{data}``: 42 rows" in text


@pytest.mark.slow
def test_report_replaces_its_folder_whole_and_refuses_one_holding_other_files(tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    (out / "report.md").write_text("old report")
    (out / "notes.txt").write_text("mine")
    result = rr("report", "--out", str(out), "--dpi", "20")
    assert result.exit_code == 2
    assert "holds files rr does not write there (notes.txt)" in result.output
    assert (out / "report.md").read_text() == "old report"
    (out / "notes.txt").unlink()
    result = rr("report", "--out", str(out), "--dpi", "20")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]  # no build or old folder left beside it
    assert (out / "report.md").read_text().startswith("# Review Residuals sweep")


@pytest.mark.slow
def test_a_md_path_is_the_report_file_with_its_figures_in_a_folder_beside_it(tmp_path):
    folder = rr("report", "-o", str(tmp_path / "rep"), "--dpi", "20")
    result = rr("report", "-o", str(tmp_path / "report.md"), "--dpi", "20")
    assert folder.exit_code == 0 and result.exit_code == 0, result.output
    assert result.stdout == f"{tmp_path / 'report.md'}\n"
    md = (tmp_path / "report.md").read_text()
    (build,) = (tmp_path / "report_files").iterdir()  # one BUILD folder, named after the report's text
    figures = sorted(p.name for p in build.iterdir())
    assert figures == sorted(p.name for p in (tmp_path / "rep").iterdir() if p.suffix == ".png")
    where = f"report_files/{build.name}/"
    assert f"]({where}emergence.png)" in md and f"PNG files in `{where}`" in md
    same = (tmp_path / "rep" / "report.md").read_text().replace("](", f"]({where}")
    assert md == same.replace("PNG files beside this file", f"PNG files in `{where}`")
    (tmp_path / "mine.md").write_text("# my notes\n")
    refused = rr("report", "-o", str(tmp_path / "mine.md"))
    assert refused.exit_code == 2 and "it exists and is not a report rr wrote" in refused.stderr
    assert (tmp_path / "mine.md").read_text() == "# my notes\n"


def labelled(df, comparison, **how):
    """A figure drawn in a blink whose PNG bytes name the comparison: a stand-in for each report figure."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(1, 1))
    fig.text(0, 0, f"{comparison.reference} {how}")
    return fig


def test_a_md_report_is_published_in_one_step_and_its_rerun_after_a_kill_succeeds(tmp_path, monkeypatch):
    """Issue 47.2: `rr report -o x.md` publishes x.md and its figures in one step. A run killed after its figures
    are written and before x.md is replaced (then after x.md, before the old figures go) leaves x.md, old or
    new, linking figures that are its own; the rerun succeeds and leaves one figures folder. Before, the figures
    folder was swapped first: the old x.md then showed the new run's figures."""
    import matplotlib

    matplotlib.use("Agg")
    from rr_analysis import report as module
    from rr_analysis.comparison import Comparison

    monkeypatch.setattr(module, "emergence_plot", labelled)
    monkeypatch.setattr(
        module, "_DRAWN", dict.fromkeys(["scaling.png", "seeds.png", "calibration.png"], labelled)
    )
    md, df = tmp_path / "x.md", load_sweep()

    def linked() -> dict[str, bytes]:  # each figure x.md links, by name, with its bytes
        return {p: (tmp_path / p).read_bytes() for p in LINK.findall(md.read_text())}

    module.write_report(df, md, dpi=20)
    old_text, old = md.read_text(), linked()

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # the process ends here, as under a kill

    highway = Comparison("highway", ["standard"])
    for step in ("write_atomic", "_prune"):  # killed before x.md is replaced, then after it
        with monkeypatch.context() as m, pytest.raises(KeyboardInterrupt):
            m.setattr(module, step, killed)
            module.write_report(df, md, dpi=20, comparison=highway)
        if step == "write_atomic":
            assert (
                md.read_text() == old_text and linked() == old
            )  # the old report whole, with its own figures
        else:  # the new report whole, with its own figures (the old ones still beside them)
            assert md.read_text() != old_text and len(linked()) == 6
            assert not set(linked().values()) & set(old.values())
    module.write_report(df, md, dpi=20, comparison=highway)  # the rerun
    new = linked()
    assert len(new) == 6 and not set(new) & set(old) and not set(new.values()) & set(old.values())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.md", "x_files"]
    assert len(list((tmp_path / "x_files").iterdir())) == 1  # the earlier report's figures are gone

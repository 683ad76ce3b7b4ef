"""Pooled rows never change a conclusion silently: the published rows merged with a user's tiny synthetic-corpus
runs (two seeds of each variant, trained on a CPU) turn Highway's emergence verdict and grow the Holm family
from 10 to 12 tests. Every view, figure and the report name the cells whose runs differ from the published
ones (from the provenance sidecar), and ``--sizes`` restricts every analysis, figure and report to the sizes
asked for, which gives the published verdicts back."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest
from conftest import rr

from rr_analysis.cells import of_sizes
from rr_analysis.comparison import Comparison
from rr_analysis.stats.pooling import cell_provenance, provenance_notes
from rr_core.errors import InputError
from rr_core.ladder import RECIPE
from rr_core.sweepfile.dataset import append_rows, bundled_path, load_sweep
from rr_core.sweepfile.provenance import append_record, sidecar_path

PUBLISHED = "60M,150M,320M,590M,1B"
CPU = "Intel(R) Xeon(R) Processor"
SAID = (
    "provenance: tiny Review, Highway, Standard: 6 of 6 runs differ from the published ones: data synthetic "
    f"(published: tinystories); hardware {CPU} (published: NVIDIA B200)"
)
# Each variant's tiny loss (a 20-step run on the synthetic corpus) and what its second seed adds.
TINY = {
    "review_neutral": (1.12, 3.3948, 0.004),
    "highway": (1.18, 3.2948, 0.001),
    "standard": (1.13, 3.2232, 0.006),
}


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    """`rr merge` of the published file and six tiny rows (seeds 0 and 1 of each variant) with their records."""
    folder = tmp_path_factory.mktemp("pooled")
    tiny = folder / "tiny.csv"
    rows = [
        dict(
            size="tiny",
            variant=v,
            seed=s,
            params_M=p,
            steps=20,
            val_loss=round(loss + s * d, 4),
            ece=0.1,
            minutes=0.2,
        )
        for s in (0, 1)
        for v, (p, loss, d) in TINY.items()
    ]
    append_rows(tiny, rows)
    for r in rows:
        config = {"precision": "tf32", "data": "synthetic", "schedule": "cosine"}
        record = {
            "status": "ok",
            "size": "tiny",
            "variant": r["variant"],
            "seed": r["seed"],
            "config": config,
        }
        append_record(sidecar_path(tiny), {**record, "environment": {"device_name": CPU}})
    out = folder / "merged.csv"
    assert rr("merge", bundled_path(), tiny, "--out", out).exit_code == 0
    return out


def words(text: str) -> str:
    return " ".join(text.split())


def json_of(*args) -> list[dict]:
    result = rr("analyze", *args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_pooled_rows_change_the_verdict_and_sizes_gives_the_published_one_back(merged):
    """Highway's primary size-level p: 0.0626 published (the paper's sizes), 0.0042 with the tiny cells; the
    paired test's Holm family: 10 cells published, 12 pooled, 10 again with --sizes."""
    pooled = {r["baseline"]: r for r in json_of("emergence", "--data", merged)}
    asked = {r["baseline"]: r for r in json_of("emergence", "--data", merged, "--sizes", PUBLISHED)}
    assert pooled["highway"]["n_sizes"] == 6 and pooled["highway"]["meta_p"] == pytest.approx(
        0.0042, abs=5e-5
    )
    assert "robust (primary p = 0.0042" in pooled["highway"]["verdict"]
    assert asked["highway"]["n_sizes"] == asked["standard"]["n_sizes"] == 5
    assert asked["highway"]["meta_p"] == pytest.approx(0.0626, abs=5e-5)
    assert (
        "suggestive, not robust: the primary size-level test gives p = 0.063" in asked["highway"]["verdict"]
    )
    assert asked["standard"]["meta_p"] == pytest.approx(0.00117, abs=5e-6)

    def family(rows):  # the cells each test's Holm adjustment counted
        return {t: {r[f"family_m_{t}"] for r in rows} for t in ("paired", "welch")}

    table = json_of("table", "--data", merged, "--sizes", PUBLISHED.lower())
    assert family(json_of("table", "--data", merged)) == {"paired": {12}, "welch": {12}}
    assert family(table) == {"paired": {10}, "welch": {10}}
    # the published Holm-adjusted primary p of 590M and 1B (Highway, Standard), as the paper's sizes give them
    adjusted = [r["p_adj_paired"] for r in table[-4:]]
    assert adjusted == pytest.approx([0.0031, 0.0882, 0.0090, 0.0018], abs=5e-5)
    # the text the published file gives, line for line, and a last line saying what --sizes left out
    text = rr("analyze", "emergence", "--data", merged, "--sizes", PUBLISHED, env={"COLUMNS": "100"}).stdout
    said = "note: sizes read: 60M, 150M, 320M, 590M, 1B (--sizes); left out: tiny (6 rows)\n"
    assert text == rr("analyze", "emergence", env={"COLUMNS": "100"}).stdout + said


@pytest.mark.parametrize(
    "view, fmt",
    [
        ("table", "markdown"),
        ("table", "latex"),
        ("emergence", "text"),
        ("power", "text"),
        ("notes", "text"),
        ("equivalence", "text"),
        ("pool-check", "text"),
        ("seeds", "text"),
    ],
)
def test_every_view_names_the_cells_whose_runs_differ(merged, view, fmt):
    result = rr("analyze", view, "--data", merged, "--format", fmt, env={"COLUMNS": "100"})
    assert result.exit_code == 0 and words(SAID) in words(result.stdout).replace("% ", ""), result.output
    if view == "table":
        asked = rr("analyze", view, "--data", merged, "--sizes", PUBLISHED, "--format", fmt).stdout
        assert "provenance" not in asked and "left out: tiny (6 rows)" in asked


def test_csv_and_json_give_each_row_the_notes_of_its_size(merged):
    rows = json_of("table", "--data", merged)
    assert [(r["size"], r["provenance"]) for r in rows[:3]] == [
        ("tiny", [SAID]),
        ("tiny", [SAID]),
        ("60M", []),
    ]
    (emergence,) = json_of("emergence", "--data", merged, "--baselines", "highway")
    assert emergence["provenance"] == [
        SAID.replace("Review, Highway, Standard: 6 of 6", "Review, Highway: 4 of 4")
    ]
    assert "provenance" not in json_of("table")[0]  # the published file: the columns as they were
    assert "provenance" not in json_of("table", "--data", merged, "--sizes", PUBLISHED)[0]


def test_cell_provenance_counts_runs_and_leaves_unknown_ones_alone(merged):
    df = load_sweep(merged)
    cells = cell_provenance(df)
    assert cells[["size", "variant", "n_runs", "n_differ"]].values.tolist() == [
        ["tiny", v, 2, 2] for v in ("review_neutral", "highway", "standard")
    ]
    assert cell_provenance(df, comparison=Comparison(sizes=["1B"])).empty
    # a published cell with one new seed in another precision and at another learning rate: 1 of its 4 runs
    # differs; a row without a record (the published rows, or any other) is counted in n_runs, not as differing
    extra = df[(df["size"] == "60M") & (df["seed"] == 0)].assign(seed=7)
    path = merged.with_name("seven.csv")
    append_rows(path, [*df.to_dict("records"), *extra.to_dict("records")])
    config = {"precision": "bf16", "data": "tinystories", "recipe": {**asdict(RECIPE), "lr": 0.001}}
    append_record(
        sidecar_path(path),
        {
            "status": "ok",
            "size": "60M",
            "variant": "highway",
            "seed": 7,
            "config": config,
            "environment": {"device_name": "NVIDIA B200"},
        },
    )
    notes = provenance_notes(cell_provenance(load_sweep(path), comparison=Comparison(sizes=["60M"])))
    assert notes == [
        "provenance: 60M Highway: 1 of 4 runs differ from the published ones: recipe lr 0.001 (published: "
        "0.0002); precision bf16 (published: tf32)"
    ]


def test_every_figure_and_the_report_carry_the_cells_as_a_footnote(merged, monkeypatch, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from rr_analysis.figures import output
    from rr_analysis.report import build_report

    drawn = {}
    monkeypatch.setattr(output, "save_figure", lambda fig, out, dpi: drawn.setdefault(out.name, fig) and out)
    assert rr("plot", "emergence", "--data", merged, "-o", tmp_path / "all.png").exit_code == 0
    assert (
        rr("plot", "emergence", "--data", merged, "-o", tmp_path / "five.png", "--sizes", PUBLISHED).exit_code
        == 0
    )
    assert words(SAID) in [words(t.get_text()) for t in drawn["all.png"].texts]
    five = drawn["five.png"]
    assert not any("provenance" in t.get_text() for t in five.texts)
    assert "tiny" not in " ".join(t.get_text() for t in five.axes[0].get_xticklabels())
    assert "over 10 cells" in words(five.axes[0].get_title(loc="left"))  # the published Holm family
    # the report: its data section, and every figure it draws (scaling, seeds, calibration, emergence x 3),
    # the emergence figures drawn here empty, from no statistics (`emergence_plot` adds the footnote around them)
    from matplotlib.figure import Figure

    monkeypatch.setattr("rr_analysis.figures.gaps.gap_table", lambda *args: None)
    monkeypatch.setattr("rr_analysis.figures.gaps.meta_line", lambda *args, **how: None)
    monkeypatch.setattr("rr_analysis.figures.gaps.emergence_figure", lambda *args, **how: Figure())
    report = build_report(load_sweep(merged), comparison=Comparison(sizes=["tiny", "60M"]))  # drawn fast
    assert f"- {SAID}" in report.markdown and len(report.figures) == 6
    # once each: the report draws its figures as `rr plot` does, footnote and all, and adds none of its own
    assert all(
        [words(t.get_text()) for t in f.texts].count(words(SAID)) == 1 for f in report.figures.values()
    )


def test_a_size_not_in_the_data_is_one_sentence(merged):
    with pytest.raises(InputError, match=r"the size 'tinny' \(did you mean tiny\?\) has no runs in the data"):
        of_sizes(load_sweep(merged), Comparison(sizes=["60M", "tinny"]))
    result = rr("plot", "emergence", "--data", merged, "--sizes", "60M,,1B", env={"COLUMNS": "300"})
    assert result.exit_code == 2 and "has an empty name; give size names separated by commas" in result.output
    result = rr("report", "--data", merged, "--sizes", "60M,tinny", "-o", merged.with_name("r"))
    assert result.exit_code == 2 and "the size 'tinny' (did you mean tiny?)" in words(result.output)


def test_a_curves_figure_of_a_sweep_carries_its_cells_too(tiny_run, monkeypatch, tmp_path):
    """`rr plot curves --data`: the footnote names the tiny run (synthetic corpus, this machine's CPU)."""
    import matplotlib

    matplotlib.use("Agg")
    from rr_analysis.figures import output
    from rr_analysis.stats.pooling import cell_provenance

    drawn = {}
    monkeypatch.setattr(output, "save_figure", lambda fig, out, dpi: drawn.setdefault(out.name, fig) and out)
    assert rr("plot", "curves", "--data", tiny_run["out"], "-o", tmp_path / "c.png").exit_code == 0
    (cell,) = cell_provenance(load_sweep(tiny_run["out"])).itertuples()
    assert (cell.size, cell.variant, cell.n_runs, cell.n_differ) == ("tiny", "standard", 1, 1)
    assert cell.differs[0] == "data synthetic (published: tinystories)"
    footnote = " ".join(words(t.get_text()) for t in drawn["c.png"].texts)
    assert "provenance: tiny Standard: 1 of 1 runs differ from the published ones: data synthetic" in footnote

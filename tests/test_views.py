"""The analysis views as objects (rr_analysis.views): a view defined in this test module and registered at test
time is an `rr analyze` view like rr's own, in every format, in the help and in the hint for a misspelt name;
a view reads the options its function names; the registry refuses a second view of one name.
"""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from conftest import rr

from rr_analysis.comparison import Comparison, compare
from rr_analysis.tables.columns import Col, cell_of, number
from rr_analysis.views.analysis_view import AnalysisView
from rr_analysis.views.registry import VIEWS, register_view
from rr_core.sweepfile.dataset import load_sweep
from rr_core.variants import label


def spread(df: pd.DataFrame, *, comparison: Comparison) -> pd.DataFrame:
    """Runs, mean and between-seed SD of the comparison's metric per size (in ladder order) and variant (by name)."""
    rows, c = compare(df, comparison)
    out = rows.groupby(["size", "variant"], observed=True)[c.metric].agg(["count", "mean", "std"])
    return c.stamp(out.reset_index().rename(columns={"count": "runs", "std": "sd"}))


SPREAD = AnalysisView(
    name="spread",
    title="Spread of {metric} per size and variant",
    columns=(
        Col("size", cell_of("size", str), 0),
        Col("variant", cell_of("variant", label), 0),
        Col("runs", cell_of("runs", str)),
        Col("mean", cell_of("mean", number(".4f"))),
        Col("seed\nSD", cell_of("sd", number(".5f")), 2),
    ),
    legend=("seed SD: the standard deviation over seeds (n - 1).",),
    notes=lambda t: [f"{len(t)} cells"],
    compute=spread,
    summary="runs, mean and SD per cell",
)


@pytest.fixture
def registered():
    """SPREAD as one of `rr analyze`'s views, for one test."""
    register_view(SPREAD)
    yield SPREAD
    del VIEWS[SPREAD.name]


def expected(metric: str = "val_loss") -> pd.DataFrame:
    """The spread of the published sweep, computed here with pandas alone."""
    df = load_sweep()
    df = df[df[metric].notna()]
    cells = [(s, v) for s in df["size"].cat.categories for v in ("highway", "review_neutral", "standard")]
    values = [df[(df["size"] == s) & (df["variant"] == v)][metric] for s, v in cells]
    return pd.DataFrame(
        {
            "size": [s for s, _ in cells],
            "variant": [v for _, v in cells],
            "runs": [len(x) for x in values],
            "mean": [x.mean() for x in values],
            "sd": [x.std(ddof=1) for x in values],
        }
    )


def test_a_view_added_from_outside_is_an_analyze_view_in_every_format(registered):
    want = expected()
    records = json.loads(rr("analyze", "spread", "--format", "json").stdout)
    assert [r["size"] for r in records] == list(want["size"]) and [r["runs"] for r in records] == list(
        want["runs"]
    )
    assert [r["mean"] for r in records] == pytest.approx(list(want["mean"]), rel=1e-12)
    assert [r["sd"] for r in records] == pytest.approx(list(want["sd"]), rel=1e-12)
    assert {(r["reference"], r["metric"]) for r in records} == {("review_neutral", "val_loss")}
    csv = pd.read_csv(io.StringIO(rr("analyze", "spread", "--format", "csv").stdout))
    assert list(csv.columns) == [
        "size",
        "variant",
        "runs",
        "mean",
        "sd",
        "reference",
        "metric",
        "higher_is_better",
    ]
    assert csv["mean"].tolist() == pytest.approx(list(want["mean"]), rel=1e-12)
    first = want.iloc[0]
    text = rr("analyze", "spread", "--wide").stdout.splitlines()
    assert text[0] == "Spread of val_loss per size and variant"
    assert text[4].split() == [
        "60M",
        "Highway",
        str(first["runs"]),
        f"{first['mean']:.4f}",
        f"{first['sd']:.5f}",
    ]
    assert text[-2:] == ["seed SD: the standard deviation over seeds (n - 1).", "note: 15 cells"]
    markdown = rr("analyze", "spread", "--format", "markdown").stdout.splitlines()
    assert markdown[:3] == [
        "| size | variant | runs | mean | seed SD |",
        "|---|---|---:|---:|---:|",
        f"| 60M | Highway | {first['runs']} | {first['mean']:.4f} | {first['sd']:.5f} |",
    ]
    latex = rr("analyze", "spread", "--format", "latex").stdout
    assert "\\toprule" in latex and "% note: 15 cells" not in latex and "% 15 cells" in latex
    narrow = rr("analyze", "spread", env={"COLUMNS": "30"}).stdout
    assert "seed" not in narrow.splitlines()[2] and "not shown at width 30: seed SD (--wide" in " ".join(
        narrow.split()
    )


def test_the_view_reads_the_options_its_function_names(registered):
    assert registered.reads == ("comparison",)
    records = json.loads(rr("analyze", "spread", "--metric", "ece", "--format", "json").stdout)
    assert [r["mean"] for r in records] == pytest.approx(list(expected("ece")["mean"]), rel=1e-12)
    title = rr("analyze", "spread", "--metric", "ece").stdout.splitlines()[0]
    assert (
        title == "Spread of ece per size and variant: Review against each baseline, ece"
    )  # `filled` states it


def test_the_help_and_the_misspelt_name_know_the_added_view(registered):
    help_text = " ".join(rr("analyze", "--help", env={"COLUMNS": "300"}).stdout.split())
    added = "seeds (--data pilot.csv: init seed vs data seed variance), spread (runs, mean"
    assert added in help_text
    assert (
        "What to show: table (default), emergence," in help_text and "tuning, seeds or spread." in help_text
    )
    result = rr("analyze", "spred")
    assert result.exit_code == 2 and "'spred' is not a view (did you mean spread?)" in result.output
    assert rr("analyze", "spread", "--columns", "runs,nope").stderr == (
        "rr: error: --columns: no column 'nope' in the spread view's text; its columns: size, variant, runs, "
        "mean, seed_sd\n"
    )


def test_without_registering_it_the_view_is_not_there():
    result = rr("analyze", "spread")
    assert "spread" not in VIEWS and result.exit_code == 2 and "'spread' is not a view" in result.output


def test_a_second_view_of_one_name_and_a_name_that_is_no_word_are_refused(registered):
    with pytest.raises(ValueError, match="a view named 'spread' is registered already"):
        register_view(SPREAD)
    for name in ("Spread", "two words", "-x", ""):
        with pytest.raises(ValueError, match="a view's name is a command-line word"):
            register_view(AnalysisView(**{**SPREAD.__dict__, "name": name}))


def test_a_view_reading_an_option_the_command_line_does_not_give_is_a_bug_named():
    def needs(df: pd.DataFrame, *, comparison: Comparison, bins: int) -> pd.DataFrame:
        return df

    view = AnalysisView(**{**SPREAD.__dict__, "name": "binned", "compute": needs})
    assert view.reads == ("comparison", "bins")
    with pytest.raises(TypeError, match="the binned view reads the option\\(s\\) bins, which are not among"):
        view.frame(load_sweep(), {"comparison": Comparison()})


def test_the_docs_example_view_is_this_one():
    """docs/extending.md shows how to add a view with this module's view; its code runs and draws the same."""
    import re
    from pathlib import Path

    from rr_analysis.tables.render import render
    from rr_analysis.views.registry import MODULES

    docs = (Path(__file__).resolve().parents[1] / "docs" / "extending.md").read_text()
    section = docs[docs.index("## 4. An analysis view") :]
    (module,) = re.findall(r"```python\n(.*?)```", section, re.S)[:1]
    (line,) = re.findall(r"```text\n(.*?)```", section, re.S)[:1]
    space: dict = {}
    exec(compile(module, "spread_view.py", "exec"), space)
    options = {"comparison": Comparison()}
    df = load_sweep()
    docs_view = space["VIEW"]
    for fmt in ("json", "markdown"):
        ours = render(SPREAD.frame(df, options), SPREAD, fmt).splitlines()
        theirs = render(docs_view.frame(df, options), docs_view, fmt).splitlines()
        assert theirs[:16] == ours[:16]
    assert (
        line.strip().strip('",').startswith("rr_analysis.views.")
        and MODULES[0] == "rr_analysis.views.table_view"
    )


def test_the_view_options_give_every_option_a_view_reads():
    """Issue 43.2/3: `ViewOptions.given` (rr analyze's view options, one documented value) holds every name a
    registered view's compute or show reads, each None where not given (``at``: an empty list), ``ladder`` as
    text; the layout's (wide, columns) are not among them."""
    import inspect
    from pathlib import Path

    from rr_analysis.comparison import Comparison
    from rr_analysis.views.registry import VIEWS
    from rr_analysis.views.view_options import ViewOptions

    given = ViewOptions().given(Comparison(), "holm", None)
    shown = [inspect.signature(v.show).parameters.values() for v in VIEWS.values() if v.show is not None]
    read = {n for v in VIEWS.values() for n in v.reads} | {
        p.name for ps in shown for p in ps if p.kind is p.KEYWORD_ONLY
    }
    assert read <= set(given) and not {"wide", "columns"} & set(given)
    assert given["at"] == [] and given["margin"] is None and given["comparison"] == Comparison()
    asked = ViewOptions(at=("3B",), ladder=Path("mine.toml"), margin=0.01).given(
        Comparison(), "none", Path("x.csv")
    )
    said = (asked["at"], asked["ladder"], asked["margin"], asked["adjust"])
    assert said == (["3B"], "mine.toml", 0.01, "none")
    assert ViewOptions(columns="size, gap,").names == ["size", "gap"] and ViewOptions().names is None

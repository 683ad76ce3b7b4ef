"""`rr analyze` through typer's CliRunner: exact JSON keys, exit 2 for bad input, a light import path, power and
recipe notes on the published data, and the dataset card kept in step (every view in every format, as it reads:
tests/test_golden.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import rr

from rr_analysis.stats.emergence import EMERGENCE_COLUMNS
from rr_analysis.stats.gap_tests import TABLE_COLUMNS, gap_table
from rr_analysis.stats.notes import recipe_notes
from rr_analysis.stats.power import power_table, t_test_power
from rr_analysis.tables.render import column_names
from rr_analysis.views.card_view import update_card
from rr_analysis.views.registry import VIEWS
from rr_core.sweepfile.dataset import card_path, load_sweep, write_sweep

ROOT = Path(__file__).resolve().parents[1]


def analyze(*args: str, env: dict | None = None):
    return rr("analyze", *args, env=env)


def test_table_json_has_exactly_the_documented_keys_in_published_order():
    result = analyze("--format", "json")
    records = json.loads(result.output)
    assert [list(r) for r in records] == [list(TABLE_COLUMNS)] * 10
    assert [round(r["welch_t"], 2) for r in records] == [
        0.42,
        -1.01,
        0.81,
        -0.53,
        0.5,
        0.39,
        3.28,
        3.67,
        2.31,
        2.36,
    ]
    assert records[0]["size"] == "60M" and records[0]["baseline"] == "highway" and records[0]["n_review"] == 3


def test_emergence_json_keys():
    records = json.loads(analyze("--emergence", "--format", "json").output)
    assert [list(r) for r in records] == [list(EMERGENCE_COLUMNS)] * 2
    assert records[0]["baseline"] == "highway" and records[0]["lrt_chi2"] > 0


def test_text_says_which_test_each_column_is():
    out = analyze("--wide").output
    assert "Welch-Satterthwaite df" in out and "seed-matched" in out and "Satterthwaite df" in out
    assert "closed form, complete seed blocks" in out and "floor 2/2^pairs" in out
    assert "paired* (PRIMARY)" in out and "paired (primary) m = 10, mixed m = 10, welch m = 10" in out


def test_table_fits_80_columns_and_names_what_it_hides():
    out = analyze("table", env={"COLUMNS": "80"}).output
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "paired*" in out and "not shown at width 80:" in out and "--wide" in out
    wide = analyze("--wide").output
    assert max(len(line) for line in wide.splitlines()) > 200 and "not shown" not in wide


def test_emergence_at_80_columns_shows_each_levels_p_side_by_side():
    lines = analyze("emergence", env={"COLUMNS": "80"}).output.splitlines()
    # issue 44: the correlation of log10 N and log10 D/N sits beside the primary p, before the other levels
    assert lines[1].split() == ["(c)", "meta", "(c)", "(c)", "D/N", "(b)", "(b)", "KR", "(a)"]
    assert lines[2].split()[-3:] == ["p", "p", "p"] and lines[2].split()[4:6] == ["p", "r"]
    highway = next(line for line in lines if line.startswith("Highway")).split()
    assert highway[4:6] == ["0.0626", "-0.998"]  # (c) p, then r
    assert highway[-3:] == ["0.0367", "0.0334", "<0.0001"]  # (b), (b) KR, (a)


@pytest.mark.parametrize("view", ["emergence", "power", "equivalence", "claims", "notes"])
def test_every_view_fits_80_columns(view):
    out = analyze(view, env={"COLUMNS": "80"}).output
    assert max(len(line) for line in out.splitlines()) <= 80, out


def test_view_argument_and_flag_are_one_choice():
    assert analyze("emergence").output == analyze("--emergence").output
    assert analyze("power", "--power").exit_code == 0
    result = analyze("table", "--power")
    assert result.exit_code == 2 and "choose one view" in result.output


def test_adjust_option_reaches_every_format():
    rec = json.loads(analyze("--adjust", "bonferroni", "--format", "json").output)
    assert {r["adjust"] for r in rec} == {"bonferroni"}
    assert rec[-1]["p_adj_paired"] == pytest.approx(min(1.0, 10 * rec[-1]["paired_p"]))
    assert "bonferroni adjustment" in analyze("--adjust", "bonferroni").output
    assert analyze("--adjust", "sidak").exit_code == 2


def test_json_states_primary_family_and_na_reasons(tmp_path):
    df = load_sweep()
    path = tmp_path / "one_seed.csv"
    write_sweep(df[(df["size"] != "590M") | (df["seed"] == 0)], path)
    rec = json.loads(analyze("--data", str(path), "--format", "json").stdout)  # stderr: rows left out
    assert {r["primary"] for r in rec} == {"paired"} and {r["family_m_paired"] for r in rec} == {8}
    cell = next(r for r in rec if r["size"] == "590M")
    assert cell["paired_note"] == "fewer than 2 seed-matched pairs" and cell["p_adj_paired"] is None
    assert cell["signflip_p"] == 1.0 and cell["signflip_floor"] == 1.0
    text = analyze("--data", str(path)).output
    assert "590M Highway, paired: fewer than 2 seed-matched pairs" in text and "m = 8" in text


def test_latex_is_booktabs_and_escaped():
    out = analyze("--format", "latex").output
    assert "\\toprule" in out and "\\midrule" in out and "\\bottomrule" in out
    assert "$<$0.0001" in out and "review_neutral" not in out.replace("% ", "")


def test_missing_cell_is_null_in_json_and_na_in_text(tmp_path):
    df = load_sweep()
    path = tmp_path / "missing.csv"
    write_sweep(df[~((df["size"] == "1B") & (df["variant"] == "standard"))], path)
    rec = json.loads(analyze("--data", str(path), "--format", "json").stdout)[-1]
    assert rec["n_baseline"] == 0 and rec["welch_t"] is None and rec["mixed_p"] is None
    text = analyze("--data", str(path)).output
    assert "1B Standard, welch: no runs of this baseline at this size" in text


def test_csv_round_trips(tmp_path):
    import io

    back = pd.read_csv(io.StringIO(analyze("--format", "csv").output))
    assert list(back.columns) == list(TABLE_COLUMNS)
    assert np.allclose(back["gap"], gap_table(load_sweep())["gap"])


def test_bad_data_file_exits_2_with_a_clear_message(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("size,variant,seed,params_M,steps,val_loss,ece,minutes\n60M,Bogus,0,59.47,8000,1.7,,\n")
    result = analyze("--data", str(bad))
    assert result.exit_code == 2
    assert "rr: error:" in result.output and "must be a variant name" in result.output
    assert "Traceback" not in result.output
    assert analyze("--data", str(tmp_path / "nope.csv")).exit_code == 2


def test_bad_options_exit_2():
    assert analyze("--format", "xml").exit_code == 2
    result = analyze("--table", "--power")
    assert result.exit_code == 2 and "choose one view" in result.output
    for args in (
        ["equivalence", "--margin", "0"],
        ["power", "--effect", "-1"],
        ["claims", "--margin", "nan"],
    ):
        result = analyze(*args)
        assert result.exit_code == 2 and "rr: error:" in result.output and "Traceback" not in result.output


def test_table_view_loads_no_plotting_or_torch():
    code = (
        "import sys; from typer.testing import CliRunner; from cli.main import app; "
        "r = CliRunner().invoke(app, ['analyze', '--format', 'json']); "
        "print(r.exit_code, *(m in sys.modules for m in ('matplotlib', 'seaborn', 'torch')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "False", "False", "False"]


def test_entry_point_subprocess():
    out = subprocess.run(
        [sys.executable, "-m", "cli.main", "analyze", "--notes", "--format", "json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert {r["kind"] for r in json.loads(out.stdout)} >= {"token_budget", "fewer_seeds"}
    assert out.stderr == ""


# --- power and notes ---------------------------------------------------------------------------------------


def test_power_formula_matches_statsmodels():
    from statsmodels.stats.power import TTestIndPower, TTestPower

    for d, n in [(0.5, 10), (1.9, 3), (2.7, 4)]:
        assert t_test_power(d, n, n) == pytest.approx(TTestIndPower().power(d, n, 0.05), rel=1e-10)
        assert t_test_power(d, n) == pytest.approx(TTestPower().power(d, n, 0.05), rel=1e-10)


def test_power_table_on_published_data():
    p = power_table(load_sweep()).set_index(["size", "baseline"])
    row = p.loc[("1B", "highway")]
    assert (row["seeds_unpaired"], row["seeds_paired"]) == (6, 2)
    assert t_test_power(abs(row["cohens_d"]), 6, 6) >= 0.8 > t_test_power(abs(row["cohens_d"]), 5, 5)
    assert (p["seeds_unpaired"] >= 2).all() and (p.drop(index="320M", level="size")["note"] == "").all()
    # the smallest detectable gap with the seeds at hand reaches 80% power exactly
    sd = p.loc[("590M", "standard"), "gap"] / p.loc[("590M", "standard"), "cohens_d"]
    assert t_test_power(p.loc[("590M", "standard"), "mde_unpaired"] / sd, 3, 3) == pytest.approx(
        0.8, abs=1e-9
    )


def test_power_plans_from_no_observed_effect_of_fewer_than_three_pairs():
    """Issue 36.9: 320M has 2 seeds, and its Standard dz of 25.46 (1 df) read as "2 seeds"; such an effect is
    shown, with the reason no seed count is given, while the sizes with 3 pairs keep their plan."""
    p = power_table(load_sweep()).set_index(["size", "baseline"])
    few = p.loc["320M"]
    assert few["seeds_paired"].isna().all() and few["dz"].round(2).tolist() == [1.85, 25.46]
    assert few.loc["standard", "note"] == (
        "paired: the observed dz (25.46) comes from 2 seed-matched pairs (1 df), too few to plan from: no seed "
        "count (at least 3 pairs; or give --effect, which plans from the pooled residual SD)"
    )
    assert few["mde_paired"].notna().all()  # what the 2 pairs at hand detect is still shown: not a plan
    assert p.drop(index="320M", level="size")["seeds_paired"].notna().all()
    text = analyze("power", "--wide").output
    assert "320M  Standard" in text and "note: 320M Standard: paired: the observed dz (25.46)" in text


def test_recipe_notes_on_published_data():
    n = recipe_notes(load_sweep())
    assert n["kind"].tolist() == [
        "token_budget",
        *["tokens"] * 5,
        "size_and_tokens",
        "larger_size_higher_loss",
        "larger_size_higher_loss",
        "fewer_seeds",
        "params_mismatch",
        "params_mismatch",
        "params_mismatch",
    ]
    tokens = n[n["kind"] == "tokens"]["message"].tolist()
    assert tokens[0] == (
        "60M: 131M tokens per run (8000 steps x 64 x 256, from the recipe), 2.20 tokens per "
        "parameter (of Review's 59,470,848 parameters)"
    )
    assert "1B: 98.3M tokens per run (6000 steps" in tokens[-1] and "0.10 tokens per parameter" in tokens[-1]
    assert "correlate at r = -0.998 over the 5 cells" in n[n["kind"] == "size_and_tokens"]["message"].item()
    assert "590M: 7000; 1B: 6000" in n["message"].iloc[0]
    assert n[n["kind"] == "fewer_seeds"]["size"].tolist() == ["320M"]
    assert n[n["kind"] == "params_mismatch"]["size"].tolist() == ["60M", "320M", "590M"]


# --- the dataset card --------------------------------------------------------------------------------------


def test_dataset_card_matches_the_data():
    card = card_path().read_text(encoding="utf-8")
    assert update_card(card, gap_table(load_sweep())) == card  # run `rr analyze --card` where it differs


def test_card_block_follows_a_changed_value():
    df = load_sweep()
    text = update_card(
        "# card\n<!-- BEGIN GENERATED: rr analyze --card; do not edit by hand -->\n<!-- END GENERATED -->\n",
        gap_table(df),
    )
    df.loc[0, "val_loss"] += 0.01
    changed = update_card(text, gap_table(df))
    assert changed != text and changed.startswith("# card\n") and changed.endswith("<!-- END GENERATED -->\n")


def test_card_command_rewrites_only_the_block(tmp_path):
    card = tmp_path / "README.md"
    card.write_text(
        "intro\n<!-- BEGIN GENERATED: rr analyze --card; do not edit by hand -->\nold\n"
        "<!-- END GENERATED -->\ntail\n"
    )
    before = card.stat().st_ino
    result = analyze("--card", "--card-file", str(card))
    assert result.exit_code == 0 and "updated" in result.output
    assert card.stat().st_ino != before  # replaced whole by rename, never truncated and rewritten in place
    assert [p.name for p in tmp_path.iterdir()] == ["README.md"]  # no temporary file left
    text = card.read_text()
    assert text.startswith("intro\n") and text.endswith("tail\n") and "old" not in text
    assert update_card(text, gap_table(load_sweep())) == text
    assert analyze("--card", "--card-file", str(tmp_path / "none.md")).exit_code == 2


@pytest.mark.parametrize("keep", ["two_sizes", "one_seed"])
@pytest.mark.parametrize("view", ["table", "equivalence", "claims", "power --effect 0.003", "power"])
def test_thin_data_gives_sentences_not_tracebacks(tmp_path, keep, view):
    df = load_sweep()
    thin = df[df["size"].isin(["60M", "150M"])] if keep == "two_sizes" else df[df["seed"] == 0]
    path = tmp_path / "thin.csv"
    write_sweep(thin, path)
    result = analyze(*view.split(), "--data", str(path))
    assert result.exit_code == 0 and "Traceback" not in result.output and "nan" not in result.output.lower()


def test_the_card_view_finds_the_packaged_card_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = analyze("card")
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{card_path()}: headline table already up to date\n"
    own = tmp_path / "own.csv"
    write_sweep(load_sweep(), own)
    refused = analyze("card", "--data", str(own))
    assert refused.exit_code == 2 and "give --card-file for" in refused.stderr


# --- at 80 columns: prose wraps, the answer stays (issue 26.2) ----------------------------------------------


def test_notes_at_80_columns_wrap_the_note_text():
    out = analyze("notes", env={"COLUMNS": "80"}).output
    lines = out.splitlines()
    assert lines[:7] == [
        "Recipe notes",
        "kind                     size  note",
        "-----------------------  ----  -------------------------------------------------",
        "token_budget                   steps differ across sizes (60M, 150M, 320M: 8000;",
        "                               590M: 7000; 1B: 6000): any trend with size is",
        "                               confounded with the token budget (tokens = steps",
        "                               x batch x block)",
    ]
    assert max(map(len, lines)) <= 80 and "not shown" not in out
    continued = " ".join(line[31:] for line in lines[3:])  # the note column's lines, read in order
    for message in recipe_notes(load_sweep())["message"]:
        assert message in continued


def test_table_at_80_columns_keeps_the_gap_its_ci_and_hedges_g():
    """The interval beside the primary p is the primary (paired) test's own (issue 36.1), the paper's Welch t
    and p stand beside it (issue 49.9: the quickstart's `rr analyze --table` is the paper's Table 2, which
    80 columns hid), and what the table leaves out is named below it (issue 36.10), wrapped like the legend."""
    lines = analyze("table", env={"COLUMNS": "80"}).output.splitlines()
    assert lines[1:5] == [
        "                                    paired*  Hedges  Welch   Welch  paired*",
        "size  baseline      gap              95% CI       g      t       p    p adj",
        "----  --------  -------  ------------------  ------  -----  ------  -------",
        "60M   Highway   0.0032\u2020   [-0.0115, 0.0180]    0.28   0.42  0.6982   0.4654",
    ]
    assert lines[10] == "590M  Highway   0.0094\u2020    [0.0087, 0.0102]    2.14   3.28  0.0307   0.0031"
    below = " ".join(line.strip() for line in lines[14:18])
    assert below.startswith(
        "not shown at width 80: Review params (M), baseline params (M), n R/B, Review mean, "
        "baseline mean, 95% CI of g, Welch df, Welch 95% CI, Welch p adj, "
        "paired* t, paired* df, paired* p, "
    )
    assert below.endswith("mixed p adj (--wide shows all, --columns chooses)")
    assert max(map(len, lines)) <= 80


def test_a_narrowed_table_names_what_it_hides_below_it_when_one_line_holds_them():
    lines = analyze("power", env={"COLUMNS": "110"}).output.splitlines()
    below = next(i for i, line in enumerate(lines) if line.startswith("not shown"))
    assert lines[below] == "not shown at width 110: baseline params (M) (--wide shows all, --columns chooses)"
    assert lines[below - 1].startswith("1B ")  # right below the table's last row


def test_columns_choose_and_order_the_columns_and_none_is_dropped():
    named = "size,baseline,gap,welch_95_ci,hedges_g,sign_flip_p_floor,mixed_p_adj,welch_t"
    lines = analyze("--columns", named, env={"COLUMNS": "80"}).output.splitlines()
    assert lines[2].split() == ["size", "baseline", "gap", "95%", "CI", "g", "p", "(floor)", "p", "adj", "t"]
    assert (
        lines[4].split() == "60M Highway 0.0032\u2020 [-0.0203, 0.0267] 0.28 0.5 (0.25) 0.2933 0.42".split()
    )
    assert "not shown" not in "\n".join(lines)
    md = analyze("--format", "markdown", "--columns", "gap,size").output.splitlines()
    assert md[:3] == ["| gap | size |", "|---|---|", "| 0.0032\u2020 | 60M |"]
    csv = analyze("--format", "csv", "--columns", "size,gap,paired_ci_low").output.splitlines()
    gap = gap_table(load_sweep()).iloc[0]
    assert csv[:2] == ["size,gap,paired_ci_low", f"60M,{float(gap['gap'])!r},{float(gap['paired_ci_low'])!r}"]
    assert [list(r) for r in json.loads(analyze("--format", "json", "--columns", "hedges_g").output)] == [
        ["hedges_g"]
    ] * 10


def test_an_unknown_column_is_one_error_naming_the_views_columns():
    result = analyze("notes", "--columns", "kind,text")
    assert result.exit_code == 2
    assert result.output == (
        "rr: error: --columns: no column 'text' in the notes view's text; its columns: kind, size, note\n"
    )
    csv = analyze("--format", "csv", "--columns", "95_ci_of_gap")
    assert (
        csv.exit_code == 2
        and "in the table view's csv; its columns: " + ", ".join(TABLE_COLUMNS) in csv.output
    )


@pytest.mark.parametrize("fmt", ["markdown", "latex", "csv", "json"])
def test_only_text_wraps(fmt):
    narrow = analyze("notes", "--format", fmt, env={"COLUMNS": "40"}).output
    assert narrow == analyze("notes", "--format", fmt, env={"COLUMNS": "300"}).output
    assert "steps differ across sizes (60M, 150M, 320M: 8000; 590M: 7000; 1B: 6000)" in narrow


def test_every_views_column_names_are_distinct():
    views = [*VIEWS.values(), *(v for view in VIEWS.values() for v in view.switches.values())]
    assert "power --effect" in [v.name for v in views]
    for view in views:
        names = column_names(view, "text", pd.DataFrame())  # no comparison stamped: the paper's
        assert len(set(names)) == len(names) and all(names), (view.name, names)


def test_the_margin_help_states_the_librarys_default_which_has_one_home(monkeypatch):
    """Issue 43.5: the 0.005 margin stood in cli/analyze.py's help and in equivalence.DEFAULT_MARGIN; the help
    now reads the library's value when it is shown."""
    from rr_analysis.stats import equivalence

    monkeypatch.setattr(equivalence, "DEFAULT_MARGIN", 0.0125)
    said = " ".join(rr("analyze", "--help", env={"COLUMNS": "200"}).output.split())
    assert "for equivalence and claims (default 0.0125)" in said

"""`rr sizes` and `rr depth-check` through typer's CliRunner, and `rr sizes` stays torch-free."""

from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

from cli.main import app
from rr_analysis import load_sweep

runner = CliRunner()


def test_sizes_json_matches_every_published_cell():
    result = runner.invoke(app, ["sizes", "--format", "json"])
    assert result.exit_code == 0, result.output
    records = {(r["size"], r["variant"]): r for r in json.loads(result.output)}
    published = load_sweep().groupby(["size", "variant"]).params_M.first()
    assert len(published) == 15
    for key, params_m in published.items():
        assert records[key]["params_M"] == params_m, key
    assert records[("1B", "standard")] == {
        "size": "1B",
        "variant": "standard",
        "d_model": 1776,
        "n_layer": 24,
        "n_head": 16,
        "head_dim": 111,
        "params": 998_584_416,
        "params_M": 998.58,
    }


def test_sizes_text_is_a_whole_table():
    result = runner.invoke(app, ["sizes"])
    assert result.exit_code == 0
    assert "vocabulary 50,257" in result.output
    line = next(line for line in result.output.splitlines() if "60M" in line and "standard" in line)
    assert line.split() == ["60M", "standard", "568", "8", "8", "71", "59,713,840", "59.71"]
    header, rule = result.output.splitlines()[1:3]
    assert header.split() == [
        "size",
        "variant",
        "d_model",
        "n_layer",
        "n_head",
        "head_dim",
        "params",
        "params_M",
    ]
    assert len(line) == len(header) == len(rule)  # numbers right-aligned under their headers


def test_sizes_vocab_rematches_the_baselines():
    records = json.loads(runner.invoke(app, ["sizes", "--format", "json", "--vocab", "257"]).output)
    tiny = {r["variant"]: r["d_model"] for r in records if r["size"] == "tiny"}
    assert tiny == {
        "review_neutral": 128,
        "highway": 140,
        "standard": 148,
        "review_convex": 128,
        "layerscale": 128,
        "rezero": 128,
    }


def test_sizes_does_not_import_torch():
    code = (
        "import sys; from typer.testing import CliRunner; from cli.main import app; "
        "assert CliRunner().invoke(app, ['sizes']).exit_code == 0; assert 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_depth_check_json():
    args = ["depth-check", "--layers", "12", "--d-model", "32", "--n-head", "2", "--format", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    records = json.loads(result.output)
    assert [(r["variant"], r["n_layer"], r["d_model"]) for r in records] == [
        ("review_convex", 12, 32),
        ("review_neutral", 12, 32),
    ]
    assert records[0]["ratio"] < 1e-3 and 0.5 < records[1]["ratio"] < 2  # measured 1.4e-5 and 1.01


def test_depth_check_bad_input_is_one_line_and_exit_2():
    result = runner.invoke(app, ["depth-check", "--variants", "review_convex,bogus", "--layers", "1"])
    assert result.exit_code == 2
    assert "rr: error: unknown variant 'bogus'; registered: review_neutral" in result.output
    assert "Traceback" not in result.output

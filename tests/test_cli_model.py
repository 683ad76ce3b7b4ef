"""`rr sizes`, `rr depth-check` and `rr gates` through typer's CliRunner; the choices every option shares."""

from __future__ import annotations

import csv
import io
import json
import math
import subprocess
import sys
from dataclasses import replace

import pytest
from conftest import rr

from cli.choices import Format
from rr_core.ladder import LADDER
from rr_core.shapes import model_config
from rr_core.sweepfile.dataset import load_sweep
from rr_core.variants import VARIANTS


def test_sizes_json_matches_every_published_cell():
    result = rr("sizes", "--format", "json")
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
    result = rr("sizes")
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
    records = json.loads(rr("sizes", "--format", "json", "--vocab", "257").output)
    tiny = {r["variant"]: r["d_model"] for r in records if r["size"] == "tiny"}
    assert tiny == {
        "review_neutral": 128,
        "highway": 140,
        "standard": 148,
        "review_convex": 128,
        "layerscale": 128,
        "rezero": 128,
        "review_half": 128,  # Review's ablations: at its width, not matched
        "gate_bias": 128,
        "review_state": 128,
        "review_update": 128,
        "hyper_connections": 148,  # the field's rivals: matched up to Review, as the baselines are
        "hyper_connections_static": 148,
        "denseformer": 148,
        "attn_res": 148,
        "attn_res_block": 148,
    }


def test_sizes_does_not_import_torch():
    code = (
        "import sys; from typer.testing import CliRunner; from cli.main import app; "
        "assert CliRunner().invoke(app, ['sizes']).exit_code == 0; assert 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_depth_check_json():
    args = ["depth-check", "--layers", "12", "--d-model", "32", "--n-head", "2", "--format", "json"]
    result = rr(*args)
    assert result.exit_code == 0, result.output
    records = json.loads(result.output)
    assert [(r["variant"], r["n_layer"], r["d_model"]) for r in records] == [
        ("review_convex", 12, 32),
        ("review_neutral", 12, 32),
    ]
    assert records[0]["ratio"] < 1e-3 and 0.5 < records[1]["ratio"] < 2  # measured 1.4e-5 and 1.01


def test_depth_check_bad_input_is_one_line_and_exit_2():
    result = rr("depth-check", "--variant", "review_convex", "--variant", "bogus", "--layers", "1")
    assert result.exit_code == 2
    assert "rr: error: unknown variant 'bogus'; registered: review_neutral" in result.output
    assert "Traceback" not in result.output


def test_depth_check_takes_a_repeatable_variant_and_its_old_comma_list_with_a_warning():
    # issue 36.10: --variants a,b on rr depth-check, --variant (repeatable) on every other command
    args = ["depth-check", "--layers", "2", "--d-model", "16", "--n-head", "2", "--format", "json"]
    new = rr(*args, "--variant", "standard", "--variant", "highway")
    old = rr(*args, "--variants", "standard,highway")
    assert new.exit_code == 0 and old.exit_code == 0, (new.output, old.output)
    assert [r["variant"] for r in json.loads(new.stdout)] == ["standard", "highway"]
    assert old.stdout == new.stdout and new.stderr == ""
    assert old.stderr == (
        "rr: warning: --variants is deprecated on rr depth-check: use --variant (one --variant per variant, as "
        "rr train, rr sweep and rr sizes take them)\n"
    )
    both = rr(*args, "--variants", "standard", "--variant", "highway")
    assert (
        both.exit_code == 2
        and "--variant and --variants name the same thing: give --variant only" in both.stderr
    )


def test_sizes_takes_variants_and_a_reference():
    # issue 36.10: the README lists rr sizes --variant; --reference matches the baselines as rr train does
    rows = json.loads(rr("sizes", "--format", "json", "--variant", "standard", "--variant", "highway").output)
    assert [(r["size"], r["variant"]) for r in rows[:3]] == [
        ("60M", "standard"),
        ("60M", "highway"),
        ("150M", "standard"),
    ]
    every = {(r["size"], r["variant"]): r for r in json.loads(rr("sizes", "--format", "json").output)}
    assert all(r == every[r["size"], r["variant"]] for r in rows) and len(rows) == 2 * len(every) // len(
        VARIANTS
    )
    matched = json.loads(
        rr("sizes", "--format", "json", "--reference", "standard", "--variant", "highway").output
    )
    for r in matched:  # the smallest width, in steps of n_head, with standard's count at the ladder's width
        target = model_config(r["size"], "standard", reference="standard")
        assert target.d_model == LADDER[r["size"]].d_model
        narrower = replace(target, variant="highway", d_model=r["d_model"] - r["n_head"])
        assert narrower.n_params < target.n_params <= r["params"], r
    bad = rr("sizes", "--variant", "higway")
    assert bad.exit_code == 2 and "unknown variant 'higway' (did you mean highway?)" in bad.stderr


# ------------------------------------------------------------------ rr gates


def gate_records(*args: str) -> list[dict]:
    result = rr("gates", "--format", "json", "--batch", "2", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_gates_of_a_fresh_review_model_are_exactly_one_half():
    records = gate_records()
    assert [(r["layer"], r["sublayer"]) for r in records] == [
        (i, s) for i in range(4) for s in ("attn", "mlp")
    ]
    assert {(r["mean"], r["std"], r["frac_open"], r["frac_closed"]) for r in records} == {
        (0.5, 0.0, 0.0, 0.0)
    }


def test_gates_read_a_checkpoint(tmp_path):
    """A checkpoint whose first gate has bias 5 (weights zero): r = sigmoid(5) there, 0.5 elsewhere."""
    import torch

    from rr_core.shapes import model_config
    from rr_model.checkpoint import state as checkpoint
    from rr_model.model import GPT
    from rr_model.uses.gates import BYTE_VOCAB

    model = GPT(model_config("tiny", "review_neutral", BYTE_VOCAB))
    with torch.no_grad():
        model.transformer.h[0].res_attn.gate.bias.fill_(5.0)
    path = tmp_path / "run.checkpoints" / "tiny-review_neutral-seed0.pt"
    state = dict.fromkeys(checkpoint.KEYS) | {"model": model.state_dict(), "step": 5, "optimizer": {}}
    state["config"] = {"size": "tiny", "variant": "review_neutral", "tokenizer": "bytes"}
    checkpoint.save(path, state)
    records = gate_records("--checkpoint", str(path), "--stories")
    assert records[0]["mean"] == pytest.approx(1 / (1 + math.exp(-5)), rel=1e-6)
    assert records[0]["frac_open"] == 1.0 and records[0]["std"] < 1e-6
    assert {r["mean"] for r in records[1:]} == {0.5}


def test_sizes_say_whose_vocabulary_they_count_with():
    gpt2 = rr("sizes").output.splitlines()[0]
    assert gpt2 == (
        "Ladder x variant, vocabulary 50,257 (GPT-2's tokenizer, as the published runs; the synthetic "
        "demo's bytes: --vocab 257)"
    )
    byte = rr("sizes", "--vocab", "257").output.splitlines()[0]
    assert (
        byte
        == "Ladder x variant, vocabulary 257 (bytes, as the synthetic demo; the published runs: --vocab 50257)"
    )


def test_sizes_say_the_count_tiny_trains_with_on_bytes():
    """Issue 49.10: `rr sizes` showed tiny at GPT-2's vocabulary (7.5M) while its demos train on bytes (1.1M)."""
    from rr_core.shapes import model_config

    trained = model_config("tiny", "review_neutral", 257).n_params
    assert rr("sizes").output.splitlines()[-1] == (
        f"tiny trains on bytes in the demos and checks (--corpus synthetic): review_neutral has {trained:,} "
        "parameters there, not the 7,521,024 above; rr sizes --vocab 257 counts every size at bytes"
    )
    assert "trains on bytes" not in rr("sizes", "--vocab", "257").output
    assert json.loads(rr("sizes", "--format", "json").output)[-1]["size"] == "tiny"  # the table alone


def test_gates_read_a_runs_folder_and_name_the_runs_of_a_folder_of_several(tmp_path):
    from rr_core.shapes import model_config
    from rr_model.checkpoint import state as checkpoint
    from rr_model.model import GPT
    from rr_model.uses.gates import BYTE_VOCAB

    folder = tmp_path / "run.checkpoints"
    for variant in ("review_neutral", "highway"):
        model = GPT(model_config("tiny", variant, BYTE_VOCAB))
        config = {"size": "tiny", "variant": variant, "seed": 0, "tokenizer": "bytes"}
        checkpoint.save(
            folder / f"tiny-{variant}-seed0.final.pt", {"config": config, "model": model.state_dict()}
        )
        if variant == "review_neutral":
            assert {r["mean"] for r in gate_records("--checkpoint", str(folder), "--stories")} == {0.5}
    result = rr("gates", "--checkpoint", str(folder))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert (
        "holds the weights of 2 runs (tiny-highway-seed0.final.pt, tiny-review_neutral-seed0.final.pt)"
        in (result.output)
    )


def test_gates_of_an_ungated_variant_is_one_line_and_exit_2():
    result = rr("gates", "--variant", "standard")
    assert result.exit_code == 2
    assert "rr: error: standard has no gate to read; the gated variants are review_neutral" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("fmt", list(Format))
def test_sizes_renders_every_format(fmt):
    result = rr("sizes", "--format", fmt.value, "--vocab", "257")
    assert result.exit_code == 0, result.output
    tiny = "tiny & review\\_neutral & 128" if fmt is Format.latex else "tiny"
    assert tiny in result.output
    if fmt is Format.csv:
        rows = list(csv.DictReader(io.StringIO(result.output)))
        assert (
            len(rows) == 6 * 15 and rows[-1]["variant"] == "attn_res_block" and rows[-1]["d_model"] == "148"
        )
    if fmt is Format.markdown:
        assert "|---|---|---:|---:|---:|---:|---:|---:|" in result.output

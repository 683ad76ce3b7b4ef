"""An export as transformers and lm-evaluation-harness use it, checked in one fresh offline process.

tests/hf_checks.py runs once (HF_HUB_OFFLINE=1, its own HF_HOME): for every variant of rr and a plugin's
rule it exports a tiny model with perturbed weights and loads it with AutoModelForCausalLM, scores one
export with lm-evaluation-harness on the local task of tests/lm_eval_task, and runs `rr eval --tasks ...
--join` on the session's tiny run. Each test below asserts one part of what it measured against rr's own
model, which the same process ran on the same folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from rr_core.shapes import GPTConfig
from rr_core.sweepfile.dataset import load_sweep
from rr_core.variants import NAMES
from rr_model.checkpoint import state as checkpoint
from rr_model.model import INIT_STD
from rr_model.uses.hf_code import MODEL_TYPE

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "docs" / "extending" / "myrule.py"  # registers inside try/except ImportError: it travels
STUCK = """import torch.nn as nn

import rr_model


class Stuck(nn.Module):
    def __init__(self, d_model: int):
        super().__init__()

    def forward(self, h, u):
        return h + u


rr_model.register_residual("stuck", Stuck)
"""
VARIANTS = [*NAMES, "myrule"]
BLOCK = 32  # hf_checks.SHAPE's block_size


@pytest.fixture(scope="module")
def report(tiny_run, tmp_path_factory) -> dict:
    """What tests/hf_checks.py measured, run once for this module."""
    work = tmp_path_factory.mktemp("hf")
    (work / "travel.py").write_bytes(PLUGIN.read_bytes())
    (work / "stuck.py").write_text(STUCK)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HOME": str(work / "hf"),
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": str(ROOT),
        "RR_PLUGINS": f"{work / 'travel.py'},{work / 'stuck.py'}",
    }
    final = checkpoint.final_path(tiny_run["out"], "tiny", "standard", 0)
    args = [sys.executable, str(Path(__file__).with_name("hf_checks.py")), work, final, tiny_run["out"]]
    done = subprocess.run([str(a) for a in args], env=env, cwd=work, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-5000:]
    return {**json.loads((work / "report.json").read_text()), "work": work, "sweep": tiny_run["out"]}


@pytest.mark.parametrize("variant", VARIANTS)
def test_transformers_loads_every_weight_as_rr_wrote_it(report, variant):
    got = report["variants"][variant]
    assert got["loading"] == {
        "missing_keys": [],
        "unexpected_keys": [],
        "mismatched_keys": [],
        "error_msgs": [],
    }
    assert (
        got["tied"] and got["names"] and got["weights_bitwise"]
    )  # head tied to wte; rr's names, rr's values
    assert got["module"].startswith("transformers_modules.") and got["module"].endswith(".modeling_rr")


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_fresh_model_from_the_export_starts_each_rule_as_rr_does(report, variant):
    """transformers' own init of a fresh model (no weights loaded): every residual-rule parameter rr starts at
    one value (Review's and its ablations' zero gates, the gate bias, LayerScale, ReZero) starts there too."""
    fresh = report["variants"][variant]["fresh_rules"]
    assert all(fresh.values()), [k for k, ok in fresh.items() if not ok]
    # per sublayer (4): a zeroed gate's weight and bias, the gate bias, Highway's bias (its weight is drawn)
    expected = {"review_state": 8, "review_update": 8, "review_neutral": 8, "gate_bias": 4, "highway": 4}
    assert len(fresh) == expected.get(variant, len(fresh))


@pytest.mark.parametrize("variant", VARIANTS)
def test_logits_equal_rrs_bitwise_and_a_cache_continues_them(report, variant):
    """(B, T) = (1, 1), (1, 7), (3, 32), (2, 17), each with the default cache, without, and with an all-ones
    mask; then 12 tokens, 1, and 7 more through the cache under either argument name."""
    got = report["variants"][variant]
    assert got["bitwise"] == [True] * 12
    cached = got["cached_max_diff"]
    assert cached["cache_length"] == cached["past_key_values_length"] == 20
    assert cached["cache"] < 1e-5 and cached["past_key_values"] < 1e-5  # other kernel shapes: rounding only
    assert f"is past block_size {BLOCK}" in got["past_block"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_greedy_generation_with_and_without_a_cache_is_rrs(report, variant):
    """rr's generate with and without its cache and transformers' with and without, 40 new tokens: the same
    tokens, inside the block and past it (where each step runs the last block_size tokens afresh)."""
    greedy = report["variants"][variant]["greedy"]
    for prompt, runs in greedy.items():
        assert len({tuple(tokens) for tokens in runs.values()}) == 1, prompt
    assert any(len(runs["rr_cache"]) > BLOCK + 8 for runs in greedy.values())


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_left_padded_batch_generates_what_each_prompt_does_alone(report, variant):
    got = report["variants"][variant]
    assert got["padded_batch"] == got["one_at_a_time"]
    assert len({len(tokens) for tokens in got["one_at_a_time"]}) == 1


def test_autotokenizer_encodes_and_decodes_as_rr(report):
    for text, (hf_ids, rr_ids, decoded) in report["variants"]["review_neutral"]["tokenizer"].items():
        assert hf_ids == rr_ids and decoded == text, text
    assert report["variants"]["review_neutral"]["tokenizer"]["a<|endoftext|>b"][0] == [97, 256, 98]


def test_the_code_imports_only_torch_and_transformers_and_the_plugin_travels_as_written(report):
    standard = {"math", "inspect", "__future__"}
    for variant in VARIANTS:
        for name, imported in report["variants"][variant]["imports"].items():
            assert set(imported) <= {"torch", "transformers"} | standard, (variant, name)
    assert set(report["variants"]["myrule"]["imports"]) == {
        "configuration_rr.py",
        "modeling_rr.py",
        "rr_layers.py",
        "rule_myrule.py",
    }
    folder = report["work"] / "export-myrule"
    assert (folder / "rule_myrule.py").read_bytes() == PLUGIN.read_bytes()
    assert hashlib.sha256(PLUGIN.read_bytes()).hexdigest() in (folder / "README.md").read_text()
    assert "from .rule_myrule import ChannelScale" in (folder / "rr_layers.py").read_text()


def test_a_plugin_importing_rr_outside_a_try_block_is_refused_saying_why(report):
    said = report["refused"]
    assert said.startswith("the variant stuck's rule stuck.Stuck cannot travel with an export")
    assert "imports rr_model, which transformers requires on every machine that loads the model" in said
    assert not (report["work"] / "export-stuck").exists()


def test_the_transformers_config_defaults_are_rrs(report):
    defaults = report["config_defaults"]
    assert {k: defaults[k] for k in asdict(GPTConfig())} == asdict(GPTConfig())
    assert defaults["initializer_range"] == INIT_STD and defaults["model_type"] == MODEL_TYPE
    assert defaults["tie_word_embeddings"] is True and defaults["use_cache"] is True


def test_lm_eval_log_likelihoods_are_rrs_direct_computation(report):
    """Each of the 20 x 4 choices' log-likelihood, summed log-softmax of the continuation's tokens given the
    context (left-truncated to block_size + 1, as lm-eval truncates), by rr's GPT on the same folder."""
    got = report["lm_eval"]
    items = np.array([row[2:] for row in got["items"]])
    assert len(items) == 80 and np.abs(items[:, 0] - items[:, 1]).max() < 1e-5
    docs = {}
    for doc, target, loglik, _, chars in got["items"]:
        docs.setdefault(doc, (target, []))[1].append(
            (loglik, loglik / (chars - 1))
        )  # acc_norm: per character
    acc = np.mean([np.argmax([c[0] for c in choices]) == target for target, choices in docs.values()])
    norm = np.mean([np.argmax([c[1] for c in choices]) == target for target, choices in docs.values()])
    scores = {s["metric"]: s for s in got["scores"]}
    assert scores["acc"]["value"] == acc and scores["acc_norm"]["value"] == norm
    assert scores["acc"]["stderr"] == pytest.approx(np.sqrt(acc * (1 - acc) / 19))  # sample standard error
    assert got["run"] == {"size": "tiny", "variant": "review_neutral", "seed": 0}


def test_rr_eval_tasks_prints_the_scores_and_joins_them_onto_the_sweep(report):
    cli = report["cli"]
    assert cli["exit_code"] == 0, cli["stderr"][-3000:]
    rows = json.loads(cli["stdout"])
    assert [(r["run"], r["task"], r["metric"]) for r in rows] == [
        ("tiny standard seed 0", "rr_local_mc", "acc"),
        ("tiny standard seed 0", "rr_local_mc", "acc_norm"),
    ]
    assert all(
        0 <= r["value"] <= 1 and r["value"] * 12 == round(r["value"] * 12) for r in rows
    )  # 12 documents
    joined, before = load_sweep(cli["out"]), load_sweep(report["sweep"])
    assert joined[list(before.columns)].equals(before)
    assert joined[["rr_local_mc_acc", "rr_local_mc_acc_norm"]].values.tolist() == [[r["value"] for r in rows]]
    assert f"joined onto 1 of 1 rows of {report['sweep']}: {cli['out']}" in cli["stderr"]


def test_the_card_credits_the_paper_for_its_rules_and_a_plugin_for_its_own(report):
    """Issue 49.10: a plugin rule's export said the architecture was Kramer's; its card now names the
    plugin's rule as the plugin's and credits the paper for the trunk and recipe only."""
    own, plugin = (
        report["variants"]["review_neutral"]["card_method"],
        report["variants"]["myrule"]["card_method"],
    )
    assert own.startswith("The architecture and recipe are those of Kramer (2026)")
    assert plugin.startswith("The residual rule `ChannelScale` is a plugin's (travel.py), not the paper's")
    assert "the training recipe are those of Kramer (2026)" in plugin

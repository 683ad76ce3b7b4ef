"""A trained run at work (rr_model.uses.inference, `rr sample`, `rr eval`): the session's tiny run's final weights
sampled from and scored on held-out windows, against a direct computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import rr

from rr_core.ladder import BYTE_EOS
from rr_core.shapes import model_config
from rr_model.checkpoint import state as checkpoint
from rr_model.data.token_cache import load_tokens
from rr_model.model import GPT
from rr_model.uses.inference import heldout, load_trained, sample


@pytest.fixture
def final(tiny_run):
    """The tiny run's final weights (kept when it finished)."""
    return checkpoint.final_path(tiny_run["out"], "tiny", "standard", 0)


def test_a_finished_run_keeps_its_weights_and_they_load(final, tiny_run):
    trained = load_trained(final.parent)  # the folder of one run
    assert (
        trained.path == final
        and trained.tokenizer == "bytes"
        and trained.record["run_id"] == tiny_run["run_id"]
    )
    assert not checkpoint.checkpoint_path(tiny_run["out"], "tiny", "standard", 0).exists()  # superseded


def test_sampling_is_deterministic_for_a_seed(final):
    trained = load_trained(final)
    a, b, c = (sample(trained, "Once upon a time", tokens=40, temperature=1.0, seed=s) for s in (3, 3, 4))
    assert a == b and a != c and a.startswith("Once upon a time")
    greedy = sample(trained, "Tom", tokens=5, temperature=0)  # argmax: the seed does not matter
    assert greedy == sample(trained, "Tom", tokens=5, temperature=0, seed=9)


def test_sampling_runs_the_prompt_once_then_one_token_a_step(final):
    """`rr sample` generates with the KV cache: after the prompt, each forward pass is one token long."""
    trained, fed = load_trained(final), []
    trained.model.transformer.wte.register_forward_pre_hook(lambda _, args: fed.append(args[0].shape[1]))
    sample(trained, "Tom", tokens=5, seed=2)
    assert fed == [3, 1, 1, 1, 1]


def test_rr_sample_prints_the_same_text_as_the_library(final):
    result = rr("sample", "--checkpoint", str(final), "--prompt", "Lily", "--tokens", "12", "--seed", "5")
    assert result.exit_code == 0, result.output
    assert result.output == sample(load_trained(final), "Lily", tokens=12, seed=5) + "\n"


def _direct_bpb(model: GPT, val: np.ndarray, seed: int, windows: int) -> tuple[float, int]:
    """Nats from the model's own mean loss per window, bytes from the windows' UTF-8 text (EOS: 1)."""
    block = model.config.block_size
    starts = np.random.default_rng(seed).integers(0, len(val) - block, size=windows)
    nats, n_bytes = 0.0, 0
    with torch.no_grad():
        for s in starts:
            w = torch.from_numpy(val[s : s + block + 1].astype(np.int64))[None]
            _, loss = model(w[:, :-1], w[:, 1:])
            nats += loss.item() * block
            y = w[0, 1:].numpy()
            n_bytes += len(bytes(y[y != BYTE_EOS].astype(np.uint8))) + int((y == BYTE_EOS).sum())
    return nats / (math.log(2) * n_bytes), n_bytes


def test_bits_per_byte_match_a_direct_computation_on_the_same_windows(final, offline, tmp_path):
    trained = load_trained(final)
    other = GPT(model_config("tiny", "review_neutral", BYTE_EOS + 1))  # untrained: another variant, seed 0
    path = tmp_path / "x.checkpoints" / "tiny-review_neutral-seed0.pt"
    checkpoint.save(
        path, {"config": {**trained.config, "variant": "review_neutral"}, "model": other.state_dict()}
    )
    val = load_tokens("synthetic").val
    for t in (load_trained(path), trained):
        got = heldout(t, "synthetic", windows=6, batch=4)
        bpb, n_bytes = _direct_bpb(t.model, val, seed=0, windows=6)
        assert got["bytes"] == n_bytes and got["tokens"] == 6 * 256
        assert got["bpb"] == pytest.approx(bpb, rel=1e-5)
        assert got["bpb"] == pytest.approx(got["loss"] * got["tokens_per_byte"] / math.log(2), rel=1e-12)
    one_pass = heldout(trained, "synthetic", windows=6, batch=6)  # the batch changes rounding only
    assert one_pass["bytes"] == got["bytes"] and one_pass["bpb"] == pytest.approx(got["bpb"], rel=1e-9)
    assert heldout(trained, "synthetic", windows=6, seed=1)["loss"] != got["loss"]


def test_rr_eval_compares_two_runs_on_one_corpus(final, offline):
    result = rr("eval", "--checkpoint", str(final), "--checkpoint", str(final.parent), "--corpus", "synthetic", "--windows", "4", "--format", "json")  # fmt: skip
    assert result.exit_code == 0, result.output
    import json

    rows = json.loads(result.output)
    assert [r["run"] for r in rows] == ["tiny standard seed 0"] * 2 and rows[0] == rows[1]
    assert rows[0]["bpb"] == pytest.approx(
        heldout(load_trained(final), "synthetic", windows=4)["bpb"], rel=1e-12
    )


def test_no_weights_is_one_line(tmp_path):
    result = rr("sample", "--checkpoint", str(tmp_path))
    assert result.exit_code == 2 and f"rr: error: {tmp_path}: no weights in it" in result.output


def test_an_export_given_as_a_run_s_weights_is_named_with_how_to_load_it(final, tmp_path):
    """Issue 49.10: `rr sample --checkpoint EXPORT` said only "no weights in it"."""
    export = tmp_path / "export"
    assert rr("export", "--checkpoint", str(final), "--out", str(export)).exit_code == 0
    result = rr("sample", "--checkpoint", str(export), "--tokens", 3)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.output
    assert result.stderr.startswith(f"rr: error: {export}: an export (what rr export writes: ")
    assert "GPT.from_pretrained(FOLDER)" in result.stderr and "rr eval --tasks" in result.stderr


EITHER = "rr eval scores either held-out loss (--corpus CORPUS) or tasks (--tasks NAMES): give one"


@pytest.mark.parametrize(
    "args, said",
    [
        ([], EITHER),
        (["--corpus", "synthetic", "--tasks", "hellaswag"], EITHER),
        (["--data", "synthetic", "--tasks", "hellaswag"], EITHER),  # the old flag counts as --corpus
        (
            ["--corpus", "synthetic", "--limit", "5"],
            "--include-path, --limit, --join, --out and --device go with --tasks",
        ),
        (["--tasks", "hellaswag", "--join", "runs.csv"], "--join SWEEP and --out NEW go together"),
    ],
    ids=["neither", "both", "both-old-flag", "limit-without-tasks", "join-without-out"],
)
def test_rr_eval_options_that_do_not_go_together_are_one_line(final, args, said):
    result = rr("eval", "--checkpoint", str(final), *args)
    assert result.exit_code == 2 and f"rr: error: {said}" in result.output


@pytest.mark.parametrize(
    "args",
    [["eval", "--corpus", "synthetic", "--windows"], ["gates", "--stories", "--batch"]],
    ids=["eval-windows", "gates-batch"],
)
def test_a_count_of_windows_past_this_machine_s_memory_is_one_line_before_any_work(final, args, offline):
    """Before issue 47 (class 4) `rr eval --windows 1e11` loaded the corpus, then ended in numpy's MemoryError
    traceback; 10^11 windows of 257 int64 ids need about 188 TiB, past any machine rr runs on."""
    *command, option = args
    result = rr(*command, "--checkpoint", str(final), option, 10**11)
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert result.stderr.startswith(
        f"rr: error: {option} 100,000,000,000: 100,000,000,000 windows of 257 tokens need "
    ) and result.stderr.endswith("GiB; ask for fewer\n")


def test_rr_eval_s_library_call_scores_what_its_value_names(final, offline):
    """`rr_model.uses.scoring.score(Scoring(...))`, the one call `rr eval` makes: each run's held-out row is
    `heldout`'s on the same windows, and options that do not go together are refused by the value's check
    with the command line's words (InputError)."""
    from rr_core.errors import InputError
    from rr_model.uses.inference import heldout, load_trained
    from rr_model.uses.scoring import Scoring, score

    scored = score(Scoring(checkpoint=(final,), corpus="synthetic", windows=4, seed=3))
    trained = load_trained(final)
    direct = heldout(trained, "synthetic", windows=4, seed=3)
    assert scored.joined is None and len(scored.rows) == 1 and scored.rows[0]["run"] == trained.title
    assert scored.rows[0]["loss"] == pytest.approx(direct["loss"], rel=1e-6)
    with pytest.raises(InputError, match="give one"):
        score(Scoring(checkpoint=(final,)))
    with pytest.raises(InputError, match="go with --tasks"):
        score(Scoring(checkpoint=(final,), corpus="synthetic", limit=5))


def test_rr_gates_s_library_call_reads_what_its_value_names():
    """`rr_model.uses.gate_reading.read(GateReading(...))`: a fresh Review model's gates, all at exactly 0.5
    (its gate bias starts at 0, so r = sigmoid(0)), on the batch the value names."""
    from rr_model.uses.gate_reading import GateReading, read

    found = read(GateReading(size="tiny", batch=2, seed=1))
    assert list(found.columns[:2]) == ["layer", "sublayer"] and len(found) > 0
    assert found["mean"].to_numpy() == pytest.approx(0.5, abs=1e-6)
    assert not GateReading().reads_anatomy and GateReading(checkpoint="x.pt").reads_anatomy
    assert not GateReading(checkpoint="x.pt", stories=True).reads_anatomy

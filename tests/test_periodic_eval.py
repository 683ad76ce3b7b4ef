"""Validation during training (`--eval-every`): readings of a fixed set of held-out windows, logged as eval
events (`rr_core.sweepfile.metrics_log.load_evals` reads them back); the run trains the same bits with them as
without, the final evaluation stays the published one, and the record says which windows each used.

The runs here use tiny's shape with a 64-token context and 4 validation batches, 4 steps: a few seconds each,
shared by the module's tests.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import rr

from rr_core.errors import InputError
from rr_core.ladder import get_size
from rr_core.shapes import model_config
from rr_core.sweepfile.metrics_log import EVAL_COLUMNS, load_curves, load_evals, metrics_path, read_metrics
from rr_core.sweepfile.provenance import read_records, sidecar_path
from rr_model.checkpoint import state as checkpoint
from rr_model.config import TrainConfig
from rr_model.data.token_cache import load_tokens
from rr_model.data.windows import describe_held_out, held_out_windows, sample_batch
from rr_model.model import GPT
from rr_model.run.trainer import train
from rr_model.run.validation import held_out_loss
from rr_model.uses.inference import load_trained

pytestmark = pytest.mark.usefixtures("offline")

RECIPE = replace(get_size("tiny").recipe, block_size=64, eval_batches=4)
RUN = {
    "size": "tiny",
    "variant": "review_neutral",
    "data": "synthetic",
    "steps": 4,
    "log_every": 1,
    "checkpoint_every": 2,
    "recipe": RECIPE,
}
EVERY = {"eval_every": 3, "eval_windows": 20}  # readings at steps 3 and 4 (the last); batches of 8, 8 and 4
SEED = int.from_bytes(hashlib.sha256(b"rr held-out validation windows").digest()[:4], "little")


class Killed(Exception):
    pass


def val_stream(token_cache) -> np.ndarray:
    return load_tokens("synthetic", n_text=RECIPE.n_text, cache_dir=token_cache, val_frac=RECIPE.val_frac).val


def direct_loss(model: torch.nn.Module, stream: np.ndarray, starts, block: int) -> float:
    """The mean token loss of `model` over the windows at `starts`, one window at a time, in float64."""
    losses = []
    with torch.no_grad():
        for s in starts:
            w = torch.from_numpy(stream[s : s + block + 1].astype(np.int64))
            logits, _ = model(w[None, :-1])
            losses.append(F.cross_entropy(logits[0].double(), w[1:]).item())
    return float(np.mean(losses))


@pytest.fixture(scope="module")
def runs(token_cache, tmp_path_factory):
    """The same run trained without readings, with them, and with them killed after its checkpoint at step 2
    and resumed; each into its own dataset (the records carry "out")."""
    folder = tmp_path_factory.mktemp("periodic")
    found = {}
    for name, extra in (("plain", {}), ("read", EVERY)):
        out = folder / f"{name}.csv"
        found[name] = {**train(TrainConfig(**RUN, **extra, cache_dir=str(token_cache)), out), "out": out}
    out, cfg = folder / "resumed.csv", TrainConfig(**RUN, **EVERY, cache_dir=str(token_cache))
    save = checkpoint.save

    def save_then_die(path, state):
        save(path, state)
        if state.step == 2:
            raise Killed

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(checkpoint, "save", save_then_die)
        with pytest.raises(Killed):
            train(cfg, out)
    found["resumed"] = {**train(cfg, out, resume=True), "out": out}
    return found


def test_the_held_out_windows_are_a_stream_of_their_own():
    stream = np.arange(5000, dtype=np.uint16)
    starts = held_out_windows(stream, 30, 64)
    # their own RandomState, seeded from a fixed name: no run's seed or step count enters
    assert starts.tolist() == np.random.RandomState(SEED).randint(0, 5000 - 64 - 1, size=30).tolist()
    sample_batch(stream, np.random.RandomState(0), 8, 64)  # training draws elsewhere leave them as they are
    assert held_out_windows(stream, 30, 64).tolist() == starts.tolist()
    described = describe_held_out(starts, 64)
    assert (described["seed"], described["windows"], described["block_size"]) == (SEED, 30, 64)
    assert described["starts_sha256"] == hashlib.sha256(starts.astype("<i8").tobytes()).hexdigest()
    other = describe_held_out(held_out_windows(stream[:3000], 30, 64), 64)  # another corpus: other windows
    assert other["starts_sha256"] != described["starts_sha256"]


@pytest.mark.parametrize("training", [True, False])
def test_held_out_loss_is_the_mean_over_windows_and_leaves_mode_and_streams(token_cache, training):
    stream = val_stream(token_cache)
    torch.manual_seed(0)
    model = GPT(replace(model_config("tiny", "review_neutral", 257), block_size=64)).train(training)
    starts = held_out_windows(stream, 7, 64)
    rng_before = torch.get_rng_state()
    got = held_out_loss(model, stream, starts, batch_size=3, block_size=64, device=torch.device("cpu"))
    assert model.training is training  # put back as found: a training run goes on training
    assert torch.equal(torch.get_rng_state(), rng_before)
    # batches of 3, 3 and 1 windows weigh as seven single windows
    assert got == pytest.approx(direct_loss(model, stream, starts, 64), rel=1e-6)


def test_readings_change_no_bit_of_the_run(runs):
    plain, read = runs["plain"], runs["read"]
    assert read["loss_curve"] == plain["loss_curve"]
    assert (read["result"]["val_loss"], read["result"]["ece"]) == (
        plain["result"]["val_loss"],
        plain["result"]["ece"],
    )
    weights = [
        checkpoint.load_weights(checkpoint.final_path(r["out"], "tiny", "review_neutral", 0))[1].model
        for r in (plain, read)
    ]
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    # the gates' readings of each interval hold the training passes only, not the validation's
    gates = [
        [
            r.get("gates")
            for r in read_metrics(metrics_path(x["out"], "tiny", "review_neutral", 0))
            if r["event"] == "train"
        ]
        for x in (plain, read)
    ]
    assert gates[0] == gates[1] and gates[0][0]


def test_each_reading_is_an_eval_event_on_the_held_out_windows(runs, token_cache):
    read = runs["read"]
    events = [
        r
        for r in read_metrics(metrics_path(read["out"], "tiny", "review_neutral", 0))
        if r["event"] == "eval"
    ]
    tokens = RECIPE.batch_size * RECIPE.block_size
    assert [{k: v for k, v in e.items() if k != "val_loss"} for e in events] == [
        {"event": "eval", "step": 3, "tokens": 3 * tokens, "periodic": True},
        {"event": "eval", "step": 4, "tokens": 4 * tokens, "periodic": True},
        {"event": "eval", "step": 4, "ece": read["result"]["ece"], "minutes": read["result"]["minutes"]},
    ]  # the final evaluation's event is as it was: no periodic key, the row's numbers
    assert events[2]["val_loss"] == read["result"]["val_loss"]
    # the last reading: the final weights on the windows drawn as the record describes
    stream = val_stream(token_cache)
    starts = held_out_windows(stream, EVERY["eval_windows"], RECIPE.block_size)
    final = load_trained(checkpoint.final_path(read["out"], "tiny", "review_neutral", 0)).model
    assert events[1]["val_loss"] == pytest.approx(direct_loss(final, stream, starts, 64), rel=1e-6)
    assert events[1]["val_loss"] != pytest.approx(read["result"]["val_loss"], rel=1e-6)  # other windows


def test_the_record_says_which_windows_each_evaluation_read(runs, token_cache, tiny_run):
    read, plain = runs["read"], runs["plain"]
    final = {
        "draw": "the data-order stream after the training batches",
        "rng": "numpy.random.RandomState",
        "seed": 0,
        "after_batches": 4,
        "batches": 4,
        "batch_size": 8,
        "block_size": 64,
    }
    assert read["val_windows"] == plain["val_windows"] == final
    starts = held_out_windows(val_stream(token_cache), EVERY["eval_windows"], 64)
    assert read["held_out_windows"] == describe_held_out(starts, 64) and "held_out_windows" not in plain
    assert read["held_out_windows"]["seed"] == SEED
    # the published run's record: its final windows, after its 12 steps' draws, and nothing periodic
    assert tiny_run["val_windows"] == {**final, "after_batches": 12, "batches": 80, "block_size": 256}
    assert not any(
        r.get("periodic") for r in read_metrics(metrics_path(tiny_run["out"], "tiny", "standard", 0))
    )


def test_load_evals_reads_the_validation_curve_and_a_resumed_run_logs_the_same(runs, tiny_run):
    evals = load_evals([runs["read"]["out"]])
    assert list(evals.columns) == list(EVAL_COLUMNS)
    logged = [
        r
        for r in read_metrics(metrics_path(runs["read"]["out"], "tiny", "review_neutral", 0))
        if r.get("periodic")
    ]
    assert evals[["step", "tokens", "val_loss"]].values.tolist() == [
        [r["step"], r["tokens"], r["val_loss"]] for r in logged
    ]
    assert evals["tokens"].dtype == np.int64 and set(evals["seed"]) == {0}
    assert (evals["init_seed"] == 0).all() and (evals["data_seed"] == 0).all()  # named by no run: the seed
    resumed = runs["resumed"]
    assert resumed["resumed_at"] == [2] and resumed["loss_curve"] == runs["read"]["loss_curve"]
    assert load_evals([resumed["out"]]).drop(columns="source").equals(evals.drop(columns="source"))
    assert len(load_curves([resumed["out"]])) == 4  # the training curve reads as before
    with pytest.raises(InputError, match="no periodic validation readings in .*whole.csv: runs trained with"):
        load_evals([tiny_run["out"]])


@pytest.mark.slow
def test_rr_train_eval_every_end_to_end(tmp_path, token_cache):
    out = tmp_path / "cli.csv"
    args = ["train", "--size", "tiny", "--variant", "standard", "--seed", "1", "--corpus", "synthetic"]
    result = rr(*args, "--steps", 2, "--eval-every", 1, "--eval-windows", 12, "--out", out)
    assert result.exit_code == 0, result.output
    assert "step 2, held-out val_loss" in result.output
    evals = load_evals([out])
    assert evals["step"].tolist() == [1, 2] and evals["tokens"].tolist() == [8 * 256, 2 * 8 * 256]
    (record,) = read_records(sidecar_path(out))
    block = get_size("tiny").recipe.block_size
    stream = load_tokens("synthetic", cache_dir=token_cache).val
    assert record["held_out_windows"] == describe_held_out(held_out_windows(stream, 12, block), block)
    assert (record["config"]["eval_every"], record["config"]["eval_windows"]) == (1, 12)
    refused = rr(*args, "--steps", 2, "--eval-every", -1, "--out", out)
    assert refused.exit_code == 2 and "eval-every" in refused.output

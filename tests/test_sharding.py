"""Sharded training (FSDP2) on 2 CPU processes (gloo): the same run as 1 process, resumable on another number of
processes, each process holding half the model, and out of memory on one process stopping both with one
message and the last checkpoint intact.

One spawn of two processes trains two sharded runs of `RUN` (tiny, 20 steps, a short context so it is quick):
"whole" (uninterrupted, blocks 0 and 2 of 4 recomputed: with and without activation checkpointing in one
model), whose step-10 checkpoint is kept aside and whose pieces are counted; then "short", where process 1
runs out of memory in step 6. The single-process runs compare against them here.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from rr_core.errors import StoppedElsewhere
from rr_core.ladder import get_size
from rr_core.shapes import GPTConfig
from rr_model import checkpoint, sharded_checkpoint
from rr_model.memory import state_bytes
from rr_model.model import GPT
from rr_model.out_of_memory import OutOfMemoryStop, record_path
from rr_model.run_config import TrainConfig
from rr_model.trainer import train

pytestmark = pytest.mark.usefixtures("offline")

# tiny's shape and recipe but a context of 64 tokens and 4 validation batches: 20 steps in a few seconds
RECIPE = replace(get_size("tiny").recipe, block_size=64, eval_batches=4)
RUN = {
    "size": "tiny",
    "variant": "standard",
    "data": "synthetic",
    "steps": 20,
    "log_every": 1,
    "recipe": RECIPE,
}
SHARDED = {**RUN, "shard": "fsdp", "checkpoint_every": 10, "activation_checkpointing": "every:2"}
KEY = ("tiny", "standard", 0)
OUT_OF_MEMORY = {"rank": 1, "step": 6, "checkpoint_every": 4}  # which process runs out, in which step


def _keep_step_10(folder: Path, rank: int) -> None:
    """Wrap the sharded save: at step 10, count the pieces this process holds and keep a copy of the folder."""
    save = sharded_checkpoint.save

    def save_and_keep(path, model, optimizer, saved):
        save(path, model, optimizer, saved)
        if saved.step != 10:
            return
        held = lambda ts: sum(t.to_local().numel() * t.element_size() if hasattr(t, "to_local") else  # noqa: E731
                              t.numel() * t.element_size() for t in ts)  # fmt: skip
        pieces = {"params": held(model.parameters()),
                  "optimizer": held(t for s in optimizer.state.values() for t in s.values())}  # fmt: skip
        (folder / f"pieces{rank}.json").write_text(json.dumps(pieces))
        if rank == 0:
            shutil.copytree(path, folder / "step10.dcp")

    sharded_checkpoint.save = save_and_keep


def _out_of_memory_in(step: int) -> None:
    """Make the training forward pass of `step` (0-based, one call per step) run out of memory here."""
    forward, calls = GPT.forward, []

    def forward_out_of_memory(self, idx, targets=None):
        if torch.is_grad_enabled():
            calls.append(1)
            if len(calls) - 1 == step:
                raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return forward(self, idx, targets)

    GPT.forward = forward_out_of_memory  # in a spawned process of its own, which ends after the runs


def _two_processes(rank: int, folder: Path) -> None:
    """One of two gloo processes: the whole sharded run, then the one that runs out of memory. Whatever each
    run returns or raises goes to rank{N}.json."""
    torch.set_num_threads(1)
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2")  # what torchrun sets
    dist.init_process_group("gloo", init_method=f"file://{folder / 'store'}", rank=rank, world_size=2)
    _keep_step_10(folder, rank)
    found = {"whole": train(TrainConfig(**SHARDED), folder / "whole.csv")}
    if rank == OUT_OF_MEMORY["rank"]:
        _out_of_memory_in(OUT_OF_MEMORY["step"])
    try:
        train(
            TrainConfig(**{**SHARDED, "checkpoint_every": OUT_OF_MEMORY["checkpoint_every"]}),
            folder / "short.csv",
        )
    except (OutOfMemoryStop, StoppedElsewhere) as e:
        found["short"] = {"error": type(e).__name__, "message": str(e)}
    (folder / f"rank{rank}.json").write_text(json.dumps(found, default=str))
    # leaving is what ends the peer's wait: its collective fails as this process's connections close


@pytest.fixture(scope="module")
def two(tmp_path_factory, token_cache) -> dict:
    """The two sharded runs on two processes: each rank's results, the pieces it held, and the folder."""
    folder = tmp_path_factory.mktemp("two")
    os.environ["RR_CACHE"] = str(
        token_cache
    )  # module scope: the offline fixture's variable, set for the spawn
    mp.spawn(_two_processes, args=(folder,), nprocs=2)  # raises if a process failed
    ranks = [json.loads((folder / f"rank{r}.json").read_text()) for r in (0, 1)]
    pieces = [json.loads((folder / f"pieces{r}.json").read_text()) for r in (0, 1)]
    return {"ranks": ranks, "pieces": pieces, "folder": folder}


@pytest.fixture(scope="module")
def one(tmp_path_factory, token_cache) -> dict:
    """RUN on one process, data parallel: the reference."""
    os.environ["RR_CACHE"] = str(token_cache)
    return train(TrainConfig(**RUN), tmp_path_factory.mktemp("one") / "one.csv")


def _same_run(a: dict, b: dict, tol: float = 1e-5) -> None:
    """Two records of the run: every step's loss and the val_loss within `tol`."""
    assert [s for s, _ in a["loss_curve"]] == [s for s, _ in b["loss_curve"]] == list(range(1, 21))
    for (_, x), (_, y) in zip(a["loss_curve"], b["loss_curve"], strict=True):
        assert x == pytest.approx(y, abs=tol)
    assert a["result"]["val_loss"] == pytest.approx(b["result"]["val_loss"], abs=tol)


def test_two_sharded_processes_train_the_single_process_run(two, one):
    whole = two["ranks"][0]["whole"]
    _same_run(whole, one)  # seen: 4.8e-7 apart at most, float32 sums in another order
    other = two["ranks"][1]["whole"]["result"]  # both processes evaluated the same weights: the same, bitwise
    assert (other["val_loss"], other["ece"]) == (whole["result"]["val_loss"], whole["result"]["ece"])
    assert (whole["config"]["shard"], whole["config"]["activation_checkpointing"], whole["world_size"]) == (
        "fsdp",
        "every:2",
        2,
    )
    # each process holds half the parameters and AdamW state: exactly what the memory plan says
    shape = GPTConfig(**whole["model"])
    for rank, held in enumerate(two["pieces"]):
        plan = state_bytes(shape, world=2, shard="fsdp", rank=rank)
        assert (held["params"], held["optimizer"]) == (plan["params"], plan["optimizer"])
    alone = state_bytes(shape)
    assert sum(p["params"] for p in two["pieces"]) == alone["params"]
    assert 0.49 < two["pieces"][0]["optimizer"] / alone["optimizer"] < 0.51

    # the final weights file is an unsharded run's: same keys in order, the tied matrix stored once
    final = torch.load(checkpoint.final_path(two["folder"] / "whole.csv", *KEY), weights_only=True)["model"]
    assert list(final) == list(GPT(shape).state_dict())
    tied = [final[k].untyped_storage().data_ptr() for k in ("lm_head.weight", "transformer.wte.weight")]
    assert tied[0] == tied[1]


def test_a_checkpoint_of_two_processes_resumes_on_one(two, one, tmp_path):
    out = tmp_path / "resumed.csv"
    folder = checkpoint.sharded_path(out, *KEY)
    folder.parent.mkdir()
    shutil.copytree(two["folder"] / "step10.dcp", folder)
    assert checkpoint.saved_meta(folder).step == 10
    resumed = train(TrainConfig(**{**SHARDED, "shard": "fsdp"}), out, resume=True)  # one process, sharded
    assert resumed["resumed_at"] == [10] and resumed["world_size"] == 1 and not folder.exists()
    _same_run(resumed, one)


def test_out_of_memory_on_one_process_stops_both_with_one_message(two, one, tmp_path):
    short = [r["short"] for r in two["ranks"]]
    assert short[1]["error"] == "OutOfMemoryStop" and short[0]["error"] == "StoppedElsewhere"
    message = short[1]["message"]
    assert message.startswith("process 1 of 2 (") and "ran out of memory at step 6" in message
    assert "--micro-batches 2" in message and "step 4" in message and "intact" in message
    out = two["folder"] / "short.csv"
    kept = checkpoint.sharded_path(out, *KEY)
    assert checkpoint.saved_meta(kept).step == 4 and json.loads(record_path(kept).read_text())["rank"] == 1

    # the command it names goes on from there: here on one process, unsharded, in two micro-batches
    local = tmp_path / "short.csv"
    shutil.copytree(kept.parent, local.parent / kept.parent.name)
    resumed = train(TrainConfig(**{**RUN, "checkpoint_every": 4, "micro_batches": 2}), local, resume=True)
    assert resumed["resumed_at"] == [4] and resumed["grad_accum"] == 2
    _same_run(resumed, one)

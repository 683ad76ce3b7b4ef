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
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import typer
from conftest import rr

from rr_core.errors import StoppedElsewhere
from rr_core.ladder import get_size
from rr_core.shapes import GPTConfig
from rr_core.sweepfile.provenance import read_records, sidecar_path
from rr_model.checkpoint import sharded as sharded_checkpoint
from rr_model.checkpoint import state as checkpoint
from rr_model.config import TrainConfig
from rr_model.model import GPT
from rr_model.parallel.memory import state_bytes
from rr_model.parallel.out_of_memory import OutOfMemoryStop, record_path
from rr_model.run.trainer import train
from rr_model.sweep.slurm import TrainJob

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

        def held(tensors) -> int:  # bytes this process holds: its shards, or whole tensors
            return sum(
                t.to_local().numel() * t.element_size()
                if hasattr(t, "to_local")
                else t.numel() * t.element_size()
                for t in tensors
            )

        pieces = {
            "params": held(model.parameters()),
            "optimizer": held(t for s in optimizer.state.values() for t in s.values()),
        }
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


def _damage(folder: Path) -> Path:
    """Zeros over a page in the middle of the largest piece of a sharded checkpoint (its length unchanged)."""
    piece = max((p for p in folder.iterdir() if p.suffix == ".distcp"), key=lambda p: p.stat().st_size)
    raw = bytearray(piece.read_bytes())
    raw[len(raw) // 2 : len(raw) // 2 + 4096] = bytes(4096)
    piece.write_bytes(bytes(raw))
    return piece


def _resume_damaged(folder: Path, rank: int) -> dict:
    """Both processes resume a copy of the step-10 checkpoint with a damaged piece: what each raises."""
    out = folder / "damaged.csv"
    if rank == 0:
        shutil.copytree(folder / "step10.dcp", checkpoint.sharded_path(out, *KEY))
        _damage(checkpoint.sharded_path(out, *KEY))
    dist.barrier()
    try:
        train(TrainConfig(**SHARDED), out, resume=True)
    except (checkpoint.CheckpointError, StoppedElsewhere) as e:
        return {"error": type(e).__name__, "message": str(e)}
    return {"error": None}


def _two_processes(rank: int, folder: Path) -> None:
    """One of two gloo processes: the whole sharded run, then the one that runs out of memory. Whatever each
    run returns or raises goes to rank{N}.json."""
    torch.set_num_threads(1)
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2")  # what torchrun sets
    dist.init_process_group("gloo", init_method=f"file://{folder / 'store'}", rank=rank, world_size=2)
    _keep_step_10(folder, rank)
    found = {"whole": train(TrainConfig(**SHARDED), folder / "whole.csv")}
    found["damaged"] = _resume_damaged(folder, rank)
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


def test_a_sharded_checkpoint_is_verified_and_resumes_only_its_own_run(two, tmp_path):
    """Its pieces are checked against the SHA256SUMS written last at the save (a page of zeros inside one is
    refused naming it, before anything loads), and its rr.json keeps the run's identity (another config is
    refused naming what changed), as a .pt checkpoint's CRC-32s and identity are."""
    out = tmp_path / "damaged.csv"
    folder = checkpoint.sharded_path(out, *KEY)
    folder.parent.mkdir()
    shutil.copytree(two["folder"] / "step10.dcp", folder)
    listed = (folder / "SHA256SUMS").read_text().split()[1::2]
    assert sorted(listed) == sorted(p.name for p in folder.iterdir() if p.name != "SHA256SUMS")
    assert checkpoint.saved_meta(folder).data["sha256"] is not None
    with pytest.raises(ValueError, match="another run than this one: config.steps 20 when saved, 24 now"):
        train(TrainConfig(**{**SHARDED, "steps": 24}), out, resume=True)
    piece = _damage(folder)
    with pytest.raises(checkpoint.CheckpointError) as err:
        train(TrainConfig(**SHARDED), out, resume=True)
    assert str(err.value) == (
        f"{piece}: damaged: its sha256 is not the one SHA256SUMS records for it; {checkpoint.RESUME_TODO}"
    )
    assert checkpoint.saved_meta(folder).step == 10  # left as it was
    # on two processes: process 0 checks the pieces once and says why; process 1 stops without a line
    damaged = [r["damaged"] for r in two["ranks"]]
    assert [d["error"] for d in damaged] == ["CheckpointError", "StoppedElsewhere"]
    assert damaged[0]["message"].endswith(
        f": damaged: its sha256 is not the one SHA256SUMS records for it; {checkpoint.RESUME_TODO}"
    )


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


class Killed(BaseException):
    """Stands for SIGKILL: nothing in the trainer catches it."""


def test_checkpoints_change_kind_and_a_kill_mid_save_leaves_the_last_one_whole(one, tmp_path, monkeypatch):
    """A data-parallel checkpoint resumes sharded (one process); a sharded save killed before it is published
    leaves the previous checkpoint whole and no partial folder; a requeued job resumes from it and the run
    ends as the uninterrupted one."""
    out = tmp_path / "mixed.csv"
    pt, folder = checkpoint.checkpoint_path(out, *KEY), checkpoint.sharded_path(out, *KEY)
    save = checkpoint.save

    def save_then_die(path, state):
        save(path, state)
        raise Killed

    monkeypatch.setattr(checkpoint, "save", save_then_die)
    with pytest.raises(Killed):
        train(TrainConfig(**RUN, checkpoint_every=5), out)  # data parallel: RUN.pt at step 5
    monkeypatch.undo()
    dcp_save = sharded_checkpoint.dcp.save
    sharded = {**RUN, "shard": "fsdp", "checkpoint_every": 5}
    saves = []

    def count_then_die(state, checkpoint_id, **kw):
        dcp_save(state, checkpoint_id=checkpoint_id, **kw)
        saves.append(checkpoint_id)
        if len(saves) == 2:  # the save of step 15, its pieces written, not yet published
            raise Killed

    monkeypatch.setattr(sharded_checkpoint.dcp, "save", count_then_die)
    with pytest.raises(Killed):
        train(TrainConfig(**sharded), out, resume=True)
    monkeypatch.undo()
    assert not pt.exists() and checkpoint.saved_meta(folder).step == 10  # the .pt gave way to step 10
    beside = sorted(p.name for p in folder.parent.iterdir())
    assert beside == sorted([folder.name, checkpoint.claim_path(out, *KEY).name])  # nothing half-written
    monkeypatch.setenv("SUBMITIT_EXECUTOR", "local")  # as a requeued Slurm job resumes it
    resumed = TrainJob(TrainConfig(**sharded), out)()
    assert resumed["resumed_at"] == [5, 10] and not folder.exists()
    _same_run(resumed, one)


def test_the_stop_names_the_exact_command_and_a_peer_says_nothing(monkeypatch, tmp_path, capsys):
    from cli.errors import known_errors
    from rr_model.run.entry import resume_command

    argv = ["rr", "train", "--size", "7B", "--shard", "fsdp", "--micro-batches=2", "--out", "a b.csv"]
    monkeypatch.setattr("sys.argv", argv)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert resume_command(4) == "rr train --size 7B --shard fsdp --out 'a b.csv' --resume --micro-batches 4"
    monkeypatch.setenv("WORLD_SIZE", "16")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "8")
    assert resume_command(2).startswith(
        "torchrun --nnodes 2 (and the same rendezvous options) --nproc_per_node 8 -m cli.main train "
    )

    facts = {
        "rank": 3,
        "world": 16,
        "host": "node2",
        "device": "cuda:3",
        "step": 120,
        "micro_batches": 2,
        "sequences": 2,
        "checkpoint": "x.dcp",
        "checkpoint_step": 100,
        "error": "CUDA out of memory",
    }
    stop = OutOfMemoryStop(facts).resume_with("rr train --resume --micro-batches 4")
    assert str(stop) == (
        "process 3 of 16 (node2, cuda:3) ran out of memory at step 120 with 2 micro-batch(es) of 2 sequence(s) "
        "per process; every process of the run stopped and its last checkpoint (x.dcp, step 100) is intact: "
        "resume with rr train --resume --micro-batches 4"
    )
    last = OutOfMemoryStop({**facts, "sequences": 1}).resume_with("never shown")
    assert "one sequence already" in str(last) and last.micro_batches is None
    with pytest.raises(typer.Exit) as stopped, known_errors():
        raise StoppedElsewhere("another process said why")
    assert stopped.value.exit_code == 2 and capsys.readouterr().err == ""  # one line in all: the other's


@pytest.mark.parametrize(
    ("option", "says"),
    [
        (["--shard", "zero3"], "'zero3' is not one of 'none', 'fsdp'"),  # the parser's choices
        (["--micro-batches", "0"], "micro_batches 0 must be >= 1"),
        (["--activation-checkpointing", "every:0"], "must be none, full or every:N with N >= 1"),
        (["--micro-batches", "3"], "--micro-batches 3 does not split each process's 8 sequences evenly"),
    ],
)
def test_bad_memory_options_are_one_clear_error(tmp_path, option, says):
    result = rr(
        "train",
        "--size",
        "tiny",
        "--corpus",
        "synthetic",
        "--steps",
        "1",
        *option,
        "--out",
        tmp_path / "x.csv",
        env={"COLUMNS": "300"},  # the parser's refusal on one line
    )
    assert (
        result.exit_code == 2 and says in " ".join(result.stderr.split()) and "Traceback" not in result.stderr
    )


def test_a_run_resumes_from_its_latest_checkpoint_of_either_kind(tmp_path):
    out = tmp_path / "x.csv"
    pt, folder = checkpoint.checkpoint_path(out, *KEY), checkpoint.sharded_path(out, *KEY)
    assert checkpoint.current(out, *KEY) is None and checkpoint.saved_step(folder) == 0
    folder.mkdir(parents=True)
    meta = dict.fromkeys(checkpoint.META_KEYS)
    (folder / checkpoint.META).write_text(json.dumps({**meta, "step": 7}))
    checkpoint.save(pt, {"step": 5})
    assert checkpoint.current(out, *KEY) == folder and checkpoint.saved_step(folder) == 7  # a save cut short
    checkpoint.save(pt, {"step": 9})
    assert checkpoint.current(out, *KEY) == pt
    (folder / checkpoint.META).write_text("{")
    assert checkpoint.saved_step(folder) is None
    with pytest.raises(checkpoint.CheckpointError, match="not a readable sharded checkpoint"):
        checkpoint.saved_meta(folder)


# ------------------------------------------------------------------------------------------- slow: the rest

SLOW_RUNS = {  # name: (config, folder of a checkpoint to resume from, or None)
    "plain": {**SHARDED, "activation_checkpointing": "none"},
    "full": {**SHARDED, "activation_checkpointing": "full"},
    "rezero": {**SHARDED, "variant": "rezero"},  # 0-d alphas: whole on both processes, averaged by hand
    "from_one": {**SHARDED, "checkpoint_every": 5},  # resumes the step-10 checkpoint one process wrote
}


def _two_processes_more(rank: int, folder: Path) -> None:
    torch.set_num_threads(1)
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2")
    dist.init_process_group("gloo", init_method=f"file://{folder / 'store'}", rank=rank, world_size=2)
    found = {
        name: train(TrainConfig(**cfg), folder / f"{name}.csv", resume=True)
        for name, cfg in SLOW_RUNS.items()
    }
    (folder / f"rank{rank}.json").write_text(json.dumps(found, default=str))


@pytest.mark.slow
def test_sharded_runs_without_or_with_full_checkpointing_rezero_and_from_one_process(
    one, tmp_path, monkeypatch
):
    from_one = tmp_path / "from_one.csv"
    save = sharded_checkpoint.save

    def save_then_die(path, model, optimizer, saved):
        save(path, model, optimizer, saved)
        if saved.step == 10:
            raise Killed

    monkeypatch.setattr(sharded_checkpoint, "save", save_then_die)
    with pytest.raises(Killed):
        train(TrainConfig(**SLOW_RUNS["from_one"]), from_one)  # one process, sharded, stopped at step 10
    monkeypatch.undo()
    rezero = train(TrainConfig(**{**RUN, "variant": "rezero"}), tmp_path / "rezero_one.csv")
    mp.spawn(_two_processes_more, args=(tmp_path,), nprocs=2)
    found = json.loads((tmp_path / "rank0.json").read_text())
    for name in ("plain", "full", "from_one"):
        _same_run(found[name], one)
    assert found["from_one"]["resumed_at"] == [10] and found["from_one"]["world_size"] == 2
    _same_run(found["rezero"], rezero)


@pytest.mark.slow
def test_torchrun_trains_a_sharded_run_from_the_command_line(one, tmp_path):
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    args = ["-m", "cli.main", "train", "--size", "tiny", "--variant", "standard", "--corpus", "synthetic",
            "--steps", "20", "--shard", "fsdp", "--out", tmp_path / "cli.csv"]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([*launch, *map(str, args)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    (record,) = read_records(sidecar_path(tmp_path / "cli.csv"))
    assert (
        record["world_size"] == 2
        and record["config"]["shard"] == "fsdp"
        and done.stdout.count("rr train:") == 1
    )
    alone = train(TrainConfig("tiny", "standard", data="synthetic", steps=20), tmp_path / "alone.csv")
    assert record["result"]["val_loss"] == pytest.approx(alone["result"]["val_loss"], abs=1e-5)

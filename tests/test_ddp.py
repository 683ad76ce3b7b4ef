"""Data-parallel training under torchrun: 2 CPU processes (gloo) train the same run as 1 process.

Every rank draws the same global batch and trains on its half; gradients are averaged, so the result
differs from the single-process run only by floating-point summation order. When one process runs out of
memory, every process goes on with the same, smaller micro-batches, and the run stays the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from conftest import TINY_RUN

from rr_core.ladder import get_size
from rr_core.sweepfile import provenance
from rr_core.sweepfile.dataset import load_sweep
from rr_core.sweepfile.metrics_log import load_evals
from rr_model.checkpoint.paths import final_path
from rr_model.config import TrainConfig
from rr_model.data.token_cache import load_tokens
from rr_model.data.windows import held_out_windows, windows_at
from rr_model.model import GPT
from rr_model.run.trainer import train, train_runs
from rr_model.uses.inference import load_trained

pytestmark = pytest.mark.usefixtures("offline")


@pytest.mark.slow  # the default suite compares two processes with one in the out-of-memory test below
def test_two_processes_give_the_single_process_val_loss(tmp_path, tiny_run):
    out = tmp_path / "two.csv"
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    args = ["-m", "cli.main", "train", "--size", "tiny", "--variant", "standard", "--corpus", "synthetic"]
    args += ["--steps", str(TINY_RUN["steps"]), "--checkpoint-every", str(TINY_RUN["checkpoint_every"])]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    args += ["--eval-every", "6", "--eval-windows", "12"]  # readings change no number; two batches, one each
    proc = subprocess.run([*launch, *args, "--out", str(out)], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]

    (two,) = provenance.read_records(provenance.sidecar_path(out))  # rank 0 alone writes
    assert two["world_size"] == 2 and len(load_sweep(out)) == 1
    assert two["result"]["val_loss"] == pytest.approx(tiny_run["result"]["val_loss"], abs=1e-5)
    assert two["result"]["ece"] == pytest.approx(tiny_run["result"]["ece"], abs=1e-5)
    assert proc.stdout.count("rr train:") == 1  # one process reports
    # the last reading: each process scored one of the two batches, their sums added (8 and 4 windows)
    evals = load_evals([out])
    assert evals["step"].tolist() == [6, 12]
    model = load_trained(final_path(out, "tiny", "standard", 0)).model
    stream = load_tokens("synthetic", cache_dir=os.environ["RR_CACHE"]).val
    block = get_size("tiny").recipe.block_size
    starts = held_out_windows(stream, 12, block)
    with torch.no_grad():
        x, y = windows_at(stream, starts, block)
        _, loss = model(torch.from_numpy(x), torch.from_numpy(y))
    assert evals["val_loss"].iloc[-1] == pytest.approx(loss.item(), rel=1e-5)


# ----------------------------------------------------------------------------- out-of-memory under DDP

# A cheap off-recipe tiny run (a fresh file takes it): 8 steps, 4 validation batches instead of 80.
OOM_RUN = {"size": "tiny", "variant": "standard", "data": "synthetic", "steps": 8, "checkpoint_every": 0}
# Which training forward call (0-based, counted per process) runs out of memory, and where. Steps 0-1 are
# one call each; rank 1's call 2 (step 2) runs out in its forward, so both processes redo step 2 in two
# micro-batches (calls 3-4; rank 0's call 2 is dropped); steps 3-4 are calls 5-8; rank 0's call 9 (step 5)
# runs out in the middle of its backward, so both go on with four micro-batches of one sequence.
RUN_OUT = {1: (2, "forward"), 0: (9, "backward")}


def _out_of_memory_at(call: int, where: str, seen: list[int]) -> None:
    """Make GPT.forward's `call`-th training call run out of memory in its forward or in its backward (at a
    middle parameter's gradient, some gradients already summed); `seen` gets each call's batch size."""
    forward = GPT.forward

    def forward_out_of_memory(self, idx, targets=None):
        if not torch.is_grad_enabled():
            return forward(self, idx, targets)  # evaluation
        seen.append(idx.shape[0])
        if len(seen) - 1 == call and where == "forward":
            raise torch.OutOfMemoryError("CUDA out of memory (simulated, forward)")
        if len(seen) - 1 == call:
            middle = list(self.parameters())[len(list(self.parameters())) // 2]

            def backward_out_of_memory(grad):
                hook.remove()
                raise torch.OutOfMemoryError("CUDA out of memory (simulated, backward)")

            hook = middle.register_hook(backward_out_of_memory)
        return forward(self, idx, targets)

    GPT.forward = forward_out_of_memory  # in a spawned process of its own, which ends after the runs


def _two_runs(rank: int, folder: Path) -> None:
    """One of two gloo processes: the run without, then with, running out of memory (RUN_OUT)."""
    torch.set_num_threads(1)
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2")  # what torchrun sets
    dist.init_process_group("gloo", init_method=f"file://{folder / 'store'}", rank=rank, world_size=2)
    cfg = TrainConfig(**OOM_RUN, recipe=replace(get_size("tiny").recipe, eval_batches=4))
    plain = train(cfg, folder / "plain.csv")
    seen: list[int] = []
    _out_of_memory_at(*RUN_OUT[rank], seen)
    (short,) = train_runs([cfg], folder / "short.csv")  # leaves the process group
    result = {"plain": plain, "short": short, "seen": seen}
    (folder / f"rank{rank}.json").write_text(json.dumps(result, default=str))


@pytest.mark.slow
def test_a_process_out_of_memory_takes_every_process_to_more_micro_batches(tmp_path, capfd):
    mp.spawn(_two_runs, args=(tmp_path,), nprocs=2)  # raises if a process failed
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]

    # in step: both redo steps 2 and 5 with the same micro-batches (rank 1 ends step 5's first attempt,
    # unaware that rank 0 ran out in it, hence its one more call of 2), and end with the same accumulation
    assert ranks[0]["seen"] == [4] * 3 + [2] * 7 + [1] * 4 * 3
    assert ranks[1]["seen"] == [4] * 3 + [2] * 8 + [1] * 4 * 3
    assert [r["plain"]["grad_accum"] for r in ranks] == [1, 1]
    assert [r["short"]["grad_accum"] for r in ranks] == [4, 4]
    err = capfd.readouterr().err
    assert err.count("CUDA out of memory at step 2 on 1 of 2 processes") == 1  # rank 0 alone logs
    assert err.count("CUDA out of memory at step 5 on 1 of 2 processes") == 1

    # the same run: accumulation changes only the order of float32 sums. Seen: at most 4.8e-7 apart (one
    # float32 ulp at a loss of 4-8) on the training losses, 1.2e-7 on val_loss; 1e-5 as for one process
    plain, short = ranks[0]["plain"], ranks[0]["short"]
    assert [s for s, _ in short["loss_curve"]] == [s for s, _ in plain["loss_curve"]]
    for (_, a), (_, b) in zip(short["loss_curve"], plain["loss_curve"], strict=True):
        assert a == pytest.approx(b, abs=1e-5)
    assert short["result"]["val_loss"] == pytest.approx(plain["result"]["val_loss"], abs=1e-5)
    # and the two processes train the run one process trains (DDP's arithmetic: the gradient averaged)
    one = train(
        TrainConfig(**OOM_RUN, recipe=replace(get_size("tiny").recipe, eval_batches=4)), tmp_path / "one.csv"
    )
    for (_, a), (_, b) in zip(plain["loss_curve"], one["loss_curve"], strict=True):
        assert a == pytest.approx(b, abs=1e-5)
    assert plain["result"]["val_loss"] == pytest.approx(one["result"]["val_loss"], abs=1e-5)
    other = ranks[1]["short"]  # the processes hold the same weights: rank 1 evaluated the same, bitwise
    assert (other["result"]["val_loss"], other["result"]["ece"]) == (
        short["result"]["val_loss"],
        short["result"]["ece"],
    )

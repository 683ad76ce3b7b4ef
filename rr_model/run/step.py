"""One optimiser step of the published recipe, and what it runs on: the learning-rate schedule (the published
cosine, or warmup-stable-decay), the device,
the process group torchrun describes, and the step itself (`accumulate` then `apply_gradients`).

Kept apart from `rr_model.run.trainer` (one run from setup to its row) because these pieces are the recipe's
arithmetic, tested one by one against the published loop, while the trainer is the run's bookkeeping.
"""

from __future__ import annotations

import math
import os
import sys
from datetime import datetime, timedelta, timezone

import numpy as np
import torch
import torch.distributed as dist

from rr_core.errors import InputError
from rr_core.ladder import Recipe
from rr_model.config import decay_start

__all__ = [
    "lr_factor",
    "wsd_factor",
    "COOLDOWNS",
    "SCHEDULES",
    "lr_at",
    "train_step",
    "accumulate",
    "apply_gradients",
    "setup_device",
    "join_process_group",
    "COLLECTIVE_TIMEOUT",
]


# ------------------------------------------------------------------------------------------- schedule


def lr_factor(step: int, steps: int, recipe: Recipe) -> float:
    """The published schedule's multiplier of the peak lr at optimiser step `step` (0-based).

    Notes
    -----
    (step + 1) / warmup for step < warmup, then min_frac + (1 - min_frac) * 0.5 * (1 + cos(pi * p)) with
    p = min(1, (step - warmup) / max(1, steps - warmup)): torch's LambdaLR, read before the step.
    """
    if step < recipe.warmup_steps:
        return (step + 1) / recipe.warmup_steps
    progress = min(1.0, (step - recipe.warmup_steps) / max(1, steps - recipe.warmup_steps))
    return recipe.min_lr_frac + (1 - recipe.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * progress))


def wsd_factor(step: int, steps: int, recipe: Recipe, decay_frac: float, decay_shape: str) -> float:
    """The warmup-stable-decay schedule's multiplier of the peak lr at optimiser step `step` (0-based):
    the recipe's warmup, the peak held, then a cooldown to the recipe's floor over the last `decay_frac` of
    the steps (Hägele et al. 2024, arXiv 2405.18392; MiniCPM, Hu et al. 2024, arXiv 2404.06395).

    Notes
    -----
    w = (step + 1) / warmup below warmup, else 1. From s = `rr_model.config.decay_start` (steps minus
    max(1, round(decay_frac x steps))) on, the factor is min(w, m + (1 - m) c(p)) with m = min_lr_frac,
    p = (step - s) / (steps - s) and c(p) = 1 - p (linear) or 1 - sqrt(p) (1-sqrt); read before the step,
    as the cosine's, so the floor is reached one step after the last. Up to s the factor depends on `step`
    alone, not on `steps`: a run's stable phase is every shorter run's, which is what lets a cooldown
    branch from it equal a run of its length (`rr_model.run.trainer`).
    """
    warm = (step + 1) / recipe.warmup_steps if step < recipe.warmup_steps else 1.0
    start = decay_start(steps, decay_frac)
    if step < start:
        return warm
    p = (step - start) / (steps - start)
    return min(warm, recipe.min_lr_frac + (1 - recipe.min_lr_frac) * COOLDOWNS[decay_shape](p))


# The cooldown's shape c(p), from 1 at its first step (p = 0) towards 0 (p = 1): Hägele et al.'s two.
COOLDOWNS = {"linear": lambda p: 1 - p, "1-sqrt": lambda p: 1 - math.sqrt(p)}
# Each schedule's multiplier of the peak lr: (step, steps, recipe, decay_frac, decay_shape) -> factor.
SCHEDULES = {
    "cosine": lambda step, steps, recipe, decay_frac, decay_shape: lr_factor(step, steps, recipe),
    "wsd": wsd_factor,
}


def lr_at(
    step: int,
    steps: int,
    recipe: Recipe,
    schedule: str = "cosine",
    decay_frac: float = 0.2,
    decay_shape: str = "linear",
) -> float:
    """Learning rate of optimiser step `step`: the peak times the schedule's factor (`TrainConfig.schedule`:
    the published cosine, `lr_factor`, as LambdaLR computes it; or `wsd_factor`)."""
    return recipe.lr * SCHEDULES[schedule](step, steps, recipe, decay_frac, decay_shape)


# ------------------------------------------------------------------------------------------ machinery


def setup_device(choice: str, local_rank: int = 0) -> torch.device:
    """The device a run uses: `choice`, or for "auto" cuda, then mps, then cpu."""
    available = {"cuda": torch.cuda.is_available(), "mps": torch.backends.mps.is_available(), "cpu": True}
    if not available.get(choice, True):
        raise InputError(f"--device {choice}: not available on this machine (torch {torch.__version__})")
    if choice == "cuda" or (choice == "auto" and available["cuda"]):
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    if choice == "mps" or (choice == "auto" and available["mps"]):
        return torch.device("mps")
    return torch.device("cpu")


# How long a process waits in a collective for the others before it gives up (the process group's
# timeout; torch's defaults are 10 minutes for NCCL and 30 for gloo). Longer than the longest wait of a
# healthy run (process 0 writing a 7B model's final weights, ~28 GB, while the others wait to leave), so it
# bounds only what has gone wrong: a process stuck, or gone without closing its connections.
COLLECTIVE_TIMEOUT = timedelta(minutes=20)


def join_process_group(device: torch.device, alone: bool = False) -> tuple[int, int]:
    """(rank, world size), joining the process group torchrun describes in the environment.

    `alone`: make a group of this one process where torchrun describes none (a sharded run on one GPU
    needs a group, as its pieces are DTensors); `leave_process_group` ends it.
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    backend = "nccl" if device.type == "cuda" else "gloo"
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend, timeout=COLLECTIVE_TIMEOUT)
    elif world == 1 and alone and not dist.is_initialized():
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)
    return int(os.environ.get("RANK", "0")), world


def to_device(t: np.ndarray, device: torch.device) -> torch.Tensor:
    t = torch.from_numpy(t)
    if device.type == "cuda":  # pinned host memory lets the copy overlap with compute
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device)


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def accumulate(model, x, y, accum: int, autocast) -> torch.Tensor:
    """Forward and backward of the batch (x, y) in `accum` micro-batches, the gradients summed into the
    parameters' `.grad`: the batch's mean loss, unsynced (on the device). Under data parallel no collective
    runs in here; a sharded model gathers its parameters and reduce-scatters its gradients in here, each
    micro-batch (`rr_model.parallel.sharding`)."""
    total = torch.zeros((), device=x.device)
    for xm, ym in zip(x.chunk(accum), y.chunk(accum), strict=True):
        with autocast:
            _, loss = model(xm, ym)
        (loss / accum).backward()
        total += loss.detach() / accum
    return total


def apply_gradients(model, optimizer, clip: float, world: int = 1) -> torch.Tensor:
    """Average the gradients over the `world` processes (if more than one), clip them and step: the
    gradient norm before clipping, unsynced (on the device).

    Notes
    -----
    Each gradient is divided by `world`, then summed over the processes in place (one asynchronous
    all-reduce per parameter, all waited for before clipping): DDP's arithmetic, without its copy of the
    gradients in buckets. A sharded parameter's gradient (a DTensor) was averaged by its reduce-scatter
    already; only the parameters kept whole (ReZero's scalars) are averaged here, in module order (the same
    on every process). The norm of sharded gradients is the whole model's (torch sums the pieces' squares
    over the processes), a plain tensor here as well.
    """
    grads = [p.grad for p in model.parameters() if p.grad is not None and not _sharded(p.grad)]
    if world > 1 and grads:
        torch._foreach_div_(grads, world)  # one fused kernel launch per device and dtype, as optimisers do
        for work in [dist.all_reduce(g, async_op=True) for g in grads]:
            work.wait()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return norm.full_tensor() if _sharded(norm) else norm


def _sharded(t: torch.Tensor) -> bool:
    """Whether `t` is a DTensor (a sharded parameter's piece, or a value computed from pieces). DTensors
    exist only once `rr_model.parallel.sharding` has loaded torch.distributed.tensor (~1.5 s), which a data-parallel
    run never imports."""
    tensor = sys.modules.get("torch.distributed.tensor")
    return tensor is not None and isinstance(t, tensor.DTensor)


def train_step(
    model, optimizer, x, y, accum: int, clip: float, autocast
) -> tuple[torch.Tensor, torch.Tensor]:
    """One single-process optimiser step on the batch (x, y), split in `accum` micro-batches: its mean loss
    and the gradient norm before clipping, both unsynced (on the device). The trainer runs the same two
    calls, `accumulate` then `apply_gradients`, with its out-of-memory check between them."""
    return accumulate(model, x, y, accum, autocast), apply_gradients(model, optimizer, clip)

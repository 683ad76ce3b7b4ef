"""What one run holds while it trains (`Run`: built by the trainer's setup, read by its other rooms) and what a
checkpoint restores besides the model, the optimiser and the random streams (`RunState`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rr_core.shapes import GPTConfig
from rr_model.config import TrainConfig
from rr_model.data.token_cache import Tokens
from rr_model.metrics import Metrics
from rr_model.model import GPT
from rr_model.run.gate_watch import GateWatch
from rr_model.run.output_file import OutputPlan
from rr_model.run.progress import Progress
from rr_model.run.step import utc_now

__all__ = ["RunState", "Run"]


@dataclass
class RunState:
    """What a checkpoint restores besides the model, the optimiser and the random streams."""

    step: int = 0  # optimiser steps done
    seconds: float = 0.0  # wall-clock of training (and, once done, the final evaluation) so far
    curve: list[list[float]] = field(default_factory=list)  # [step, mean training loss of the interval]
    started: str = field(default_factory=utc_now)
    resumed: list[int] = field(default_factory=list)  # steps at which the run was resumed
    wandb_id: str | None = None  # the W&B run a resumed run continues (rr_model.metrics)
    branched_at: int | None = None  # a cooldown branch: the step of its run's state it continues from


@dataclass
class Run:
    """Everything one run holds while it trains: built by `_setup`, read by the other rooms."""

    cfg: TrainConfig
    out: Path
    device: torch.device
    rank: int
    world: int
    tokens: Tokens
    mcfg: GPTConfig
    model: GPT
    optimizer: torch.optim.Optimizer
    data_rng: np.random.RandomState
    ckpt: Path
    plan: OutputPlan  # the output file's one reading, which takes in the row this run appends
    state: RunState = field(default_factory=RunState)
    accum: int = 1  # doubled on CUDA out-of-memory: same batch, same result, smaller micro-batches
    net: torch.nn.Module | None = None  # as trained: compiled or not (not DDP: `retry.step_with_retry`)
    flags: Any = None  # the process group of the out-of-memory flag; None: the default one
    progress: Progress | None = None
    metrics: Metrics | None = None  # the per-step log (JSONL, and TensorBoard / W&B when asked)
    gates: GateWatch | None = None  # each gated sublayer's r, summed on the device between log points
    env: dict[str, Any] = field(default_factory=dict)  # software and hardware (rr_core.sweepfile.provenance)
    queued: int = 0  # steps of the runs to train after this one: the progress display's total ETA
    threads: str = (
        ""  # on CPU, the threads chosen and why (rr_model.run.numerics.cpu_threads), for the start line
    )
    at: int = 0  # the step being trained (after the loop: the final evaluation's)
    own_group: bool = False  # a process group of this one process, made for a sharded run and ended with it
    # the cooldown branches of the run by the step where each starts (`save_branches` saves their state there)
    branch_starts: dict[int, list[TrainConfig]] = field(default_factory=dict)
    held_out: np.ndarray | None = None  # the starts of the held-out windows of --eval-every; None without it

    @property
    def sharded(self) -> bool:
        return self.cfg.shard == "fsdp"

    @property
    def title(self) -> str:
        lr = f" lr {self.cfg.recipe.lr:g}" if self.cfg.role else ""  # a tuning run's rate is part of its key
        return f"{self.cfg.size} {self.cfg.variant} seed {self.cfg.seed}{lr}"

    @property
    def autocast(self) -> contextlib.AbstractContextManager:
        if self.cfg.precision == "bf16":
            return torch.autocast(self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

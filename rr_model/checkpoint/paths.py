"""Where a run's files live beside its dataset: its checkpoint (a file, or a sharded run's folder), its final
weights and the lock it holds while training. Paths only, torch-free, so a dry run (`rr_model.run.planning`) asks
what the trainer asks of them (is there a checkpoint to resume?) without loading torch; what the files hold
is `rr_model.checkpoint.state`'s.
"""

from __future__ import annotations

import os
from pathlib import Path

from rr_core.sweepfile.schema import run_stem

__all__ = ["checkpoint_path", "sharded_path", "final_path", "claim_path", "found_checkpoints"]


def checkpoint_path(
    out: str | os.PathLike,
    size: str,
    variant: str,
    seed: int,
    lr: float | None = None,
    steps: int | None = None,
) -> Path:
    """Where the checkpoint of one run lives: a folder beside the dataset, one file per run (a tuning run's
    name carries its lr, one of several budgets its steps: `rr_core.sweepfile.schema.run_stem`)."""
    out = Path(out)
    return out.parent / f"{out.stem}.checkpoints" / f"{run_stem(size, variant, seed, lr, steps)}.pt"


def sharded_path(out: str | os.PathLike, *key, **named) -> Path:
    """Where the checkpoint of a sharded run lives: a folder beside `checkpoint_path`'s file,
    ``SIZE-VARIANT-seedS.dcp``. The run is named as `checkpoint_path` names it (its one signature)."""
    return checkpoint_path(out, *key, **named).with_suffix(".dcp")


def final_path(out: str | os.PathLike, *key, **named) -> Path:
    """Where a finished run's final weights live: beside its checkpoint, ``SIZE-VARIANT-seedS.final.pt``."""
    return checkpoint_path(out, *key, **named).with_suffix(".final.pt")


def claim_path(out: str | os.PathLike, *key, **named) -> Path:
    """The lock a trainer holds while it makes a run (`rr_core.files.locks.claim`): ``SIZE-VARIANT-seedS.lock``
    beside its checkpoint, so two sweeps or two `rr train` of one dataset never train one run twice."""
    return checkpoint_path(out, *key, **named).with_suffix(".lock")


def found_checkpoints(out: str | os.PathLike, *key, **named) -> list[Path]:
    """The checkpoints of the run `key` (size, variant, seed[, lr], or by name with steps: `TrainConfig.stem`)
    that exist: its file, its sharded folder, or both (a save interrupted between writing one and removing
    the other; `checkpoint.current` picks)."""
    paths = (checkpoint_path(out, *key, **named), sharded_path(out, *key, **named))
    return [p for p in paths if p.exists()]

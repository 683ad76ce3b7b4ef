"""Training checkpoints: written atomically, read back with `torch.load(weights_only=True)`.

A checkpoint holds only tensors and plain Python values (the numpy data RNG state is a dict of ints), so
loading one never unpickles arbitrary objects. Writing goes to a temporary file in the same directory,
which is fsynced and then renamed over the old checkpoint: a kill at any moment leaves either the previous
checkpoint or the new one, never a torn file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from rr_model.files import atomic_write

__all__ = ["checkpoint_path", "save", "load"]


def checkpoint_path(out: str | os.PathLike, size: str, variant: str, seed: int) -> Path:
    """Where the checkpoint of one run lives: a folder beside the dataset, one file per run."""
    out = Path(out)
    return out.parent / f"{out.stem}.checkpoints" / f"{size}-{variant}-seed{seed}.pt"


def save(path: str | os.PathLike, state: dict[str, Any]) -> None:
    """Write `state` to `path` atomically (`rr_model.files.atomic_write`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda f: torch.save(state, f))


def load(path: str | os.PathLike) -> dict[str, Any]:
    """Read a checkpoint onto the CPU, refusing anything but tensors and plain values."""
    return torch.load(path, map_location="cpu", weights_only=True)

"""Training checkpoints: written atomically, read back with `torch.load(weights_only=True)`.

A checkpoint holds only tensors and plain Python values (the numpy data RNG state is a dict of ints), so
loading one never unpickles arbitrary objects. Writing goes to a temporary file in the same directory,
which is fsynced and then renamed over the old checkpoint: a kill at any moment leaves either the previous
checkpoint or the new one, never a torn file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import torch

__all__ = ["checkpoint_path", "save", "load"]


def checkpoint_path(out: str | os.PathLike, size: str, variant: str, seed: int) -> Path:
    """Where the checkpoint of one run lives: a folder beside the dataset, one file per run."""
    out = Path(out)
    return out.parent / f"{out.stem}.checkpoints" / f"{size}-{variant}-seed{seed}.pt"


def save(path: str | os.PathLike, state: dict[str, Any]) -> None:
    """Write `state` to `path` atomically (temporary file, fsync, rename, fsync of the folder)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)  # make the rename itself durable
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def load(path: str | os.PathLike) -> dict[str, Any]:
    """Read a checkpoint onto the CPU, refusing anything but tensors and plain values."""
    return torch.load(path, map_location="cpu", weights_only=True)

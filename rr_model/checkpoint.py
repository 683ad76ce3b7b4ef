"""Training checkpoints: written atomically, read back with `torch.load(weights_only=True)`.

A checkpoint holds only tensors and plain Python values (the data-order RandomState is a tuple of a
string, an array and numbers), so loading one never unpickles arbitrary objects; a file that is not such
a checkpoint (corrupt, truncated, foreign, or carrying code) is refused with a `CheckpointError`. Writing goes to a temporary file in the same directory,
which is fsynced and then renamed over the old checkpoint: a kill at any moment leaves either the previous
checkpoint or the new one, never a torn file.

A finished run keeps its final weights beside: `final_path` (``SIZE-VARIANT-seedS.final.pt``), the model's
state dict with the run's config, model shape, data and provenance record, and no optimiser (a third of a
resumable checkpoint's size, which the run held on disk anyway until it ended). `load_weights` reads
either kind, or the checkpoint folder of a dataset when it holds one run.
"""

from __future__ import annotations

import os
import pickle
import zipfile
from pathlib import Path
from typing import Any, BinaryIO

import torch

from rr_core.errors import RRError
from rr_core.files import atomic_write

__all__ = [
    "CheckpointError",
    "refused",
    "checkpoint_path",
    "final_path",
    "save",
    "load",
    "load_weights",
]

# What rr_model.trainer writes; a file without them is not one of its checkpoints.
KEYS = frozenset({"step", "config", "model", "optimizer", "torch_rng", "cuda_rng", "data_rng", "state"})
# What a finished run keeps (`final_path`): the weights and what rebuilds and describes them.
FINAL_KEYS = frozenset({"step", "config", "model_config", "model", "data", "record"})


class CheckpointError(RRError):
    """A checkpoint file that cannot be resumed from: corrupt, truncated, or not written by rr's trainer."""


def refused(path: str | os.PathLike, what: str, error: BaseException) -> CheckpointError:
    """The error for a checkpoint that cannot be resumed from: `what` is wrong, and torch's first line."""
    why = (str(error).strip().splitlines() or [""])[0]
    return CheckpointError(f"{path}: {what} ({type(error).__name__}: {why}); delete it to start the run over")


def checkpoint_path(out: str | os.PathLike, size: str, variant: str, seed: int) -> Path:
    """Where the checkpoint of one run lives: a folder beside the dataset, one file per run."""
    out = Path(out)
    return out.parent / f"{out.stem}.checkpoints" / f"{size}-{variant}-seed{seed}.pt"


class _Writes:
    """A file that remembers the OSError of a failed write: torch's zip writer reports one as its own
    RuntimeError ("unexpected pos"), which would hide the reason (a full disk) behind a traceback."""

    def __init__(self, f: BinaryIO):
        self.f, self.error = f, None

    def write(self, data: bytes) -> int:
        try:
            return self.f.write(data)
        except OSError as e:
            self.error = e
            raise

    def flush(self) -> None:
        self.f.flush()


def final_path(out: str | os.PathLike, size: str, variant: str, seed: int) -> Path:
    """Where a finished run's final weights live: beside its checkpoint, ``SIZE-VARIANT-seedS.final.pt``."""
    return checkpoint_path(out, size, variant, seed).with_suffix(".final.pt")


def save(path: str | os.PathLike, state: dict[str, Any]) -> None:
    """Write `state` to `path` atomically (`rr_core.files.atomic_write`).

    A write that fails (a full disk, a file-size limit) leaves the previous checkpoint whole and raises the
    OSError, naming `path`.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    def write(f: BinaryIO) -> None:
        writes = _Writes(f)
        try:
            torch.save(state, writes)
        except RuntimeError:
            if writes.error is None:
                raise
            raise writes.error from None

    atomic_write(path, write)


def load(path: str | os.PathLike) -> dict[str, Any]:
    """Read a checkpoint of rr's trainer onto the CPU, refusing anything but tensors and plain values.

    Raises
    ------
    CheckpointError
        The file does not load as one (torch's reader fails, it holds objects other than tensors and
        plain values, or it lacks the trainer's keys).
    """
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, zipfile.BadZipFile) as e:
        raise refused(path, "not a readable checkpoint", e) from None
    if not isinstance(state, dict) or not KEYS <= state.keys():
        raise CheckpointError(
            f"{path}: not a checkpoint of rr's trainer (its keys differ); delete it to start over"
        )
    return state


def _one_run(folder: Path) -> Path:
    """The weights file of the one run a checkpoint folder holds (final weights before a checkpoint)."""
    for pattern in ("*.final.pt", "*.pt"):
        found = sorted(folder.glob(pattern))
        if len(found) == 1:
            return found[0]
        if found:
            names = ", ".join(p.name for p in found)
            raise CheckpointError(
                f"{folder} holds the weights of {len(found)} runs ({names}): name one of them"
            )
    raise CheckpointError(f"{folder}: no weights in it (no *.final.pt or *.pt file)")


def load_weights(path: str | os.PathLike) -> dict[str, Any]:
    """The weights of a run and what describes them, from a final-weights file, a checkpoint or a folder.

    Parameters
    ----------
    path
        A finished run's ``.final.pt`` (`final_path`), a resumable checkpoint (`checkpoint_path`), or a
        checkpoint folder ``NAME.checkpoints/`` holding one run.

    Returns
    -------
    dict with "path" (the file read), "step", "config" (the run's result config), "model" (the state
    dict), and "model_config", "data" and "record" (the provenance record) where the file has them
    (final weights do; a checkpoint of an unfinished run has None there).
    """
    path = Path(path)
    if path.is_dir():
        path = _one_run(path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, zipfile.BadZipFile) as e:
        why = (str(e).strip().splitlines() or [""])[0]
        raise CheckpointError(
            f"{path}: not readable weights of rr's trainer ({type(e).__name__}: {why})"
        ) from None
    if not isinstance(state, dict) or not ({"config", "model"} <= state.keys()):
        raise CheckpointError(f"{path}: not weights written by rr's trainer (its keys differ)")
    return {"path": path, **{k: state.get(k) for k in FINAL_KEYS}}

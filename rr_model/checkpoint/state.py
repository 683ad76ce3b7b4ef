"""Training checkpoints: written atomically, verified and read back with `torch.load(weights_only=True)`.

A checkpoint holds only tensors and plain Python values (the data-order RandomState is a tuple of a
string, an array and numbers), so loading one never unpickles arbitrary objects. Writing goes to a temporary
file in the same directory, which is fsynced and then renamed over the old checkpoint: a kill at any moment
leaves either the previous checkpoint or the new one, never a torn file.

Every file read back goes through `read`, the one reader: a file that is not the zip archive `torch.save`
writes is "not an rr checkpoint" (a CSV, a JSON-lines file, a pickle that would run code), one whose zip
entries fail their CRC-32s is "damaged" (a page of zeros inside a tensor, a file cut short), and either is
refused with one `CheckpointError` line naming the file and what to do, before torch reads a byte of it;
torch's own advice to load with ``weights_only=False`` is never passed on. `verify` is the same check for a
file or a folder published with its SHA256SUMS (a sharded checkpoint, `rr_core.files.replacing.atomic_dir`).

A finished run keeps its final weights beside: `final_path` (``SIZE-VARIANT-seedS.final.pt``), the model's
state dict with the run's config, model shape, data and provenance record, and no optimiser (a third of a
resumable checkpoint's size, which the run held on disk anyway until it ended). `load_weights` reads
either kind, or the checkpoint folder of a dataset when it holds one run.

A sharded run (`TrainConfig.shard`) checkpoints into a folder instead, ``SIZE-VARIANT-seedS.dcp``
(`sharded_path`, written by `rr_model.checkpoint.sharded`); its step and config are in its ``rr.json``
(`saved_meta`). A run has one checkpoint at a time, of either kind; `current` finds it.
"""

from __future__ import annotations

import json
import os
import pickle
import zipfile
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any, BinaryIO

import torch

from rr_core.errors import RRError
from rr_core.files.checksums import Damaged, verify_sums, zip_damage
from rr_core.files.replacing import atomic_write
from rr_model.checkpoint.paths import checkpoint_path, claim_path, final_path, found_checkpoints, sharded_path

__all__ = [
    "Resumable",
    "Final",
    "FINAL_KEYS",
    "CheckpointError",
    "refused",
    "checkpoint_path",
    "final_path",
    "claim_path",
    "save",
    "read",
    "verify",
    "load",
    "load_weights",
    "META",
    "META_KEYS",
    "sharded_path",
    "saved_meta",
    "meta_text",
    "saved_step",
    "current",
    "WEIGHTS_TODO",
]


@dataclass
class Resumable:
    """What a resumable checkpoint holds: its fields are the file's keys (`KEYS`), written in this order.

    The trainer writes one (`save`) every `checkpoint_every` steps and resumes from it (`load`).
    """

    step: int  # optimiser steps done
    config: dict[str, Any]  # the fields that decide the run's numbers (`rr_model.run.identity.result_config`)
    model: dict[str, Any] | None  # the model's state dict (None from a sharded checkpoint's rr.json)
    optimizer: dict[str, Any] | None  # the optimiser's state dict (None there too: DCP's files hold both)
    torch_rng: Any  # torch's CPU random state (a uint8 tensor)
    cuda_rng: Any  # the device's random state on CUDA, else None
    data_rng: list[Any]  # the data order's numpy RandomState, as plain values
    state: dict[str, Any]  # the trainer's own state (`rr_model.run.run_state.RunState`)
    # What the run's numbers depend on besides `config` (`rr_model.run.identity.run_identity`), which a resume
    # must agree with; None in a checkpoint written before checkpoints kept them (optional: not in `KEYS`).
    data: dict[str, Any] | None = None  # the tokens trained on (`Tokens.describe`, their sha256 included)
    plugin: dict[str, Any] | None = None  # a plugin rule's module, file, sha256; None for rr's own rules


@dataclass
class Final:
    """What a finished run keeps (`final_path`): the weights and what rebuilds and describes them; its fields
    are the file's keys (`FINAL_KEYS`). A resumable checkpoint read as weights has None in the last three."""

    step: int
    config: dict[str, Any]
    model: dict[str, Any]
    model_config: dict[str, Any] | None = None  # `rr_core.shapes.GPTConfig` as a dict
    data: dict[str, Any] | None = (
        None  # the tokens' description (`rr_model.data.token_cache.Tokens.describe`)
    )
    record: dict[str, Any] | None = None  # the run's provenance record


def _as_dict(content: Resumable | Final) -> dict[str, Any]:
    """The fields of `content` by name, in order (not `asdict`, which would deep-copy every tensor)."""
    return {f.name: getattr(content, f.name) for f in fields(content)}


# A file without these keys is not one of the trainer's checkpoints (or final weights); a field with a
# default is read where present.
KEYS = frozenset(f.name for f in fields(Resumable) if f.default is MISSING)
FINAL_KEYS = frozenset(f.name for f in fields(Final))
# A sharded checkpoint's ``rr.json`` (`rr_model.checkpoint.sharded`): what a checkpoint holds besides its
# tensors, which DCP's files hold.
META = "rr.json"
META_KEYS = KEYS - {"model", "optimizer"}  # required there; the optional fields are read where present
_META_FIELDS = tuple(f.name for f in fields(Resumable) if f.name not in ("model", "optimizer"))
# What to do with a file `read` refuses: a checkpoint to resume from, and a run's weights.
RESUME_TODO = "delete it to start the run over, or restore it from a copy"
WEIGHTS_TODO = "restore it from a copy, or train the run again"
_ZIP = b"PK\x03\x04"  # the first bytes of a zip archive, as torch.save writes every file


class CheckpointError(RRError):
    """A checkpoint file that cannot be resumed from: corrupt, truncated, or not written by rr's trainer."""


def refused(path: str | os.PathLike, what: str, error: BaseException) -> CheckpointError:
    """The error for a checkpoint that cannot be resumed from: `what` is wrong, and torch's first line."""
    why = (str(error).strip().splitlines() or [""])[0]
    return CheckpointError(f"{path}: {what} ({type(error).__name__}: {why}); delete it to start the run over")


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


def saved_meta(folder: str | os.PathLike) -> Resumable:
    """The ``rr.json`` of a sharded checkpoint: its step, config, data and random streams, as a `Resumable`
    without model and optimizer (no torch needed).

    Raises
    ------
    CheckpointError
        The folder has no readable ``rr.json`` (not a checkpoint of rr's trainer).
    """
    path = Path(folder) / META
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise refused(folder, "not a readable sharded checkpoint", e) from None
    if not isinstance(meta, dict) or not META_KEYS <= meta.keys():
        raise CheckpointError(f"{folder}: not a sharded checkpoint of rr's trainer; delete it to start over")
    return Resumable(model=None, optimizer=None, **{k: meta[k] for k in _META_FIELDS if k in meta})


def meta_text(saved: Resumable) -> bytes:
    """`saved` as a sharded checkpoint's ``rr.json`` (`saved_meta` reads it): every field but model and
    optimizer, the random states (uint8 tensors) as lists of bytes."""
    plain = {k: getattr(saved, k) for k in _META_FIELDS}
    for k in ("torch_rng", "cuda_rng"):
        plain[k] = None if plain[k] is None else plain[k].tolist()
    return json.dumps(plain, sort_keys=True).encode("utf-8")


def saved_step(path: str | os.PathLike) -> int | None:
    """The step a checkpoint (file or sharded folder) holds: 0 without one, None if it cannot be read. A
    file is read through a memory map: a 1B checkpoint is not loaded whole to show one number."""
    path = Path(path)
    if not path.exists():
        return 0
    try:
        if path.is_dir():
            return int(saved_meta(path).step)
        return int(torch.load(path, map_location="cpu", weights_only=True, mmap=True)["step"])
    except (
        CheckpointError,
        pickle.UnpicklingError,
        RuntimeError,
        EOFError,
        ValueError,
        KeyError,
        zipfile.BadZipFile,
    ):
        return None  # the trainer refuses it too when resuming, with its reason


def current(out: str | os.PathLike, *key, **named) -> Path | None:
    """The checkpoint a run resumes from: its file or its sharded folder, whichever exists (the later one by
    step if a save was interrupted between writing one and removing the other); None if neither does. The run
    is named as `rr_model.checkpoint.paths.checkpoint_path` names it."""
    found = found_checkpoints(out, *key, **named)
    if len(found) == 2:
        found.sort(key=lambda p: saved_step(p) or 0)
    return found[-1] if found else None


def save(path: str | os.PathLike, state: Resumable | Final | dict[str, Any]) -> None:
    """Write `state` (a checkpoint, final weights, or any dict of tensors and plain values) to `path`
    atomically (`rr_core.files.replacing.atomic_write`), as a dict of its fields.

    A write that fails (a full disk, a file-size limit) leaves the previous checkpoint whole and raises the
    OSError, naming `path`.
    """
    path = Path(path)
    if not isinstance(state, dict):
        state = _as_dict(state)
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


def verify(path: str | os.PathLike, todo: str = RESUME_TODO) -> None:
    """Refuse a file or folder rr wrote whose bytes are not those it wrote, before anything reads it.

    A file must be the zip archive `torch.save` writes, every entry passing its CRC-32
    (`rr_core.files.checksums.zip_damage`); a folder (a sharded checkpoint) every file its SHA256SUMS lists
    (`rr_core.files.checksums.verify_sums`). `todo` ends the message: what to do with such a file.

    Raises
    ------
    CheckpointError
        "PATH: not an rr checkpoint (...)" or "PATH: damaged: WHAT; TODO", one line.
    """
    path = Path(path)
    if path.is_dir():
        try:
            verify_sums(path, todo)
        except Damaged as e:
            raise CheckpointError(str(e)) from None
        return
    with open(path, "rb") as f:
        head = f.read(len(_ZIP))
    if head != _ZIP:
        raise CheckpointError(
            f"{path}: not an rr checkpoint (not the zip archive torch.save writes; rr reads only the "
            "checkpoints and final weights its trainer writes)"
        )
    if (damage := zip_damage(path)) is not None:
        raise CheckpointError(f"{path}: damaged: {damage}; {todo}")


def read(path: str | os.PathLike, todo: str = RESUME_TODO) -> Any:
    """The contents of a checkpoint or weights file rr wrote, verified (`verify`) and loaded onto the CPU
    as tensors and plain values only (`torch.load(weights_only=True)`).

    Raises
    ------
    CheckpointError
        Not an rr checkpoint, damaged, or holding Python objects besides tensors and plain values (which
        could run code when unpickled): one line naming the file, ending in `todo` where it is damage.
    """
    verify(path, todo)
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        raise CheckpointError(
            f"{path}: not an rr checkpoint: it holds Python objects besides tensors and plain values, which "
            "rr never unpickles (unpickling them could run code)"
        ) from None
    except (RuntimeError, EOFError, ValueError, KeyError, IndexError, zipfile.BadZipFile) as e:
        why = (str(e).strip().splitlines() or [""])[0]
        raise CheckpointError(
            f"{path}: not an rr checkpoint (torch cannot read it: {type(e).__name__}: {why})"
        ) from None


def load(path: str | os.PathLike) -> Resumable:
    """Read a checkpoint of rr's trainer onto the CPU (`read`), refusing anything but its own.

    Raises
    ------
    CheckpointError
        The file is not one (not a torch file, damaged, holding objects other than tensors and plain
        values, or lacking the trainer's keys).
    """
    state = read(path, RESUME_TODO)
    if not isinstance(state, dict) or not KEYS <= state.keys():
        raise CheckpointError(
            f"{path}: not a checkpoint of rr's trainer (its keys differ); delete it to start over"
        )
    return Resumable(**{f.name: state[f.name] for f in fields(Resumable) if f.name in state})


def _one_run(folder: Path) -> Path:
    """The weights file of the one run a checkpoint folder holds (final weights before a checkpoint); an
    export's folder, which holds none, is named as one with how to load it."""
    for pattern in ("*.final.pt", "*.pt"):
        found = sorted(folder.glob(pattern))
        if len(found) == 1:
            return found[0]
        if found:
            names = ", ".join(p.name for p in found)
            raise CheckpointError(
                f"{folder} holds the weights of {len(found)} runs ({names}): name one of them"
            )
    if (folder / "config.json").is_file() and (folder / "model.safetensors").is_file():
        raise CheckpointError(
            f"{folder}: an export (what rr export writes: config.json, model.safetensors), not a run's "
            "weights; give the run's OUT.checkpoints/RUN.final.pt, or load the export in Python with "
            "rr_model.model.GPT.from_pretrained(FOLDER) (or transformers' AutoModelForCausalLM.from_pretrained("
            "FOLDER, trust_remote_code=True)); rr eval --tasks scores an export as it is"
        )
    raise CheckpointError(f"{folder}: no weights in it (no *.final.pt or *.pt file)")


def load_weights(path: str | os.PathLike) -> tuple[Path, Final]:
    """The weights of a run and what describes them, from a final-weights file, a checkpoint or a folder.

    Parameters
    ----------
    path
        A finished run's ``.final.pt`` (`final_path`), a resumable checkpoint (`checkpoint_path`), or a
        checkpoint folder ``NAME.checkpoints/`` holding one run.

    Returns
    -------
    (the file read, its `Final`): step, config (the run's result config), model (the state dict), and
    model_config, data and record (the provenance record) where the file has them (final weights do; a
    checkpoint of an unfinished run has None there).
    """
    path = Path(path)
    if path.is_dir():
        path = _one_run(path)
    state = read(path, WEIGHTS_TODO)
    if not isinstance(state, dict) or not ({"config", "model"} <= state.keys()):
        raise CheckpointError(f"{path}: not weights written by rr's trainer (its keys differ)")
    return path, Final(**{k: state.get(k) for k in FINAL_KEYS})

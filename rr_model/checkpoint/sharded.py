"""Checkpoints of sharded runs: torch.distributed.checkpoint (DCP) folders, written by every process at once,
published whole, and read back on any number of processes, sharded or not.

A folder ``SIZE-VARIANT-seedS.dcp`` (`rr_model.checkpoint.paths.sharded_path`) holds DCP's files (``.metadata``
and one ``__R_0.distcp`` per process: each process writes its own pieces of the parameters and of both AdamW
moments) and ``rr.json``, the rest of the run's state as plain JSON: the step, the run's result config and
corpus identity (so a resume is refused under another config or corpus, as a `.pt` checkpoint's is), every
random stream (torch's CPU and CUDA generators as bytes, the data order's RandomState) and the trainer's
bookkeeping. Keeping that out of DCP keeps it readable without torch (`saved_meta`: `rr sweep --status`).

Writing is atomic (`save`): the processes write into a fresh folder beside the checkpoint, then process 0
writes the folder's ``SHA256SUMS`` (every file's sha256, last) and swaps it into place in one step
(`rr_core.files.replacing.atomic_dir`); a kill at any moment leaves the previous checkpoint whole, and the next save
removes what a dead writer left. A resume checks every file against those sums before it reads one
(`rr_model.checkpoint.state.verify`, on process 0: one pass over the pieces), so a damaged piece is refused
naming the file, never loaded; a folder written before rr kept the sums is read as it is. `load` reshards: DCP reads each
process's pieces from whatever pieces were written, so a checkpoint of 2 processes resumes on 1 (sharded,
or a plain model without any process group) or on 4, at the same step, with the same optimiser state.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict, set_state_dict

from rr_core.errors import InputError
from rr_core.files.replacing import atomic_dir, scratch
from rr_model.checkpoint.state import META, Resumable, meta_text, refused, saved_meta

__all__ = ["save", "load", "load_whole", "saved_meta", "check_shared"]


def _state(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """The model's and optimiser's state as DCP saves and loads it (keys free of wrappers' names; an
    optimiser without state yet is given zeros to load into)."""
    model_state, optimizer_state = get_state_dict(model, optimizer)
    return {"model": model_state, "optimizer": optimizer_state}


def save(
    folder: str | os.PathLike, model: torch.nn.Module, optimizer: torch.optim.Optimizer, saved: Resumable
) -> None:
    """Write the checkpoint `folder` from every process (each calls this), whole or not at all.

    Every process writes its pieces into one temporary folder that process 0 names, process 0 adds the
    rest of `saved` (all but its model and optimizer, which `model` and `optimizer` give) as ``rr.json``
    and publishes the folder with one rename; the others wait for it, so no process goes on before the
    checkpoint is in place.
    """
    folder = Path(folder)
    grouped = dist.is_initialized()
    state = _state(model, optimizer)
    text = meta_text(saved)

    def build(tmp: Path) -> None:
        if grouped:
            dist.broadcast_object_list([str(tmp)], src=0)
        with warnings.catch_warnings():  # as in `load`
            warnings.filterwarnings("ignore", "torch.distributed is disabled", UserWarning)
            dcp.save(state, checkpoint_id=tmp, no_dist=not grouped)
        with open(tmp / META, "wb") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())

    if not grouped or dist.get_rank() == 0:
        folder.parent.mkdir(parents=True, exist_ok=True)
        _publish(folder, build)
    else:
        named: list[Any] = [None]
        dist.broadcast_object_list(named, src=0)
        dcp.save(state, checkpoint_id=named[0])
    if grouped:
        dist.barrier()


def _publish(folder: Path, build) -> None:
    """The one step that makes a built checkpoint folder the checkpoint: built aside, its SHA256SUMS written
    last (every process's pieces are in by then: DCP's save returns on process 0 once all have written),
    swapped in whole."""
    atomic_dir(folder, build, sums=True)


def load(folder: str | os.PathLike, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> None:
    """Load the checkpoint `folder`'s weights and optimiser state into `model` and `optimizer`, sharded or
    not, on any number of processes (each calls this). `saved_meta` reads the rest.

    Raises
    ------
    rr_model.checkpoint.state.CheckpointError
        The folder's files do not load (missing or damaged pieces), or do not fit this model.
    """
    state = _state(model, optimizer)
    alone = not dist.is_initialized()
    try:
        with warnings.catch_warnings():  # DCP warns of loading in one process even when told so (no_dist)
            warnings.filterwarnings("ignore", "torch.distributed is disabled", UserWarning)
            dcp.load(state, checkpoint_id=folder, no_dist=alone)
        set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])
    except (RuntimeError, ValueError, KeyError, OSError) as e:  # DCP's CheckpointException is a RuntimeError
        raise refused(folder, "its pieces do not load into this run", e) from None


def load_whole(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    whole: torch.nn.Module,
    whole_optimizer: torch.optim.Optimizer,
) -> None:
    """Load an unsharded model and optimiser (`whole`, as a data-parallel run's `.pt` checkpoint restores
    them, on every process) into the sharded `model` and `optimizer`: each process keeps its pieces."""
    model_state, optimizer_state = get_state_dict(whole, whole_optimizer)
    set_state_dict(
        model,
        optimizer,
        model_state_dict=model_state,
        optim_state_dict=optimizer_state,
        options=StateDictOptions(full_state_dict=True),
    )


def check_shared(checkpoint: str | os.PathLike) -> None:
    """Refuse, before training, processes that do not all see the same checkpoint folder (each writes its
    pieces there, and process 0 publishes it): across nodes it must be on a shared filesystem. Every process
    calls this with the run's checkpoint path; process 0 holds a file beside it (a `scratch` file of the
    run, which the run's claim keeps to its processes, removed by its next check if a kill leaves it), and
    each process says whether it sees it.

    Raises
    ------
    InputError
        On every process, naming the processes that do not see it.
    """
    folder = Path(checkpoint).parent
    rank = dist.get_rank()
    with contextlib.ExitStack() as held:
        probe: list[Any] = [None]
        if rank == 0:
            folder.mkdir(parents=True, exist_ok=True)
            probe = [held.enter_context(scratch(Path(checkpoint).with_suffix(".shared")))]
        dist.broadcast_object_list(probe, src=0)
        seen: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(seen, probe[0].exists())
    if blind := [r for r, ok in enumerate(seen) if not ok]:
        raise InputError(
            f"{folder}: processes {', '.join(map(str, blind))} of {len(seen)} do not see what process 0 writes "
            "there; a sharded run's checkpoint folder (beside the dataset) must be on a filesystem every node "
            "sees: run from a shared folder or give --out on one"
        )

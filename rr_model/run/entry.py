"""What `rr train` and `rr reproduce` do once their runs are planned, as one call: `train_planned` checks every
run before any trains, then trains them; a Ctrl-C says what was kept and how to go on (`Interrupted`), and a
sharded run out of memory names the exact command to resume with (`resume_command`, under torchrun too).

Torch loads only when runs train; the checks and the resume command are torch-free.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rr_core.errors import Interrupted

if TYPE_CHECKING:
    from rr_model.run.planning import Runs

__all__ = ["world_size", "lead_process", "resume_command", "train_planned"]


def world_size(environ: Mapping[str, str] = os.environ) -> int:
    """The processes a run trains on: torchrun's WORLD_SIZE, else 1."""
    return int(environ.get("WORLD_SIZE", "1"))


def lead_process(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether this process reports for its run: rank 0 under torchrun, or the only process."""
    return environ.get("RANK", "0") == "0"


def resume_command(
    micro_batches: int | None, argv: Sequence[str] | None = None, environ: Mapping[str, str] = os.environ
) -> str:
    """The command line `argv` (default: this process's) again with --resume and --micro-batches
    `micro_batches` (replacing any given), under the same torchrun layout where torchrun started it: what a
    sharded run that ran out of memory names.

    Example
    -------
    >>> resume_command(4, ["rr", "train", "--size", "7B", "--micro-batches=2", "--out", "a b.csv"], {})
    "rr train --size 7B --out 'a b.csv' --resume --micro-batches 4"
    """
    args, skip = [], False
    for arg in (sys.argv if argv is None else argv)[1:]:
        if skip:
            skip = False
        elif arg == "--micro-batches":
            skip = True
        elif arg != "--resume" and not arg.startswith("--micro-batches="):
            args.append(arg)
    args += ["--resume", "--micro-batches", str(micro_batches)]
    launch, world = "rr", world_size(environ)
    if world > 1:
        local = int(environ.get("LOCAL_WORLD_SIZE", world))
        nodes = world // local
        where = f"--nnodes {nodes} (and the same rendezvous options)" if nodes > 1 else "--standalone"
        launch = f"torchrun {where} --nproc_per_node {local} -m cli.main"
    return " ".join([launch, *map(shlex.quote, args)])


def train_planned(runs: Runs, out: Path, *, resume: bool = False, dry_run: bool = False) -> list[dict]:
    """Check every run to do (`Runs.check`: what the trainer refuses, refused before any run trains or any
    file is made), then train them on the plan's reading of `out`; the provenance record of each, in order
    ([] under `dry_run`, or with nothing to do).

    Raises `Interrupted` on Ctrl-C, saying which rows and checkpoints were kept and how to go on, and a
    sharded run's `OutOfMemoryStop` naming the command to resume with (`resume_command`).
    """
    if not runs.todo:
        return []
    runs.check(world_size(), resume)
    if dry_run:
        return []
    from rr_model.parallel.out_of_memory import OutOfMemoryStop
    from rr_model.run.trainer import train_runs  # torch: only when training

    try:
        return train_runs(runs.todo, out, resume=resume, plan=runs.output)
    except OutOfMemoryStop as e:
        raise e.resume_with(resume_command(e.micro_batches)) from None
    except KeyboardInterrupt:
        raise Interrupted(_kept(runs.todo, out)) from None


def _kept(todo: list, out: Path) -> str:
    """What a Ctrl-C left of `todo` and how to go on, in one paragraph."""
    from rr_model.checkpoint.state import current

    saved = [str(p) for cfg in todo if (p := current(out, **cfg.stem)) is not None]
    every = todo[0].checkpoint_every
    kept = f"no checkpoint was written yet (one every {every} steps): the run starts over"
    if saved:
        kept = f"the interrupted run continues from its checkpoint {', '.join(saved)}"
    elif not every:
        kept = "the run starts over (checkpoints were off: --checkpoint-every 0)"
    rows = (
        f"Rows already written stay in {out}" if out.exists() else f"No row was written ({out} is not made)"
    )
    return (
        f"interrupted. {rows}. Run the same command with --resume to go on: finished runs are skipped, "
        f"and {kept}."
    )

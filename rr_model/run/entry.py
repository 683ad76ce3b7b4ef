"""`rr train` and `rr reproduce`, each one call (`train_command`, `reproduce_command`): plan the runs, check
every run before any trains, then train them, or under a dry run return what they would be (`Trained`);
`train_planned` is their tail once the runs are planned. A Ctrl-C says what was kept and how to go on
(`Interrupted`), and a sharded run out of memory names the exact command to resume with (`resume_command`,
under torchrun too).

What `rr train` trains is one documented value, `Training`, whose fields are its options (`rr_core.options`;
`VARIANTS`, `OUT`, `RESUME` and `DRY_RUN` are shared with rr reproduce, rr sweep and rr tune). Torch loads only
when runs train; planning, the checks, the dry run and the resume command are torch-free, and the module is
light to import (planning loads inside the calls), so the command line reads these declarations at start-up.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from rr_core.errors import Interrupted
from rr_core.ladder import LADDER, PUBLISHED_SIZES, size_words
from rr_core.options import option
from rr_model.config import default_out

if TYPE_CHECKING:
    from rr_model.run.planning import DryRun, Runs

__all__ = [
    "VARIANTS",
    "OUT",
    "RESUME",
    "DRY_RUN",
    "Training",
    "Reproduction",
    "world_size",
    "lead_process",
    "resume_command",
    "train_planned",
    "Trained",
    "train_command",
    "reproduce_command",
]


# The options the training commands share (rr reproduce's --variant and --out say what its own mean)
VARIANTS = option(
    "Train only this variant (repeatable). Default: the three compared variants, a pairable block.",
    flag="--variant",
)
OUT = option(
    "Dataset to append the rows to. Default: data/scaling_v8.csv here, started from the published rows if "
    "missing."  # the default is rr_model.config.DEFAULT_OUT
)
RESUME = option("Continue runs from their checkpoints.")
DRY_RUN = option("Print the plan, an estimate of time and the memory plan; train nothing.")


@dataclass(frozen=True)
class Training:
    """What `rr train` trains: the sizes (each its next seed, or `seed`), the variants, into which file, and
    whether it resumes runs or only shows their plan (each field an option of `rr train`); `train_command`
    trains it. The sizes are kept as given (a command line's comma lists are split by it)."""

    sizes: str | tuple[str, ...] = field(
        metadata=option(
            f"Ladder size to train: {size_words(list(LADDER))} (or one of --ladder's); repeatable, or "
            "comma-separated: each is trained.",
            flag="--size",
            spelling="--sizes",
        )
    )
    variants: tuple[str, ...] = field(default=(), metadata=VARIANTS)  # (): the reference's compared block
    seed: int | None = field(
        default=None,
        metadata=option(
            "Seed to train. Default: the lowest seed the file lacks for these variants.",
            min=0,
            spelling="--seeds",
        ),
    )
    out: Path | None = field(default=None, metadata=OUT)  # None: `rr_model.config.default_out`
    resume: bool = field(default=False, metadata=RESUME)
    dry_run: bool = field(default=False, metadata=DRY_RUN)

    def file(self, ladder: str | os.PathLike | None = None) -> Path:
        """The file the runs append to: `out`, else `rr_model.config.default_out`."""
        return Path(self.out) if self.out is not None else default_out(ladder)


@dataclass(frozen=True)
class Reproduction:
    """What `rr reproduce` trains again: a published run (its size and seed, the variants published at it),
    into which reproduction file, and whether it resumes runs or only shows their plan (each field an option
    of `rr reproduce`); `reproduce_command` trains it."""

    size: str = field(metadata=option(f"Published size: {size_words(PUBLISHED_SIZES)}."))
    seed: int = field(metadata=option("Published seed to train again.", min=0))
    variants: tuple[str, ...] = field(
        default=(),
        metadata=option(
            "Reproduce only this variant (repeatable). Default: every variant published at that seed.",
            flag="--variant",
        ),
    )
    out: Path | None = field(
        default=None,
        metadata=option(
            "Reproduction file to append the rows to; never the published dataset. Default: "
            "data/reproduction.csv."  # the default is rr_model.run.reproduce.DEFAULT_REPRODUCTION
        ),
    )
    resume: bool = field(default=False, metadata=RESUME)
    dry_run: bool = field(default=False, metadata=DRY_RUN)

    def file(self) -> Path:
        """The file the runs append to: `out`, else `rr_model.run.reproduce.DEFAULT_REPRODUCTION`."""
        from rr_model.run.reproduce import DEFAULT_REPRODUCTION

        return Path(self.out) if self.out is not None else DEFAULT_REPRODUCTION


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


class Trained(NamedTuple):
    """What a training command did (`train_command`, `reproduce_command`)."""

    runs: Runs  # its plan: the runs to train, those already in the output file (skipped)
    records: list[dict]  # each trained run's provenance record in order ([]: a dry run, or none to do)
    dry_run: DryRun | None = None  # under a dry run with runs to do: what they would be


def train_command(
    training: Training, *, planned: Callable[[Runs], None] | None = None, **options: Any
) -> Trained:
    """`rr train` as one call: plan the runs of each size of `training` (`rr_model.run.planning.plan_runs`:
    the next seed of each unless its `seed`; its variants default the reference's compared block), then check
    and train them (`train_planned`), or under its `dry_run` describe them (`Trained.dry_run`).
    `planned(runs)`, where given, is called once the runs are planned, before any check: where a command says
    what it skips. `options`: further TrainConfig fields.

    Example
    -------
    >>> done = train_command(Training(("tiny", "60M"), ("standard",), 0, "o.csv", dry_run=True), data="synthetic")
    >>> [c.key for c in done.runs.todo], [r["size"] for r in done.dry_run.budget]
    ([('tiny', 'standard', 0), ('60M', 'standard', 0)], ['tiny', '60M'])
    """
    from rr_core.variants import REFERENCE, compared
    from rr_model.run.planning import plan_runs

    chosen = tuple(training.variants or compared(options.get("reference", REFERENCE)))
    out = training.file(options.get("ladder"))
    runs = plan_runs(out, training.sizes, chosen, training.seed, **options)
    return _carry_out(runs, out, training.resume, training.dry_run, planned)


def reproduce_command(
    reproduction: Reproduction, *, planned: Callable[[Runs], None] | None = None, **options: Any
) -> Trained:
    """`rr reproduce` as one call: plan the re-runs of a published run
    (`rr_model.run.reproduce.plan_reproduction`, which takes `options`, `published` among them), then check
    and train them or describe them, as `train_command` does."""
    from rr_model.run.reproduce import plan_reproduction

    out, variants = reproduction.file(), tuple(reproduction.variants) or None
    runs = plan_reproduction(out, reproduction.size, reproduction.seed, variants, **options)
    return _carry_out(runs, out, reproduction.resume, reproduction.dry_run, planned)


def _carry_out(
    runs: Runs, out: Path, resume: bool, dry_run: bool, planned: Callable[[Runs], None] | None
) -> Trained:
    """What both commands do once their runs are planned."""
    from rr_model.run.planning import dry_run_plan

    if planned is not None:
        planned(runs)
    records = train_planned(runs, out, resume=resume, dry_run=dry_run)
    shown = dry_run_plan(runs.todo, world_size()) if dry_run and runs.todo else None
    return Trained(runs, records, shown)


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

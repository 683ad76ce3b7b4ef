"""Where a sweep's runs train, as one documented value: `Launch` (here, one process per run, or on Slurm as
one submitit job per run), whose fields are `rr sweep`'s and `rr tune`'s launcher options
(`rr_core.options`); what it asks of a Slurm job (`Launch.resources`); and `launch`, which trains a plan's
runs (or submits them, or plans them under a dry run) where it says, in one call.

Light to import (the Slurm modules load inside the calls), so the command line reads these declarations at
start-up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from rr_core.errors import InputError
from rr_core.options import option
from rr_model.sweep.jobs import SLURM

if TYPE_CHECKING:
    from rr_model.run.planning import DryRun, Runs
    from rr_model.sweep.sbatch import Resources

__all__ = ["Launch", "Launched", "launch", "slurm_module"]

_SBATCH_KEY = re.compile(r"[a-z][a-z0-9_-]*")


def _slurm(help: str, **how: object) -> dict:
    return option(help, panel=SLURM, **how)


@dataclass(frozen=True)
class Launch:
    """Where each run of a sweep trains, and with what. The defaults train here, one process per run."""

    nproc: int = field(default=1, metadata=option("Processes (GPUs) per run, launched with torchrun.", min=1))
    launcher: Literal["local", "slurm"] = field(
        default="local",
        metadata=option(
            "local: one process per run here, in turn. slurm: one submitit job per run (one job array), "
            "requeued from its checkpoint when preempted or out of time."
        ),
    )
    partition: str | None = field(default=None, metadata=_slurm("Slurm partition."))
    account: str | None = field(default=None, metadata=_slurm("Slurm account to charge."))
    time: int = field(
        default=60, metadata=_slurm("Time limit of one attempt, minutes; requeued past it.", min=1)
    )
    gpus: int = field(
        default=1, metadata=_slurm("GPUs per node of a run, one training process each (0: CPU).", min=0)
    )
    cpus: int | None = field(default=None, metadata=_slurm("CPU cores per node of a run.", min=1))
    mem_gb: int | None = field(default=None, metadata=_slurm("Memory per node of a run, GB.", min=1))
    sbatch: tuple[str, ...] = field(
        default=(),
        metadata=_slurm("A further sbatch option, KEY=VALUE or KEY (repeatable), e.g. --sbatch qos=high."),
    )
    setup: tuple[str, ...] = field(
        default=(),
        metadata=_slurm(
            "A shell line run before each job, as written: it is shell (repeatable: one line each)."
        ),
    )
    max_timeouts: int = field(
        default=3, metadata=_slurm("Requeues allowed after time limits, per job.", min=0)
    )
    per_run_files: bool = field(
        default=False,
        metadata=_slurm(
            "Each job appends its row to its own file, OUT's .parts/SIZE-VARIANT-seedN.csv, not to OUT: for "
            "filesystems whose locks do not hold across hosts. Join them with rr merge."
        ),
    )
    nodes: int = field(
        default=1,
        metadata=_slurm(
            "Nodes per run: its --gpus processes on each, one process group (the dataset's folder must be on a "
            "filesystem every node sees).",
            min=1,
        ),
    )

    def check(self) -> None:
        """Refuse the options of one launcher given to the other."""
        if self.launcher == "local" and self.nodes > 1:
            raise InputError("--nodes is the Slurm launcher's; here one run spans --nproc processes")
        if self.launcher == "slurm" and self.nproc > 1:
            raise InputError(
                "--nproc is the local launcher's; with --launcher slurm give --gpus per run (per node with --nodes)"
            )

    @property
    def world(self) -> int:
        """The processes one Slurm run spans: --gpus on each of --nodes (one on CPU)."""
        return self.nodes * max(1, self.gpus)

    def resources(self) -> Resources:
        """What each job of a Slurm sweep asks for (`rr_model.sweep.sbatch.Resources`)."""
        from rr_model.sweep.sbatch import Resources

        return Resources(
            partition=self.partition,
            account=self.account,
            gpus=self.gpus,
            cpus=self.cpus,
            max_timeouts=self.max_timeouts,
            nodes=self.nodes,
            time_min=self.time,
            mem_gb=self.mem_gb,
            sbatch=_sbatch(self.sbatch),
            setup=tuple(self.setup),
        )


def _sbatch(given: tuple[str, ...]) -> dict[str, str | bool]:
    """--sbatch KEY=VALUE / KEY items as submitit's additional_parameters ({key: value or True})."""
    found: dict[str, str | bool] = {}
    for item in given:
        key, eq, value = item.removeprefix("--").partition("=")
        if not _SBATCH_KEY.fullmatch(key) or (eq and not value):
            raise InputError(f"--sbatch {item!r}: expected KEY=VALUE or KEY, e.g. qos=high or exclusive")
        found[key] = value if eq else True
    return found


def slurm_module():
    """rr_model.sweep.slurm, imported only where Slurm is used: submitit comes with the cluster extra, and a
    missing one is the command line's one sentence naming that extra."""
    from rr_model.sweep import slurm

    return slurm


@dataclass
class Launched:
    """What `launch` did with a plan's runs."""

    todo: list  # the runs it trained, submitted or (dry run) planned
    busy: bool = False  # runs left out: a Slurm job of theirs is pending or running
    summary: list[dict] | None = (
        None  # here: each run's summary (`rr_model.sweep.local.run_sweep`); [] planned
    )
    jobs: list[dict] | None = None  # a Slurm dry run: the job array, a run with its cooldown branches a job
    script: str | None = None  # a Slurm dry run: the sbatch script
    entries: list[dict] | None = None  # the Slurm jobs submitted (`rr_model.sweep.slurm.submit_runs`)
    plan: DryRun | None = None  # a dry run with runs to do: what they would be (`rr_model.run.planning`)


def launch(runs: Runs, out: Path, how: Launch, dry_run: bool = False) -> Launched:
    """Train the plan `runs` where `how` says: here, one process per run (`Launched.summary`), or on Slurm as
    a job array (`Launched.entries`: the jobs append their rows later); under `dry_run` nothing trains or is
    submitted (a Slurm plan names its jobs and script; no submitit needed unless jobs are recorded for `out`).

    Every run's checks come first, dry run or not (`Runs.check`), so nothing starts that a later run would
    refuse. On Slurm, runs whose job is pending or running are left out (`Launched.busy`), as are runs whose
    own file (`per_run_files`) holds their row already.
    """
    how.check()
    if how.launcher == "local":
        runs.check(how.nproc, resume=True)  # a sweep continues its runs' checkpoints
        if dry_run:
            return Launched(runs.todo, summary=[], plan=_plan(runs.todo, how.nproc))
        from rr_model.sweep.local import run_sweep

        return Launched(runs.todo, summary=run_sweep(runs.todo, out, how.nproc))
    if not how.per_run_files:  # a job of its own file checks that file when it starts
        # jobs run on other machines: the memory plan is checked against --gpu-memory only
        runs.check(how.world, resume=True, gpu_here=False)
    return _submit(runs.todo, out, how, dry_run)


def _plan(todo: list, world: int, describe: bool = True) -> DryRun | None:
    """What a dry run shows of `todo` on `world` processes a run (`dry_run_plan`); None with none to do."""
    from rr_model.run.planning import dry_run_plan

    return dry_run_plan(todo, world, describe) if todo else None


def _submit(todo: list, out: Path, how: Launch, dry_run: bool) -> Launched:
    """`todo` submitted as one job array (or, under `dry_run`, its jobs and sbatch script)."""
    from rr_model.run.output_file import dataset_keys
    from rr_model.run.planning import families
    from rr_model.sweep.jobs import read_jobs
    from rr_model.sweep.sbatch import part_path, sbatch_script

    resources, busy = how.resources(), False
    if how.per_run_files:
        todo = [cfg for cfg in todo if cfg.key not in dataset_keys(part_path(out, cfg.stem))]
    if read_jobs(out):
        slurm = slurm_module()
        active = slurm.active_keys(slurm.job_status(out))
        if busy := bool(active & {cfg.key for cfg in todo}):
            todo = [cfg for cfg in todo if cfg.key not in active]
    if not todo:
        return Launched(todo, busy)
    if dry_run:
        groups = families(todo)  # a run with cooldown branches is one job: it trains them after itself
        jobs = []
        for i, (lead, *branches) in enumerate(groups):
            jobs.append({"job": i, **lead.named, "steps": lead.steps})
            if any(len(g) > 1 for g in groups):
                jobs[-1]["branch_at"] = ",".join(str(c.steps) for c in branches) or None
        script = sbatch_script(out, resources, len(jobs))
        return Launched(todo, busy, jobs=jobs, script=script, plan=_plan(todo, how.world, describe=False))
    slurm = slurm_module()
    entries = slurm.submit_runs(todo, out, slurm.slurm_executor(out, resources), how.per_run_files)
    return Launched(todo, busy, entries=entries)

"""What `rr sweep` and `rr tune` share: where their runs train (here, one process each, or on Slurm as one job
array through submitit), the options that say so, and the comma-separated lists they take.

Standard library and typer at import (as every command module); the library loads inside the calls.
"""

from __future__ import annotations

from pathlib import Path

import typer

from cli.records import Format, echo_records
from cli.run_options import RESULT_FORMATS, echo_budget_plan, echo_memory, echo_plan
from rr_analysis.numbers import BLANK
from rr_core.errors import InputError

__all__ = ["items", "seed_list", "launch_module", "submit", "train_here", "launch"]


def items(text: str | None) -> list[str] | None:
    """A comma-separated option's items, stripped (None when not given or empty)."""
    return [item.strip() for item in text.split(",") if item.strip()] if text else None


def seed_list(given: str | list[str] | None, flag: str) -> list[int] | None:
    """Seeds (integers >= 0) given as one comma-separated list or several; None when not given."""
    text = given if isinstance(given, str) or given is None else ",".join(given)
    if not text:
        return None
    if not all(s.isdigit() for s in items(text)):
        raise InputError(f"{flag} {text!r}: expected comma-separated integers >= 0, e.g. 3,4")
    return [int(s) for s in items(text)]


def launch_module():
    """rr_model.sweep.slurm, imported only where Slurm is used: submitit comes with the cluster extra, and a
    missing one is `cli.errors.run`'s one sentence naming that extra."""
    from rr_model.sweep import slurm

    return slurm


def submit(todo: list, out: Path, how, dry_run: bool, command: str) -> None:
    """Submit `todo` as a job array (or show it, with the sbatch script, under --dry-run: no submitit needed
    unless jobs are recorded for `out` already). `command` names the rr command in what is printed."""
    from rr_model.run.planning import dataset_keys, families, memory_plans
    from rr_model.sweep.jobs import read_jobs
    from rr_model.sweep.sbatch import job_folder, part_path, sbatch_script

    resources, per_run_files = how.resources(), how.per_run_files
    if per_run_files:
        todo = [cfg for cfg in todo if cfg.key not in dataset_keys(part_path(out, cfg.stem))]
    if read_jobs(out):
        slurm = launch_module()
        busy = slurm.active_keys(slurm.job_status(out))
        if busy & {cfg.key for cfg in todo}:
            todo = [cfg for cfg in todo if cfg.key not in busy]
            typer.echo(
                f"rr {command}: runs with a pending or running job are not submitted again (see --status)"
            )
    if not todo:
        return
    if dry_run:
        groups = families(todo)  # a run with cooldown branches is one job: it trains them after itself
        jobs = []
        for i, (lead, *branches) in enumerate(groups):
            jobs.append({"job": i, **lead.named, "steps": lead.steps})
            if any(len(g) > 1 for g in groups):
                jobs[-1]["branch_at"] = ",".join(str(c.steps) for c in branches) or BLANK
        echo_records(jobs, Format.text, title=f"rr {command}: {len(jobs)} job(s) would be submitted")
        typer.echo(f"\nsbatch script (submitit writes it under {job_folder(out)}):\n")
        typer.echo(sbatch_script(out, resources, len(jobs)))
        echo_budget_plan(todo)
        echo_memory(*memory_plans(todo, how.world), how.world)
        return
    slurm = launch_module()
    entries = slurm.submit_runs(todo, out, slurm.slurm_executor(out, resources), per_run_files)
    keys = ("job_id", "size", "variant", "seed", *(("lr",) if "lr" in entries[0] else ()), "out", "log")
    echo_records([{k: e[k] for k in keys} for e in entries], Format.text, title=f"rr {command}: submitted")
    typer.echo(f"rr {command}: follow them with rr sweep --status --out {out}; stop them with --cancel")


def train_here(todo: list, out: Path, nproc: int, dry_run: bool, command: str) -> list[dict]:
    """Train `todo` here, one process each, and print their summary (or show the plan under --dry-run:
    nothing trains, [] returned). Returns the summary records (`rr_model.sweep.local.run_sweep`)."""
    from rr_model.run.planning import describe_runs, memory_plans
    from rr_model.sweep.local import run_sweep

    if dry_run:
        if todo:
            echo_plan(describe_runs(todo), f"rr {command}: plan for {out}")
            echo_budget_plan(todo)
            echo_memory(*memory_plans(todo, nproc), nproc)
        return []
    summary = run_sweep(todo, out, nproc)
    if summary:
        echo_records(summary, Format.text, title=f"rr {command}: {out}", formats=RESULT_FORMATS)
    return summary


def launch(runs, out: Path, how, dry_run: bool, command: str) -> list[dict] | None:
    """Train the plan `runs` (`rr_model.run.planning.Runs`) where `how` (`rr_model.sweep.launch.Launch`) says:
    here (the summary records, [] under --dry-run) or on Slurm (None: the jobs append their rows later). Every
    run's checks come first, dry run or not (`Runs.check`), so nothing starts that a later run would refuse."""
    how.check()
    if how.launcher == "local":
        runs.check(how.nproc, resume=True)  # a sweep continues its runs' checkpoints
        return train_here(runs.todo, out, how.nproc, dry_run, command)
    if not how.per_run_files:  # a job of its own file checks that file when it starts
        # jobs run on other machines: the memory plan is checked against --gpu-memory only
        runs.check(how.world, resume=True, gpu_here=False)
    submit(runs.todo, out, how, dry_run, command)
    return None

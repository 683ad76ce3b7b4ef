"""What `rr sweep` and `rr tune` share: where their runs train (here, one process each, or on Slurm as one job
array through submitit), the options that say so, and the comma-separated lists they take.

Standard library and typer at import (as every command module); the library loads inside the calls.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import TypeVar

import typer

from cli.records import Format, echo_records
from cli.run_options import RESULT_FORMATS, echo_budget_plan, echo_memory, echo_plan
from rr_analysis.numbers import BLANK
from rr_core.errors import InputError

__all__ = [
    "Launcher",
    "launcher_options",
    "items",
    "seed_list",
    "launch_module",
    "resources",
    "submit",
    "train_here",
    "launch",
]


class Launcher(str, Enum):
    local = "local"
    slurm = "slurm"


LAUNCHER = typer.Option(
    Launcher.local,
    "--launcher",
    help="local: one process per run here, in turn. slurm: one submitit job per run (one job array), "
    "requeued from its checkpoint when preempted or out of time.",
)
NPROC = typer.Option(1, "--nproc", min=1, help="Processes (GPUs) per run, launched with torchrun.")
SLURM = "Slurm (--launcher slurm)"
PARTITION = typer.Option(None, "--partition", help="Slurm partition.", rich_help_panel=SLURM)
ACCOUNT = typer.Option(None, "--account", help="Slurm account to charge.", rich_help_panel=SLURM)
TIME = typer.Option(
    60, "--time", min=1, help="Time limit of one attempt, minutes; requeued past it.", rich_help_panel=SLURM
)
GPUS = typer.Option(
    1,
    "--gpus",
    min=0,
    help="GPUs per node of a run, one training process each (0: CPU).",
    rich_help_panel=SLURM,
)
NODES = typer.Option(
    1,
    "--nodes",
    min=1,
    help="Nodes per run: its --gpus processes on each, one process group (the dataset's folder must be on a "
    "filesystem every node sees).",
    rich_help_panel=SLURM,
)
CPUS = typer.Option(None, "--cpus", min=1, help="CPU cores per node of a run.", rich_help_panel=SLURM)
MEM_GB = typer.Option(None, "--mem-gb", min=1, help="Memory per node of a run, GB.", rich_help_panel=SLURM)
SBATCH = typer.Option(
    None,
    "--sbatch",
    help="A further sbatch option, KEY=VALUE or KEY (repeatable), e.g. --sbatch qos=high.",
    rich_help_panel=SLURM,
)
SETUP = typer.Option(
    None,
    "--setup",
    help="A shell line run before each job, as written: it is shell (repeatable: one line each).",
    rich_help_panel=SLURM,
)
MAX_TIMEOUTS = typer.Option(
    3, "--max-timeouts", min=0, help="Requeues allowed after time limits, per job.", rich_help_panel=SLURM
)
PER_RUN_FILES = typer.Option(
    False,
    "--per-run-files",
    help="Each job appends its row to its own file, OUT's .parts/SIZE-VARIANT-seedN.csv, not to OUT: for "
    "filesystems whose locks do not hold across hosts. Join them with rr merge.",
    rich_help_panel=SLURM,
)
_SBATCH_KEY = re.compile(r"[a-z][a-z0-9_-]*")

# The options of where runs train, each declared once: name, type, option. `launch` reads them from the
# command's parameters; `launcher_options` gives them to a command.
LAUNCH_OPTIONS = (
    ("nproc", int, NPROC),
    ("launcher", Launcher, LAUNCHER),
    ("partition", str | None, PARTITION),
    ("account", str | None, ACCOUNT),
    ("time", int, TIME),
    ("gpus", int, GPUS),
    ("cpus", int | None, CPUS),
    ("mem_gb", int | None, MEM_GB),
    ("sbatch", list[str] | None, SBATCH),
    ("setup", list[str] | None, SETUP),
    ("max_timeouts", int, MAX_TIMEOUTS),
    ("per_run_files", bool, PER_RUN_FILES),
    ("nodes", int, NODES),
)
F = TypeVar("F", bound=Callable)


def launcher_options(func: F) -> F:
    """Give a command function (`rr sweep`, `rr tune`) the launcher options, before its ``**run`` parameter
    (which `cli.run_options.training_options` then fills with the training options); typer passes their
    values in ``run``, and `launch` reads them from ``ctx.params``."""
    signature = inspect.signature(func)
    params = list(signature.parameters.values())
    at = next(i for i, p in enumerate(params) if p.kind is inspect.Parameter.VAR_KEYWORD)
    made = [
        inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=option, annotation=kind)
        for name, kind, option in LAUNCH_OPTIONS
    ]
    func.__signature__ = signature.replace(parameters=[*params[:at], *made, *params[at:]])
    return func


def items(text: str | None) -> list[str] | None:
    """A comma-separated option's items, stripped (None when not given or empty)."""
    return [item.strip() for item in text.split(",") if item.strip()] if text else None


def seed_list(text: str | None, flag: str = "--seeds") -> list[int] | None:
    """A comma-separated list of seeds (integers >= 0); None when not given."""
    if not text:
        return None
    if not all(s.isdigit() for s in items(text)):
        raise InputError(f"{flag} {text!r}: expected comma-separated integers >= 0, e.g. 3,4")
    return [int(s) for s in items(text)]


def _sbatch(given: list[str] | None) -> dict[str, str | bool]:
    """--sbatch KEY=VALUE / KEY items as submitit's additional_parameters ({key: value or True})."""
    found: dict[str, str | bool] = {}
    for item in given or []:
        key, eq, value = item.removeprefix("--").partition("=")
        if not _SBATCH_KEY.fullmatch(key) or (eq and not value):
            raise InputError(f"--sbatch {item!r}: expected KEY=VALUE or KEY, e.g. qos=high or exclusive")
        found[key] = value if eq else True
    return found


def launch_module():
    """rr_model.sweep.slurm, imported only where Slurm is used: submitit comes with the cluster extra, and a
    missing one is `cli.errors.run`'s one sentence naming that extra."""
    from rr_model.sweep import slurm

    return slurm


def resources(p: dict):
    """What each job of a Slurm sweep asks for (`rr_model.sweep.sbatch.Resources`), from the options `p`."""
    from rr_model.sweep.sbatch import Resources

    slurm = {k: p[k] for k in ("partition", "account", "gpus", "cpus", "max_timeouts", "nodes")}
    extra = {"sbatch": _sbatch(p["sbatch"]), "setup": tuple(p["setup"] or ())}
    return Resources(**slurm, time_min=p["time"], mem_gb=p["mem_gb"], **extra)


def submit(todo: list, out: Path, resources, per_run_files: bool, dry_run: bool, command: str) -> None:
    """Submit `todo` as a job array (or show it, with the sbatch script, under --dry-run: no submitit needed
    unless jobs are recorded for `out` already). `command` names the rr command in what is printed."""
    from rr_model.run.output_file import dataset_keys
    from rr_model.run.planning import families, memory_plans
    from rr_model.sweep.jobs import read_jobs
    from rr_model.sweep.sbatch import job_folder, part_path, sbatch_script

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
        world = resources.nodes * max(1, resources.gpus)
        echo_memory(*memory_plans(todo, world), world)
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


def check_launcher(launcher: Launcher, nodes: int, nproc: int) -> None:
    """Refuse the options of one launcher given to the other."""
    if launcher is Launcher.local and nodes > 1:
        raise InputError("--nodes is the Slurm launcher's; here one run spans --nproc processes")
    if launcher is Launcher.slurm and nproc > 1:
        raise InputError(
            "--nproc is the local launcher's; with --launcher slurm give --gpus per run (per node with --nodes)"
        )


def launch(runs, out: Path, p: dict, dry_run: bool, command: str) -> list[dict] | None:
    """Train the plan `runs` (`rr_model.run.planning.Runs`) where `p["launcher"]` says: here (the summary records,
    [] under --dry-run) or on Slurm (None: the jobs append their rows later). Every run's checks come first,
    dry run or not (`Runs.check`), so nothing starts that a later run would refuse."""
    check_launcher(p["launcher"], p["nodes"], p["nproc"])
    if p["launcher"] is Launcher.local:
        runs.check(p["nproc"], resume=True)  # a sweep continues its runs' checkpoints
        return train_here(runs.todo, out, p["nproc"], dry_run, command)
    if not p["per_run_files"]:  # a job of its own file checks that file when it starts
        # jobs run on other machines: the memory plan is checked against --gpu-memory only
        runs.check(p["nodes"] * max(1, p["gpus"]), resume=True, gpu_here=False)
    submit(runs.todo, out, resources(p), p["per_run_files"], dry_run, command)
    return None

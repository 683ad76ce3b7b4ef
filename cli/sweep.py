"""`rr sweep`: a whole plan of training runs, biggest first, resumable; here (one process per run) or on a
Slurm cluster (one submitit job per run)."""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path
from typing import Any

import typer

from cli.errors import known_errors
from cli.records import Format, echo_records
from cli.run_options import (
    CONFIG,
    DRY_RUN,
    OUT,
    RESULT_FORMATS,
    VARIANT,
    echo_memory,
    echo_plan,
    run_options,
    training_options,
)
from rr_analysis.comparison import POWER
from rr_analysis.numbers import BLANK, fixed, percent, significant
from rr_core.errors import InputError


class Launcher(str, Enum):
    local = "local"
    slurm = "slurm"


SIZES = typer.Option(
    None,
    "--sizes",
    help="Comma-separated sizes, e.g. 590M,1B. Default: the published sizes (every size of --ladder).",
    show_default=False,
)
AT = typer.Option(
    None,
    "--at",
    help="Comma-separated sizes past the published ladder, e.g. 3B (rr analyze confirm plans their seeds); "
    "their shapes come from --ladder.",
    show_default=False,
)
SEEDS = typer.Option(
    None,
    "--seeds",
    help="Comma-separated seeds, e.g. 3,4. Default: each size's published seeds (--ladder's seeds).",
    show_default=False,
)
EFFECT = typer.Option(
    None,
    "--effect",
    help=f"Instead of --seeds: add the seeds each size needs for {percent(POWER)} power on the primary "
    "(seed-paired) test "
    "to detect this gap in val_loss (rr analyze --power --effect), judged on --out (the published rows where "
    "it does not exist yet).",
    show_default=False,
)
SLURM = "Slurm (--launcher slurm)"
LAUNCHER = typer.Option(
    Launcher.local,
    "--launcher",
    help="local: one process per run here, in turn. slurm: one submitit job per run (one job array), "
    "requeued from its checkpoint when preempted or out of time.",
)
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
STATUS = typer.Option(
    False, "--status", help="List the sweep's jobs: id, run, state, step reached, log.", rich_help_panel=SLURM
)
CANCEL = typer.Option(False, "--cancel", help="Cancel the sweep's unfinished jobs.", rich_help_panel=SLURM)
_SBATCH_KEY = re.compile(r"[a-z][a-z0-9_-]*")


def _items(text: str | None) -> list[str] | None:
    return [item.strip() for item in text.split(",") if item.strip()] if text else None


def _sizes(sizes: str | None, at: str | None, ladder: Path | None) -> list[str]:
    """--sizes as given, or --at's sizes checked to lie past the published ladder, with shapes from --ladder."""
    from rr_core.ladder import beyond_published

    if at and sizes:
        raise InputError("--at names sizes past the published ladder, --sizes any size: give one, not both")
    return [beyond_published(a, ladder) for a in _items(at)] if at else _items(sizes)


def _seeds(text: str | None) -> list[int] | None:
    if not text:
        return None
    if not all(s.isdigit() for s in _items(text)):
        raise InputError(f"--seeds {text!r}: expected comma-separated integers >= 0, e.g. 3,4")
    return [int(s) for s in _items(text)]


def _sbatch(items: list[str] | None) -> dict[str, str | bool]:
    """--sbatch KEY=VALUE / KEY items as submitit's additional_parameters ({key: value or True})."""
    found: dict[str, str | bool] = {}
    for item in items or []:
        key, eq, value = item.removeprefix("--").partition("=")
        if not _SBATCH_KEY.fullmatch(key) or (eq and not value):
            raise InputError(f"--sbatch {item!r}: expected KEY=VALUE or KEY, e.g. qos=high or exclusive")
        found[key] = value if eq else True
    return found


def _effect_seeds(
    out: Path, sizes: list[str] | None, effect: float, variants: tuple, seeds: str | None
) -> dict[str, list[int]]:
    """The new seeds per size that `rr_analysis.stats.power.seeds_for_effect` asks for, printed with its reasons."""
    from rr_analysis.stats.power import seeds_for_effect
    from rr_core.sweepfile.dataset import load_sweep

    if seeds:
        raise InputError("--effect plans the seeds itself: give --effect or --seeds, not both")

    plan = seeds_for_effect(load_sweep(out if out.exists() else None), effect, sizes, variants)
    columns = ["size", "seeds_present", "seeds_needed", "seeds_to_add", "new_seeds", "gpu_minutes", "note"]
    title = f"rr sweep: seeds for {percent(POWER)} power on the seed-paired test at a gap of {significant(effect)} (seed_plan)"
    echo_records(plan[columns].astype(object).where(plan[columns].notna(), None).to_dict("records"),
                 Format.text, title=title, formats={"new_seeds": lambda s: ",".join(map(str, s)) or BLANK,
                 "gpu_minutes": lambda m: fixed(m, 0, grouped=True, none=BLANK)})  # fmt: skip
    return dict(zip(plan["size"], plan["new_seeds"], strict=True))


def _launch():
    """rr_model.sweep.slurm, imported only where Slurm is used: submitit comes with the cluster extra, and a
    missing one is `cli.errors.run`'s one sentence naming that extra."""
    from rr_model.sweep import slurm as launch

    return launch


def _status_or_cancel(out: Path, status: bool, cancel: bool) -> None:
    if status and cancel:
        raise InputError("--status and --cancel: give one of them")
    from rr_model.sweep.jobs import state_path

    launch = _launch()
    if cancel:
        ids = launch.cancel_jobs(out)
        typer.echo(f"rr sweep: asked {len(ids)} job(s) to stop: {' '.join(ids) or BLANK}")
        return
    rows = launch.job_status(out)
    if not rows:
        typer.echo(f"rr sweep: no jobs recorded in {state_path(out)}")
        return
    title = f"rr sweep: jobs of {out} ({state_path(out)})"
    echo_records(
        rows, Format.text, title=title, formats={"step": lambda s: "unreadable" if s is None else str(s)}
    )


def _resources(p: dict):
    """What each job of a Slurm sweep asks for (`rr_model.sweep.sbatch.Resources`), from the options `p`."""
    from rr_model.sweep.sbatch import Resources

    slurm = {k: p[k] for k in ("partition", "account", "gpus", "cpus", "max_timeouts", "nodes")}
    extra = {"sbatch": _sbatch(p["sbatch"]), "setup": tuple(p["setup"] or ())}
    return Resources(**slurm, time_min=p["time"], mem_gb=p["mem_gb"], **extra)


def _slurm(todo: list, out: Path, resources, per_run_files: bool, dry_run: bool) -> None:
    """Submit `todo` as a job array (or show it, with the sbatch script, under --dry-run: no submitit needed
    unless jobs are recorded for `out` already)."""
    from rr_model.planning import dataset_keys, memory_plans
    from rr_model.sweep.jobs import read_jobs
    from rr_model.sweep.sbatch import job_folder, part_path, sbatch_script

    if per_run_files:
        todo = [cfg for cfg in todo if cfg.key not in dataset_keys(part_path(out, cfg.key))]
    if read_jobs(out):
        launch = _launch()
        busy = launch.active_keys(launch.job_status(out))
        if busy & {cfg.key for cfg in todo}:
            todo = [cfg for cfg in todo if cfg.key not in busy]
            typer.echo("rr sweep: runs with a pending or running job are not submitted again (see --status)")
    if not todo:
        return
    if dry_run:
        jobs = [{"job": i, "size": c.size, "variant": c.variant, "seed": c.seed, "steps": c.steps}
                for i, c in enumerate(todo)]  # fmt: skip
        echo_records(jobs, Format.text, title=f"rr sweep: {len(todo)} job(s) would be submitted")
        typer.echo(f"\nsbatch script (submitit writes it under {job_folder(out)}):\n")
        typer.echo(sbatch_script(out, resources, len(todo)))
        world = resources.nodes * max(1, resources.gpus)
        echo_memory(*memory_plans(todo, world), world)
        return
    launch = _launch()
    entries = launch.submit_runs(todo, out, launch.slurm_executor(out, resources), per_run_files)
    keys = ("job_id", "size", "variant", "seed", "out", "log")
    echo_records([{k: e[k] for k in keys} for e in entries], Format.text, title="rr sweep: submitted")
    typer.echo(f"rr sweep: follow them with rr sweep --status --out {out}; stop them with --cancel")


def _local(todo: list, out: Path, nproc: int, dry_run: bool, reference: str) -> None:
    """Train `todo` here, one process each (or show the plan under --dry-run); exit 1 if any run failed."""
    from rr_model.planning import describe_runs, memory_plans
    from rr_model.sweep.local import run_sweep

    if dry_run:
        if todo:
            echo_plan(describe_runs(todo), f"rr sweep: plan for {out}")
            echo_memory(*memory_plans(todo, nproc), nproc)
        return
    summary = run_sweep(todo, out, nproc)
    if summary:
        echo_records(summary, Format.text, title=f"rr sweep: {out}", formats=RESULT_FORMATS)
    if out.exists():
        _closing_table(out, reference)
    if any(r["status"] not in ("ok", "in file") for r in summary):
        raise typer.Exit(1)


def _closing_table(out: Path, reference: str) -> None:
    """The analysis table of `out` against the sweep's reference, rendered in-process; a file that comparison
    cannot read (a pilot without the reference, one size) says so in one line and points to rr analyze's
    options."""
    from rr_analysis.stats.gap_tests import gap_table
    from rr_analysis.tables.render import render
    from rr_analysis.views.registry import VIEWS
    from rr_core.errors import RRError
    from rr_core.sweepfile.dataset import load_sweep

    try:
        typer.echo(render(gap_table(load_sweep(out), reference=reference), VIEWS["table"], "text", None))
    except RRError as e:
        typer.echo(
            f"rr sweep: no closing table ({e}); see rr analyze --data {out} --reference NAME", err=True
        )


def _plan(out: Path, p: dict, options: dict):
    """The sweep's runs (to train, already in `out`) from the options `p`: sizes or --at, seeds or --effect,
    variants; a reproduction checked to be one."""
    from rr_core.variants import compared
    from rr_model.reproduce import check_reproducible
    from rr_model.sweep.local import plan_sweep

    variants, chosen = (
        tuple(p["variant"] or compared(p["reference"])),
        _sizes(p["sizes"], p["at"], p["ladder"]),
    )
    effect, seeds = p["effect"], p["seeds"]
    plan_seeds = _seeds(seeds) if effect is None else _effect_seeds(out, chosen, effect, variants, seeds)
    runs = plan_sweep(out, chosen, plan_seeds, variants, **options)
    if p["reproduce"]:
        check_reproducible(runs.todo + runs.skipped, out)
    return runs


def _default_out(reproduce: bool, ladder: str | None) -> Path:
    """The file a sweep writes without --out: the reproduction file, the ladder file's, or the published."""
    from rr_model.reproduce import DEFAULT_REPRODUCTION
    from rr_model.run_config import default_out

    return DEFAULT_REPRODUCTION if reproduce else default_out(ladder)


@training_options("sweep")
def sweep(
    ctx: typer.Context,
    sizes: str | None = SIZES,
    at: str | None = AT,
    seeds: str | None = SEEDS,
    effect: float | None = EFFECT,
    variant: list[str] = VARIANT,
    out: Path | None = OUT,
    nproc: int = typer.Option(1, "--nproc", min=1, help="Processes (GPUs) per run, launched with torchrun."),
    dry_run: bool = DRY_RUN,
    launcher: Launcher = LAUNCHER,
    partition: str | None = PARTITION,
    account: str | None = ACCOUNT,
    time: int = TIME,
    gpus: int = GPUS,
    cpus: int | None = CPUS,
    mem_gb: int | None = MEM_GB,
    sbatch: list[str] | None = SBATCH,
    setup: list[str] | None = SETUP,
    max_timeouts: int = MAX_TIMEOUTS,
    per_run_files: bool = PER_RUN_FILES,
    status: bool = STATUS,
    cancel: bool = CANCEL,
    nodes: int = NODES,
    config: Path | None = CONFIG,
    **run: Any,
) -> None:
    """Train a plan of runs (default: the published sweep) and append a row per run.

    Runs already in the file are skipped and interrupted ones resume from their checkpoints, so a sweep
    is restarted by running it again. With the local launcher each run trains in its own process, as `rr train`
    would (a crash loses that run only); it ends with a summary and the analysis table of the file, exit 1 if any run
    failed or crashed. With `--launcher slurm` each run is a submitit job that appends its row to the same
    file when it finishes (or to its own file, `--per-run-files`); `--status` and `--cancel` follow and stop
    them. `--effect` plans the seeds a target gap needs instead of `--seeds`.
    """
    reproduce, ladder = run["reproduce"], run["ladder"]
    out = out or _default_out(reproduce, ladder)
    options = run_options(ctx)
    with known_errors():
        if status or cancel:
            return _status_or_cancel(out, status, cancel)
        runs = _plan(out, ctx.params, options)
        todo = runs.todo
        typer.echo(f"rr sweep: {len(todo)} run(s) to train, {len(runs.skipped)} already in {out}")
        if launcher is Launcher.local and nodes > 1:
            raise InputError("--nodes is the Slurm launcher's; here one run spans --nproc processes")
        if launcher is Launcher.local:
            runs.check(nproc)  # every run's checks before the first trains, as under --dry-run
            return _local(todo, out, nproc, dry_run, run["reference"])
        if nproc > 1:
            raise InputError(
                "--nproc is the local launcher's; with --launcher slurm give --gpus per run (per node with --nodes)"
            )
        if not per_run_files:  # a job of its own file checks that file when it starts
            runs.check(nodes * max(1, gpus), gpu_here=False)  # jobs run on other machines: --gpu-memory only
        _slurm(todo, out, _resources(ctx.params), per_run_files, dry_run)


def register(app: typer.Typer) -> None:
    app.command()(sweep)

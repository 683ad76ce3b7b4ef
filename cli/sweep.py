"""`rr sweep`: a whole plan of training runs, biggest first, resumable; here (one process per run) or on a
Slurm cluster (one submitit job per run). Its own options are `rr_model.sweep.local.Sweep`'s fields, planned
by `sweep_runs`; --effect is declared here, as its seeds come from rr_analysis's power analysis."""

from __future__ import annotations

from pathlib import Path

import typer

from cli.config_file import CONFIG, with_config
from cli.errors import known_errors
from cli.fields import dataclass_options
from cli.launchers import show_launched
from cli.records import Format, echo_records
from cli.run_options import PANEL
from rr_analysis.comparison import POWER, Comparison
from rr_analysis.numbers import BLANK, fixed, percent, significant
from rr_core.errors import InputError
from rr_model.config import TrainConfig
from rr_model.sweep.launch import Launch, launch, slurm_module
from rr_model.sweep.local import Sweep

EFFECT = typer.Option(
    None,
    "--effect",
    help=f"Instead of --seed: add the seeds each size needs for {percent(POWER)} power on the primary "
    "(seed-paired) test "
    "to detect this gap in val_loss (rr analyze --power --effect), judged on --out (the published rows where "
    "it does not exist yet).",
    show_default=False,
)


def _effect_seeds(
    out: Path, effect: float, reference: str, sizes: list[str] | None, variants: tuple
) -> dict[str, list[int]]:
    """The new seeds per size that `rr_analysis.stats.power.seeds_for_effect` asks for, printed with its
    reasons: `rr sweep --effect`'s seeds (`rr_model.sweep.local.sweep_runs`' `effect_seeds`)."""
    from rr_analysis.stats.power import seeds_for_effect
    from rr_core.sweepfile.dataset import load_sweep

    data = load_sweep(out if out.exists() else None)
    plan = seeds_for_effect(data, effect, sizes, variants, Comparison(reference))
    columns = ["size", "seeds_present", "seeds_needed", "seeds_to_add", "new_seeds", "gpu_minutes", "note"]
    title = f"rr sweep: seeds for {percent(POWER)} power on the seed-paired test at a gap of {significant(effect)} (seed_plan)"
    echo_records(
        plan[columns].astype(object).where(plan[columns].notna(), None).to_dict("records"),
        Format.text,
        title=title,
        formats={
            "new_seeds": lambda s: ",".join(map(str, s)) or BLANK,
            "gpu_minutes": lambda m: fixed(m, 0, grouped=True, none=BLANK),
        },
    )
    return dict(zip(plan["size"], plan["new_seeds"], strict=True))


def _status_or_cancel(out: Path, status: bool, cancel: bool) -> None:
    if status and cancel:
        raise InputError("--status and --cancel: give one of them")
    from rr_model.sweep.jobs import state_path

    slurm = slurm_module()
    if cancel:
        ids = slurm.cancel_jobs(out)
        typer.echo(f"rr sweep: asked {len(ids)} job(s) to stop: {' '.join(ids) or BLANK}")
        return
    rows = slurm.job_status(out)
    if not rows:
        typer.echo(f"rr sweep: no jobs recorded in {state_path(out)}")
        return
    title = f"rr sweep: jobs of {out} ({state_path(out)})"
    echo_records(
        rows, Format.text, title=title, formats={"step": lambda s: "unreadable" if s is None else str(s)}
    )


def _closing_table(out: Path, reference: str) -> None:
    """The analysis table of `out` against the sweep's reference, rendered in-process at the terminal's width
    (as `rr analyze` draws it: columns dropped by rank, named under it); a file that comparison cannot read
    (a pilot without the reference, one size) says so in one line and points to rr analyze's options."""
    import shutil

    from rr_analysis.stats.gap_tests import gap_table
    from rr_analysis.tables.render import render
    from rr_analysis.views.registry import VIEWS
    from rr_core.errors import RRError
    from rr_core.sweepfile.dataset import load_sweep

    try:
        table = gap_table(load_sweep(out), comparison=Comparison(reference))
        typer.echo(render(table, VIEWS["table"], "text", shutil.get_terminal_size().columns))
    except RRError as e:
        typer.echo(
            f"rr sweep: no closing table ({e}); see rr analyze --data {out} --reference NAME", err=True
        )


@dataclass_options(Sweep, into="plan", place={"effect": "seeds"})
@dataclass_options(TrainConfig, "sweep", into="run", panel=PANEL, build=dict)
@dataclass_options(Launch, into="how")
def sweep(
    ctx: typer.Context,
    plan: Sweep = Sweep(),
    effect: float | None = EFFECT,
    config: Path | None = CONFIG,
    how: Launch = Launch(),
    run: dict | None = None,
) -> None:
    """Train a plan of runs (default: the published sweep) and append a row per run.

    Runs already in the file are skipped and interrupted ones resume from their checkpoints, so a sweep
    is restarted by running it again. With the local launcher each run trains in its own process, as `rr train`
    would (a crash loses that run only); it ends with a summary and the analysis table of the file, exit 1 if any run
    failed or crashed. With `--launcher slurm` each run is a submitit job that appends its row to the same
    file when it finishes (or to its own file, `--per-run-files`); `--status` and `--cancel` follow and stop
    them. `--effect` plans the seeds a target gap needs instead of `--seed`; `--budgets` trains several
    budgets per run as cooldown branches.
    """
    from functools import partial

    from rr_model.sweep.local import sweep_runs

    out = plan.file(run["reproduce"], run["ladder"])
    options = with_config(ctx, run)
    with known_errors():
        if plan.status or plan.cancel:
            return _status_or_cancel(out, plan.status, plan.cancel)
        effect_seeds = None if effect is None else partial(_effect_seeds, out, effect, run["reference"])
        runs = sweep_runs(plan, effect_seeds=effect_seeds, **options)
        typer.echo(f"rr sweep: {len(runs.todo)} run(s) to train, {len(runs.skipped)} already in {out}")
        done = launch(runs, out, how, plan.dry_run)  # here, on Slurm, or (dry run) the plan
        show_launched(done, out, plan.dry_run, "sweep")
        if done.summary is None or plan.dry_run:
            return
        if out.exists():
            _closing_table(out, run["reference"])
        if any(r["status"] not in ("ok", "in file") for r in done.summary):
            raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command()(sweep)

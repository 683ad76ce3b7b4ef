"""`rr sweep`: a whole plan of training runs, biggest first, resumable; here (one process per run) or on a
Slurm cluster (one submitit job per run)."""

from __future__ import annotations

from pathlib import Path

import typer

from cli.config_file import CONFIG, with_config
from cli.errors import known_errors
from cli.fields import dataclass_options, spelled, spelling
from cli.launchers import items, launch, seed_list
from cli.records import Format, echo_records
from cli.run_options import DRY_RUN, OUT, PANEL, VARIANT
from rr_analysis.comparison import POWER
from rr_analysis.numbers import BLANK, fixed, percent, significant
from rr_core.errors import InputError
from rr_model.config import TrainConfig
from rr_model.sweep.launch import SLURM, Launch

SIZE = typer.Option(
    None,
    "--size",
    help="A size to train (repeatable, or comma-separated: --size 590M,1B). Default: the published sizes "
    "(every size of --ladder).",
    show_default=False,
)
AT = typer.Option(
    None,
    "--at",
    help="Comma-separated sizes past the published ladder, e.g. 3B (rr analyze confirm plans their seeds); "
    "their shapes come from --ladder.",
    show_default=False,
)
SEED = typer.Option(
    None,
    "--seed",
    help="A seed to train (repeatable, or comma-separated: --seed 3,4). Default: each size's published seeds "
    "(--ladder's seeds).",
    show_default=False,
)
EFFECT = typer.Option(
    None,
    "--effect",
    help=f"Instead of --seed: add the seeds each size needs for {percent(POWER)} power on the primary "
    "(seed-paired) test "
    "to detect this gap in val_loss (rr analyze --power --effect), judged on --out (the published rows where "
    "it does not exist yet).",
    show_default=False,
)
BUDGETS = typer.Option(
    None,
    "--budgets",
    help="Comma-separated multiples of each size's budget, e.g. 1,2,4 (with --schedule wsd): each run trains "
    "the largest, with a cooldown branch ending at each other one, a row each (docs/training.md, Budgets).",
    show_default=False,
)
STATUS = typer.Option(
    False, "--status", help="List the sweep's jobs: id, run, state, step reached, log.", rich_help_panel=SLURM
)
CANCEL = typer.Option(False, "--cancel", help="Cancel the sweep's unfinished jobs.", rich_help_panel=SLURM)


def _sizes(sizes: list[str] | None, at: str | None, ladder: Path | None) -> list[str] | None:
    """--size as given, or --at's sizes checked to lie past the published ladder, with shapes from --ladder."""
    from rr_core.ladder import beyond_published

    if at and sizes:
        raise InputError("--at names sizes past the published ladder, --size any size: give one, not both")
    return [beyond_published(a, ladder) for a in items(at)] if at else sizes


def _effect_seeds(
    out: Path,
    sizes: list[str] | None,
    effect: float,
    variants: tuple,
    seeds: list[str] | None,
    reference: str,
) -> dict[str, list[int]]:
    """The new seeds per size that `rr_analysis.stats.power.seeds_for_effect` asks for, printed with its reasons."""
    from rr_analysis.comparison import Comparison
    from rr_analysis.stats.power import seeds_for_effect
    from rr_core.sweepfile.dataset import load_sweep

    if seeds:
        raise InputError("--effect plans the seeds itself: give --effect or --seed, not both")

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
    from rr_model.sweep.launch import slurm_module

    launch = slurm_module()
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


def _closing_table(out: Path, reference: str) -> None:
    """The analysis table of `out` against the sweep's reference, rendered in-process at the terminal's width
    (as `rr analyze` draws it: columns dropped by rank, named under it); a file that comparison cannot read
    (a pilot without the reference, one size) says so in one line and points to rr analyze's options."""
    import shutil

    from rr_analysis.comparison import Comparison
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


def _plan(out: Path, p: dict, sizes: list[str] | None, seeds: list[str] | None, options: dict):
    """The sweep's runs (to train, already in `out`) from the options `p`: sizes or --at, seeds or --effect,
    variants; a reproduction checked to be one."""
    from rr_core.variants import compared
    from rr_model.run.reproduce import check_reproducible
    from rr_model.sweep.local import plan_sweep

    variants, chosen = (
        tuple(p["variant"] or compared(options["reference"])),
        _sizes(sizes, p["at"], options["ladder"]),
    )
    effect = p["effect"]
    plan_seeds = (
        seed_list(seeds, "--seed")
        if effect is None
        else _effect_seeds(out, chosen, effect, variants, seeds, options["reference"])
    )
    runs = plan_sweep(out, chosen, plan_seeds, variants, _multiples(p["budgets"]), **options)
    if options["reproduce"]:
        check_reproducible(runs.todo + runs.skipped, out)
    return runs


def _multiples(text: str | None) -> list[float] | None:
    """--budgets' multiples: numbers > 0; None when not given."""
    try:
        found = [float(item) for item in items(text) or []]
    except ValueError:
        found = []
    if text and not (found and all(0 < k < float("inf") for k in found)):
        raise InputError(f"--budgets {text!r}: expected comma-separated multiples > 0, e.g. 1,2,4")
    return found or None


def _default_out(reproduce: bool, ladder: str | None) -> Path:
    """The file a sweep writes without --out: the reproduction file, the ladder file's, or the published."""
    from rr_model.config import default_out
    from rr_model.run.reproduce import DEFAULT_REPRODUCTION

    return DEFAULT_REPRODUCTION if reproduce else default_out(ladder)


@dataclass_options(TrainConfig, "sweep", into="run", panel=PANEL, build=dict)
@dataclass_options(Launch, into="how")
def sweep(
    ctx: typer.Context,
    size: list[str] = SIZE,
    sizes: list[str] | None = spelling("size", "--sizes", multiple=True),
    at: str | None = AT,
    seed: list[str] = SEED,
    seeds: list[str] | None = spelling("seed", "--seeds", multiple=True),
    effect: float | None = EFFECT,
    budgets: str | None = BUDGETS,
    variant: list[str] = VARIANT,
    out: Path | None = OUT,
    dry_run: bool = DRY_RUN,
    status: bool = STATUS,
    cancel: bool = CANCEL,
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
    reproduce, ladder = run["reproduce"], run["ladder"]
    out = out or _default_out(reproduce, ladder)
    options = with_config(ctx, run)
    with known_errors():
        if status or cancel:
            return _status_or_cancel(out, status, cancel)
        runs = _plan(out, ctx.params, spelled(ctx, "size", size), spelled(ctx, "seed", seed), options)
        typer.echo(f"rr sweep: {len(runs.todo)} run(s) to train, {len(runs.skipped)} already in {out}")
        summary = launch(runs, out, how, dry_run, "sweep")
        if summary is None or dry_run:
            return
        if out.exists():
            _closing_table(out, run["reference"])
        if any(r["status"] not in ("ok", "in file") for r in summary):
            raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command()(sweep)

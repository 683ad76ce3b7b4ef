"""`rr tune`: each variant at its own learning rate, chosen on selection seeds, then compared on others
(`rr_model.sweep.tuning_runs.tune`, one call that says each step as it happens); here or on Slurm, resumable
as `rr sweep` is. Its own options are `rr_model.sweep.tuning_runs.Tuning`'s fields."""

from __future__ import annotations

from pathlib import Path

import typer

from cli.config_file import CONFIG, with_config
from cli.errors import known_errors
from cli.fields import dataclass_options
from cli.launchers import show_launched
from cli.records import Format, echo_records
from cli.run_options import PANEL
from rr_model.config import TrainConfig
from rr_model.sweep.launch import Launch
from rr_model.sweep.tuning_runs import Tuning


def _echo_choices(picked: dict, size: str) -> None:
    """The rate each variant's selection runs picked, the mean at every rate, and the edge advice."""
    rows = []
    for variant, c in picked.items():
        grid = "" if c is None else ", ".join(f"{lr:g}: {c.means[lr]:.4f}" for lr in c.grid if lr in c.means)
        rows.append(
            {
                "variant": variant,
                "chosen_lr": None if c is None else f"{c.lr:g}",
                "mean val_loss by lr": grid,
                "incomplete": "" if c is None else ", ".join(f"{lr:g}" for lr in c.incomplete),
            }
        )
    echo_records(rows, Format.text, title=f"rr tune: the rate each variant's selection runs pick ({size})")
    for variant, c in picked.items():
        if c is not None and c.edge:
            typer.echo(f"rr tune: warning: {variant}: {c.advice}", err=True)


@dataclass_options(Tuning, into="plan")
@dataclass_options(TrainConfig, "tune", into="run", panel=PANEL, build=dict)
@dataclass_options(Launch, into="how")
def tune(
    ctx: typer.Context,
    plan: Tuning,
    config: Path | None = CONFIG,
    how: Launch = Launch(),
    run: dict | None = None,
) -> None:
    """Tune each variant's learning rate on selection seeds, then compare the variants at their own rates.

    Trains every variant at every --lr on --select-seeds, picks each variant's rate by its mean val_loss over
    those seeds (a best rate at the grid's edge is flagged: extend the grid), then trains --seed at each
    variant's chosen rate. Rows record their lr and role (selection or comparison); `rr analyze tuning
    --data OUT` tests the gap at the tuned rates on the comparison seeds only. Runs already in the file are
    skipped and interrupted ones resume, so the same command continues a tuning (on Slurm: run it again once
    the selection jobs are done to submit the comparison).
    """
    from rr_model.sweep.tuning_runs import one_size
    from rr_model.sweep.tuning_runs import tune as tune_runs

    out = plan.file(run["ladder"])
    with known_errors():
        ctx.params["size"] = one_size(plan.size)  # --config's record: one size
        options = with_config(ctx, run)
        tuned = tune_runs(plan, how, watch=_watch(out, plan.dry_run), **options)
        if tuned.waiting is not None:
            typer.echo(f"rr tune: {tuned.waiting}")
    if tuned.crashed:
        typer.echo("rr tune: a selection run crashed: run the same command again to finish it", err=True)
        raise typer.Exit(1)
    if tuned.comparison is not None and tuned.comparison.summary is not None and not plan.dry_run:
        typer.echo(f"rr tune: the comparison at the tuned rates: rr analyze tuning --data {out}")
        if any(r["status"] not in ("ok", "in file") for r in tuned.comparison.summary):
            raise typer.Exit(1)


def _watch(out: Path, dry_run: bool):
    """What rr tune prints at each step of the tuning (`rr_model.sweep.tuning_runs.Watch`), as it happens:
    each phase's header before it trains, what its launcher did, and the rates chosen."""
    from rr_model.sweep.tuning_runs import Watch

    class Said(Watch):
        def starting(self, phase, runs) -> None:
            typer.echo(
                f"rr tune: {phase}: {len(runs.todo)} run(s) to train, {len(runs.skipped)} already in {out}"
            )

        def launched(self, phase, done) -> None:
            show_launched(done, out, dry_run, "tune")

        def chosen(self, size, picked) -> None:
            _echo_choices(picked, size)

    return Said()


def register(app: typer.Typer) -> None:
    app.command()(tune)

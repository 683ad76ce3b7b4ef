"""`rr tune`: each variant at its own learning rate, chosen on selection seeds, then compared on others
(`rr_model.sweep.tuning_runs`); here or on Slurm, resumable as `rr sweep` is."""

from __future__ import annotations

from pathlib import Path

import typer

from cli.config_file import CONFIG, with_config
from cli.errors import known_errors
from cli.fields import dataclass_options, spelled, spelling
from cli.launchers import items, launch, seed_list
from cli.records import Format, echo_records
from cli.run_options import DRY_RUN, PANEL, VARIANT
from rr_core.errors import InputError
from rr_model.config import TrainConfig
from rr_model.sweep.launch import Launch

SIZE = typer.Option(..., "--size", help="The size to tune, e.g. 150M (a --ladder file's size with --ladder).")
LR = typer.Option(
    ...,
    "--lr",
    help="The grid of peak learning rates, comma-separated, e.g. 1e-4,2e-4,4e-4,8e-4 (the recipe's is 2e-4).",
)
SELECT_SEEDS = typer.Option(
    ..., "--select-seeds", help="Seeds that pick each variant's rate (every rate of the grid), e.g. 0,1."
)
SEED = typer.Option(
    ...,
    "--seed",
    help="A seed that compares the variants, each at its chosen rate (repeatable, or comma-separated: --seed "
    "2,3,4); none of --select-seeds.",
)
OUT = typer.Option(
    None,
    "--out",
    help="Dataset to append the rows to (each records its lr and role). Default: data/tune.csv "
    "(data/LADDER-STEM-tune.csv with --ladder).",
    show_default=False,
)


def _rates(text: str) -> list[float]:
    """--lr's rates: finite numbers > 0."""
    rates = []
    for item in items(text) or []:
        try:
            rate = float(item)
        except ValueError:
            rate = float("nan")
        if not 0 < rate < float("inf"):
            raise InputError(
                f"--lr {text!r}: {item!r} is not a learning rate (a finite number > 0, e.g. 4e-4)"
            )
        rates.append(rate)
    return rates


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


@dataclass_options(TrainConfig, "tune", into="run", panel=PANEL, build=dict)
@dataclass_options(Launch, into="how")
def tune(
    ctx: typer.Context,
    size: str = SIZE,
    sizes: str | None = spelling("size", "--sizes"),
    lr: str = LR,
    select_seeds: str = SELECT_SEEDS,
    seed: list[str] = SEED,
    seeds: list[str] | None = spelling("seed", "--seeds", multiple=True),
    variant: list[str] = VARIANT,
    out: Path | None = OUT,
    dry_run: bool = DRY_RUN,
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
    options = with_config(ctx, run)
    out = out or _default_out(run["ladder"])
    size = spelled(ctx, "size", size)
    with known_errors():
        rates, chosen_by, compared_on = (
            _rates(lr),
            seed_list(select_seeds, "--select-seeds"),
            seed_list(spelled(ctx, "seed", seed), "--seed"),
        )
        picked, output = _select(ctx, how, out, size, rates, chosen_by or [], compared_on or [], options)
        if picked is None:
            return
        compared = _compare(ctx, how, out, output, size, picked, compared_on, options)
    if compared is not None and not dry_run:
        typer.echo(f"rr tune: the comparison at the tuned rates: rr analyze tuning --data {out}")
        if any(r["status"] not in ("ok", "in file") for r in compared):
            raise typer.Exit(1)


def _default_out(ladder: str | None) -> Path:
    from rr_model.sweep.tuning_runs import default_tune_out

    return default_tune_out(ladder)


def _select(
    ctx: typer.Context,
    how: Launch,
    out: Path,
    size: str,
    rates: list,
    chosen_by: list,
    compared_on: list,
    options,
):
    """Phase 1: train (or plan, or submit) the grid on the selection seeds; then each variant's choice and the
    file's reading, or (None, None) when the comparison has to wait for selection rows still to come."""
    from rr_core.variants import compared
    from rr_model.sweep.tuning_runs import check_grid, choices, selection_runs

    check_grid(rates, chosen_by, compared_on)
    variants = tuple(ctx.params["variant"] or compared(ctx.params["reference"]))
    first = selection_runs(out, size, variants, rates, chosen_by, **options)
    size = (first.todo or first.skipped)[0].size  # as the ladder spells it
    typer.echo(
        f"rr tune: selection: {len(first.todo)} run(s) to train, {len(first.skipped)} already in {out}"
    )
    summary = launch(first, out, how, ctx.params["dry_run"], "tune")
    if first.todo and (summary is None or ctx.params["dry_run"]):
        typer.echo(
            f"rr tune: the comparison runs ({len(compared_on)} seed(s) x {len(variants)} variant(s), each at "
            "its chosen rate) are planned once every selection row is in: run the same command again then"
        )
        return None, None
    if any(r["status"] == "crashed" for r in summary or []):
        typer.echo("rr tune: a selection run crashed: run the same command again to finish it", err=True)
        raise typer.Exit(1)
    first.output.refresh()
    picked = choices(first.output, size, variants, rates, chosen_by)
    _echo_choices(picked, size)
    if unpicked := [v for v, c in picked.items() if c is None]:
        raise InputError(
            f"no rate of {', '.join(unpicked)} finished on every selection seed (each diverged or failed): "
            "try lower rates with --lr"
        )
    return picked, first.output


def _compare(
    ctx: typer.Context, how: Launch, out: Path, output, size: str, picked: dict, compared_on: list, options
) -> list | None:
    """Phase 2: train (or plan, or submit) each variant at its chosen rate on the comparison seeds."""
    from rr_model.sweep.tuning_runs import comparison_runs

    chosen = {v: c.lr for v, c in picked.items()}
    second = comparison_runs(output, size, chosen, compared_on, **options)
    typer.echo(
        f"rr tune: comparison: {len(second.todo)} run(s) to train, {len(second.skipped)} already in {out}"
    )
    return launch(second, out, how, ctx.params["dry_run"], "tune")


def register(app: typer.Typer) -> None:
    app.command()(tune)

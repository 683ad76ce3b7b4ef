"""`rr train`: new seeds for the dataset, trained under the published recipe."""

from __future__ import annotations

from pathlib import Path

import typer

from cli.config_file import CONFIG, with_config
from cli.errors import known_errors
from cli.fields import dataclass_options, spelled, spelling
from cli.run_options import DRY_RUN, OUT, PANEL, VARIANT, train_and_report
from rr_model.config import TrainConfig


@dataclass_options(TrainConfig, "train", into="run", panel=PANEL, build=dict)
def train(
    ctx: typer.Context,
    size: str = typer.Option(
        ..., "--size", help="Ladder size to train: 60M, 150M, 320M, 590M, 1B or tiny (or one of --ladder's)."
    ),
    sizes: str | None = spelling("size", "--sizes"),
    variant: list[str] = VARIANT,
    seed: int | None = typer.Option(
        None,
        "--seed",
        min=0,
        help="Seed to train. Default: the lowest seed the file lacks for these variants.",
    ),
    seeds: int | None = spelling("seed", "--seeds"),
    out: Path | None = OUT,
    resume: bool = typer.Option(False, "--resume", help="Continue runs from their checkpoints."),
    dry_run: bool = DRY_RUN,
    config: Path | None = CONFIG,
    run: dict | None = None,
) -> None:
    """Train the next seed of a size for every compared variant and append one row per run.

    Runs already in the file are skipped. Each row is validated and appended under a file lock, with a
    provenance record in the sidecar `OUT.runs.jsonl`. Exit 0 when every run finished, 1 when one diverged.
    """
    from rr_core.variants import compared
    from rr_model.config import default_out
    from rr_model.run.planning import plan_runs

    out = out or default_out(run["ladder"])
    with known_errors():
        variants = tuple(variant or compared(run["reference"]))
        size, seed = spelled(ctx, "size", size), spelled(ctx, "seed", seed)
        runs = plan_runs(out, size, variants, seed, **with_config(ctx, run))
    train_and_report("train", runs, out, resume=resume, dry_run=dry_run)


def register(app: typer.Typer) -> None:
    app.command()(train)

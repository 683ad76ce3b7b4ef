"""`rr train`: new seeds for the dataset, trained under the published recipe."""

from __future__ import annotations

from pathlib import Path

import typer

from cli.config_file import CONFIG, with_config
from cli.fields import dataclass_options, spelled, spelling
from cli.run_options import DRY_RUN, OUT, PANEL, RESUME, VARIANT, report_training
from rr_core.ladder import LADDER, size_words
from rr_model.config import TrainConfig


@dataclass_options(TrainConfig, "train", into="run", panel=PANEL, build=dict)
def train(
    ctx: typer.Context,
    size: list[str] = typer.Option(
        ...,
        "--size",
        help=f"Ladder size to train: {size_words(list(LADDER))} (or one of --ladder's); repeatable, or "
        "comma-separated: each is trained.",
    ),
    sizes: list[str] | None = spelling("size", "--sizes", multiple=True),
    variant: list[str] = VARIANT,
    seed: int | None = typer.Option(
        None,
        "--seed",
        min=0,
        help="Seed to train. Default: the lowest seed the file lacks for these variants.",
    ),
    seeds: int | None = spelling("seed", "--seeds"),
    out: Path | None = OUT,
    resume: bool = RESUME,
    dry_run: bool = DRY_RUN,
    config: Path | None = CONFIG,
    run: dict | None = None,
) -> None:
    """Train the next seed of a size for every compared variant and append one row per run.

    Runs already in the file are skipped. Each row is validated and appended under a file lock, with a
    provenance record in the sidecar `OUT.runs.jsonl`. Exit 0 when every run finished, 1 when one diverged.
    """
    from functools import partial

    from rr_model.config import default_out
    from rr_model.run.entry import train_command

    out = out or default_out(run["ladder"])
    sizes, seed = spelled(ctx, "size", size), spelled(ctx, "seed", seed)
    ctx.params["size"] = sizes[0] if len(sizes) == 1 else sizes  # --config's record: one size as a string
    options = with_config(ctx, run)
    train = partial(train_command, out, sizes, variant, seed, resume=resume, dry_run=dry_run, **options)
    report_training("train", out, train)


def register(app: typer.Typer) -> None:
    app.command()(train)

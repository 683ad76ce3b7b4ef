"""`rr reproduce`: train a published run again, under the published recipe, into a reproduction file."""

from __future__ import annotations

from pathlib import Path

import typer

from cli.fields import dataclass_options, field_option
from cli.run_options import PANEL, report_training
from rr_core.ladder import PUBLISHED_SIZES, size_words
from rr_model.config import TrainConfig
from rr_model.run.entry import Training

VARIANT = typer.Option(
    None,
    "--variant",
    help="Reproduce only this variant (repeatable). Default: every variant published at that seed.",
    show_default=False,
)
OUT = typer.Option(
    None,
    "--out",
    help="Reproduction file to append the rows to; never the published dataset. Default: data/reproduction.csv.",
    show_default=False,
)  # the default is rr_model.run.reproduce.DEFAULT_REPRODUCTION


@dataclass_options(TrainConfig, "reproduce", into="run", panel=PANEL, build=dict)
def reproduce(
    size: str = typer.Option(..., "--size", help=f"Published size: {size_words(PUBLISHED_SIZES)}."),
    seed: int = typer.Option(..., "--seed", min=0, help="Published seed to train again."),
    variant: list[str] = VARIANT,
    out: Path | None = OUT,
    resume: bool = field_option(Training, "resume"),
    dry_run: bool = field_option(Training, "dry_run"),
    run: dict | None = None,
) -> None:
    """Train a published run again and append its row to a reproduction file; compare the two with
    `rr analyze reproduction --data OUT`.

    The recipe is the published one (steps, precision, data, optimiser); the recipe guard refuses any other.
    Each row gets a provenance record in OUT.runs.jsonl (torch, CUDA, cuDNN, GPU, precision, compile,
    determinism flags, world size, rr's version and commit). Many runs, or on Slurm: `rr sweep --reproduce`.
    Exit 0 when every run finished, 1 when one diverged, 2 for a run that is not published.
    """
    from functools import partial

    from rr_model.run.entry import reproduce_command
    from rr_model.run.reproduce import DEFAULT_REPRODUCTION

    out = out or DEFAULT_REPRODUCTION
    train = partial(reproduce_command, out, size, seed, variant, resume=resume, dry_run=dry_run, **run)
    report_training("reproduce", out, train)


def register(app: typer.Typer) -> None:
    app.command()(reproduce)

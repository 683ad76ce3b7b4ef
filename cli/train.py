"""`rr train`: new seeds for the dataset, trained under the published recipe. Its own options are
`rr_model.run.entry.Training`'s fields; `train_command` trains it."""

from __future__ import annotations

from pathlib import Path

import typer

from cli.config_file import CONFIG, with_config
from cli.fields import dataclass_options
from cli.run_options import PANEL, report_training
from rr_model.config import TrainConfig
from rr_model.run.entry import Training


@dataclass_options(TrainConfig, "train", into="run", panel=PANEL, build=dict)
@dataclass_options(Training, into="plan")
def train(
    ctx: typer.Context,
    plan: Training,
    config: Path | None = CONFIG,
    run: dict | None = None,
) -> None:
    """Train the next seed of a size for every compared variant and append one row per run.

    Runs already in the file are skipped. Each row is validated and appended under a file lock, with a
    provenance record in the sidecar `OUT.runs.jsonl`. Exit 0 when every run finished, 1 when one diverged.
    """
    from functools import partial

    from rr_model.run.entry import train_command

    sizes = plan.sizes  # --config's record: one size as a string
    ctx.params["sizes"] = sizes[0] if len(sizes) == 1 else list(sizes)
    options = with_config(ctx, run)
    report_training("train", plan.file(run["ladder"]), partial(train_command, plan, **options))


def register(app: typer.Typer) -> None:
    app.command()(train)

"""`rr reproduce`: train a published run again, under the published recipe, into a reproduction file. Its
own options are `rr_model.run.entry.Reproduction`'s fields; `reproduce_command` trains it."""

from __future__ import annotations

import typer

from cli.fields import dataclass_options
from cli.run_options import PANEL, report_training
from rr_model.config import TrainConfig
from rr_model.run.entry import Reproduction


@dataclass_options(TrainConfig, "reproduce", into="run", panel=PANEL, build=dict)
@dataclass_options(Reproduction, into="plan")
def reproduce(plan: Reproduction, run: dict | None = None) -> None:
    """Train a published run again and append its row to a reproduction file; compare the two with
    `rr analyze reproduction --data OUT`.

    The recipe is the published one (steps, precision, data, optimiser); the recipe guard refuses any other.
    Each row gets a provenance record in OUT.runs.jsonl (torch, CUDA, cuDNN, GPU, precision, compile,
    determinism flags, world size, rr's version and commit). Many runs, or on Slurm: `rr sweep --reproduce`.
    Exit 0 when every run finished, 1 when one diverged, 2 for a run that is not published.
    """
    from functools import partial

    from rr_model.run.entry import reproduce_command

    report_training("reproduce", plan.file(), partial(reproduce_command, plan, **run))


def register(app: typer.Typer) -> None:
    app.command()(reproduce)

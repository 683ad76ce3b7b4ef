"""`rr reproduce`: train a published run again, under the published recipe, into a reproduction file."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from cli.errors import known_errors
from cli.records import Format, echo_records
from cli.train import CHECKPOINT_EVERY, COMPILE, DEVICE, DRY_RUN, RESULT_FORMATS, echo_plan

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
)  # the default is rr_model.reproduce.DEFAULT_REPRODUCTION
DATA = typer.Option(
    "tinystories", "--data", help="tinystories, or a local copy of it (a corpus or token-cache path)."
)


def reproduce(
    size: str = typer.Option(..., "--size", help="Published size: 60M, 150M, 320M, 590M or 1B."),
    seed: int = typer.Option(..., "--seed", min=0, help="Published seed to train again."),
    variant: list[str] = VARIANT,
    out: Path | None = OUT,
    data: str = DATA,
    compile_: bool = COMPILE,
    resume: bool = typer.Option(False, "--resume", help="Continue runs from their checkpoints."),
    checkpoint_every: int | None = CHECKPOINT_EVERY,
    device: str = DEVICE,
    dry_run: bool = DRY_RUN,
) -> None:
    """Train a published run again and append its row to a reproduction file; compare the two with
    `rr analyze reproduction --data OUT`.

    The recipe is the published one (steps, precision, data, optimiser); the recipe guard refuses any other.
    Each row gets a provenance record in OUT.runs.jsonl (torch, CUDA, cuDNN, GPU, precision, compile,
    determinism flags, world size, rr's version and commit). Many runs, or on Slurm: `rr sweep --reproduce`.
    Exit 0 when every run finished, 1 when one diverged, 2 for a run that is not published.
    """
    from rr_model.reproduce import DEFAULT_REPRODUCTION, plan_reproduction
    from rr_model.runs import describe_runs
    from rr_model.tokens import check_data

    out = out or DEFAULT_REPRODUCTION
    lead = os.environ.get("RANK", "0") == "0"  # under torchrun, one process reports
    options = dict(data=data, compile=compile_, device=device, checkpoint_every=checkpoint_every)
    with known_errors():
        todo, skipped = plan_reproduction(out, size, seed, tuple(variant or ()) or None, **options)
        for cfg in skipped:
            if lead:
                typer.echo(f"skip: {' '.join(map(str, cfg.key))} is already in {out}")
        if not todo:
            return
        check_data(data, None)
        if dry_run:
            echo_plan(describe_runs(todo), f"rr reproduce: plan for {out}")
            return
        from rr_model.train import train_runs  # torch: only when training

        records = train_runs(todo, out, resume=resume)
    from rr_model.train import summarize

    if lead:
        echo_records(summarize(records), Format.text, title=f"rr reproduce: {out}", formats=RESULT_FORMATS)
    if any(r["status"] != "ok" for r in records):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command()(reproduce)

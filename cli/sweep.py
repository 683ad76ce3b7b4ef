"""`rr sweep`: a whole plan of training runs, biggest first, each in its own process, resumable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import typer

from cli.errors import known_errors
from cli.records import Format, echo_records
from cli.train import (
    CHECKPOINT_EVERY,
    COMPILE,
    DATA,
    DEVICE,
    DRY_RUN,
    OUT,
    PRECISION,
    RESULT_FORMATS,
    STEPS,
    TOKENIZER,
    VARIANT,
    echo_plan,
)
from rr_model.errors import InputError


def _items(text: str | None) -> list[str] | None:
    return [item.strip() for item in text.split(",") if item.strip()] if text else None


def _seeds(text: str | None) -> list[int] | None:
    if not text:
        return None
    if not all(s.isdigit() for s in _items(text)):
        raise InputError(f"--seeds {text!r}: expected comma-separated integers >= 0, e.g. 3,4")
    return [int(s) for s in _items(text)]


def sweep(
    sizes: str | None = typer.Option(
        None,
        "--sizes",
        help="Comma-separated sizes, e.g. 590M,1B. Default: the published sizes.",
        show_default=False,
    ),
    seeds: str | None = typer.Option(
        None,
        "--seeds",
        help="Comma-separated seeds, e.g. 3,4. Default: each size's published seeds.",
        show_default=False,
    ),
    variant: list[str] = VARIANT,
    out: Path | None = OUT,
    data: str = DATA,
    tokenizer: str | None = TOKENIZER,
    precision: str = PRECISION,
    compile_: bool = COMPILE,
    steps: int | None = STEPS,
    device: str = DEVICE,
    checkpoint_every: int = CHECKPOINT_EVERY,
    nproc: int = typer.Option(1, "--nproc", min=1, help="Processes (GPUs) per run, launched with torchrun."),
    dry_run: bool = DRY_RUN,
) -> None:
    """Train a plan of runs (default: the published sweep) and append a row per run.

    Runs already in the file are skipped and interrupted ones resume from their checkpoints, so a sweep
    is restarted by running it again. Each run is `rr train` in its own process: a crash loses that run
    only. Ends with a summary and the analysis table (`rr analyze --table`) of the file. Exit 1 if any
    run failed or crashed.
    """
    from rr_model.sweep import plan_sweep, run_sweep
    from rr_model.train import DEFAULT_OUT, describe_runs
    from rr_model.variants import COMPARED

    out = out or DEFAULT_OUT

    options = dict(data=data, tokenizer=tokenizer, steps=steps, precision=precision, compile=compile_)
    with known_errors():
        todo, skipped = plan_sweep(
            out, _items(sizes), _seeds(seeds), tuple(variant or COMPARED), device=device,
            checkpoint_every=checkpoint_every, **options,
        )  # fmt: skip
        typer.echo(f"rr sweep: {len(todo)} run(s) to train, {len(skipped)} already in {out}")
        if dry_run:
            if todo:
                echo_plan(describe_runs(todo), f"rr sweep: plan for {out}")
            return
        summary = run_sweep(todo, out, nproc)
    if summary:
        echo_records(summary, Format.text, title=f"rr sweep: {out}", formats=RESULT_FORMATS)
    if out.exists():
        subprocess.run([sys.executable, "-m", "cli.main", "analyze", "--table", "--data", str(out)])
    if any(r["status"] != "ok" for r in summary):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command()(sweep)

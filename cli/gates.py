"""`rr gates`: how open each residual gate is on a batch, for a fresh model or a trainer checkpoint."""

from __future__ import annotations

from pathlib import Path

import typer

from cli.errors import known_errors
from cli.records import FORMAT_HELP, Format, echo_records
from rr_analysis.numbers import fixed


def gates(
    size: str = typer.Option("tiny", "--size", help="Ladder size of a fresh model."),
    variant: str = typer.Option(
        "review_neutral", "--variant", help="A variant whose residual rule has a gate (Review, Highway)."
    ),
    checkpoint: Path | None = typer.Option(
        None,
        "--checkpoint",
        help="A byte-level run's weights: OUT.checkpoints/RUN.final.pt (kept when a run finishes), a checkpoint, "
        "or the folder OUT.checkpoints/ of one run; its size and variant are used.",
        show_default=False,
    ),
    batch: int = typer.Option(8, "--batch", min=1, help="Sequences in the batch, each one block long."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the batch (and of a fresh model's weights)."),
    fmt: Format = typer.Option(Format.text, "--format", help=FORMAT_HELP),
) -> None:
    """Mean and spread of each gated sublayer's r on a batch of the synthetic stories (no download).

    r near 1 lets the update through, near 0 holds it back; Review's gates start at exactly 0.5.
    """
    from rr_model.uses.gates import gates as read

    with known_errors():
        df = read(size, variant, checkpoint_path=checkpoint, batch=batch, seed=seed)
    where = str(checkpoint) if checkpoint else f"{variant} at {size}, fresh (seed {seed})"
    echo_records(
        df.to_dict("records"),
        fmt,
        title=f"Gate r per sublayer: {where}; {batch} sequences of synthetic stories",
        formats={k: lambda v: fixed(v, 4) for k in ("mean", "std", "frac_open", "frac_closed")},
    )


def register(app: typer.Typer) -> None:
    app.command()(gates)

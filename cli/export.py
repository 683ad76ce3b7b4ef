"""`rr export`: a trained run as safetensors weights, config.json, provenance and a model card."""

from __future__ import annotations

from pathlib import Path

import typer

from cli.errors import known_errors


def export(
    checkpoint: Path = typer.Option(
        ...,
        "--checkpoint",
        help="A run's weights: RUN.final.pt, a checkpoint, or the folder OUT.checkpoints/ of one run.",
        show_default=False,
    ),
    out: Path = typer.Option(
        ...,
        "--out",
        help="Folder to write (made if missing; its files are never overwritten).",
        show_default=False,
    ),
) -> None:
    """Write model.safetensors, config.json, provenance.json and README.md (a model card) to a folder.

    Load it back with `rr_model.model.GPT.from_pretrained(FOLDER)`; needs the 'export' extra (safetensors).
    """
    from rr_model.export import export as write

    with known_errors():
        written = write(checkpoint, out)
    for path in written:
        typer.echo(str(path))


def register(app: typer.Typer) -> None:
    app.command()(export)

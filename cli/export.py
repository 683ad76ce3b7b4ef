"""`rr export`: a trained run as one folder that rr and Hugging Face transformers both load."""

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
    """Write a run as one folder that rr and Hugging Face transformers both load.

    The weights (model.safetensors), config.json and generation_config.json, the code transformers runs
    (configuration_rr.py, modeling_rr.py, rr_layers.py, and a plugin's rule file), the tokenizer
    (tokenizer.json, tokenizer_config.json), provenance.json and README.md (a model card). Load it with
    `rr_model.model.GPT.from_pretrained(FOLDER)` or `AutoModelForCausalLM.from_pretrained(FOLDER,
    trust_remote_code=True)`; needs the 'export' extra (safetensors), transformers only to load it.
    """
    from rr_model.uses.export import export as write

    with known_errors():
        written = write(checkpoint, out)
    for path in written:
        typer.echo(str(path))


def register(app: typer.Typer) -> None:
    app.command()(export)

"""`rr sample`: text from a trained run's model, with the run's tokenizer."""

from __future__ import annotations

from pathlib import Path

import typer

from cli.errors import known_errors

CHECKPOINT_HELP = (
    "A run's weights: OUT.checkpoints/RUN.final.pt (kept when a run finishes), a checkpoint RUN.pt, or the "
    "folder OUT.checkpoints/ when it holds one run."
)


def sample(
    checkpoint: Path = typer.Option(..., "--checkpoint", help=CHECKPOINT_HELP, show_default=False),
    prompt: str = typer.Option("", "--prompt", help="Text to continue. Default: a new document."),
    tokens: int = typer.Option(200, "--tokens", min=0, help="Tokens to sample after the prompt."),
    temperature: float = typer.Option(
        0.8, "--temperature", min=0.0, help="Softmax temperature (0: always the most likely token)."
    ),
    top_k: int | None = typer.Option(
        200, "--top-k", min=1, help="Sample among the k most likely tokens only."
    ),
    seed: int = typer.Option(
        0, "--seed", min=0, help="Seed of the draws: the same seed gives the same text."
    ),
) -> None:
    """Print the prompt and a sampled continuation (nanoGPT-style, with a KV cache: past the block each token
    is drawn from the last block_size tokens, run afresh)."""
    from rr_model.uses.inference import load_trained
    from rr_model.uses.inference import sample as draw

    with known_errors():
        text = draw(
            load_trained(checkpoint), prompt, tokens=tokens, temperature=temperature, top_k=top_k, seed=seed
        )
    typer.echo(text)


def register(app: typer.Typer) -> None:
    app.command()(sample)

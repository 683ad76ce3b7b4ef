"""`rr sample`: text from a trained run's model, with the run's tokenizer. Its options are
`rr_model.uses.sampling.Sampling`'s fields; `draw` draws them."""

from __future__ import annotations

import typer

from cli.errors import known_errors
from cli.fields import dataclass_options
from rr_model.uses.sampling import Sampling


@dataclass_options(Sampling, into="sampling")
def sample(sampling: Sampling) -> None:
    """Print the prompt and a sampled continuation (nanoGPT-style, with a KV cache: past the block each token
    is drawn from the last block_size tokens, run afresh)."""
    from rr_model.uses.sampling import draw

    with known_errors():
        text = draw(sampling)
    typer.echo(text)


def register(app: typer.Typer) -> None:
    app.command()(sample)

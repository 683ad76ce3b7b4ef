"""What `rr sample` draws, as one documented value (`Sampling`), and the one call that draws it (`draw`).

`Sampling`'s fields are `rr sample`'s options (`rr_core.options`: each field's type, default and help are
the option); `draw` loads the run and samples with `rr_model.uses.inference.sample`.

Standard library at import (the command line reads the fields at start-up); torch loads when `draw` runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rr_core.options import option

__all__ = ["Sampling", "draw"]


@dataclass(frozen=True)
class Sampling:
    """A run's weights and how to sample from them: the prompt, how many tokens, temperature, top-k, seed."""

    checkpoint: Path = field(
        metadata=option(
            "A run's weights: OUT.checkpoints/RUN.final.pt (kept when a run finishes), a checkpoint RUN.pt, or "
            "the folder OUT.checkpoints/ when it holds one run."
        )
    )
    prompt: str = field(default="", metadata=option("Text to continue. Default: a new document."))
    tokens: int = field(default=200, metadata=option("Tokens to sample after the prompt.", min=0))
    temperature: float = field(
        default=0.8, metadata=option("Softmax temperature (0: always the most likely token).", min=0.0)
    )
    top_k: int | None = field(
        default=200, metadata=option("Sample among the k most likely tokens only.", min=1)
    )
    seed: int = field(
        default=0, metadata=option("Seed of the draws: the same seed gives the same text.", min=0)
    )


def draw(sampling: Sampling) -> str:
    """The prompt and its sampled continuation (`rr_model.uses.inference.sample` on the run `load_trained`
    reads from `sampling.checkpoint`)."""
    from rr_model.uses.inference import load_trained, sample

    return sample(
        load_trained(sampling.checkpoint),
        sampling.prompt,
        tokens=sampling.tokens,
        temperature=sampling.temperature,
        top_k=sampling.top_k,
        seed=sampling.seed,
    )

"""What `rr gates` reads, as one documented value (`GateReading`), and the one call that reads it (`read`).

`GateReading`'s fields are `rr gates`'s options (`rr_core.options`: each field's type, default and help
are the option; `rr plot gates --checkpoint` offers the held-out text's two, corpus and windows): a run's
gate anatomy on held-out text of its corpus (`rr_model.uses.anatomy.anatomy`), or each gated sublayer's r
on a batch of the synthetic stories (`rr_model.uses.gates.gates`), of a fresh model or a byte-level run.

Standard library at import (the command line reads the fields at start-up); torch loads when `read` runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rr_core.ladder import CORPORA
from rr_core.options import option

__all__ = ["GateReading", "read"]


@dataclass(frozen=True)
class GateReading:
    """Whose gates are read, and on what text: a run's anatomy (`checkpoint`), or r on synthetic stories."""

    size: str = field(default="tiny", metadata=option("Ladder size of a fresh model."))
    variant: str = field(
        default="review_neutral",
        metadata=option("A variant whose residual rule has a gate (Review, Highway)."),
    )
    checkpoint: Path | None = field(
        default=None,
        metadata=option(
            "A run's weights: OUT.checkpoints/RUN.final.pt (kept when a run finishes), a checkpoint, or the "
            "folder OUT.checkpoints/ of one run, of any vocabulary: its gate anatomy on held-out windows of its "
            "corpus (or --corpus)."
        ),
    )
    batch: int = field(
        default=8,
        metadata=option(
            "Sequences in the batch, each one block long; for a run's anatomy, windows per forward pass.",
            min=1,
        ),
    )
    seed: int = field(
        default=0,
        metadata=option(
            "Seed of the batch (and of a fresh model's weights); for a run's anatomy, of the windows' starts.",
            min=0,
        ),
    )
    anatomy: bool = field(
        default=False,
        metadata=option(
            "What --checkpoint reads anyway, and said so: the gate anatomy on held-out windows of the run's "
            "corpus: mean r, token_share (the share of r's variance that depends on the token), freeze_delta "
            "(the loss change when r is frozen at its per-channel mean), and for Review the shares of the gate "
            "logit's variance from the stream half of W, the update half and their covariance "
            "(docs/extending.md, Against the field)."
        ),
    )
    stories: bool = field(
        default=False,
        metadata=option(
            "With --checkpoint: r on a batch of the synthetic stories, as a fresh model is read, instead of the "
            "anatomy (a byte-level run only)."
        ),
    )
    corpus: str | None = field(
        default=None,
        metadata=option(
            "The corpus whose validation part the gate anatomy reads, tokenized with the run's tokenizer "
            f"({CORPORA}). Default: the run's own, split as it was split for the run."
        ),
    )
    windows: int = field(
        default=64,
        metadata=option("Held-out windows of block_size + 1 tokens the gate anatomy reads.", min=1),
    )

    @property
    def reads_anatomy(self) -> bool:
        """Whether `read` reads a run's gate anatomy (a checkpoint, without `stories`)."""
        return self.checkpoint is not None and not self.stories


def read(reading: GateReading) -> Any:
    """The gates `reading` names: a run's `rr_model.uses.anatomy.Anatomy` on held-out windows of its corpus
    where it reads one (`GateReading.reads_anatomy`), else the DataFrame of each gated sublayer's r on a batch
    of synthetic stories (`rr_model.uses.gates.gates`)."""
    if reading.reads_anatomy:
        from rr_model.uses.anatomy import anatomy

        return anatomy(
            reading.checkpoint,
            corpus=reading.corpus,
            windows=reading.windows,
            seed=reading.seed,
            batch=reading.batch,
        )
    from rr_model.uses.gates import gates

    return gates(
        reading.size,
        reading.variant,
        checkpoint_path=reading.checkpoint,
        batch=reading.batch,
        seed=reading.seed,
    )

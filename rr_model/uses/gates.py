"""What the residual gates do on a batch: each gated sublayer's r, for `rr gates`.

Review and Highway expose their gate as ``rule.r(h, u)`` (`rr_model.model`; which rules have one:
`rr_model.run.gate_watch.gated`, which the trainer watches the same way); `gate_stats` reads it through
forward hooks during one extra forward pass, so the model's own forward stays untouched. `gates` builds
the model (fresh at a seed, or from a run's weights) and its batch: the project's synthetic stories
in bytes (`rr_model.data.synthetic`), so nothing is downloaded. Imports torch.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import torch
import torch.nn as nn

from rr_core.errors import InputError
from rr_core.ladder import BYTE_EOS
from rr_core.shapes import model_config
from rr_core.variants import NAMES, REFERENCE, residual_rule
from rr_model.data.synthetic import stories
from rr_model.data.tokenizers import encode_bytes
from rr_model.model import GPT
from rr_model.parallel.hardware import host_memory
from rr_model.parallel.memory import refuse_windows
from rr_model.run.gate_watch import gated
from rr_model.uses.inference import load_trained

__all__ = ["gate_stats", "gates", "GATED"]

BYTE_VOCAB = BYTE_EOS + 1  # the byte tokenizer's vocabulary: 256 bytes and the end of a document
GATED: tuple[str, ...] = tuple(v for v in NAMES if hasattr(residual_rule(v), "r"))  # variants with a gate r
_STATS = ("mean", "std", "frac_open", "frac_closed")


@torch.no_grad()
def gate_stats(model: GPT, idx: torch.Tensor) -> list[dict]:
    """One record per gated sublayer, in depth order: how open its gate r is on the batch `idx`.

    Returns
    -------
    Records with keys layer (block index), sublayer ("attn" or "mlp"), mean and std of r, frac_open (share
    of r > 0.9) and frac_closed (share of r < 0.1), pooled over every position and channel. Empty for
    variants without a gate (standard, layerscale, rezero).
    """
    sites = gated(model)
    found = []

    def record(rule: nn.Module, args: tuple[torch.Tensor, torch.Tensor], output: torch.Tensor) -> None:
        r = rule.r(*args).float()
        found.append(torch.stack([r.mean(), r.std(), (r > 0.9).float().mean(), (r < 0.1).float().mean()]))

    hooks = [rule.register_forward_hook(record) for _, _, rule in sites]
    try:
        model(idx)
    finally:
        for hook in hooks:
            hook.remove()
    values = torch.stack(found).tolist() if found else []
    return [
        {"layer": i, "sublayer": name, **dict(zip(_STATS, v, strict=True))}
        for (i, name, _), v in zip(sites, values, strict=True)
    ]


def gates(
    size: str = "tiny",
    variant: str = REFERENCE,
    *,
    checkpoint_path: str | os.PathLike | None = None,
    batch: int = 8,
    seed: int = 0,
) -> pd.DataFrame:
    """Each gated sublayer's r on a batch of synthetic stories, for a fresh model or a checkpoint.

    Parameters
    ----------
    size, variant
        The model, freshly initialised at `seed` (byte vocabulary). Ignored with `checkpoint_path`.
    checkpoint_path
        A run's weights as `rr_model.uses.inference.load_trained` reads them: a finished run's
        ``NAME.checkpoints/SIZE-VARIANT-seedS.final.pt``, a checkpoint (``...seedS.pt``) or the folder of
        one run; its size, variant and weights are used. It must have been trained on bytes
        (``--tokenizer bytes`` or synthetic data).
    batch, seed
        Sequences in the batch, each of the model's block size; `seed` draws them (and the fresh weights).

    Returns
    -------
    DataFrame with columns layer, sublayer, mean, std, frac_open, frac_closed (see `gate_stats`).

    Example
    -------
    >>> gates("tiny")["mean"].round(2).unique().tolist()  # Review's gates start at exactly 0.5
    [0.5]
    """
    torch.manual_seed(seed)
    model, variant = _model(size, variant, checkpoint_path)
    refuse_windows(batch, model.config.block_size, model.config.vocab_size, "--batch", host_memory())
    rows = gate_stats(model.eval(), _batch(model.config.block_size, batch, seed))
    if not rows:
        raise InputError(f"{variant} has no gate to read; the gated variants are {', '.join(GATED)}")
    return pd.DataFrame(rows)


def _model(size: str, variant: str, path: str | os.PathLike | None) -> tuple[GPT, str]:
    """A fresh model of (size, variant) at the byte vocabulary, or the one a run's weights hold."""
    if path is None:
        return GPT(model_config(size, variant, BYTE_VOCAB)), variant
    trained = load_trained(path)
    vocab = trained.model.config.vocab_size
    if vocab != BYTE_VOCAB:
        raise InputError(
            f"{trained.path} was trained with a vocabulary of {vocab:,} ({trained.tokenizer}); rr gates reads "
            f"its batch as bytes, so it reads checkpoints of byte-level runs ({BYTE_VOCAB} tokens) only"
        )
    return trained.model, trained.config["variant"]


def _batch(block: int, batch: int, seed: int) -> torch.Tensor:
    """`batch` windows of `block` bytes from the synthetic stories, each document ended by EOS."""
    text = np.concatenate(
        [np.append(encode_bytes(s), BYTE_EOS) for s in stories(max(64, batch * block // 200))]
    )
    starts = np.random.default_rng(seed).integers(0, len(text) - block, size=batch)
    return torch.from_numpy(np.stack([text[s : s + block] for s in starts]).astype(np.int64))

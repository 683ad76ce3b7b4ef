"""The model's shape: its config, its exact parameter count, and parameter matching. Torch-free.

`GPTConfig` is defined here rather than in `rr_model.model` so that `rr sizes`, the analysis and the
trainer's planning can count parameters (even of the 1B model) by arithmetic, instantly and without torch.
`rr_model.model` builds exactly the modules counted here; `tests/test_shapes.py` checks the two agree.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from rr_core.errors import InputError
from rr_core.ladder import RECIPE, get_size, ladder_sizes
from rr_core.plugins import load_plugins, require_variant
from rr_core.variants import REFERENCE, VARIANTS, rule_params

__all__ = ["GPTConfig", "model_config", "size_table"]


@dataclass(frozen=True)
class GPTConfig:
    """Shape of the reference GPT. The defaults are the published 60M Review model.

    Attributes
    ----------
    vocab_size, block_size
        Token vocabulary (GPT-2: 50257) and context length (256), from the recipe.
    n_layer, n_head, d_model
        Depth (blocks of attention + MLP), attention heads and residual width; d_model % n_head == 0.
    variant
        The residual rule every sublayer goes through, a name from `rr_core.variants.VARIANTS`; a
        name not registered yet has the plugins loaded first (`rr_core.plugins.load_plugins`).
    """

    vocab_size: int = RECIPE.vocab_size
    block_size: int = RECIPE.block_size
    n_layer: int = 8
    n_head: int = 8
    d_model: int = 512
    variant: str = REFERENCE

    def __post_init__(self) -> None:
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "d_model"):
            if not (isinstance(getattr(self, name), int) and getattr(self, name) > 0):
                raise InputError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        if self.d_model % self.n_head:
            raise InputError(f"d_model ({self.d_model}) must be a multiple of n_head ({self.n_head})")
        require_variant(self.variant)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_head

    @property
    def n_params(self) -> int:
        """Exact trainable parameter count (the LM head is tied to wte, so counted once).

        Notes
        -----
        embeddings V d + T d; per block 12 d^2 + 11 d (RMSNorm gains 2d, c_attn 3d^2 + 3d, attn c_proj
        d^2 + d, c_fc 4d^2 + 4d, MLP c_proj 4d^2 + d) plus two residual rules, each as its variant's
        entry counts it (`rr_core.variants.rule_params`); final RMSNorm d.
        """
        d = self.d_model
        block = 12 * d * d + 11 * d + 2 * rule_params(self.variant, d)
        return (self.vocab_size + self.block_size) * d + self.n_layer * block + d


def model_config(
    size: str, variant: str, vocab_size: int = RECIPE.vocab_size, ladder: str | os.PathLike | None = None
) -> GPTConfig:
    """The config of a ladder size for a variant, as trained in the published sweep.

    The ladder gives Review's shape. Baselines (variants registered with ``matched=True``) are widened in
    steps of n_head until they have at least Review's parameter count at the same depth ("matched up");
    the other variants keep the ladder's width. The match depends on `vocab_size` (the embedding is a
    large share of small models), so a byte-level tiny model is matched at its own vocabulary. `ladder`:
    a ladder file (`rr_core.ladder.load_ladder`) that holds `size`, instead of rr's own ladder.

    Example
    -------
    >>> cfg = model_config("60M", "standard")
    >>> cfg.d_model, cfg.n_params
    (568, 59713840)
    """
    s = get_size(size, ladder)
    cfg = GPTConfig(
        vocab_size=vocab_size,
        block_size=s.recipe.block_size,
        n_layer=s.n_layer,
        n_head=s.n_head,
        d_model=s.d_model,
        variant=variant,
    )
    if VARIANTS[variant].matched:
        target = replace(cfg, variant=REFERENCE).n_params
        while cfg.n_params < target:
            cfg = replace(cfg, d_model=cfg.d_model + s.n_head)
    return cfg


def size_table(vocab_size: int = RECIPE.vocab_size, ladder: str | os.PathLike | None = None) -> list[dict]:
    """Every ladder size x variant: its shape and exact parameter count (of a ladder file's sizes with `ladder`).

    Returns
    -------
    One record per (size, variant), ladder order then registry order (rr's variants, then the plugins'
    ones: `rr_core.plugins.load_plugins`), with keys size, variant, d_model, n_layer, n_head, head_dim,
    params (exact) and params_M (params / 1e6 to 2 decimals, as in the dataset).
    """
    load_plugins()
    rows = []
    for size in ladder_sizes(ladder):
        for variant in list(VARIANTS):
            c = model_config(size, variant, vocab_size, ladder)
            rows.append(
                {
                    "size": size,
                    "variant": variant,
                    "d_model": c.d_model,
                    "n_layer": c.n_layer,
                    "n_head": c.n_head,
                    "head_dim": c.head_dim,
                    "params": c.n_params,
                    "params_M": round(c.n_params / 1e6, 2),
                }
            )
    return rows

"""The model's shape: its config, its exact parameter count, and parameter matching. Torch-free.

`GPTConfig` is defined here rather than in `rr_model.model` so that `rr sizes`, the analysis and the
trainer's planning can count parameters (even of the 1B model) by arithmetic, instantly and without torch.
`rr_model.model` builds exactly the modules counted here; `tests/test_shapes.py` checks the two agree.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace

from rr_core.errors import InputError
from rr_core.ladder import BYTE_EOS, RECIPE, get_size, ladder_sizes
from rr_core.plugins import load_plugins, require_variant
from rr_core.rule_shapes import model_rule_params, rule_shapes
from rr_core.variants import REFERENCE, VARIANTS

__all__ = ["GPTConfig", "model_config", "size_table", "demo_counts", "param_shapes", "flops_per_token"]


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
        d^2 + d, c_fc 4d^2 + 4d, MLP c_proj 4d^2 + d); the 2 n_layer residual rules, each as its
        variant's entry counts it at its site (`rr_core.rule_shapes.model_rule_params`); final RMSNorm d.
        """
        d = self.d_model
        rules = model_rule_params(self.variant, d, self.n_layer)
        return (self.vocab_size + self.block_size) * d + self.n_layer * (12 * d * d + 11 * d) + rules + d


def flops_per_token(cfg: GPTConfig) -> float:
    """Training FLOPs per token: 6 N' + 12 L d T (PaLM appendix B, as in nanoGPT's estimate_mfu).

    N' counts the parameters that do matmuls or lookups per token (all but the position embedding, T d);
    12 L d T is the attention score and value arithmetic, forward and backward. Here, in the torch-free
    ground, so that `rr sizes` and a dry run state a budget's compute without torch.

    Example
    -------
    >>> flops_per_token(GPTConfig(vocab_size=257, block_size=64, n_layer=1, n_head=2, d_model=8))
    25296
    """
    n = cfg.n_params - cfg.block_size * cfg.d_model
    return 6 * n + 12 * cfg.n_layer * cfg.d_model * cfg.block_size


def param_shapes(cfg: GPTConfig) -> list[tuple[str, tuple[int, ...]]]:
    """Every parameter of the model `cfg` describes, as (name, shape) in `GPT.named_parameters()` order: the
    tied head's matrix once, as ``transformer.wte.weight``. What the memory plan cuts into shards.

    Example
    -------
    >>> shapes = param_shapes(GPTConfig(vocab_size=257, block_size=64, n_layer=1, n_head=2, d_model=8))
    >>> shapes[:2], shapes[-1], len(shapes)
    ([('transformer.wte.weight', (257, 8)), ('transformer.wpe.weight', (64, 8))], ('transformer.ln_f.weight', (8,)), 17)
    """
    d, sites = cfg.d_model, 2 * cfg.n_layer
    sublayers = {
        "attn": [
            ("c_attn.weight", (3 * d, d)),
            ("c_attn.bias", (3 * d,)),
            ("c_proj.weight", (d, d)),
            ("c_proj.bias", (d,)),
        ],
        "mlp": [
            ("c_fc.weight", (4 * d, d)),
            ("c_fc.bias", (4 * d,)),
            ("c_proj.weight", (d, 4 * d)),
            ("c_proj.bias", (d,)),
        ],
    }
    blocks = []
    for i in range(cfg.n_layer):
        for j, (norm, sublayer, residual) in enumerate(
            (("ln_1", "attn", "res_attn"), ("ln_2", "mlp", "res_mlp"))
        ):
            rule = rule_shapes(cfg.variant, d, 2 * i + j, sites)  # the variant's entry (rr_core.variants)
            block = [(f"{norm}.weight", (d,))]
            block += [(f"{sublayer}.{name}", shape) for name, shape in sublayers[sublayer]]
            block += [(f"{residual}.{name}", shape) for name, shape in rule]
            blocks += [(f"transformer.h.{i}.{name}", shape) for name, shape in block]
    embeddings = [
        ("transformer.wte.weight", (cfg.vocab_size, d)),
        ("transformer.wpe.weight", (cfg.block_size, d)),
    ]
    return [*embeddings, *blocks, ("transformer.ln_f.weight", (d,))]


def model_config(
    size: str,
    variant: str,
    vocab_size: int = RECIPE.vocab_size,
    ladder: str | os.PathLike | None = None,
    reference: str = REFERENCE,
) -> GPTConfig:
    """The config of a ladder size for a variant, as trained in the published sweep.

    The ladder gives the reference's shape. Baselines (variants registered with ``matched=True``) take the
    smallest width, in steps of n_head from the ladder's, with at least the reference's parameter count at
    the same depth ("matched up"); the reference and the other variants keep the ladder's width. The
    reference is Review (published: every baseline is smaller at the ladder's width, so it is widened), or
    the variant under study (`rr train --reference NAME`), so that a comparison with it is not one of
    sizes; a baseline larger than a small reference at the ladder's width is narrowed. The match depends on `vocab_size` (the embedding is a large share of small models),
    so a byte-level tiny model is matched at its own vocabulary. `ladder`: a ladder file
    (`rr_core.ladder.load_ladder`) that holds `size`, instead of rr's own ladder.

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
    if VARIANTS[variant].matched and variant != reference:
        target = replace(cfg, variant=reference).n_params  # GPTConfig checks that `reference` is a rule
        while cfg.n_params < target:
            cfg = replace(cfg, d_model=cfg.d_model + s.n_head)
        while cfg.d_model > s.n_head and replace(cfg, d_model=cfg.d_model - s.n_head).n_params >= target:
            cfg = replace(cfg, d_model=cfg.d_model - s.n_head)
    return cfg


def demo_counts(
    vocab_size: int,
    ladder: str | os.PathLike | None,
    variants: Sequence[str] | None,
    reference: str = REFERENCE,
) -> str | None:
    """The sentence that goes under a size table of rr's own ladder at another vocabulary than bytes: the
    `tiny` size trains on the synthetic stories' bytes in rr's demos and checks, so its count there is not the
    table's (Review: 1,121,024 parameters, not 7,521,024 at GPT-2's). None for a ladder file or bytes.

    Example
    -------
    >>> demo_counts(50257, None, None).split(";")[0]
    'tiny trains on bytes in the demos and checks (--corpus synthetic): review_neutral has 1,121,024 parameters there, not the 7,521,024 above'
    >>> demo_counts(257, None, None) is None
    True
    """
    if ladder is not None or vocab_size == BYTE_EOS + 1:
        return None
    name = (variants or [reference])[0]
    there = model_config("tiny", name, BYTE_EOS + 1, None, reference).n_params
    here = model_config("tiny", name, vocab_size, None, reference).n_params
    return (
        f"tiny trains on bytes in the demos and checks (--corpus synthetic): {name} has {there:,} parameters "
        f"there, not the {here:,} above; rr sizes --vocab {BYTE_EOS + 1} counts every size at bytes"
    )


def size_table(
    vocab_size: int = RECIPE.vocab_size,
    ladder: str | os.PathLike | None = None,
    variants: Sequence[str] | None = None,
    reference: str = REFERENCE,
) -> list[dict]:
    """Every ladder size x variant: its shape and exact parameter count (of a ladder file's sizes with `ladder`;
    of `variants` alone where given, each refused with the nearest name if unknown; the matched baselines
    matched to `reference`, `model_config`).

    Returns
    -------
    One record per (size, variant), ladder order then registry order (rr's variants, then the plugins'
    ones: `rr_core.plugins.load_plugins`), with keys size, variant, d_model, n_layer, n_head, head_dim,
    params (exact) and params_M (params / 1e6 to 2 decimals, as in the dataset).
    """
    load_plugins()
    for name in [*(variants or ()), reference]:
        require_variant(name)
    rows = []
    for size in ladder_sizes(ladder):
        for variant in variants or list(VARIANTS):
            c = model_config(size, variant, vocab_size, ladder, reference)
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

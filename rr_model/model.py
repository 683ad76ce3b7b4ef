"""The reference GPT of Review Residuals (Kramer 2026), in reading order.

A GPT-2-style decoder (learned token and position embeddings, pre-norm blocks, tied LM head) in which the
residual rule is the one thing that varies: every sublayer, attention and MLP alike, is added back through
the rule the variant registry names for `config.variant` (`rr_core.variants`, where rr's own rules below are
registered as a plugin's are). Modelled on nanoGPT's model.py; names follow it (`wte`, `wpe`, `c_attn`,
`c_proj`, `ln_f`) and the paper (`gate`, `r`, `u`).

The config and its exact parameter count live torch-free in `rr_core.shapes`; Review's four ablations, on
the same seam, in `rr_model.ablations`; what `GPT` inherits to generate text in `rr_model.generation`.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import os
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from rr_core.files.checksums import verify_sums
from rr_core.ladder import RECIPE
from rr_core.shapes import GPTConfig
from rr_core.variants import residual_rule
from rr_model.generation import Generation, KVCache

__all__ = ["GPTConfig", "GPT", "trunk", "build_rule", "read", "run_blocks", "LAYERS"]

INIT_STD = 0.02  # GPT-2 init for every Linear and Embedding weight
EPS = 1e-5


def rms(x: torch.Tensor) -> torch.Tensor:
    """RMS normalisation over the last dimension, without a gain."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)


class RMSNorm(nn.Module):
    """RMS normalisation with a learned per-channel gain (init 1)."""

    def __init__(self, d_model: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms(x) * self.weight


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig, layer_idx: int = 0):
        super().__init__()
        self.n_head = config.n_head
        self.layer_idx = layer_idx  # this layer's slot in a KV cache
        self.c_attn = nn.Linear(config.d_model, 3 * config.d_model)  # q, k, v in one matmul
        self.c_proj = nn.Linear(config.d_model, config.d_model)

    def forward(
        self, x: torch.Tensor, cache: KVCache | None = None, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Attention of each position to itself and the earlier ones: those of `x`, after the cache's.

        `cache` (anything with `KVCache`'s ``update``) holds the earlier positions' keys and values and
        takes these; `mask` (boolean, True where a query may see a key), when given, replaces the causal rule
        (an export's padding masks).
        """
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        if cache is not None:
            k, v = cache.update(k, v, self.layer_idx)
        S = k.shape[2]
        if mask is not None:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        elif S == T:  # no earlier positions: training's call
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        elif T == 1:  # one new token sees every earlier one (is_causal would align it top-left)
            y = F.scaled_dot_product_attention(q, k, v)
        else:  # several new tokens after earlier ones: causal, aligned bottom-right
            causal = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(S - T)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=causal)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(config.d_model, 4 * config.d_model)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.d_model, config.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(self.gelu(self.c_fc(x)))


# The stream seam: what every sublayer reads and how its update is written back, over a state carried from
# the embeddings through every sublayer to the final norm. A rule may define, besides forward:
#
#   enter(x) -> state         the first sublayer's rule makes the state of the embeddings x   (default: x)
#   read(state) -> x          what its sublayer reads, before the norm                        (default: state)
#   forward(state, u) -> state  the sublayer's update u written back                         (required)
#   leave(state) -> x         the last sublayer's rule gives what the final norm reads       (default: state)
#
# and is built as rule(d_model), with site= (its sublayer's place in depth order, 0 .. sites - 1) and
# sites= (2 n_layer) where its constructor names them (`build_rule`). The state is a tensor or a tuple of
# tensors: one stream (forward(h, u) on the stream h: the paper's six rules below, Review's ablations in
# `rr_model.ablations`), several streams, or every earlier output (`rr_model.streams`). enter and leave hold
# no parameters, so that a sharded model runs them outside any block. Gated rules hold their gate Linear as
# `gate` (drawn by `GPT.init_published`) and expose it as r(h, u); a rule whose parameters start otherwise
# sets them in its own `init_published`. Each is registered, with its label, colour and parameter count, in
# `rr_core.variants`.


def build_rule(rule: type, d_model: int, site: int, sites: int) -> nn.Module:
    """One sublayer's rule: rule(d_model), given site= and sites= where its constructor names them."""
    named = inspect.signature(rule).parameters
    return rule(d_model, **{k: v for k, v in (("site", site), ("sites", sites)) if k in named})


def read(rule: nn.Module, state):
    """What the sublayer of `rule` reads from the state: ``rule.read(state)``, the state itself by default."""
    return rule.read(state) if hasattr(rule, "read") else state


def run_blocks(blocks: nn.ModuleList, x: torch.Tensor, cache=None, mask: torch.Tensor | None = None):
    """The embeddings `x` through every block: the first rule's ``enter``, the blocks, the last rule's
    ``leave`` (each the identity for a rule on one stream); what the final norm reads."""
    first, last = blocks[0].res_attn, blocks[-1].res_mlp
    state = first.enter(x) if hasattr(first, "enter") else x
    for block in blocks:
        state = block(state, cache, mask)
    return last.leave(state) if hasattr(last, "leave") else state


class Standard(nn.Module):
    """h + u."""

    def __init__(self, d_model: int):
        super().__init__()

    def forward(self, h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return h + u


class Highway(nn.Module):
    """h + sigmoid(W h) * u: the gate sees only the stream (Srivastava et al. 2015, additive form)."""

    def __init__(self, d_model: int):
        super().__init__()
        self.gate = nn.Linear(d_model, d_model)

    def r(self, h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.gate(h))

    def forward(self, h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return h + self.r(h, u) * u


class ReviewNeutral(nn.Module):
    """Review: h + r * u, r = sigmoid(W [rms(h), rms(u)]); the gate reviews the update against the stream.

    rms() puts h and u on one scale whatever their norms. W = 0 at init, so r = 0.5 exactly: training
    starts from a plain (halved) residual and learns where to deviate.
    """

    def __init__(self, d_model: int):
        super().__init__()
        self.gate = nn.Linear(2 * d_model, d_model)

    def init_published(self) -> None:
        """Zero the gate (weight and bias), so r = sigmoid(0) = 0.5 exactly; draws nothing."""
        nn.init.zeros_(self.gate.weight)
        nn.init.zeros_(self.gate.bias)

    def r(self, h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.gate(torch.cat([rms(h), rms(u)], dim=-1)))

    def halves(self, h: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The gate logit's two halves, W_h rms(h) and W_u rms(u) (W = [W_h, W_u]): the logit is their sum
        plus b. What `rr gates --anatomy` splits the logit's variance by (`rr_model.uses.anatomy`)."""
        w_h, w_u = self.gate.weight.split(h.shape[-1], dim=1)
        return rms(h) @ w_h.T, rms(u) @ w_u.T

    def forward(self, h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return h + self.r(h, u) * u


class ReviewConvex(ReviewNeutral):
    """(1 - r) h + r u, the same gate: the documented failure.

    The skip path is scaled by 1 - r = 0.5 at init in every sublayer, so the gradient reaching the first
    block shrinks geometrically with depth (`rr depth-check`, `rr_model.uses.depth`).
    """

    def forward(self, h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        r = self.r(h, u)
        return (1 - r) * h + r * u


class LayerScale(nn.Module):
    """h + diag(lambda) u, lambda = 0.1 at init (Touvron et al. 2021)."""

    def __init__(self, d_model: int):
        super().__init__()
        self.scale = nn.Parameter(torch.full((d_model,), 0.1))

    def forward(self, h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return h + self.scale * u


class ReZero(nn.Module):
    """h + alpha u, one scalar alpha = 0 at init (Bachlechner et al. 2020)."""

    def __init__(self, d_model: int):
        super().__init__()
        self.alpha = nn.Parameter(torch.zeros(()))

    def forward(self, h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return h + self.alpha * u


class Block(nn.Module):
    """Pre-norm transformer block; each sublayer's output u goes through the residual rule.

    With `recompute` set (`GPT.checkpoint_activations`), training keeps only the block's input for the
    backward pass and runs the block again there (activation checkpointing, Chen et al. 2016): less memory,
    about a third more compute per block, the same numbers bitwise.
    """

    recompute = False

    def __init__(self, config: GPTConfig, layer_idx: int = 0):
        super().__init__()
        rule, d, sites = residual_rule(config.variant), config.d_model, 2 * config.n_layer
        self.ln_1 = RMSNorm(d)
        self.attn = CausalSelfAttention(config, layer_idx)
        self.res_attn = build_rule(rule, d, 2 * layer_idx, sites)
        self.ln_2 = RMSNorm(d)
        self.mlp = MLP(config)
        self.res_mlp = build_rule(rule, d, 2 * layer_idx + 1, sites)

    def forward(
        self, x: torch.Tensor, cache: KVCache | None = None, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        if self.recompute and cache is None and torch.is_grad_enabled():
            return torch.utils.checkpoint.checkpoint(self.sublayers, x, None, mask, use_reentrant=False)
        return self.sublayers(x, cache, mask)

    def sublayers(
        self, x: torch.Tensor, cache: KVCache | None = None, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        x = self.res_attn(x, self.attn(self.ln_1(read(self.res_attn, x)), cache, mask))
        return self.res_mlp(x, self.mlp(self.ln_2(read(self.res_mlp, x))))


def trunk(config: GPTConfig) -> nn.ModuleDict:
    """The decoder under its state-dict names: token and position embeddings, the blocks, the final norm."""
    return nn.ModuleDict(
        dict(
            wte=nn.Embedding(config.vocab_size, config.d_model),
            wpe=nn.Embedding(config.block_size, config.d_model),
            h=nn.ModuleList([Block(config, i) for i in range(config.n_layer)]),
            ln_f=RMSNorm(config.d_model),
        )
    )


class GPT(Generation, nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        # The construction's own random draws are discarded (fork_rng restores the stream): the stream is
        # consumed by init_published alone, in the published script's order, whatever the layout here.
        with torch.random.fork_rng(devices=[]):
            self.transformer = trunk(config)
            self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying (Press & Wolf 2017)
        self.init_published()

    @torch.no_grad()
    def init_published(self) -> None:
        """Initialise every weight from torch's CPU random stream in the published script's order.

        After `torch.manual_seed(seed)` this gives the published run's initial weights bitwise. That script
        builds the embeddings, then the 2 n_layer sublayers (attention, MLP, alternating; RMSNorm then the
        Linear layers in order), then every sublayer's gate, the final RMSNorm and the head, each module
        with torch's default init (`reset_parameters`), and then redraws:

        1. GPT-2 init in that order: weights normal(0, 0.02), biases 0; the head comes last and redraws
           the matrix it shares with wte;
        2. the residual projections (attention c_proj, MLP c_proj) in parameter order with
           normal(0, 0.02 / sqrt(2 n_layer)): GPT-2's residual scaling;
        3. each rule's own ``init_published()``, where it has one, in sublayer order: Review's zeroes its
           gate (weight and bias), so r = 0.5 exactly.

        RMSNorm gains (1) and the LayerScale (0.1) and ReZero (0) scales draw nothing. A plugin's rule
        with a ``gate`` Linear has it drawn in step 1 with the others, and its ``init_published()`` is
        called in step 3 as rr's own are (`rr_core.variants.register_residual`). A rule with a
        ``published_draws()`` method has what it returns drawn in its gate's place in step 1 instead, and
        dropped: Review's ablations return a stand-in of Review's gate, so that at a seed every weight
        but their own starts as Review's (`rr_model.ablations.ReviewHalf`).
        """
        sublayers = [m for block in self.transformer.h for m in (block.attn, block.mlp)]
        rules = [rule for block in self.transformer.h for rule in (block.res_attn, block.res_mlp)]
        projections = [m.c_proj for m in sublayers]
        linears = [lin for m in sublayers for lin in m.children() if isinstance(lin, nn.Linear)]
        gates = [
            rule.published_draws() if hasattr(rule, "published_draws") else rule.gate
            for rule in rules
            if hasattr(rule, "published_draws") or hasattr(rule, "gate")
        ]
        order = [self.transformer.wte, self.transformer.wpe, *linears, *gates, self.lm_head]
        for module in order:
            module.reset_parameters()
        for module in order:
            nn.init.normal_(module.weight, mean=0.0, std=INIT_STD)
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)
        for proj in projections:
            nn.init.normal_(proj.weight, mean=0.0, std=INIT_STD / math.sqrt(2 * self.config.n_layer))
        for rule in rules:
            if hasattr(rule, "init_published"):
                rule.init_published()

    def checkpoint_activations(self, every: int) -> None:
        """Recompute blocks 0, `every`, 2 `every`, ... in the backward pass instead of keeping their
        activations (`Block.recompute`); 0 keeps every block's, as published."""
        for i, block in enumerate(self.transformer.h):
            block.recompute = every > 0 and i % every == 0

    def forward(
        self, idx: torch.Tensor, targets: torch.Tensor | None = None, *, cache: KVCache | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits for every position, and the mean cross-entropy when `targets` is given.

        Parameters
        ----------
        idx, targets
            Token ids of shape (B, T); targets are idx shifted left by one.
        cache
            The keys and values of earlier positions (`KVCache`): `idx` continues them, at positions
            ``cache.get_seq_length()`` on, and its own are added to it.

        Returns
        -------
        logits of shape (B, T, vocab_size) (all positions: evaluation calibrates on them) and the loss
        (a scalar tensor) or None.

        Raises
        ------
        ValueError
            A position at or past block_size: the learned absolute positions stop there.
        """
        B, T = idx.shape
        past = 0 if cache is None else cache.get_seq_length()
        if past + T > self.config.block_size:
            raise ValueError(
                f"{past + T} positions ({past} cached, {T} new) exceed block_size {self.config.block_size}: "
                "learned absolute positions cannot slide; feed the last block_size tokens without a cache "
                "(as generate does)"
            )
        pos = torch.arange(past, past + T, device=idx.device)
        x = run_blocks(self.transformer.h, self.transformer.wte(idx) + self.transformer.wpe(pos), cache)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits, loss

    def configure_optimizers(
        self,
        weight_decay: float = RECIPE.weight_decay,
        lr: float = RECIPE.lr,
        betas: tuple[float, float] = (RECIPE.beta1, RECIPE.beta2),
    ) -> torch.optim.AdamW:
        """AdamW as published: one group over every parameter, `weight_decay` on every tensor.

        The published recipe decays biases, RMSNorm gains and gate biases too (unlike nanoGPT, which
        exempts tensors of fewer than 2 dimensions); the defaults are the recipe's, eps torch's default.
        The fused kernel is used when the parameters are on CUDA (it differs from the loop in the last bit).
        """
        params = list(self.parameters())
        fused = all(p.is_cuda for p in params)
        return torch.optim.AdamW(params, lr=lr, betas=betas, weight_decay=weight_decay, fused=fused)

    @classmethod
    def from_pretrained(cls, folder: str | os.PathLike) -> GPT:
        """The model `rr export` wrote to `folder` (config.json and model.safetensors), in eval mode.

        Reads both layouts rr has written: the one transformers loads too (config.json holds the shape's
        fields at its top level; the matrix the head shares with wte stored once, as
        ``transformer.wte.weight``) and the earlier one (the shape under "model", the matrix as
        ``lm_head.weight``). Building the model draws nothing from the caller's random stream (it is forked
        and restored). A field config.json leaves out takes `GPTConfig`'s default, as transformers'
        ``save_pretrained`` leaves out those equal to its config class's defaults (the same values). A
        plugin's rule must be registered (``RR_PLUGINS``), as for training. The folder's files are first checked against its SHA256SUMS
        (`rr_core.files.checksums.verify_sums`; an export written before rr kept them is not): a damaged export is an
        InputError naming the file, never loaded.
        """
        from safetensors.torch import load_file  # the 'export' extra

        folder = Path(folder)
        verify_sums(folder, "export it again from the run's weights (rr export)")
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        fields = (f.name for f in dataclasses.fields(GPTConfig))
        shape = config.get("model") or {name: config[name] for name in fields if name in config}
        with torch.random.fork_rng(devices=[]):
            model = cls(GPTConfig(**shape))
        weights = load_file(folder / "model.safetensors")
        tied = weights.setdefault("transformer.wte.weight", weights.get("lm_head.weight"))
        weights["lm_head.weight"] = tied  # one tensor, two names
        model.load_state_dict(weights)
        return model.eval()


# What an export carries for transformers (`rr_model.uses.hf_code`): these definitions' source, copied verbatim
# beside a wrapper that adds transformers' plumbing, so the two models cannot drift apart. The residual
# rules go with them, read from the variant registry (rr's own: the paper's six above, Review's ablations in
# `rr_model.ablations`, the field's rivals in `rr_model.streams`; and a plugin's).
LAYERS = (rms, RMSNorm, CausalSelfAttention, MLP, build_rule, read, run_blocks, Block, trunk)

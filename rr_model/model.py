"""The reference GPT of Review Residuals (Kramer 2026), in reading order.

A GPT-2-style decoder (learned token and position embeddings, pre-norm blocks, tied LM head) in which the
residual rule is the one thing that varies: every sublayer, attention and MLP alike, is added back through
the rule the variant registry names for `config.variant` (`rr_core.variants`, where rr's own rules below are
registered as a plugin's are). Modelled on nanoGPT's model.py; names follow it (`wte`, `wpe`, `c_attn`,
`c_proj`, `ln_f`) and the paper (`gate`, `r`, `u`).

The config and its exact parameter count live torch-free in `rr_core.shapes`.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from rr_core.ladder import RECIPE
from rr_core.shapes import GPTConfig
from rr_core.variants import residual_rule

__all__ = ["GPTConfig", "GPT"]

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
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.n_head = config.n_head
        self.c_attn = nn.Linear(config.d_model, 3 * config.d_model)  # q, k, v in one matmul
        self.c_proj = nn.Linear(config.d_model, config.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(config.d_model, 4 * config.d_model)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.d_model, config.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(self.gelu(self.c_fc(x)))


# Residual rules: forward(h, u) adds a sublayer's update u to the residual stream h. Gated rules hold
# their gate Linear as `gate` (drawn by `GPT.init_published`) and expose it as r(h, u); a rule whose
# parameters start otherwise sets them in its own `init_published`. Each is registered, with its label,
# colour and parameter count, in `rr_core.variants`.


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

    def forward(self, h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return h + self.r(h, u) * u


class ReviewConvex(ReviewNeutral):
    """(1 - r) h + r u, the same gate: the documented failure.

    The skip path is scaled by 1 - r = 0.5 at init in every sublayer, so the gradient reaching the first
    block shrinks geometrically with depth (see `rr_model.depth`).
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
    """Pre-norm transformer block; each sublayer's output u goes through the residual rule."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        rule = residual_rule(config.variant)
        self.ln_1 = RMSNorm(config.d_model)
        self.attn = CausalSelfAttention(config)
        self.res_attn = rule(config.d_model)
        self.ln_2 = RMSNorm(config.d_model)
        self.mlp = MLP(config)
        self.res_mlp = rule(config.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.res_attn(x, self.attn(self.ln_1(x)))
        return self.res_mlp(x, self.mlp(self.ln_2(x)))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        # The construction's own random draws are discarded (fork_rng restores the stream): the stream is
        # consumed by init_published alone, in the published script's order, whatever the layout here.
        with torch.random.fork_rng(devices=[]):
            self.transformer = nn.ModuleDict(
                dict(
                    wte=nn.Embedding(config.vocab_size, config.d_model),
                    wpe=nn.Embedding(config.block_size, config.d_model),
                    h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                    ln_f=RMSNorm(config.d_model),
                )
            )
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
        called in step 3 as rr's own are (`rr_core.variants.register_residual`).
        """
        sublayers = [m for block in self.transformer.h for m in (block.attn, block.mlp)]
        rules = [rule for block in self.transformer.h for rule in (block.res_attn, block.res_mlp)]
        projections = [m.c_proj for m in sublayers]
        linears = [lin for m in sublayers for lin in m.children() if isinstance(lin, nn.Linear)]
        gates = [rule.gate for rule in rules if hasattr(rule, "gate")]
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

    def forward(
        self, idx: torch.Tensor, targets: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits for every position, and the mean cross-entropy when `targets` is given.

        Parameters
        ----------
        idx, targets
            Token ids of shape (B, T), T <= block_size; targets are idx shifted left by one.

        Returns
        -------
        logits of shape (B, T, vocab_size) (all positions: evaluation calibrates on them) and the loss
        (a scalar tensor) or None.
        """
        B, T = idx.shape
        assert T <= self.config.block_size, (
            f"sequence of {T} tokens exceeds block_size {self.config.block_size}"
        )
        pos = torch.arange(T, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
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

    @torch.no_grad()
    def generate(
        self,
        idx: torch.Tensor,
        max_new_tokens: int,
        *,
        temperature: float = 1.0,
        top_k: int | None = None,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Continue each row of `idx` (B, T) by `max_new_tokens` sampled tokens, as nanoGPT's generate.

        Each new token is drawn from the softmax of the last position's logits divided by `temperature`,
        restricted to the `top_k` most likely tokens when given; the context is cropped to the last
        block_size tokens. No KV cache: every step runs the whole (cropped) context. `generator` makes
        the draws reproducible (torch.multinomial's); temperature 0 takes the most likely token.

        Returns
        -------
        (B, T + max_new_tokens) token ids, the prompt first.
        """
        for _ in range(max_new_tokens):
            logits, _ = self(idx[:, -self.config.block_size :])
            logits = logits[:, -1, :].float()
            if temperature == 0:
                nxt = logits.argmax(-1, keepdim=True)
            else:
                logits = logits / temperature
                if top_k is not None:
                    kth = torch.topk(logits, min(top_k, logits.size(-1))).values[:, [-1]]
                    logits = logits.masked_fill(logits < kth, -float("inf"))
                nxt = torch.multinomial(F.softmax(logits, dim=-1), 1, generator=generator)
            idx = torch.cat([idx, nxt], dim=1)
        return idx

    @classmethod
    def from_pretrained(cls, folder: str | os.PathLike) -> GPT:
        """The model `rr export` wrote to `folder` (config.json and model.safetensors), in eval mode.

        The head's matrix is stored once (as ``lm_head.weight``) and tied to wte again here; building the
        model draws nothing from the caller's random stream (it is forked and restored).
        """
        from safetensors.torch import load_file  # the 'export' extra

        folder = Path(folder)
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        with torch.random.fork_rng(devices=[]):
            model = cls(GPTConfig(**config["model"]))
        weights = load_file(folder / "model.safetensors")
        weights["transformer.wte.weight"] = weights["lm_head.weight"]  # tied: one tensor, two names
        model.load_state_dict(weights)
        return model.eval()

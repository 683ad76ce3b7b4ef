"""Residual rules whose state is more than one stream: the field's rivals to Review, on the stream seam.

`rr_model.model` runs every sublayer through the seam (``enter``, ``read``, ``forward``, ``leave``; see the
comment above its rules). rr's own six rules carry one stream; these carry several streams
(hyper-connections) or the outputs of every earlier layer (DenseFormer, Attention Residuals). Each is
registered in `rr_core.variants` as rr's own, parameter-matched up to Review as the baselines are, and
travels with `rr export` as rr's own rules do (`rr_model.uses.hf_code`). None holds a gate r: their mixing
weights read the state, not the update. Every parameter starts at its published value in ``__init__`` and
draws nothing, so a model's initial weights are the same draws as `standard`'s at the same width and seed.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from rr_model.model import EPS, RMSNorm


class HyperConnections(nn.Module):
    """Dynamic hyper-connections (Zhu et al. 2024, arXiv 2409.19606): n streams H (n x d per token).

    The sublayer reads h = A_m(H)^T H; its update u is written back as H' = A_r(H)^T H + B(H)^T u, where
    [A_m A_r] = static_alpha + s_a tanh(norm(H) dynamic_alpha) and B = static_beta + s_b tanh(norm(H)
    dynamic_beta) (the paper's section 2.2, dynamic weights per token). The paper's initialisation: A_m
    the unit vector e_(site mod n), A_r = I, B = 1, the dynamic matrices 0 and s_a = s_b = 0.01, so at
    init every stream is the standard residual stream. The model enters with n copies of the embeddings
    and leaves with their mean (the paper sums them; the mean, taken pairwise, is the standard stream
    bit for bit at init and differs from the sum only by the factor n the final RMSNorm removes).
    The norm is rr's RMSNorm with a gain (the paper's code uses a LayerNorm).
    """

    streams = 4  # the expansion rate n: the paper's default
    dynamic = True

    def __init__(self, d_model: int, site: int):
        super().__init__()
        n = self.streams
        self.site = site
        alpha = torch.cat([torch.zeros(n, 1), torch.eye(n)], dim=1)  # [A_m A_r], A_m = e_(site mod n)
        alpha[site % n, 0] = 1.0
        self.static_alpha = nn.Parameter(alpha)
        self.static_beta = nn.Parameter(torch.ones(n))
        if self.dynamic:
            self.dynamic_alpha = nn.Parameter(torch.zeros(d_model, n + 1))
            self.dynamic_beta = nn.Parameter(torch.zeros(d_model))
            self.scale_alpha = nn.Parameter(torch.tensor(0.01))
            self.scale_beta = nn.Parameter(torch.tensor(0.01))
            self.norm = RMSNorm(d_model)

    def weights(self, H: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """[A_m A_r] (n x (n + 1)) and B (n), per token where dynamic."""
        if not self.dynamic:
            return self.static_alpha, self.static_beta
        Hn = self.norm(H)
        alpha = self.scale_alpha * torch.tanh(Hn @ self.dynamic_alpha) + self.static_alpha
        beta = self.scale_beta * torch.tanh(Hn @ self.dynamic_beta) + self.static_beta
        return alpha, beta

    def enter(self, x: torch.Tensor) -> torch.Tensor:
        return x.unsqueeze(-2).expand(*x.shape[:-1], self.streams, x.shape[-1])

    def read(self, H: torch.Tensor) -> torch.Tensor:
        alpha, _ = self.weights(H)
        return torch.matmul(alpha[..., 0].unsqueeze(-2), H).squeeze(-2)

    def forward(self, H: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        alpha, beta = self.weights(H)
        return torch.matmul(alpha[..., 1:].transpose(-1, -2), H) + beta.unsqueeze(-1) * u.unsqueeze(-2)

    def leave(self, H: torch.Tensor) -> torch.Tensor:
        while H.shape[-2] % 2 == 0:  # pairwise: the mean of equal streams is each of them exactly
            H = (H[..., 0::2, :] + H[..., 1::2, :]) * 0.5
        return H.mean(-2)


class StaticHyperConnections(HyperConnections):
    """Static hyper-connections (Zhu et al. 2024, arXiv 2409.19606): [A_m A_r] and B learned, the same
    for every token; at init the standard residual."""

    dynamic = False


class DenseFormer(nn.Module):
    """DenseFormer (Pagliardini et al. 2024, arXiv 2402.02622): a depth-weighted average after each block.

    The state keeps the embeddings B_0 and every block's output B_1..B_i, and the stream X the next block
    reads. Within a block the residual is the standard one; after block i (its MLP's rule, an odd site)
    X_i = sum_j alpha_(i,j) B_j over j = 0..i, alpha initialised to 1 for j = i and 0 otherwise, so that
    at init X_i = B_i: the plain residual, bit for bit. 1 + i + 1 weights after block i: L (L + 3) / 2
    in all.
    """

    def __init__(self, d_model: int, site: int):
        super().__init__()
        self.site = site
        if site % 2:
            weights = torch.zeros(site // 2 + 2)
            weights[-1] = 1.0
            self.dwa = nn.Parameter(weights)

    def enter(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (x, x)

    def read(self, state: tuple[torch.Tensor, ...]) -> torch.Tensor:
        return state[-1]

    def forward(self, state: tuple[torch.Tensor, ...], u: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if not self.site % 2:
            return (*state[:-1], state[-1] + u)
        outputs = (*state[:-1], state[-1] + u)
        x = self.dwa[0] * outputs[0]
        for weight, output in zip(self.dwa[1:], outputs[1:], strict=True):
            x = x + weight * output
        return (*outputs, x)

    def leave(self, state: tuple[torch.Tensor, ...]) -> torch.Tensor:
        return state[-1]


class AttnRes(nn.Module):
    """Full Attention Residuals (Kimi Team 2026, arXiv 2603.15031): each sublayer reads a softmax
    attention over every earlier output, with a learned pseudo-query of its own.

    The state holds the sources v_0 (the embeddings), v_1, ... (each sublayer's update); sublayer l reads
    h_l = sum_i softmax_i(w_l . rms(v_i)) v_i (the keys normalised, without a gain, which w_l absorbs).
    The pseudo-queries start at 0 (the paper's initialisation): every sublayer reads the mean of the
    sources before it. The last sublayer's rule holds one more query, which reads the final norm's input
    the same way. With `blocks` set, Block AttnRes: the sublayers are cut into that many blocks of
    ceil(sites / blocks), each block's updates summed into one source (its partial sum while it runs).
    """

    blocks = 0  # 0: every sublayer's output is a source (full AttnRes)

    @staticmethod
    def attend(query: torch.Tensor, sources: tuple[torch.Tensor, ...]) -> torch.Tensor:
        """sum_i softmax_i(query . rms(v_i)) v_i over the sources v_i: Attention Residuals' depth attention.

        query . rms(v) is computed as (v . query) / rms-norm of v, so that no normalised copy of each source
        is kept for the backward pass.
        """
        logits = torch.stack([(v @ query) * torch.rsqrt(v.pow(2).mean(-1) + EPS) for v in sources], dim=-1)
        p = torch.softmax(logits, dim=-1).unsqueeze(-1)
        out = p[..., 0, :] * sources[0]
        for i in range(1, len(sources)):
            out = out + p[..., i, :] * sources[i]
        return out

    def __init__(self, d_model: int, site: int, sites: int):
        super().__init__()
        self.site, self.last = site, site == sites - 1
        self.span = math.ceil(sites / self.blocks) if self.blocks else 1  # sublayers per source
        self.query = nn.Parameter(torch.zeros(d_model))
        if self.last:
            self.exit_query = nn.Parameter(torch.zeros(d_model))

    def enter(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (x,)

    def read(self, state: tuple[torch.Tensor, ...]) -> torch.Tensor:
        return self.attend(self.query, state)

    def forward(self, state: tuple[torch.Tensor, ...], u: torch.Tensor) -> tuple[torch.Tensor, ...]:
        state = (*state, u) if self.site % self.span == 0 else (*state[:-1], state[-1] + u)
        return (*state, self.attend(self.exit_query, state)) if self.last else state

    def leave(self, state: tuple[torch.Tensor, ...]) -> torch.Tensor:
        return state[-1]


class BlockAttnRes(AttnRes):
    """Block Attention Residuals (Kimi Team 2026, arXiv 2603.15031): AttnRes over 8 blocks of sublayers
    (the paper's choice of about 8), the sources the embeddings and each block's summed updates."""

    blocks = 8

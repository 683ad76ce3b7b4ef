"""Review's four ablations: each changes one thing about its gate, at Review's width (not widened).

Rules on the stream seam of `rr_model.model`, on one stream as Review (`rr_model.model.ReviewNeutral`) is;
the field's rivals on the same seam are in `rr_model.streams`. They take the draws of Review's gate
(`published_draws`), so at a seed every other weight starts as Review's, and each starts at r = 0.5
exactly: at init every one computes Review's forward pass, bit for bit (tests/test_ablations.py). Each is
registered in `rr_core.variants` as rr's own rules are, and travels with `rr export` as they do
(`rr_model.uses.hf_code`).
"""

from __future__ import annotations

import torch
import torch.nn as nn

from rr_model.model import rms

__all__ = ["ReviewHalf", "GateBias", "ReviewState", "ReviewUpdate"]


class ReviewHalf(nn.Module):
    """h + 0.5 u: Review's gate held at its initial r = 0.5 (no parameters)."""

    def __init__(self, d_model: int):
        super().__init__()
        self.d_model = d_model

    def published_draws(self) -> nn.Linear:
        """A stand-in of Review's gate, Linear(2d -> d), that `GPT.init_published` draws where it draws
        Review's gate and then drops: the draws after it (the head, the residual projections) are Review's."""
        with torch.random.fork_rng(devices=[]):  # building it draws: only init_published's draws count
            return nn.Linear(2 * self.d_model, self.d_model)

    def forward(self, h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return h + 0.5 * u


class GateBias(ReviewHalf):
    """h + sigmoid(b) * u, b a d-vector (0 at init): a learned per-channel gate that reads neither h nor u."""

    def __init__(self, d_model: int):
        super().__init__(d_model)
        self.bias = nn.Parameter(torch.zeros(d_model))

    def init_published(self) -> None:
        """b = 0, so r = 0.5 exactly; draws nothing."""
        nn.init.zeros_(self.bias)

    def r(self, h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.bias).expand_as(u)  # the same for every token (a view: no copy)

    def forward(self, h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return h + self.r(h, u) * u


class ReviewState(ReviewHalf):
    """h + sigmoid(W rms(h) + b) * u: Review without the update half of its gate; W (d x d) = 0 at init."""

    def __init__(self, d_model: int):
        super().__init__(d_model)
        self.gate = nn.Linear(d_model, d_model)

    def init_published(self) -> None:
        """Zero the gate (weight and bias), so r = 0.5 exactly; draws nothing."""
        nn.init.zeros_(self.gate.weight)
        nn.init.zeros_(self.gate.bias)

    def r(self, h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.gate(rms(h)))

    def forward(self, h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return h + self.r(h, u) * u


class ReviewUpdate(ReviewState):
    """h + sigmoid(W rms(u) + b) * u: Review without the state half of its gate; W (d x d) = 0 at init."""

    def r(self, h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.gate(rms(u)))

"""A residual rule on two streams for rr: the sublayers read their sum, attention writes to one, the MLP to the
other (the stream seam of rr_model/model.py: enter, read, forward, leave)."""

import torch
import torch.nn as nn


class TwoStreams(nn.Module):
    """Two streams (a, m): each sublayer reads a + m; attention adds its update to a, the MLP to m."""

    def __init__(self, d_model: int, site: int):
        super().__init__()
        self.site = site  # even: an attention sublayer; odd: an MLP

    def enter(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return (x, torch.zeros_like(x))

    def read(self, state: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return state[0] + state[1]

    def forward(
        self, state: tuple[torch.Tensor, torch.Tensor], u: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        a, m = state
        return (a, m + u) if self.site % 2 else (a + u, m)

    def leave(self, state: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return state[0] + state[1]


try:
    import rr_model
except ImportError:
    pass
else:
    rr_model.register_residual("twostreams", TwoStreams, label="Two streams", params=lambda d: [])

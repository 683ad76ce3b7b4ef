"""A residual rule of your own for rr: h + s * u, with a per-channel scale s initialised at 0.1."""

import torch
import torch.nn as nn


class ChannelScale(nn.Module):
    """h + s * u, s = 0.1 per channel at init."""

    def __init__(self, d_model: int):
        super().__init__()
        self.scale = nn.Parameter(torch.full((d_model,), 0.1))

    def forward(self, h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return h + self.scale * u


# Registered only where rr is installed: an export of a model with this rule carries this file, and
# transformers runs it on machines without rr (it requires every package a file imports outside a try).
try:
    import rr_model
except ImportError:
    pass
else:
    rr_model.register_residual("myrule", ChannelScale, label="Channel scale")

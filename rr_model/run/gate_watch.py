"""Which sublayers have a gate r, and the gates watched while a run trains.

A residual rule has a gate when it exposes it as ``rule.r(h, u)`` (Review and Highway in `rr_model.model`,
and a plugin's rule written the same way); `gated` lists them, in depth order, for `rr gates` (which reads r
on a batch, `rr_model.uses.gates`) and for the trainer (which watches it at every step, `GateWatch`).

Watching costs no host sync: each forward pass adds r's mean and variance over its positions and channels to
one small tensor on the device, and the trainer reads that tensor at its log points in the same transfer as
the loss (`rr_model.run.trainer`), so the metrics log carries each sublayer's r (`rr_core.sweepfile.metrics_log`)
without a step waiting for it. Imports torch.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator

import torch
import torch.nn as nn

__all__ = ["gated", "GateWatch", "SUBLAYERS"]

SUBLAYERS = ("attn", "mlp")  # each block's two sublayers, in the order the block runs them
_SUMS = 4  # per gated sublayer: sum of means, sum of variances, sum of squared means, forward passes


def gated(model: nn.Module) -> list[tuple[int, str, nn.Module]]:
    """(layer, sublayer, rule) of every residual rule with a gate r, in depth order; [] for a model without.

    `model` is a `rr_model.model.GPT`, compiled or sharded or not: its blocks' ``res_attn`` and ``res_mlp``
    are the rules. A rule has a gate when its class defines a method ``r(h, u)``; a parameter or buffer
    that a rule happens to name ``r`` is not one.
    """
    return [
        (i, sublayer, rule)
        for i, block in enumerate(model.transformer.h)
        for sublayer, rule in zip(SUBLAYERS, (block.res_attn, block.res_mlp), strict=True)
        if callable(getattr(type(rule), "r", None))
    ]


class GateWatch:
    """Each gated sublayer's r, summed on the device over the forward passes since the last reading.

    Attaching wraps each gated rule's ``r`` (on the instance; the class is untouched): the wrapper returns
    r unchanged and, outside autograd, adds [mean, variance, mean squared, 1] of r (over every position and
    channel of the pass) to its row of `sums`. The rule's output and its gradients are the same bits as
    without the watch; the cost is two reductions over r (its mean, then the norm of its deviations, in
    float32; on a CPU ~15x faster than `torch.var_mean`'s single pass) and a few scalar operations per
    gated sublayer and pass.

    Parameters
    ----------
    model
        A `rr_model.model.GPT`, before `torch.compile` traces it (compiling traces the wrapper too).
    device
        Where the model computes: where `sums` lives.

    Notes
    -----
    `stats` pools the passes: mean = S_m / n and variance = S_v / n + (S_mm / n - mean^2), the mean of the
    within-pass variances plus the variance of the pass means (the law of total variance, each pass of equal
    size). The sums are float64 (float32 on MPS, which has none): the difference S_mm / n - mean^2 is
    small beside each term, and in float32 its rounding alone would be a sizeable share of a spread of 1e-3.
    A pass run twice (activation checkpointing recomputes a block in the backward pass) adds the
    same values twice, which leaves both unchanged. A rule whose forward computes its gate without calling
    ``self.r`` is never counted (n = 0): its readings are None.
    """

    def __init__(self, model: nn.Module, device: torch.device | str):
        found = gated(model)
        self.sites = [(layer, sublayer) for layer, sublayer, _ in found]
        self.rules = [rule for _, _, rule in found]
        device = torch.device(device)
        dtype = torch.float32 if device.type == "mps" else torch.float64  # MPS has no float64
        self.sums = torch.zeros(len(self.rules), _SUMS, device=device, dtype=dtype)
        for row, rule in zip(self.sums, self.rules, strict=True):
            rule.r = _watched(type(rule).r.__get__(rule), row)

    def __len__(self) -> int:
        return len(self.rules)

    @contextlib.contextmanager
    def ignoring(self) -> Iterator[None]:
        """Leave out of the readings the forward passes run inside (periodic validation's, which are no part
        of the training interval the trainer reads next): `sums` is put back as it was, on the device, with
        no host sync."""
        kept = self.sums.clone()
        try:
            yield
        finally:
            self.sums.copy_(kept)

    def close(self) -> None:
        """Detach: each rule's ``r`` is its class's again."""
        for rule in self.rules:
            del rule.r
        self.rules = []

    def stats(self, sums: list[float]) -> list[dict]:
        """One record per gated sublayer, in depth order: layer, sublayer, mean and std of r.

        `sums` is `self.sums` flattened and read back (summed over the processes where there are several):
        the trainer reads it with the loss. std is the pooled standard deviation (see Notes).
        """
        records = []
        for (layer, sublayer), i in zip(self.sites, range(0, len(sums), _SUMS), strict=True):
            s_m, s_v, s_mm, n = sums[i : i + _SUMS]
            mean = s_m / n if n else None
            std = math.sqrt(s_v / n + max(0.0, s_mm / n - mean * mean)) if n else None
            records.append({"layer": layer, "sublayer": sublayer, "mean": mean, "std": std})
        return records


def _watched(read: Callable, row: torch.Tensor) -> Callable:
    """`read` (a rule's bound r), adding each result's [mean, variance, mean^2, 1] to `row` in place."""

    def r(h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        value = read(h, u)
        with torch.no_grad():
            r = value.float()
            mean = r.mean()
            var = torch.linalg.vector_norm(r - mean).square() / r.numel()  # two passes: no cancellation
            mean, var = mean.to(row.dtype), var.to(row.dtype)
            row.add_(torch.stack((mean, var, mean * mean, torch.ones_like(mean))))
        return value

    return r

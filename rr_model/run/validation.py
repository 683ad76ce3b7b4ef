"""Evaluation as published: mean validation loss and expected calibration error (ECE).

Both come from the same `n_batches` random validation batches, drawn from the run's data-order stream
where training left it (the published script's order: the seed's RandomState, after the last training
draw), so every variant of a seed is scored on the same tokens. ECE uses the top-1 confidence with the
softmax taken in fp32, in `n_bins` equal-width bins (lo, hi]; it is accumulated as per-bin sums (count,
summed confidence, summed correctness), so no probability tensor is kept beyond one batch's maxima.
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch
import torch.distributed as dist

from rr_model.data.token_cache import sample_batch

__all__ = ["evaluate", "ece_from_bins"]


def ece_from_bins(bins: torch.Tensor) -> float:
    """ECE from per-bin sums, rows (count, sum of confidence, sum of correct): sum_b |conf_b - acc_b| / N.

    Notes
    -----
    ECE = sum_b (n_b / N) |mean conf_b - accuracy_b| = sum_b |sum conf_b - sum correct_b| / N.
    """
    count, conf, correct = bins.double()
    return float((conf - correct).abs().sum() / count.sum())


@torch.no_grad()
def evaluate(
    model: torch.nn.Module,
    val: np.ndarray,
    *,
    rng: np.random.RandomState,
    n_batches: int,
    batch_size: int,
    block_size: int,
    n_bins: int,
    device: torch.device,
    autocast: contextlib.AbstractContextManager | None = None,
    lockstep: bool = False,
) -> tuple[float, float]:
    """Mean loss over `n_batches` random batches of `val` drawn from `rng`, and ECE over `n_bins` bins.

    Under torch.distributed every rank draws the same batches and scores every world_size-th one; the sums
    are all-reduced, so the result does not depend on the number of processes. `lockstep`: every rank runs
    as many forward passes as the busiest (a sharded model gathers its parameters in each, with every
    rank); a rank's extra pass, when `n_batches` does not divide evenly, is not counted.

    Returns
    -------
    (val_loss, ece) as Python floats.
    """
    rank, world = (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)
    # upper bin edges: bin i is (edges[i-1], edges[i]]
    edges = torch.linspace(0, 1, n_bins + 1, device=device)[1:]
    loss_sum = torch.zeros((), dtype=torch.float64, device=device)
    bins = torch.zeros(3, n_bins, dtype=torch.float64, device=device)
    was_training = model.training
    model.eval()
    passes = -(-n_batches // world) * world if lockstep else n_batches
    for i in range(passes):
        if i < n_batches:
            batch = sample_batch(val, rng, batch_size, block_size)  # drawn on every rank: same stream
        if i % world != rank:
            continue
        x, y = (torch.from_numpy(t).to(device, non_blocking=True) for t in batch)
        with autocast or contextlib.nullcontext():
            logits, loss = model(x, y)
        if i >= n_batches:
            continue  # a pass in step with the other ranks' last batches, not a batch of its own
        logits = logits.float()  # the softmax in fp32 whatever the compute precision
        top, pred = logits.max(-1)
        conf = torch.exp(top - torch.logsumexp(logits, -1))  # top-1 softmax probability, never materialised
        b = torch.bucketize(conf, edges).flatten()  # conf <= 1: the last upper edge
        bins[0].index_add_(0, b, torch.ones_like(conf, dtype=torch.float64).flatten())
        bins[1].index_add_(0, b, conf.double().flatten())
        bins[2].index_add_(0, b, (pred == y).double().flatten())
        loss_sum += loss.double()
    model.train(was_training)
    if world > 1:
        dist.all_reduce(loss_sum)
        dist.all_reduce(bins)
    return float(loss_sum / n_batches), ece_from_bins(bins)

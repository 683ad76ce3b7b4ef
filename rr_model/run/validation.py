"""Evaluation as published: mean validation loss and expected calibration error (ECE); and the readings of
periodic validation on fixed held-out windows.

`evaluate`, the final evaluation: both numbers come from the same `n_batches` random validation batches,
drawn from the run's data-order stream where training left it (the published script's order: the seed's
RandomState, after the last training draw), so every variant of a seed is scored on the same tokens. ECE
uses the top-1 confidence with the softmax taken in fp32, in `n_bins` equal-width bins (lo, hi]; it is
accumulated as per-bin sums (count, summed confidence, summed correctness), so no probability tensor is
kept beyond one batch's maxima.

`held_out_loss`, periodic validation (`rr train --eval-every`): the mean loss on windows fixed in advance
(`rr_model.data.windows.held_out_windows`), the same at every reading of every run of a corpus; it draws
nothing from any stream. Both run the same forward passes (`_passes`) and leave the model in the mode they
found it in.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import torch
import torch.distributed as dist

from rr_model.data.windows import sample_batch, windows_at

__all__ = [
    "evaluate",
    "held_out_loss",
]


def ece_from_bins(bins: torch.Tensor) -> float:
    """ECE from per-bin sums, rows (count, sum of confidence, sum of correct): sum_b |conf_b - acc_b| / N.

    Notes
    -----
    ECE = sum_b (n_b / N) |mean conf_b - accuracy_b| = sum_b |sum conf_b - sum correct_b| / N.
    """
    count, conf, correct = bins.double()
    return float((conf - correct).abs().sum() / count.sum())


def _rank_world() -> tuple[int, int]:
    return (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)


def _passes(
    model: torch.nn.Module,
    batches: Iterator[tuple[np.ndarray, np.ndarray]],
    n_batches: int,
    *,
    device: torch.device,
    autocast: contextlib.AbstractContextManager | None,
    lockstep: bool,
) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """The forward passes of an evaluation, in eval mode: (logits, mean loss, targets) of each of the
    `n_batches` batches this process scores.

    Every process takes every batch from `batches` (numpy (x, y), drawn in the same order everywhere) and
    scores every world_size-th one. `lockstep`: every process runs as many forward passes as the busiest (a
    sharded model gathers its parameters in each, with every process); a process's extra pass, when
    `n_batches` does not divide evenly, is not yielded. The model's mode is restored when the passes end.
    """
    rank, world = _rank_world()
    was_training = model.training
    model.eval()
    try:
        passes = -(-n_batches // world) * world if lockstep else n_batches
        for i in range(passes):
            if i < n_batches:
                batch = next(batches)  # taken on every process: the same stream
            if i % world != rank:
                continue
            x, y = (torch.from_numpy(t).to(device, non_blocking=True) for t in batch)
            with autocast or contextlib.nullcontext():
                logits, loss = model(x, y)
            if i < n_batches:  # else a pass in step with the other processes' last batches
                yield logits, loss, y
    finally:
        model.train(was_training)


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
    # upper bin edges: bin i is (edges[i-1], edges[i]]
    edges = torch.linspace(0, 1, n_bins + 1, device=device)[1:]
    loss_sum = torch.zeros((), dtype=torch.float64, device=device)
    bins = torch.zeros(3, n_bins, dtype=torch.float64, device=device)
    draws = (sample_batch(val, rng, batch_size, block_size) for _ in range(n_batches))
    for logits, loss, y in _passes(
        model, draws, n_batches, device=device, autocast=autocast, lockstep=lockstep
    ):
        logits = logits.float()  # the softmax in fp32 whatever the compute precision
        top, pred = logits.max(-1)
        conf = torch.exp(top - torch.logsumexp(logits, -1))  # top-1 softmax probability, never materialised
        b = torch.bucketize(conf, edges).flatten()  # conf <= 1: the last upper edge
        bins[0].index_add_(0, b, torch.ones_like(conf, dtype=torch.float64).flatten())
        bins[1].index_add_(0, b, conf.double().flatten())
        bins[2].index_add_(0, b, (pred == y).double().flatten())
        loss_sum += loss.double()
    if _rank_world()[1] > 1:
        dist.all_reduce(loss_sum)
        dist.all_reduce(bins)
    return float(loss_sum / n_batches), ece_from_bins(bins)


@torch.no_grad()
def held_out_loss(
    model: torch.nn.Module,
    val: np.ndarray,
    starts: np.ndarray,
    *,
    batch_size: int,
    block_size: int,
    device: torch.device,
    autocast: contextlib.AbstractContextManager | None = None,
    lockstep: bool = False,
) -> float:
    """Mean loss on the held-out windows of `val` at `starts`, scored in batches of `batch_size` windows.

    Draws from no random stream and leaves the model in the mode it found it in, so a run that reads it
    trains the same bits as one that does not. Under torch.distributed the processes share the batches as in
    `evaluate`; the result does not depend on their number, nor (up to float rounding) on `batch_size`.

    Notes
    -----
    loss = sum_b n_b L_b / sum_b n_b, with L_b the mean token loss of batch b and n_b its windows (the last
    batch may be smaller): every window of `block_size` tokens weighs the same, so it is the mean token loss
    over the windows.
    """
    chunks = [starts[i : i + batch_size] for i in range(0, len(starts), batch_size)]
    batches = (windows_at(val, chunk, block_size) for chunk in chunks)
    total = torch.zeros((), dtype=torch.float64, device=device)
    for _, loss, y in _passes(
        model, batches, len(chunks), device=device, autocast=autocast, lockstep=lockstep
    ):
        total += loss.double() * len(y)
    if _rank_world()[1] > 1:
        dist.all_reduce(total)
    return float(total / len(starts))

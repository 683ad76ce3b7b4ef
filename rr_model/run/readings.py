"""What a run logs while it trains: each log interval's readings (loss, learning rate, gradient norm, throughput,
MFU, memory, each gate's r) into the metrics log (`log_readings`), and the periodic validation readings of
`--eval-every` on the run's held-out windows (`periodic_validation`), which leave training as it was.
"""

from __future__ import annotations

import time

import torch

from rr_model.run.run_state import Run
from rr_model.run.validation import held_out_loss

__all__ = ["log_readings", "periodic_validation"]


def log_readings(run: Run, done: int, loss: float, grad_norm: float, lr: float, gates: list[dict]) -> None:
    """One log interval's readings into the metrics log (rank 0); MFU is None where the peak is unknown;
    `gates`: each gated sublayer's r over the interval (`GateWatch.stats`), [] for a rule without a gate."""
    rate, mfu = run.progress.rates(done)
    cuda = run.device.type == "cuda"
    memory = torch.cuda.max_memory_allocated(run.device) / 2**30 if cuda else None
    run.metrics.log(
        done,
        loss=loss,
        lr=lr,
        grad_norm=grad_norm,
        tokens_per_s=rate,
        mfu=mfu,
        memory_gib=memory,
        seconds=time.perf_counter() - run.progress.t0,
        gates=gates,
    )


def periodic_validation(run: Run, done: int) -> None:
    """A periodic validation reading after `done` steps (`--eval-every`): the loss on the run's held-out windows
    (`rr_model.run.validation.held_out_loss`) into the metrics log, with the tokens trained so far.

    It leaves training as it was: the windows were drawn once, from a stream of their own, so no random
    stream moves; the model is back in train mode after it; the gates' forward passes in it are left out of
    the interval's readings (`GateWatch.ignoring`). Its time counts in the run's minutes and rates.
    """
    r = run.cfg.recipe
    with run.gates.ignoring():
        loss = held_out_loss(
            run.net,
            run.tokens.val,
            run.held_out,
            batch_size=r.batch_size,
            block_size=r.block_size,
            device=run.device,
            autocast=run.autocast,
            lockstep=run.sharded,
        )
    run.metrics.validation(done, tokens=done * r.batch_size * r.block_size, val_loss=loss)
    run.progress.log(f"{run.title}: step {done}, held-out val_loss {loss:.4f}")

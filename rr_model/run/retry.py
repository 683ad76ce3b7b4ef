"""A run that runs out of GPU memory: data parallel retries the step in twice as many micro-batches on every
process together (`step_with_retry`: same batch, same result), a sharded run stops every process with one
line naming the command to resume with (`failure_of`, `rr_model.parallel.out_of_memory`).
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from rr_model.checkpoint import state as checkpoint
from rr_model.parallel import out_of_memory
from rr_model.run.run_state import Run
from rr_model.run.step import accumulate, apply_gradients

__all__ = ["failure_of", "step_with_retry"]


def failure_of(run: Run, e: Exception) -> Exception:
    """What a failure becomes: under sharding, running out of memory stops every process with one line
    (`rr_model.parallel.out_of_memory`), and a collective broken by that stop ends a peer silently; else `e` itself."""
    if not run.sharded:
        return e
    record = out_of_memory.record_path(run.ckpt)
    if isinstance(e, torch.OutOfMemoryError):
        latest = checkpoint.current(run.out, **run.cfg.stem)
        per_rank = run.cfg.recipe.batch_size // run.world
        facts = {
            "rank": run.rank,
            "world": run.world,
            "device": str(run.device),
            "step": run.at,
            "micro_batches": run.accum,
            "sequences": per_rank // run.accum,
            "error": str(e)[:500],
            "checkpoint": latest and str(latest),
            "checkpoint_step": latest and checkpoint.saved_step(latest),
        }
        return out_of_memory.stop(record, facts)
    return (run.world > 1 and out_of_memory.stopped_elsewhere(record)) or e


def step_with_retry(
    run: Run, x: torch.Tensor, y: torch.Tensor, step: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """One optimiser step; on CUDA out-of-memory, the same batch again in twice as many micro-batches.

    The published script halved the batch instead, which changes the recipe; accumulation keeps it.

    Under torchrun the processes must take the same decision, or their collectives stop matching: one
    retries while the others wait in a gradient all-reduce it never joins. So nothing collective runs in
    the forward and backward passes (hence no DDP: its all-reduce starts inside the last backward, where
    a process that runs out leaves the others waiting), then the processes add up their out-of-memory
    flags (`_ran_out`) and either all retry the step in more micro-batches or all average their gradients
    and step. The price: the gradient all-reduce no longer overlaps the backward pass. Out of memory in
    the optimiser step itself is not retried: more micro-batches would not shrink it, and a step partly
    applied cannot be taken again. A sharded model's collectives run inside the passes, so it cannot retry:
    running out of memory stops the run on every process instead (`failure_of`).
    """
    if run.sharded:
        loss = accumulate(run.net, x, y, run.accum, run.autocast)
        return loss, apply_gradients(run.net, run.optimizer, run.cfg.recipe.grad_clip, run.world)
    while True:
        try:
            loss, detail = accumulate(run.net, x, y, run.accum, run.autocast), ""
        except torch.OutOfMemoryError as e:
            loss, detail = None, str(e)  # the message alone: its traceback would hold the activations
        ran_out = _ran_out(run, loss is None)
        if not ran_out:
            return loss, apply_gradients(run.net, run.optimizer, run.cfg.recipe.grad_clip, run.world)
        _more_micro_batches(run, step, ran_out, detail)


def _ran_out(run: Run, mine: bool) -> int:
    """How many processes ran out of memory in this step's forward and backward passes.

    Under torchrun, one all-reduce of a CPU tensor (over gloo: beside NCCL, a gloo group made in `_start`)
    per step: CUDA raises out-of-memory on the host, at the allocation, so no process waits for its GPU.
    """
    if run.world == 1:
        return int(mine)
    flag = torch.tensor([int(mine)])
    dist.all_reduce(flag, group=run.flags)
    return int(flag)


def _more_micro_batches(run: Run, step: int, ran_out: int, detail: str) -> None:
    """After `ran_out` processes ran out of memory: every process drops its gradients and doubles its
    micro-batches, or raises torch.OutOfMemoryError where they are down to one sequence already."""
    per_rank = run.cfg.recipe.batch_size // run.world
    run.optimizer.zero_grad(set_to_none=True)
    torch.cuda.empty_cache()
    where = f" on {ran_out} of {run.world} processes" if run.world > 1 else ""
    if per_rank // run.accum == 1:
        raise torch.OutOfMemoryError(
            f"CUDA out of memory at step {step}{where} with micro-batches of one sequence"
            + (f": {detail}" if detail else "")
        )
    run.accum *= 2
    run.progress.log(
        f"WARNING: CUDA out of memory at step {step}{where}: continuing with gradient accumulation over "
        f"{run.accum} micro-batches of {per_rank // run.accum} sequences; the batch stays "
        f"{run.cfg.recipe.batch_size}."
    )

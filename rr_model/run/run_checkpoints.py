"""A run's checkpoints as the trainer keeps them: continued when asked (`resume_run`: verified, refused when another
run wrote them, `run_identity`), saved every `checkpoint_every` steps and where a cooldown branch starts
(`save_run`, `save_branches`), removed once the row supersedes them (`remove_checkpoints`); and the record
kept with a run's final weights, from which `--resume` writes a row without training (`kept_record`). The
format of a checkpoint is `rr_model.checkpoint`'s.
"""

from __future__ import annotations

import shutil
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from rr_core.errors import InputError, StoppedElsewhere
from rr_core.sweepfile.metrics_log import metrics_path
from rr_model.checkpoint import state as checkpoint
from rr_model.config import TrainConfig
from rr_model.model import GPT
from rr_model.run.identity import identity_changes, run_identity
from rr_model.run.run_state import Run, RunState

__all__ = [
    "resume_run",
    "verified_meta",
    "restore_run",
    "save_run",
    "save_branches",
    "remove_checkpoints",
    "kept_record",
]


def resume_run(run: Run, resume: bool) -> None:
    """Continue from the run's checkpoint when asked (its `.pt` file, or the folder of a sharded run: either
    resumes either way, on any number of processes); the checkpoint is read only then, verified first, and
    refused when it was written by another run: another config, corpus (its tokens' sha256) or plugin code
    (`run_identity`)."""
    found = checkpoint.current(run.out, **run.cfg.stem)
    if found is None or not resume:  # a checkpoint without --resume: refused by check_run
        return
    saved = verified_meta(run, found) if found.is_dir() else checkpoint.load(found)
    now = run_identity(run.cfg, run.tokens)
    kept = {k: getattr(saved, k) for k in now if getattr(saved, k) is not None}  # an older one: what it kept
    if changed := identity_changes(kept, {k: now[k] for k in kept}):
        raise InputError(
            f"{found} was written by another run than this one: {'; '.join(changed)}. Resuming would mix "
            "the two in one row; restore what changed, or delete the checkpoint to start over"
        )
    try:
        restore_run(run, found, saved)
        torch.set_rng_state(torch.as_tensor(saved.torch_rng, dtype=torch.uint8))
        if run.device.type == "cuda":
            torch.cuda.set_rng_state(torch.as_tensor(saved.cuda_rng, dtype=torch.uint8), run.device)
        name, keys, *rest = saved.data_rng
        run.data_rng.set_state((name, np.array(keys, dtype=np.uint32), *rest))
        run.state = RunState(**saved.state)
    except (RuntimeError, ValueError, TypeError, KeyError) as e:
        raise checkpoint.refused(found, "its contents do not fit this run", e) from None
    if run.state.step != run.state.branched_at:  # a branch's first segment continues its run, not itself
        run.state.resumed.append(run.state.step)


def verified_meta(run: Run, folder: Path) -> checkpoint.Resumable:
    """A sharded checkpoint's ``rr.json`` (`checkpoint.saved_meta`), once process 0 has checked every file of
    the folder against its SHA256SUMS (`checkpoint.verify`: one pass over the pieces, not one per process);
    the other processes stop without a line of their own when it finds damage."""
    damage = None
    if run.rank == 0:
        try:
            checkpoint.verify(folder)
        except checkpoint.CheckpointError as e:
            damage = e
    if run.world > 1:
        found = [damage is not None]
        dist.broadcast_object_list(found, src=0)
        if found[0] and damage is None:
            raise StoppedElsewhere(f"process 0 refused {folder}")
    if damage is not None:
        raise damage
    return checkpoint.saved_meta(folder)


def restore_run(run: Run, found: Path, saved: checkpoint.Resumable) -> None:
    """The weights and optimiser state of the checkpoint `found` into the run's model and optimiser."""
    if found.is_dir():
        from rr_model.checkpoint import sharded as sharded_checkpoint

        sharded_checkpoint.load(found, run.model, run.optimizer)
    elif run.sharded:  # a data-parallel run's checkpoint: whole on every process, each keeps its pieces
        from rr_model.checkpoint import sharded as sharded_checkpoint

        with torch.random.fork_rng(devices=[]):
            whole = GPT(run.mcfg)
        whole.load_state_dict(saved.model)
        r = run.cfg.recipe
        whole_optimizer = whole.configure_optimizers(r.weight_decay, r.lr, (r.beta1, r.beta2))
        whole_optimizer.load_state_dict(saved.optimizer)
        sharded_checkpoint.load_whole(run.model, run.optimizer, whole, whole_optimizer)
    else:
        run.model.load_state_dict(saved.model)
        run.optimizer.load_state_dict(saved.optimizer)


def save_run(
    run: Run, done: int, seconds: float, cfg: TrainConfig | None = None, state: RunState | None = None
) -> None:
    """Checkpoint the run after `done` steps: weights, optimiser, every random stream and the state (rank 0
    alone, or every process for its share of a sharded run), then drop a checkpoint of the other kind. With
    `cfg` and `state`: the checkpoint of that run (a cooldown branch, `save_branches`) at this state."""
    if run.rank != 0 and not run.sharded:
        return
    cfg = cfg or run.cfg
    cuda = run.device.type == "cuda"
    name, keys, *rest = run.data_rng.get_state()  # as plain values: weights_only loading takes no arrays
    saved = checkpoint.Resumable(
        step=done,
        model=None if run.sharded else run.model.state_dict(),  # sharded: DCP's files hold both
        optimizer=None if run.sharded else run.optimizer.state_dict(),
        torch_rng=torch.get_rng_state(),
        cuda_rng=torch.cuda.get_rng_state(run.device) if cuda else None,
        data_rng=[name, keys.tolist(), *rest],
        state=asdict(state or replace(run.state, step=done, seconds=seconds)),
        **run_identity(cfg, run.tokens),  # config, data, plugin: what a resume must agree with
    )
    ckpt = (checkpoint.sharded_path if run.sharded else checkpoint.checkpoint_path)(run.out, **cfg.stem)
    if run.sharded:
        from rr_model.checkpoint import sharded as sharded_checkpoint

        sharded_checkpoint.save(ckpt, run.model, run.optimizer, saved)
    else:
        checkpoint.save(ckpt, saved)
    if run.rank == 0:
        remove_checkpoints(run, keep=ckpt, cfg=cfg)


def save_branches(run: Run, done: int, seconds: float) -> None:
    """Where cooldown branches start (`TrainConfig.branch_start`), save this state as each branch's checkpoint
    (its config, this step, the stable phase's curve) and start its metrics log as a copy of this run's, so
    the branch continues from here as a run of its steps would (the lr up to here is the same, so are the
    batches: the data stream is the seed's). A branch that has a row or a checkpoint already is left alone."""
    for branch in run.branch_starts[done]:
        fresh = [not run.plan.holds(branch) and checkpoint.current(run.out, **branch.stem) is None]
        if run.world > 1:  # the processes take rank 0's decision: each writes its share of a sharded one
            dist.broadcast_object_list(fresh, src=0)
        if not fresh[0]:
            continue
        state = RunState(
            step=done,
            seconds=seconds,
            curve=[list(c) for c in run.state.curve],
            started=run.state.started,
            branched_at=done,
        )
        save_run(run, done, seconds, branch, state)
        if run.rank == 0:
            log = metrics_path(run.out, **branch.stem)
            shutil.copyfile(metrics_path(run.out, **run.cfg.stem), log)


def remove_checkpoints(run: Run, keep: Path | None = None, cfg: TrainConfig | None = None) -> None:
    """Remove the run's checkpoints (or `cfg`'s), file and sharded folder, but `keep`."""
    stem = (cfg or run.cfg).stem
    for path in (checkpoint.checkpoint_path(run.out, **stem), checkpoint.sharded_path(run.out, **stem)):
        if path != keep:
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)


def kept_record(run: Run) -> dict[str, Any] | None:
    """The record kept with the run's final weights when its row could not be written (`_finish` saves the
    weights first), for `--resume` to write the row from without training; None where there are none.
    Refused when the weights are another run's (its config or tokens changed since: `identity_changes`)."""
    path = checkpoint.final_path(run.out, *run.cfg.key)
    found: list[Any] = [None]  # the record, or why the weights are refused: every process learns which
    if run.rank == 0 and path.exists():
        try:
            _, final = checkpoint.load_weights(path)
            now = run_identity(run.cfg, run.tokens)
            saved = {"config": final.config, "data": final.data}
            changed = identity_changes(saved, {"config": now["config"], "data": now["data"]})
            found = (
                [final.record]
                if not changed
                else [
                    f"{path} holds the final weights of another run than this one: {'; '.join(changed)}; restore "
                    "what changed, or delete the file to train the run again"
                ]
            )
        except checkpoint.CheckpointError as e:  # damaged, or not rr's
            found = [str(e)]
    if run.world > 1:
        dist.broadcast_object_list(found, src=0)
    if isinstance(found[0], str):
        raise InputError(found[0])
    return found[0]

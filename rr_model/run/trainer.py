"""The trainer: one run of (size, variant, seed) under the published recipe, appended to a dataset as a row.

Read top to bottom, in the manner of nanoGPT's train.py: `train` in four rooms (setup, resume, loop,
finish). The recipe's arithmetic (the schedule, one optimiser step, the device and process group) is in
`rr_model.run.step`; what to run and whether it is the published experiment lives torch-free in
`rr_model.config` (TrainConfig, the recipe's departures) and `rr_model.run.planning` (the plan, the output
file's pre-flight, the recipe guard); what the recipe is, in `rr_core.ladder`; how this trainer matches the
published script, in docs/faithfulness.md.

The same seed is the published experiment: `torch.manual_seed(seed)` right before the model is built
(`GPT.init_published` consumes the stream in the published order), and the data order is
`numpy.random.RandomState(seed)`, each step drawing the global batch's window starts; the 80 validation
batches continue the same stream. `--init-seed` and `--data-seed` set the two seeds apart
(`TrainConfig.seeds`). Periodic validation (`--eval-every`) reads windows of its own, drawn once from a
stream apart (`rr_model.data.windows.held_out_windows`), so it moves neither stream. Runs single-process
or under `torchrun` (data parallel): every rank draws the whole batch and trains on its slice, the gradients
averaged over the ranks, so the recipe does not depend on the number of processes; only rank 0 writes rows,
provenance records and checkpoints. A sharded
run (`TrainConfig.shard`, `rr_model.parallel.sharding`) does the same with each process holding a share of the model,
and every process writes its share of each checkpoint (`rr_model.checkpoint.sharded`).

    rr train --size 150M                     # next unused seed, all three compared variants
    torchrun --nproc_per_node 8 -m cli.main train --size 1B
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from rr_core.files.locks import Held, claim
from rr_core.shapes import GPTConfig
from rr_core.sweepfile.metrics_log import metrics_path
from rr_core.sweepfile.provenance import environment
from rr_model.checkpoint import state as checkpoint
from rr_model.config import DEFAULT_OUT, TrainConfig, checkpoint_interval, schedule_words
from rr_model.data.token_cache import check_data, load_tokens
from rr_model.data.windows import held_out_windows, sample_batch
from rr_model.metrics import Metrics
from rr_model.model import GPT
from rr_model.parallel import out_of_memory
from rr_model.parallel.flops import flops_per_token
from rr_model.parallel.hardware import datasheet_peak, peak_note
from rr_model.run.checks import check_claimed, check_run, check_windows, say_within_warmup
from rr_model.run.gate_watch import GateWatch
from rr_model.run.numerics import numerics
from rr_model.run.output_file import OutputPlan, preflight
from rr_model.run.progress import Progress
from rr_model.run.readings import log_readings, periodic_validation
from rr_model.run.results import final_weights, keep_weights, publish, run_record, summarize, unwritten
from rr_model.run.retry import failure_of, step_with_retry
from rr_model.run.run_checkpoints import kept_record, resume_run, save_branches, save_run
from rr_model.run.run_state import Run
from rr_model.run.step import join_process_group, lr_at, setup_device, to_device
from rr_model.run.validation import evaluate

__all__ = ["train", "train_runs", "summarize"]  # summarize: results' own, kept where the commands call it


# ------------------------------------------------------------------------------------------------ train


def train(
    cfg: TrainConfig,
    out: str | os.PathLike = DEFAULT_OUT,
    *,
    resume: bool = False,
    queued: int = 0,
    plan: OutputPlan | None = None,
) -> dict[str, Any]:
    """Train one run, evaluate it, and append its row to `out` (and its provenance to the sidecar).

    `cfg.data` may be a token-cache directory (tokens.bin + meta.json), so a run can be audited against
    the published script on the very same tokens. `queued`: the steps of runs to train after this one,
    counted in the ETA shown (`train_runs` passes them). `plan`: `out`'s reading (`preflight`) when the
    caller has one, so the file is not read again; None: it is read here.

    Returns the provenance record: ``record["status"]`` is "ok" (row appended; ``record["result"]`` has
    params, val_loss, ece and minutes at full precision) or "failed" (non-finite loss; no row).

    Raises
    ------
    RecipeError
        Off-recipe run for a file holding the published rows.
    rr_core.files.locks.Held
        Another process is training this run into `out` now (it holds the run's claim,
        `rr_model.checkpoint.paths.claim_path`); nothing is read or written.
    InputError
        `out` cannot be written, its row would be refused, or a checkpoint of this run exists but `resume`
        is False, or it was written by another run (config, corpus, plugin code: `run_identity`).
    rr_model.checkpoint.state.CheckpointError
        Resuming from a file that is not a readable checkpoint of this trainer.
    rr_model.data.tokenizers.DataUnavailable
        The corpus cannot be fetched (see its message for --corpus).
    """
    resume = resume or cfg.branch_of is not None  # a branch continues from the state its run saved for it
    device = setup_device(cfg.device, int(os.environ.get("LOCAL_RANK", "0")))
    with numerics(device, cfg.precision, cfg.deterministic) as threads, contextlib.ExitStack() as claimed:
        run = _setup(cfg, Path(out), device, plan, claimed, resume)
        run.queued, run.threads = queued, threads
        try:
            if resume and (kept := kept_record(run)) is not None:  # trained, its row not written: write it
                return publish(run, kept)
            resume_run(run, resume)
            _start(run)
            failure = _loop(run)
            return _finish(run, failure)
        except Exception as e:
            if (stopped := failure_of(run, e)) is e:
                raise
            raise stopped from None
        finally:
            if run.metrics is not None:
                run.metrics.close(finished=False)  # a no-op after _finish closed it
            if run.own_group:
                dist.destroy_process_group()


def _setup(
    cfg: TrainConfig,
    out: Path,
    device: torch.device,
    plan: OutputPlan | None,
    claimed: contextlib.ExitStack,
    resume: bool,
) -> Run:
    """Check that the run may go ahead and where its row goes, load its tokens, build model and optimiser."""
    alone = cfg.shard == "fsdp" and not dist.is_initialized()
    rank, world = join_process_group(device, alone=cfg.shard == "fsdp")
    r, gpu_gib = cfg.recipe, gpu_memory(cfg, device)
    if plan is None:  # the file's one reading before training
        plan = preflight(out, reproduction=cfg.reproduce)
    # checked with the command's other runs (`Runs.check`); a check without `resume` is the stricter one
    mcfg = plan.checked.get((cfg, world, resume)) or plan.checked.get((cfg, world, False))
    if mcfg is None:  # before the run makes any file: --dry-run's checks
        mcfg = check_run(cfg, plan, check_data(cfg.data, cfg.tokenizer, r.n_text), world, gpu_gib, resume)
    _claim(out, cfg, rank, world, claimed)
    check_claimed(cfg, plan, mcfg.n_params, resume)  # a row or checkpoint its previous holder left since
    tokens = load_tokens(
        cfg.data,
        n_text=r.n_text,
        cache_dir=cfg.cache_dir,
        tokenizer=cfg.tokenizer,
        text_field=cfg.text_field,
        val_frac=r.val_frac,
    )
    # the corpus as loaded is as `check_data` said (a local or hub corpus may hold fewer documents, but it is
    # off the published recipe whatever it holds): what only its tokens tell is whether they hold a window
    check_windows(cfg, tokens)
    if rank == 0:
        plan.start()
    ckpt = (checkpoint.sharded_path if cfg.shard == "fsdp" else checkpoint.checkpoint_path)(out, **cfg.stem)
    if rank == 0:
        out_of_memory.record_path(ckpt).unlink(missing_ok=True)  # a stop of an earlier attempt
    if world > 1 and cfg.shard == "fsdp":
        from rr_model.checkpoint.sharded import check_shared  # torch.distributed.checkpoint: when sharding

        check_shared(ckpt)
    model, optimizer = _build(cfg, mcfg, device, world)
    return Run(
        cfg=cfg,
        out=out,
        device=device,
        rank=rank,
        world=world,
        tokens=tokens,
        mcfg=mcfg,
        model=model,
        optimizer=optimizer,
        data_rng=np.random.RandomState(cfg.seeds.data),  # the data order: the seed's, same for every variant
        ckpt=ckpt,
        plan=plan,
        accum=cfg.micro_batches,
        own_group=alone and world == 1,
        held_out=held_out_windows(tokens.val, cfg.eval_windows, r.block_size) if cfg.eval_every else None,
    )


def gpu_memory(cfg: TrainConfig, device: torch.device) -> float | None:
    """GiB of memory a process of the run may use: `cfg.gpu_memory`, else the CUDA device's; None off CUDA."""
    if cfg.gpu_memory is not None:
        return cfg.gpu_memory
    return torch.cuda.get_device_properties(device).total_memory / 2**30 if device.type == "cuda" else None


def _build(
    cfg: TrainConfig, mcfg: GPTConfig, device: torch.device, world: int
) -> tuple[GPT, torch.optim.Optimizer]:
    """The model with its published initial weights, laid over the processes (`rr_model.parallel.sharding`), and its
    optimiser, built on what each process holds."""
    torch.manual_seed(cfg.seeds.init)  # right before the model: its initial weights are the published draws
    model = GPT(mcfg)
    model.checkpoint_activations(checkpoint_interval(cfg.activation_checkpointing))
    if cfg.shard == "fsdp":
        from rr_model.parallel.sharding import (
            shard,  # torch.distributed's FSDP and DTensor: only when sharding
        )

        shard(model, device, world, cfg.precision)
    else:
        model = model.to(device)
    r = cfg.recipe
    return model, model.configure_optimizers(r.weight_decay, r.lr, (r.beta1, r.beta2))  # fused on CUDA


def _claim(out: Path, cfg: TrainConfig, rank: int, world: int, claimed: contextlib.ExitStack) -> None:
    """Claim the run (`rr_core.files.locks.claim` on `checkpoint.claim_path`) for as long as `claimed` is open, so
    no other process trains it into `out` meanwhile (two sweeps of one plan, a resubmitted job): rank 0
    holds it, and every rank raises `Held` if another process does."""
    held = None
    if rank == 0:
        path = checkpoint.claim_path(out, **cfg.stem)
        path.parent.mkdir(parents=True, exist_ok=True)  # `out`'s folder too: preflight checked its parent
        try:
            claimed.enter_context(claim(path, f"{' '.join(map(str, cfg.key))} of {out}"))
        except Held as e:
            held = e
    if world > 1:
        box = [None if held is None else (held.path, held.what, held.holder)]
        dist.broadcast_object_list(box, src=0)
        held = None if box[0] is None else Held(*box[0])
    if held is not None:
        raise held


def _start(run: Run) -> None:
    """Compile the model if asked, open the progress display and print the run's shape."""
    cfg, r, mcfg = run.cfg, run.cfg.recipe, run.mcfg
    run.gates = GateWatch(run.model, run.device)  # before compiling, which traces it; empty without a gate
    run.net = torch.compile(run.model) if cfg.compile else run.model
    if run.world > 1 and not run.sharded:
        _same_weights(run)
    if run.world > 1 and not run.sharded and dist.get_backend() != "gloo":
        run.flags = dist.new_group(backend="gloo")  # the out-of-memory flag, on the host (retry)
    tokens_per_step = r.batch_size * r.block_size
    run.env = environment(str(run.device))
    name = run.env["device_name"] if run.device.type == "cuda" else str(run.device)
    peak = datasheet_peak(name, cfg.precision)
    run.progress = Progress(
        run.title,
        cfg.steps,
        run.state.step,
        tokens_per_step,
        flops_per_token(mcfg),
        peak and peak * run.world,
        run.rank == 0,
        run.queued,
    )
    run.metrics = Metrics(
        metrics_path(run.out, **cfg.stem),
        {**cfg.named, **(dict(init_seed=cfg.seeds.init, data_seed=cfg.seeds.data) if cfg.own_seeds else {})},
        step=run.state.step,
        backends=cfg.log,
        resumed=bool(run.state.resumed) or run.state.branched_at is not None,  # a branch: its run's log
        wandb_id=run.state.wandb_id,
        config=asdict(cfg),
        enabled=run.rank == 0,
    )
    run.state.wandb_id = run.metrics.wandb_id  # kept in checkpoints: a resumed run continues it
    for branch in cfg.branches():  # a branch that starts at step 0 is a run of its own from the start
        if run.state.step < branch.branch_start:
            run.branch_starts.setdefault(branch.branch_start, []).append(branch)
    fp32 = "" if run.device.type == "cuda" or cfg.precision != "tf32" else " (fp32 arithmetic off CUDA)"
    run.progress.log(
        f"{run.title}: d_model {mcfg.d_model}, {mcfg.n_layer} layers, {mcfg.n_head} heads, "
        f"{mcfg.n_params / 1e6:.2f}M params | {cfg.steps} steps x {r.batch_size} x {r.block_size} = "
        f"{cfg.steps * tokens_per_step / 1e6:.1f}M tokens | lr {r.lr:g}, {schedule_words(cfg)} | "
        f"{run.device}, {cfg.precision}{fp32}, {run.world} process(es) x "
        f"{r.batch_size // run.world} sequences{', ' + run.threads if run.threads else ''} | data {run.tokens.source} ({run.tokens.tokenizer}, "
        f"{len(run.tokens.train) / 1e6:.1f}M train tokens) | checkpoint every {cfg.checkpoint_every or '-'}"
        + (f" | resumed at step {run.state.step}" if run.state.resumed else "")
        + _memory_note(cfg)
        + f" | {peak_note(name, cfg.precision)}"
    )
    if run.rank == 0:  # under the start line, which process 0 prints
        say_within_warmup(cfg)


def _memory_note(cfg: TrainConfig) -> str:
    """How the run saves memory, for its start line: nothing where it keeps the published layout."""
    notes = [
        *(["sharded (FSDP2)"] if cfg.shard == "fsdp" else []),
        *(
            [f"activation checkpointing {cfg.activation_checkpointing}"]
            * (cfg.activation_checkpointing != "none")
        ),
        *([f"{cfg.micro_batches} micro-batches"] if cfg.micro_batches > 1 else []),
    ]
    return "".join(f" | {n}" for n in notes)


def _loop(run: Run) -> str | None:
    """The optimiser steps from where the run stands to the last; a failure message if the loss diverged."""
    cfg, r, world = run.cfg, run.cfg.recipe, run.world
    per_rank = r.batch_size // world
    loss_sum, norm_sum, n_sum = torch.zeros((), device=run.device), torch.zeros((), device=run.device), 0
    start = time.perf_counter()
    for step in range(run.state.step, cfg.steps):
        run.at = step
        for group in run.optimizer.param_groups:
            group["lr"] = _lr(cfg, step)
        x, y = sample_batch(run.tokens.train, run.data_rng, r.batch_size, r.block_size)  # the global batch
        mine = slice(run.rank * per_rank, (run.rank + 1) * per_rank)
        loss, norm = step_with_retry(
            run, to_device(x[mine], run.device), to_device(y[mine], run.device), step
        )
        loss_sum += loss
        norm_sum += norm  # the same on every rank: gradients are all-reduced before clipping
        n_sum += 1
        done = step + 1
        run.progress.advance(done)
        at_checkpoint = cfg.checkpoint_every and done % cfg.checkpoint_every == 0 and done < cfg.steps
        branching = done in run.branch_starts  # a reading there too: a branch's log continues this one's
        if done % cfg.log_every == 0 or done == cfg.steps or at_checkpoint or branching:
            if world > 1:
                dist.all_reduce(loss_sum)  # every rank sees the same mean, so all stop together
                if len(run.gates):
                    dist.all_reduce(run.gates.sums)  # r's sums over every process's share of the batch
            readings = torch.cat(
                [t.view(-1).to(run.gates.sums.dtype) for t in (loss_sum, run.gates.sums, norm_sum)]
            )
            total, *gates, norms = readings.tolist()  # the interval's one host sync (float32 to 64: exact)
            mean = total / n_sum / world
            log_readings(run, done, mean, norms / n_sum, _lr(cfg, step), run.gates.stats(gates))
            loss_sum.zero_()
            norm_sum.zero_()
            run.gates.sums.zero_()
            n_sum = 0
            if not math.isfinite(mean):
                run.state.seconds += time.perf_counter() - start
                return f"non-finite training loss ({mean}) in the steps up to {done}"
            run.state.curve.append([done, mean])
            run.progress.report(done, mean)
        if cfg.eval_every and (done % cfg.eval_every == 0 or done == cfg.steps):
            periodic_validation(run, done)
        if branching:  # before the run's own checkpoint: a run resumed from that one has passed here
            save_branches(run, done, run.state.seconds + time.perf_counter() - start)
        if at_checkpoint:
            save_run(run, done, run.state.seconds + time.perf_counter() - start)
    run.at = cfg.steps
    if run.device.type == "cuda":
        torch.cuda.synchronize(run.device)
    run.state.seconds += time.perf_counter() - start
    return None


def _lr(cfg: TrainConfig, step: int) -> float:
    """The learning rate of step `step` under the run's schedule (`rr_model.run.step.lr_at`)."""
    return lr_at(step, cfg.steps, cfg.recipe, cfg.schedule, cfg.decay_frac, cfg.decay_shape)


def _same_weights(run: Run) -> None:
    """Every process starts from rank 0's weights, as DDP's start-up broadcast made sure: the same seed
    and checkpoint already give them, so this changes nothing unless something went wrong."""
    with torch.no_grad():
        for tensor in run.model.state_dict().values():
            dist.broadcast(tensor, src=0)


def _finish(run: Run, failure: str | None) -> dict[str, Any]:
    """Evaluate (unless the run diverged), then write the row and the provenance record; the record."""
    cfg, r = run.cfg, run.cfg.recipe
    run.progress.close()
    run.gates.close()  # the evaluation reads no gate
    result = None
    if failure is None:
        start = time.perf_counter()
        val_loss, ece = evaluate(
            run.net,
            run.tokens.val,
            rng=run.data_rng,  # the published order: validation continues the training stream
            n_batches=r.eval_batches,
            batch_size=r.batch_size,
            block_size=r.block_size,
            n_bins=r.ece_bins,
            device=run.device,
            autocast=run.autocast,
            lockstep=run.sharded,
        )
        run.state.seconds += time.perf_counter() - start  # minutes: training and the final evaluation
        result = {
            "params": run.mcfg.n_params,
            "val_loss": val_loss,
            "ece": ece,
            "minutes": run.state.seconds / 60,
        }
        run.progress.log(f"{run.title}: val_loss {val_loss:.4f}, ece {ece:.4f}, {result['minutes']:.2f} min")
        run.metrics.evaluation(cfg.steps, val_loss=val_loss, ece=ece, minutes=result["minutes"])
    else:
        run.progress.log(f"{run.title}: diverged: {failure}; no row is written")
    run.metrics.close(finished=failure is None)
    record = run_record(run, failure, result)
    weights = final_weights(run) if result is not None else None
    if run.rank == 0 and weights is not None:  # first: a row that cannot be written loses no training
        try:
            keep_weights(run, record, weights)
        except OSError as e:
            raise unwritten(e, "the run's final weights, row and record", run.ckpt, None) from None
    return publish(run, record)


# ----------------------------------------------------------------------------------------------- output


def train_runs(
    runs: list[TrainConfig],
    out: str | os.PathLike = DEFAULT_OUT,
    *,
    resume: bool = False,
    plan: OutputPlan | None = None,
) -> list[dict]:
    """Train `runs` one after another (see `train`), the ETA shown covering them all; the provenance record
    of each, in order.

    `out` is read once for all of them: `plan` is its reading when the caller planned the runs
    (`rr_model.run.planning.Runs.output`), else it is read (`preflight`) here; each run's row is taken into it.
    """
    if plan is None and runs:
        reproduction = any(c.reproduce for c in runs)
        plan = preflight(out, reproduction=reproduction)
    try:
        later = [sum(c.steps for c in runs[i + 1 :]) for i in range(len(runs))]
        records = [
            train(cfg, out, resume=resume, queued=n, plan=plan) for cfg, n in zip(runs, later, strict=True)
        ]
        if dist.is_initialized():
            dist.barrier()  # leave together: gloo aborts a process whose peer tears down mid-way
        return records
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()

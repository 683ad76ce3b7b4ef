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
import json
import math
import os
import shutil
import time
import uuid
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.distributed as dist

from rr_core.budget import reference_params
from rr_core.errors import InputError, StoppedElsewhere
from rr_core.files.appending import Unwritten
from rr_core.files.locks import Held, claim
from rr_core.files.reading import stamp
from rr_core.plugins import provenance
from rr_core.shapes import GPTConfig
from rr_core.sweepfile.csv_text import DataError
from rr_core.sweepfile.dataset import append_rows
from rr_core.sweepfile.metrics_log import metrics_path
from rr_core.sweepfile.provenance import append_record, environment, sidecar_path
from rr_model.checkpoint import state as checkpoint
from rr_model.config import DEFAULT_OUT, TrainConfig, checkpoint_interval, schedule_words
from rr_model.data.token_cache import Tokens, check_data, load_tokens
from rr_model.data.windows import describe_held_out, held_out_windows, sample_batch
from rr_model.metrics import Metrics
from rr_model.model import GPT
from rr_model.parallel import out_of_memory
from rr_model.parallel.flops import flops_per_token
from rr_model.parallel.hardware import datasheet_peak, peak_note
from rr_model.run.checks import check_claimed, check_run, check_windows
from rr_model.run.gate_watch import GateWatch
from rr_model.run.identity import identity_changes, result_config, run_identity
from rr_model.run.numerics import numerics
from rr_model.run.output_file import OutputPlan, dataset_row, preflight
from rr_model.run.progress import Progress
from rr_model.run.step import (
    accumulate,
    apply_gradients,
    join_process_group,
    lr_at,
    setup_device,
    to_device,
    utc_now,
)
from rr_model.run.validation import evaluate, held_out_loss

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "train",
    "train_runs",
    "summarize",
]


@dataclass
class _State:
    """What a checkpoint restores besides the model, the optimiser and the random streams."""

    step: int = 0  # optimiser steps done
    seconds: float = 0.0  # wall-clock of training (and, once done, the final evaluation) so far
    curve: list[list[float]] = field(default_factory=list)  # [step, mean training loss of the interval]
    started: str = field(default_factory=utc_now)
    resumed: list[int] = field(default_factory=list)  # steps at which the run was resumed
    wandb_id: str | None = None  # the W&B run a resumed run continues (rr_model.metrics)
    branched_at: int | None = None  # a cooldown branch: the step of its run's state it continues from


@dataclass
class _Run:
    """Everything one run holds while it trains: built by `_setup`, read by the other rooms."""

    cfg: TrainConfig
    out: Path
    device: torch.device
    rank: int
    world: int
    tokens: Tokens
    mcfg: GPTConfig
    model: GPT
    optimizer: torch.optim.Optimizer
    data_rng: np.random.RandomState
    ckpt: Path
    plan: OutputPlan  # the output file's one reading, which takes in the row this run appends
    state: _State = field(default_factory=_State)
    accum: int = 1  # doubled on CUDA out-of-memory: same batch, same result, smaller micro-batches
    net: torch.nn.Module | None = None  # the model as trained: compiled or not (not DDP: see _step)
    flags: Any = None  # the process group of the out-of-memory flag; None: the default one
    progress: Progress | None = None
    metrics: Metrics | None = None  # the per-step log (JSONL, and TensorBoard / W&B when asked)
    gates: GateWatch | None = None  # each gated sublayer's r, summed on the device between log points
    env: dict[str, Any] = field(default_factory=dict)  # software and hardware (rr_core.sweepfile.provenance)
    queued: int = 0  # steps of the runs to train after this one: the progress display's total ETA
    threads: str = (
        ""  # on CPU, the threads chosen and why (rr_model.run.numerics.cpu_threads), for the start line
    )
    at: int = 0  # the step being trained (after the loop: the final evaluation's)
    own_group: bool = False  # a process group of this one process, made for a sharded run and ended with it
    # the cooldown branches of the run by the step where each starts (`_save_branches` saves their state there)
    branch_starts: dict[int, list[TrainConfig]] = field(default_factory=dict)
    held_out: np.ndarray | None = None  # the starts of the held-out windows of --eval-every; None without it

    @property
    def sharded(self) -> bool:
        return self.cfg.shard == "fsdp"

    @property
    def title(self) -> str:
        lr = f" lr {self.cfg.recipe.lr:g}" if self.cfg.role else ""  # a tuning run's rate is part of its key
        return f"{self.cfg.size} {self.cfg.variant} seed {self.cfg.seed}{lr}"

    @property
    def autocast(self) -> contextlib.AbstractContextManager:
        if self.cfg.precision == "bf16":
            return torch.autocast(self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()


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
            if resume and (kept := _kept_record(run)) is not None:  # trained, its row not written: write it
                return _publish(run, kept)
            _resume(run, resume)
            _start(run)
            failure = _loop(run)
            return _finish(run, failure)
        except Exception as e:
            if (stopped := _stopped(run, e)) is e:
                raise
            raise stopped from None
        finally:
            if run.metrics is not None:
                run.metrics.close(finished=False)  # a no-op after _finish closed it
            if run.own_group:
                dist.destroy_process_group()


def _stopped(run: _Run, e: Exception) -> Exception:
    """What a failure becomes: under sharding, running out of memory stops every process with one line
    (`rr_model.parallel.out_of_memory`), and a collective broken by that stop ends a peer silently; else `e` itself."""
    if not run.sharded:
        return e
    record = out_of_memory.record_path(run.ckpt)
    if isinstance(e, torch.OutOfMemoryError):
        latest = checkpoint.current(run.out, **run.cfg.stem)
        per_rank = run.cfg.recipe.batch_size // run.world
        facts = {"rank": run.rank, "world": run.world, "device": str(run.device), "step": run.at,
                 "micro_batches": run.accum, "sequences": per_rank // run.accum, "error": str(e)[:500],
                 "checkpoint": latest and str(latest), "checkpoint_step": latest and checkpoint.saved_step(latest)}  # fmt: skip
        return out_of_memory.stop(record, facts)
    return (run.world > 1 and out_of_memory.stopped_elsewhere(record)) or e


def _setup(
    cfg: TrainConfig,
    out: Path,
    device: torch.device,
    plan: OutputPlan | None,
    claimed: contextlib.ExitStack,
    resume: bool,
) -> _Run:
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
    return _Run(
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


def _resume(run: _Run, resume: bool) -> None:
    """Continue from the run's checkpoint when asked (its `.pt` file, or the folder of a sharded run: either
    resumes either way, on any number of processes); the checkpoint is read only then, verified first, and
    refused when it was written by another run: another config, corpus (its tokens' sha256) or plugin code
    (`run_identity`)."""
    found = checkpoint.current(run.out, **run.cfg.stem)
    if found is None or not resume:  # a checkpoint without --resume: refused by check_run
        return
    saved = _verified_meta(run, found) if found.is_dir() else checkpoint.load(found)
    now = run_identity(run.cfg, run.tokens)
    kept = {k: getattr(saved, k) for k in now if getattr(saved, k) is not None}  # an older one: what it kept
    if changed := identity_changes(kept, {k: now[k] for k in kept}):
        raise InputError(
            f"{found} was written by another run than this one: {'; '.join(changed)}. Resuming would mix "
            "the two in one row; restore what changed, or delete the checkpoint to start over"
        )
    try:
        _restore(run, found, saved)
        torch.set_rng_state(torch.as_tensor(saved.torch_rng, dtype=torch.uint8))
        if run.device.type == "cuda":
            torch.cuda.set_rng_state(torch.as_tensor(saved.cuda_rng, dtype=torch.uint8), run.device)
        name, keys, *rest = saved.data_rng
        run.data_rng.set_state((name, np.array(keys, dtype=np.uint32), *rest))
        run.state = _State(**saved.state)
    except (RuntimeError, ValueError, TypeError, KeyError) as e:
        raise checkpoint.refused(found, "its contents do not fit this run", e) from None
    if run.state.step != run.state.branched_at:  # a branch's first segment continues its run, not itself
        run.state.resumed.append(run.state.step)


def _verified_meta(run: _Run, folder: Path) -> checkpoint.Resumable:
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


def _restore(run: _Run, found: Path, saved: checkpoint.Resumable) -> None:
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


def _start(run: _Run) -> None:
    """Compile the model if asked, open the progress display and print the run's shape."""
    cfg, r, mcfg = run.cfg, run.cfg.recipe, run.mcfg
    run.gates = GateWatch(run.model, run.device)  # before compiling, which traces it; empty without a gate
    run.net = torch.compile(run.model) if cfg.compile else run.model
    if run.world > 1 and not run.sharded:
        _same_weights(run)
    if run.world > 1 and not run.sharded and dist.get_backend() != "gloo":
        run.flags = dist.new_group(backend="gloo")  # the out-of-memory flag, on the host (_ran_out)
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


def _loop(run: _Run) -> str | None:
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
        loss, norm = _step(run, to_device(x[mine], run.device), to_device(y[mine], run.device), step)
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
            _log(run, done, mean, norms / n_sum, _lr(cfg, step), run.gates.stats(gates))
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
            _validate(run, done)
        if branching:  # before the run's own checkpoint: a run resumed from that one has passed here
            _save_branches(run, done, run.state.seconds + time.perf_counter() - start)
        if at_checkpoint:
            _save(run, done, run.state.seconds + time.perf_counter() - start)
    run.at = cfg.steps
    if run.device.type == "cuda":
        torch.cuda.synchronize(run.device)
    run.state.seconds += time.perf_counter() - start
    return None


def _lr(cfg: TrainConfig, step: int) -> float:
    """The learning rate of step `step` under the run's schedule (`rr_model.run.step.lr_at`)."""
    return lr_at(step, cfg.steps, cfg.recipe, cfg.schedule, cfg.decay_frac, cfg.decay_shape)


def _log(run: _Run, done: int, loss: float, grad_norm: float, lr: float, gates: list[dict]) -> None:
    """One log interval's readings into the metrics log (rank 0); MFU is None where the peak is unknown;
    `gates`: each gated sublayer's r over the interval (`GateWatch.stats`), [] for a rule without a gate."""
    rate, mfu = run.progress.rates(done)
    cuda = run.device.type == "cuda"
    memory = torch.cuda.max_memory_allocated(run.device) / 2**30 if cuda else None
    run.metrics.log(
        done, loss=loss, lr=lr, grad_norm=grad_norm, tokens_per_s=rate, mfu=mfu, memory_gib=memory,
        seconds=time.perf_counter() - run.progress.t0, gates=gates,
    )  # fmt: skip


def _validate(run: _Run, done: int) -> None:
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


def _step(run: _Run, x: torch.Tensor, y: torch.Tensor, step: int) -> tuple[torch.Tensor, torch.Tensor]:
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
    running out of memory stops the run on every process instead (`_stopped`).
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


def _same_weights(run: _Run) -> None:
    """Every process starts from rank 0's weights, as DDP's start-up broadcast made sure: the same seed
    and checkpoint already give them, so this changes nothing unless something went wrong."""
    with torch.no_grad():
        for tensor in run.model.state_dict().values():
            dist.broadcast(tensor, src=0)


def _ran_out(run: _Run, mine: bool) -> int:
    """How many processes ran out of memory in this step's forward and backward passes.

    Under torchrun, one all-reduce of a CPU tensor (over gloo: beside NCCL, a gloo group made in `_start`)
    per step: CUDA raises out-of-memory on the host, at the allocation, so no process waits for its GPU.
    """
    if run.world == 1:
        return int(mine)
    flag = torch.tensor([int(mine)])
    dist.all_reduce(flag, group=run.flags)
    return int(flag)


def _more_micro_batches(run: _Run, step: int, ran_out: int, detail: str) -> None:
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


def _save(
    run: _Run, done: int, seconds: float, cfg: TrainConfig | None = None, state: _State | None = None
) -> None:
    """Checkpoint the run after `done` steps: weights, optimiser, every random stream and the state (rank 0
    alone, or every process for its share of a sharded run), then drop a checkpoint of the other kind. With
    `cfg` and `state`: the checkpoint of that run (a cooldown branch, `_save_branches`) at this state."""
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
        _remove_checkpoints(run, keep=ckpt, cfg=cfg)


def _save_branches(run: _Run, done: int, seconds: float) -> None:
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
        state = _State(step=done, seconds=seconds, curve=[list(c) for c in run.state.curve],
                       started=run.state.started, branched_at=done)  # fmt: skip
        _save(run, done, seconds, branch, state)
        if run.rank == 0:
            log = metrics_path(run.out, **branch.stem)
            shutil.copyfile(metrics_path(run.out, **run.cfg.stem), log)


def _remove_checkpoints(run: _Run, keep: Path | None = None, cfg: TrainConfig | None = None) -> None:
    """Remove the run's checkpoints (or `cfg`'s), file and sharded folder, but `keep`."""
    stem = (cfg or run.cfg).stem
    for path in (checkpoint.checkpoint_path(run.out, **stem), checkpoint.sharded_path(run.out, **stem)):
        if path != keep:
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)


def _finish(run: _Run, failure: str | None) -> dict[str, Any]:
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
    record = _record(run, failure, result)
    weights = _weights(run) if result is not None else None
    if run.rank == 0 and weights is not None:  # first: a row that cannot be written loses no training
        try:
            _keep_weights(run, record, weights)
        except OSError as e:
            raise _unwritten(e, "the run's final weights, row and record", run.ckpt, None) from None
    return _publish(run, record)


def _publish(run: _Run, record: dict[str, Any]) -> dict[str, Any]:
    """Write the run's row and record (rank 0), then drop its checkpoints, which they supersede; the record."""
    if run.rank == 0:
        if (written := _write(run.out, run.cfg, record, run.ckpt)) is not None:
            run.plan.extend(*written)
        _remove_checkpoints(run)
    return record


def _kept_record(run: _Run) -> dict[str, Any] | None:
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
            found = [final.record] if not changed else [
                f"{path} holds the final weights of another run than this one: {'; '.join(changed)}; restore "
                "what changed, or delete the file to train the run again"
            ]  # fmt: skip
        except checkpoint.CheckpointError as e:  # damaged, or not rr's
            found = [str(e)]
    if run.world > 1:
        dist.broadcast_object_list(found, src=0)
    if isinstance(found[0], str):
        raise InputError(found[0])
    return found[0]


def _weights(run: _Run) -> dict[str, torch.Tensor]:
    """The whole model's state dict on rank 0 (a sharded run's pieces gathered: every process calls this)."""
    if not run.sharded:
        return run.model.state_dict()
    from rr_model.parallel.sharding import full_weights

    return full_weights(run.model)


def _keep_weights(run: _Run, record: dict[str, Any], weights: dict[str, torch.Tensor]) -> None:
    """The finished run's weights (no optimiser) and what rebuilds them, for rr sample, eval, export, gates."""
    final = checkpoint.Final(
        step=run.cfg.steps,
        config=result_config(run.cfg),
        model=weights,
        model_config=asdict(run.mcfg),
        data=run.tokens.describe(),
        record=json.loads(json.dumps(record)),  # plain values (torch's version is a str subclass)
    )
    checkpoint.save(checkpoint.final_path(run.out, **run.cfg.stem), final)


def _record(run: _Run, failure: str | None, result: dict[str, Any] | None) -> dict[str, Any]:
    """The run's provenance record for the sidecar; a plugin's variant adds its module, file and sha256."""
    plugin, r = provenance(run.cfg.variant), run.cfg.recipe
    return {
        "run_id": uuid.uuid4().hex[:12],
        **run.cfg.named,  # size, variant, seed; lr, and steps and budget for one of several budgets
        "init_seed": run.cfg.seeds.init,  # the seeds it drew from: `seed`'s unless it named its own
        "data_seed": run.cfg.seeds.data,
        **({"role": run.cfg.role} if run.cfg.role else {}),
        **_branch_record(run),
        "status": "failed" if failure else "ok",
        "error": failure,
        **_budget_record(run),
        "config": asdict(run.cfg),
        "model": asdict(run.mcfg),
        "data": run.tokens.describe(),
        "environment": run.env,
        "world_size": run.world,
        "grad_accum": run.accum,
        "started": run.state.started,
        "ended": utc_now(),
        "resumed_at": run.state.resumed,
        "loss_curve": run.state.curve,
        "result": result,
        "val_windows": _final_windows(run) if result is not None else None,
        **({"held_out_windows": describe_held_out(run.held_out, r.block_size)} if run.cfg.eval_every else {}),
        **({"plugin": plugin} if plugin else {}),
    }


def _branch_record(run: _Run) -> dict[str, Any]:
    """A cooldown branch's provenance: the steps of the run it branches from, and the step of that run's state
    it continued from (None where it trained from the start, as a run of its steps)."""
    if run.cfg.branch_of is None:
        return {}
    return {"branch_of": run.cfg.branch_of, "branched_at": run.state.branched_at}


def _budget_record(run: _Run) -> dict[str, Any]:
    """What the run trains on, for its record: tokens (steps x batch x block) and tokens per parameter of the
    reference at the corpus's vocabulary (`rr_core.budget`), the same for every arm of a cell."""
    cfg = run.cfg
    n = reference_params(cfg.size, run.tokens.vocab_size, cfg.ladder, cfg.reference, cfg.recipe.block_size)
    return {"tokens": cfg.trained_tokens, "tokens_per_param": cfg.trained_tokens / n}


def _final_windows(run: _Run) -> dict[str, Any]:
    """Which windows the final evaluation scored, for the record: the published draw, from the data-order
    stream where the training batches left it (so they move with the step count), `evaluate`'s batches."""
    r = run.cfg.recipe
    return {
        "draw": "the data-order stream after the training batches",
        "rng": "numpy.random.RandomState",
        "seed": run.cfg.seeds.data,
        "after_batches": run.cfg.steps,
        "batches": r.eval_batches,
        "batch_size": r.batch_size,
        "block_size": r.block_size,
    }


# ----------------------------------------------------------------------------------------------- output


def _write(
    out: Path, cfg: TrainConfig, record: dict[str, Any], ckpt: Path
) -> tuple[pd.DataFrame, tuple[int, ...] | None] | None:
    """Append the run's row (if it finished) and its provenance record as one unit, under the row's lock (a
    reader holding it sees both or neither); a refused row is recorded as failed. A row that cannot be
    written (a full disk, a folder gone) is not, nor its record: the final weights (saved before) or the
    checkpoint `ckpt` are kept, and the error says how `--resume` writes them (`_unwritten`).
    Returns the row as appended and `out`'s stamp once it was in, under the lock (None for a run that
    diverged): what `rr_model.run.output_file.OutputPlan.extend` takes."""
    sidecar = sidecar_path(out)
    if record["result"] is None:
        append_record(sidecar, record)
        return None
    after = []

    def then() -> None:
        append_record(sidecar, record)
        after.append(stamp(out))

    try:
        row = dataset_row(cfg, record["result"])
        return append_rows(out, [row], then=then), after[0]
    except DataError as e:  # e.g. another trainer appended the same run meanwhile
        record.update(status="failed", error=f"row refused: {e}")
        append_record(sidecar, record)
        raise
    except (Unwritten, OSError) as e:
        raise _unwritten(e, "the run's row and record", ckpt, checkpoint.final_path(out, *cfg.key)) from None


def _unwritten(e: OSError | Unwritten, what: str, ckpt: Path, final: Path | None) -> InputError:
    """The error for a run whose results could not be written after training, `what` saying which: it names
    what is kept (the final weights `final`, else the checkpoint `ckpt`) and the command that writes the rest."""
    if final is not None and final.exists():
        then = f"writes them from its final weights, kept in {final}, without training"
    elif ckpt.exists():
        then = f"continues from its checkpoint {ckpt} and writes them (resuming is bitwise: the same row)"
    else:
        then = "trains it again (no checkpoint) and writes them"
    cause = str(e) if isinstance(e, Unwritten) else f"{e.filename}: {e.strerror or e}"
    return InputError(
        f"{cause}: {what} were not written. Once that is put right (space freed, the folder back), the same "
        f"rr train command with --resume {then}"
    )


def summarize(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One flat record per run record: size, variant, seed (and steps, where the runs are budgets of one
    run: `TrainConfig.several_budgets`), status, params_M, val_loss, ece, minutes (the last four None for a
    failed run)."""
    rows = []
    budgets = ("steps",) if any("budget" in r for r in records) else ()
    for r in records:
        res = r["result"] or {}
        rows.append(
            {
                **{k: r[k] for k in ("size", "variant", "seed", *budgets, "status")},
                "params_M": res["params"] / 1e6 if res else None,
                **{k: res.get(k) for k in ("val_loss", "ece", "minutes")},
            }
        )
    return rows


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

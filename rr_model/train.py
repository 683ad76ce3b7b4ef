"""The trainer: runs of (size, variant, seed) under the published recipe, each appended to a dataset as a row.

Read top to bottom: the config (its defaults are the published run), the plan of runs behind `rr train`,
the recipe guard, the learning-rate schedule, then `train`, the loop itself, in the manner of nanoGPT's
train.py. Runs single-process or under `torchrun` (DDP): every rank draws the same global batch of 64
sequences from the seed's data-order RNG and trains on its slice, so the recipe does not depend on the
number of processes; only rank 0 writes rows, provenance records and checkpoints.

    rr train --size 150M                     # next unused seed, all three compared variants
    torchrun --nproc_per_node 8 -m cli.main train --size 1B
"""

from __future__ import annotations

import contextlib
import math
import os
import time
import uuid
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from rr_model import checkpoint
from rr_model.config import GPTConfig, model_config
from rr_model.dataset import DataError, append_rows, bundled_path, format_row, read_sweep_text
from rr_model.errors import InputError, RecipeError
from rr_model.evaluate import evaluate
from rr_model.ladder import Recipe
from rr_model.model import GPT
from rr_model.progress import Progress, flops_per_token, peak_flops
from rr_model.provenance import append_record, environment, sidecar_path
from rr_model.runs import (
    DEFAULT_OUT,
    TrainConfig,
    dataset_keys,
    describe_runs,
    guard,
    plan_runs,
    recipe_differences,
    result_config,
    start_from_published,
)
from rr_model.tokens import load_tokens, sample_batch

__all__ = [
    "TrainConfig",
    "RecipeError",
    "DEFAULT_OUT",
    "dataset_keys",
    "plan_runs",
    "describe_runs",
    "recipe_differences",
    "lr_at",
    "train",
    "train_runs",
    "summarize",
    "train_step",
    "setup_device",
]

# ------------------------------------------------------------------------------------------- schedule


def lr_at(step: int, steps: int, recipe: Recipe) -> float:
    """Learning rate of optimiser step `step` (0-based): linear warmup to the peak over `warmup_steps`,
    then a cosine to `min_lr_frac` of the peak, reached at the last step."""
    if step < recipe.warmup_steps:
        return recipe.lr * (step + 1) / recipe.warmup_steps
    progress = (step - recipe.warmup_steps) / max(1, steps - 1 - recipe.warmup_steps)
    low = recipe.lr * recipe.min_lr_frac
    return low + 0.5 * (1 + math.cos(math.pi * progress)) * (recipe.lr - low)


# ------------------------------------------------------------------------------------------ machinery


def setup_device(choice: str, precision: str, local_rank: int = 0) -> torch.device:
    """The device a run uses (auto: cuda, then mps, then cpu), with the process-wide numerics set for it."""
    available = {"cuda": torch.cuda.is_available(), "mps": torch.backends.mps.is_available(), "cpu": True}
    if not available.get(choice, True):
        raise InputError(f"--device {choice}: not available on this machine (torch {torch.__version__})")
    if choice == "cuda" or (choice == "auto" and available["cuda"]):
        torch.cuda.set_device(local_rank)
        # TF32 matmuls: the published setting; "highest" keeps full fp32
        torch.set_float32_matmul_precision("highest" if precision == "fp32" else "high")
        return torch.device("cuda", local_rank)
    if choice == "mps" or (choice == "auto" and available["mps"]):
        return torch.device("mps")
    torch.set_flush_denormal(True)  # denormal arithmetic made tiny's CPU steps 4x slower; results unchanged
    return torch.device("cpu")


def matmul_flops(device: torch.device, precision: str) -> float:
    """Measured FLOP/s of square matmuls on `device` at `precision` (well under a second of work).

    fp32 and tf32 differ only through the float32 matmul precision in force (`rr_model.numerics`).
    """
    n = 4096 if device.type == "cuda" else 1024
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    a = torch.randn(n, n, device=device, dtype=dtype)
    a @ a  # warm-up: kernel selection, allocation
    reps, start = 0, time.perf_counter()
    while reps < 3 or time.perf_counter() - start < 0.2:
        a @ a
        reps += 1
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    return 2 * n**3 * reps / (time.perf_counter() - start)


def _distributed(device: torch.device) -> tuple[int, int]:
    """(rank, world size), joining the process group torchrun describes in the environment."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return int(os.environ.get("RANK", "0")), world


def _to(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    if device.type == "cuda":  # pinned host memory lets the copy overlap with compute
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class _State:
    """What a checkpoint restores besides the model and optimizer."""

    step: int = 0  # optimiser steps done
    seconds: float = 0.0  # training wall-clock so far
    curve: list[list[float]] = field(default_factory=list)  # [step, mean training loss of the interval]
    started: str = field(default_factory=_now)
    resumed: list[int] = field(default_factory=list)  # steps at which the run was resumed


def train_step(model, optimizer, x, y, accum: int, clip: float, autocast, ddp: bool) -> torch.Tensor:
    """One optimiser step on the batch (x, y), split in `accum` micro-batches; its mean loss, unsynced."""
    total = torch.zeros((), device=x.device)
    for i, (xm, ym) in enumerate(zip(x.chunk(accum), y.chunk(accum), strict=True)):
        # under DDP, gradients are all-reduced once, on the last micro-batch
        with model.no_sync() if ddp and i < accum - 1 else contextlib.nullcontext():
            with autocast:
                _, loss = model(xm, ym)
            (loss / accum).backward()
        total += loss.detach() / accum
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return total


# ------------------------------------------------------------------------------------------------ train


def train(cfg: TrainConfig, out: str | os.PathLike = DEFAULT_OUT, *, resume: bool = False) -> dict[str, Any]:
    """Train one run, evaluate it, and append its row to `out` (and its provenance to the sidecar).

    Returns the provenance record: ``record["status"]`` is "ok" (row appended; ``record["result"]`` has
    params, val_loss, ece and minutes at full precision) or "failed" (non-finite loss; no row).

    Raises
    ------
    RecipeError
        Off-recipe run for a file holding the published rows.
    ValueError
        A checkpoint of this run exists but `resume` is False, or it was written under another config.
    rr_model.tokens.DataUnavailable
        The corpus cannot be fetched (see its message for --data).
    """
    try:
        return _train(cfg, Path(out), resume)
    finally:
        torch.set_flush_denormal(
            False
        )  # setup_device flushes denormals on CPU: hand the process back as found


def _train(cfg: TrainConfig, out: Path, resume: bool) -> dict[str, Any]:

    if out.resolve() == bundled_path().resolve():
        raise InputError(
            f"{out} is the reference copy of the published sweep inside rr; train into data/ instead"
        )
    device = setup_device(cfg.device, cfg.precision, int(os.environ.get("LOCAL_RANK", "0")))
    rank, world = _distributed(device)
    master = rank == 0
    r = cfg.recipe
    if r.batch_size % world:
        raise InputError(f"the batch of {r.batch_size} sequences does not split over {world} processes")

    tokens = load_tokens(cfg.data, n_text=r.n_text, cache_dir=cfg.cache_dir, tokenizer=cfg.tokenizer)
    if master:
        start_from_published(out, cfg.size)
    guard(cfg, tokens, out)
    mcfg: GPTConfig = replace(model_config(cfg.size, cfg.variant, tokens.vocab_size), block_size=r.block_size)
    _check_row_fits(out, _row(cfg, {"params": mcfg.n_params, "val_loss": 1.0, "ece": None, "minutes": 0.0}))

    torch.manual_seed(cfg.seed)
    model = GPT(mcfg).to(device)
    optimizer = model.configure_optimizers(r.weight_decay, r.lr, (r.beta1, r.beta2))  # fused on CUDA
    data_rng = np.random.RandomState(cfg.seed)  # the data order: the seed's alone, same for every variant
    state = _State()

    ckpt = checkpoint.checkpoint_path(out, *cfg.key)
    if ckpt.exists():
        saved = checkpoint.load(ckpt)
        if not resume:
            raise InputError(f"{ckpt} holds this run at step {saved['step']}: pass --resume to continue it")
        if saved["config"] != result_config(cfg):
            raise InputError(
                f"{ckpt} was written under another config ({saved['config']}); delete it to start over"
            )
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        torch.set_rng_state(saved["torch_rng"])
        if device.type == "cuda":
            torch.cuda.set_rng_state(saved["cuda_rng"], device)
        data_rng.set_state(saved["data_rng"])
        state = _State(**saved["state"])
        state.resumed.append(state.step)

    fast = torch.compile(model) if cfg.compile else model
    ddp = world > 1
    net = DDP(fast, device_ids=[device.index] if device.type == "cuda" else None) if ddp else fast
    autocast = (
        torch.autocast(device.type, dtype=torch.bfloat16)
        if cfg.precision == "bf16"
        else contextlib.nullcontext()
    )
    per_rank = r.batch_size // world
    accum = 1  # doubled on CUDA out-of-memory: same batch, same result, smaller micro-batches
    tokens_per_step = r.batch_size * r.block_size
    env = environment(str(device))
    peak = peak_flops(env["device_name"], cfg.precision)
    title = f"{cfg.size} {cfg.variant} seed {cfg.seed}"
    progress = Progress(
        title, cfg.steps, state.step, tokens_per_step, flops_per_token(mcfg), peak and peak * world, master
    )
    arithmetic = "" if device.type == "cuda" or cfg.precision != "tf32" else " (fp32 arithmetic off CUDA)"
    progress.log(
        f"{title}: d_model {mcfg.d_model}, {mcfg.n_layer} layers, {mcfg.n_head} heads, "
        f"{mcfg.n_params / 1e6:.2f}M params | {cfg.steps} steps x {r.batch_size} x {r.block_size} = "
        f"{cfg.steps * tokens_per_step / 1e6:.1f}M tokens | lr {r.lr:g}, warmup {r.warmup_steps}, cosine to "
        f"{r.lr * r.min_lr_frac:g} | {device}, {cfg.precision}{arithmetic}, {world} process(es) x {per_rank} "
        f"sequences | data {tokens.source} ({tokens.tokenizer}, {len(tokens.train) / 1e6:.1f}M train tokens)"
        + (f" | resumed at step {state.step}" if state.resumed else "")
    )

    failure = None
    loss_sum, n_sum = torch.zeros((), device=device), 0
    start = time.perf_counter()
    for step in range(state.step, cfg.steps):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, cfg.steps, r)
        x, y = sample_batch(tokens.train, data_rng, r.batch_size, r.block_size)  # the global batch
        mine = slice(rank * per_rank, (rank + 1) * per_rank)
        x, y = _to(torch.from_numpy(x[mine]), device), _to(torch.from_numpy(y[mine]), device)
        while True:
            try:
                loss = train_step(net, optimizer, x, y, accum, r.grad_clip, autocast, ddp)
                break
            except torch.OutOfMemoryError:
                if per_rank // accum == 1:
                    raise
                optimizer.zero_grad(set_to_none=True)
                torch.cuda.empty_cache()
                accum *= 2
                progress.log(
                    f"WARNING: CUDA out of memory at step {step}: continuing with gradient accumulation over "
                    f"{accum} micro-batches of {per_rank // accum} sequences; the batch stays {r.batch_size}."
                )
        loss_sum += loss
        n_sum += 1
        done = step + 1
        progress.advance(done)
        at_checkpoint = cfg.checkpoint_every and done % cfg.checkpoint_every == 0 and done < cfg.steps
        if done % cfg.log_every == 0 or done == cfg.steps or at_checkpoint:
            if ddp:
                dist.all_reduce(loss_sum)  # every rank sees the same mean, so all stop together
            mean = loss_sum.item() / n_sum / world
            loss_sum.zero_()
            n_sum = 0
            if not math.isfinite(mean):
                failure = f"non-finite training loss ({mean}) in the steps up to {done}"
                progress.log(f"{title}: diverged: {failure}; no row is written")
                break
            state.curve.append([done, mean])
            progress.report(done, mean)
        if at_checkpoint and master:
            seconds = state.seconds + time.perf_counter() - start
            checkpoint.save(
                ckpt,
                {
                    "step": done,
                    "config": result_config(cfg),
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "torch_rng": torch.get_rng_state(),
                    "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
                    "data_rng": data_rng.get_state(),
                    "state": asdict(replace(state, step=done, seconds=seconds)),
                },
            )
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    state.seconds += time.perf_counter() - start
    progress.close()

    result = None
    if failure is None:
        val_loss, ece = evaluate(
            fast,
            tokens.val,
            rng=data_rng,
            n_batches=r.eval_batches,
            batch_size=r.batch_size,
            block_size=r.block_size,
            n_bins=r.ece_bins,
            device=device,
            autocast=autocast,
        )
        result = {"params": mcfg.n_params, "val_loss": val_loss, "ece": ece, "minutes": state.seconds / 60}
        progress.log(f"{title}: val_loss {val_loss:.4f}, ece {ece:.4f}, {state.seconds / 60:.2f} min")
    record = {
        "run_id": uuid.uuid4().hex[:12],
        "size": cfg.size,
        "variant": cfg.variant,
        "seed": cfg.seed,
        "status": "failed" if failure else "ok",
        "error": failure,
        "config": asdict(cfg),
        "model": asdict(mcfg),
        "data": tokens.describe(),
        "environment": env,
        "world_size": world,
        "grad_accum": accum,
        "started": state.started,
        "ended": _now(),
        "resumed_at": state.resumed,
        "loss_curve": state.curve,
        "result": result,
    }
    if master:
        _write(out, cfg, record)
        ckpt.unlink(missing_ok=True)  # the row (or the failure record) supersedes it
    return record


def _row(cfg: TrainConfig, result: dict[str, Any]) -> dict[str, Any]:
    """The dataset row of a run with these results."""
    row = {"size": cfg.size, "variant": cfg.variant, "seed": cfg.seed, "params_M": result["params"] / 1e6}
    return {**row, "steps": cfg.steps, **{k: result[k] for k in ("val_loss", "ece", "minutes")}}


def _check_row_fits(out: Path, row: dict[str, Any]) -> None:
    """Refuse before training, not after, a run whose row the file's schema would reject: a run already in
    the file, or steps or params_M unlike the file's other rows of the same (size, variant)."""

    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.exists():
        return
    try:
        read_sweep_text(out.read_text(encoding="utf-8-sig").rstrip("\n") + "\n" + format_row(row) + "\n", out)
    except DataError as e:
        key = " ".join(str(row[k]) for k in ("size", "variant", "seed"))
        raise InputError(
            f"not training {key}: its row would be refused (it is the last line below).\n{e}"
        ) from None


def _write(out: Path, cfg: TrainConfig, record: dict[str, Any]) -> None:
    """Append the run's row (if it finished) and its provenance record; a refused row is recorded as failed."""

    try:
        if record["result"] is not None:
            append_rows(out, [_row(cfg, record["result"])])
    except DataError as e:  # e.g. another trainer appended the same run meanwhile
        record.update(status="failed", error=f"row refused: {e}")
        raise
    finally:
        append_record(sidecar_path(out), record)


def summarize(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One flat record per run record: size, variant, seed, status, params_M, val_loss, ece, minutes
    (the last four None for a failed run)."""
    rows = []
    for r in records:
        res = r["result"] or {}
        rows.append(
            {
                **{k: r[k] for k in ("size", "variant", "seed", "status")},
                "params_M": res["params"] / 1e6 if res else None,
                **{k: res.get(k) for k in ("val_loss", "ece", "minutes")},
            }
        )
    return rows


def train_runs(
    runs: list[TrainConfig], out: str | os.PathLike = DEFAULT_OUT, *, resume: bool = False
) -> list[dict]:
    """Train `runs` one after another (see `train`); the provenance record of each, in order."""
    try:
        records = [train(cfg, out, resume=resume) for cfg in runs]
        if dist.is_initialized():
            dist.barrier()  # leave together: gloo aborts a process whose peer tears down mid-way
        return records
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()

"""Correctness of the trainer's CUDA paths on one GPU, before anyone spends a GPU week on them.

Each check trains through the trainer itself (`rr_model.run.trainer.train`, the synthetic corpus: no network)
and prints one line with its figures and PASS or FAIL; the exit status is the number of checks that failed.

1. precisions: the same seed in TF32 eager (the published setting) and in bf16 + torch.compile + fused
   AdamW: both losses fall over the run, and the two val_loss agree within `--tolerance` (bf16 rounds
   each matmul's inputs to 8 mantissa bits; the two runs' arithmetic differs, their trajectories should not).
2. resume: the TF32 run with `--deterministic`, killed right after its checkpoint at half way and resumed,
   ends with the uninterrupted run's losses, every one bit for bit (the cuBLAS workspace setting and
   deterministic kernels make the CUDA arithmetic repeatable; `rr_model.run.numerics`).
3. kv cache: greedy tokens of the trained model with the KV cache and without it are the same.
4. sharded: the same run under `--shard fsdp` on a process group of one (FSDP2's code path, NCCL) ends with
   the unsharded run's val_loss within `--tolerance` / 10.

    python bench/gpu_check.py                    # CUDA: 150M, 200 steps (~4 min on an H200)
    python bench/gpu_check.py --small            # the same checks on CPU: tiny, 16 steps, bf16 without compile

`bench/gpu_check.sh` runs this after the CUDA-marked tests and before the throughput measurements.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


class _Killed(Exception):
    """Raised after the half-way checkpoint is on disk: the process dying there, as a pre-emption would."""


def _train(cfg, out: Path, *, kill_at: int | None = None, resume: bool = False) -> dict:
    """One run through the trainer; `kill_at`: stop right after the checkpoint of that step is written."""
    from rr_model.checkpoint import state as checkpoint
    from rr_model.run.trainer import train

    if kill_at is None:
        return train(cfg, out, resume=resume)
    save = checkpoint.save

    def save_then_stop(path, state):
        save(path, state)
        if state.step == kill_at:
            raise _Killed

    checkpoint.save = save_then_stop
    try:
        train(cfg, out)
    except _Killed:
        return {}
    finally:
        checkpoint.save = save
    raise RuntimeError(f"the run wrote no checkpoint at step {kill_at}")


def _line(name: str, ok: bool, detail: str) -> bool:
    print(f"{name:12}  {'PASS' if ok else 'FAIL'}  {detail}", flush=True)
    return ok


def _falls(curve: list) -> tuple[bool, str]:
    """The loss curve's first and last logged losses; it falls when the last is below 90% of the first."""
    first, last = curve[0][1], curve[-1][1]
    return last < 0.9 * first, f"loss {first:.3f} -> {last:.3f}"


def _precisions(base, folder: Path, tolerance: float, small: bool) -> tuple[bool, dict]:
    """TF32 eager (deterministic: the reference the resume check compares with) and bf16 + compile."""
    t = time.perf_counter()
    tf32 = _train(replace(base, deterministic=True), folder / "tf32.csv")
    fast_cfg = replace(base, precision="bf16", compile=not small)
    fast = _train(fast_cfg, folder / "bf16.csv")
    falls_a, curve_a = _falls(tf32["loss_curve"])
    falls_b, curve_b = _falls(fast["loss_curve"])
    va, vb = tf32["result"]["val_loss"], fast["result"]["val_loss"]
    ok = _line(
        "precisions",
        falls_a and falls_b and abs(va - vb) <= tolerance,
        f"tf32 {curve_a}, val {va:.4f}; bf16{' + compile' if fast_cfg.compile else ''} {curve_b}, "
        f"val {vb:.4f}; |diff| {abs(va - vb):.4f} (tolerance {tolerance}); {time.perf_counter() - t:.0f} s",
    )
    return ok, tf32


def _resume(base, folder: Path, reference: dict) -> bool:
    """Killed right after the half-way checkpoint, resumed: every logged loss as the uninterrupted run's."""
    half, out = base.checkpoint_every, folder / "resumed.csv"
    _train(replace(base, deterministic=True), out, kill_at=half)
    resumed = _train(replace(base, deterministic=True), out, resume=True)
    va = reference["result"]["val_loss"]
    same = resumed["loss_curve"] == reference["loss_curve"] and resumed["result"]["val_loss"] == va
    differing = sum(x != y for x, y in zip(resumed["loss_curve"], reference["loss_curve"], strict=False))
    return _line(
        "resume",
        same and resumed["resumed_at"] == [half],
        f"resumed at {resumed['resumed_at']}: {differing} of {len(reference['loss_curve'])} logged losses "
        f"differ from the uninterrupted run; val {resumed['result']['val_loss']!r} vs {va!r}",
    )


def _kv_cache(base, folder: Path) -> bool:
    """Greedy tokens of the TF32 run's final weights, with the KV cache and without it."""
    import torch

    from rr_model.checkpoint import state as checkpoint
    from rr_model.uses.inference import load_trained

    final = checkpoint.final_path(folder / "tf32.csv", *base.key)
    if not final.exists():
        return _line("kv cache", False, f"the run kept no final weights ({final.name})")
    model = load_trained(final).model.to(base.device).eval()
    prompt = torch.randint(0, model.config.vocab_size, (2, 16), generator=torch.Generator().manual_seed(0))
    prompt = prompt.to(base.device)
    with torch.no_grad():
        cached = model.generate(prompt, 64, temperature=0.0, use_cache=True)
        plain = model.generate(prompt, 64, temperature=0.0, use_cache=False)
    agree = (cached == plain).float().mean().item()
    return _line("kv cache", agree == 1.0, f"greedy tokens agree {agree:.1%} (2 x 64 tokens)")


def _sharded(base, folder: Path, reference: dict, tolerance: float) -> bool:
    """The same run under FSDP2 on a process group of one against the unsharded one."""
    sharded = _train(replace(base, deterministic=True, shard="fsdp"), folder / "fsdp.csv")
    vs, va = sharded["result"]["val_loss"], reference["result"]["val_loss"]
    return _line("sharded", abs(vs - va) <= tolerance, f"fsdp world 1 val {vs:.5f} vs {va:.5f}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", default=None, help="ladder size (default 150M; --small: tiny)")
    p.add_argument("--steps", type=int, default=None, help="optimiser steps (default 200; --small: 16)")
    p.add_argument("--tolerance", type=float, default=0.02, help="val_loss agreement of the precisions")
    p.add_argument("--small", action="store_true", help="CPU: tiny, no compile (the path of the checks)")
    a = p.parse_args()

    import torch

    from rr_model.config import TrainConfig

    device = "cpu" if a.small else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: run with --small on a CPU", file=sys.stderr)
        return 2
    size, steps = a.size or ("tiny" if a.small else "150M"), a.steps or (16 if a.small else 200)
    base = TrainConfig(
        size=size,
        variant="review_neutral",
        data="synthetic",
        steps=steps,
        checkpoint_every=steps // 2,
        device=device,
    )
    gpu = torch.cuda.get_device_name() if device == "cuda" else "CPU"
    print(
        f"gpu check: {size} review_neutral, {steps} steps, synthetic corpus, on {gpu}; torch {torch.__version__}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ok, reference = _precisions(base, folder, a.tolerance, a.small)
        results = [ok, _resume(base, folder, reference), _kv_cache(base, folder)]
        if device == "cuda":
            results.append(_sharded(base, folder, reference, a.tolerance / 10))
    failed = results.count(False)
    print(f"{len(results) - failed} of {len(results)} checks passed")
    return failed


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())

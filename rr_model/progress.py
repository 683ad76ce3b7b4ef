"""How fast a run goes: FLOPs per token, model FLOPs utilisation (MFU), the progress display, and the
rate a dry run's time estimate assumes. Torch-free, so `rr train --dry-run` loads no torch.

On a terminal the trainer shows a rich progress bar (step, loss, tokens/s, MFU, ETA); otherwise it prints
one plain line per log interval, which reads well in a log file or a CI job.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
import time

import numpy as np

from rr_model.config import GPTConfig

__all__ = ["flops_per_token", "peak_flops", "gpu_name", "cpu_matmul_flops", "assumed_rate", "Progress"]

# Dense (no sparsity) peak FLOP/s per GPU by precision, from NVIDIA's data sheets (SXM parts).
PEAK_FLOPS: dict[str, dict[str, float]] = {
    "A100": {"fp32": 19.5e12, "tf32": 156e12, "bf16": 312e12},
    "H100": {"fp32": 67e12, "tf32": 494.7e12, "bf16": 989.4e12},
    "H200": {"fp32": 67e12, "tf32": 494.7e12, "bf16": 989.4e12},
}


def flops_per_token(cfg: GPTConfig) -> float:
    """Training FLOPs per token: 6 N + 12 L d T (PaLM appendix B, as in nanoGPT's estimate_mfu).

    N counts the parameters that do matmuls or lookups per token (all but the position embedding);
    12 L d T is the attention score and value arithmetic, forward and backward.
    """
    n = cfg.n_params - cfg.block_size * cfg.d_model
    return 6 * n + 12 * cfg.n_layer * cfg.d_model * cfg.block_size


def peak_flops(device_name: str, precision: str) -> float | None:
    """Peak FLOP/s of a known GPU at a precision, or None (CPU, MPS, unlisted GPUs: no MFU shown)."""
    for gpu, peaks in PEAK_FLOPS.items():
        if gpu in device_name:
            return peaks[precision]
    return None


def gpu_name() -> str | None:
    """Name of the first NVIDIA GPU as `nvidia-smi` reports it, or None (no driver, no GPU)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        found = subprocess.run(
            [exe, "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True
        )
    except OSError:
        return None
    names = found.stdout.strip().splitlines()
    return names[0].strip() if found.returncode == 0 and names else None


def cpu_matmul_flops() -> float:
    """Measured FLOP/s of float32 1024 x 1024 matmuls on this CPU (numpy's BLAS; well under a second)."""
    n = 1024
    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    a @ a  # warm-up: thread pool start, allocation
    reps, start = 0, time.perf_counter()
    while reps < 3 or time.perf_counter() - start < 0.2:
        a @ a
        reps += 1
    return 2 * n**3 * reps / (time.perf_counter() - start)


ASSUMED_MFU = 0.4  # a dense GPT on one GPU in tf32/bf16 typically reaches 30-50% of the data-sheet peak


@functools.cache  # measured once per process and setting
def assumed_rate(device: str, precision: str) -> tuple[float, str]:
    """The training FLOP/s a time estimate assumes for a run on `device` ("auto", "cuda", "mps", "cpu").

    A listed NVIDIA GPU (`PEAK_FLOPS`, found by `nvidia-smi`) at `ASSUMED_MFU` of its data-sheet peak;
    anything else at half the float32 matmul rate measured on this CPU. Returns (rate, what was assumed).
    """
    name = gpu_name() if device in ("auto", "cuda") else None
    if name and (peak := peak_flops(name, precision)):
        return ASSUMED_MFU * peak, f"{name}, {ASSUMED_MFU:.0%} of its {precision} peak"
    rate = 0.5 * cpu_matmul_flops()
    assumed = f"cpu, half its measured matmul rate ({rate / 1e9:.0f} GFLOP/s)"
    return rate, assumed if device in ("auto", "cpu") else f"{device} unknown here: {assumed}"


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}"


class Progress:
    """Step counter and log lines of one run, for rank 0; every method is a no-op when `enabled` is False.

    `tokens_per_step` is the global batch in tokens; `flops` the training FLOPs per token; `peak` the
    summed peak FLOP/s of all processes (None: MFU is not shown).
    """

    def __init__(
        self,
        title: str,
        steps: int,
        start: int,
        tokens_per_step: int,
        flops: float,
        peak: float | None,
        enabled: bool,
    ):
        self.steps, self.done, self.tokens_per_step = steps, start, tokens_per_step
        self.flops, self.peak, self.enabled = flops, peak, enabled
        self.t0, self.step0 = time.perf_counter(), start
        self.bar = None
        if enabled and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
            from rich.progress import Progress as Bar

            self.bar = Bar(
                TextColumn(title),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[stats]}"),
                console=Console(stderr=True),
                transient=False,
            )
            self.task = self.bar.add_task(title, total=steps, completed=start, stats="")
            self.bar.start()

    def log(self, message: str) -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.console.print(message, markup=False, highlight=False)
        else:
            print(message, file=sys.stderr, flush=True)

    def advance(self, step: int) -> None:
        """`step` optimiser steps are done (cheap: no device sync)."""
        self.done = step
        if self.bar is not None:
            self.bar.update(self.task, completed=step)

    def report(self, step: int, loss: float) -> None:
        """A log interval ended at `step` with mean training loss `loss`."""
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.t0
        rate = (step - self.step0) * self.tokens_per_step / max(elapsed, 1e-9)
        mfu = f"{rate * self.flops / self.peak:.1%}" if self.peak else "-"
        eta = (self.steps - step) * self.tokens_per_step / max(rate, 1e-9)
        stats = f"loss {loss:.4f} | {rate:,.0f} tok/s | MFU {mfu} | ETA {_clock(eta)}"
        if self.bar is not None:
            self.bar.update(self.task, completed=step, stats=stats)
        else:
            print(f"step {step}/{self.steps} | {stats}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()

"""FLOP arithmetic: training FLOPs per token (`rr_core.shapes.flops_per_token`, in the ground so that `rr sizes`
states a budget's compute), model FLOPs utilisation (MFU), and the rate a dry run's time estimate assumes.
Torch-free, so `rr train --dry-run` loads no torch."""

from __future__ import annotations

import functools

from rr_core.shapes import flops_per_token  # the formula lives in the ground: rr sizes shows it
from rr_model.parallel.hardware import cpu_matmul_flops, datasheet_peak, gpu_name

__all__ = ["flops_per_token", "mfu", "ASSUMED_MFU", "assumed_rate"]


def mfu(tokens_per_s: float, flops: float, peak: float | None) -> float | None:
    """Model FLOPs utilisation: tokens/s x FLOPs per token / peak FLOP/s (None without a peak).

    Example
    -------
    >>> mfu(100_000, 6e9, 989.4e12)  # 100k tokens/s of a 1B model on one H100 SXM in bf16
    0.6064281382656155
    """
    return tokens_per_s * flops / peak if peak else None


ASSUMED_MFU = 0.4  # a dense GPT on one GPU in tf32/bf16 typically reaches 30-50% of the data-sheet peak


@functools.cache  # measured once per process and setting
def assumed_rate(device: str, precision: str) -> tuple[float, str]:
    """The training FLOP/s a time estimate assumes for a run on `device` ("auto", "cuda", "mps", "cpu").

    A listed NVIDIA GPU (`rr_model.parallel.hardware.PEAKS`, found by `nvidia-smi`) at `ASSUMED_MFU` of its datasheet
    dense peak; anything else at half the float32 matmul rate measured on this CPU. Returns (rate, what
    was assumed).
    """
    name = gpu_name() if device in ("auto", "cuda") else None
    if name and (peak := datasheet_peak(name, precision)):
        return ASSUMED_MFU * peak, f"{name}, {ASSUMED_MFU:.0%} of its {precision} peak"
    rate = 0.5 * cpu_matmul_flops()
    assumed = f"cpu, half its measured matmul rate ({rate / 1e9:.0f} GFLOP/s)"
    return rate, assumed if device in ("auto", "cpu") else f"{device} unknown here: {assumed}"

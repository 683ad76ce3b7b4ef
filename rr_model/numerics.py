"""Process-wide numerics of a run, set on entry and restored on exit by one context manager.

Two settings are global to the process rather than to a tensor: the float32 matmul precision (TF32 on
CUDA, the published setting) and flushing denormal floats to zero on CPU. `numerics` sets both for a run
and puts back what it found, so a notebook that trains and then computes something else is unaffected.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

__all__ = ["numerics", "flushing_denormals"]


def flushing_denormals() -> bool:
    """Whether the CPU flushes denormals to zero now (torch has a setter but no getter: probe it)."""
    return (torch.full((1,), 1e-39) * 1.0).item() == 0.0


@contextlib.contextmanager
def numerics(device: torch.device, precision: str) -> Iterator[None]:
    """Set the numerics of a run on `device` at `precision` ("tf32", "bf16", "fp32"), then restore them.

    CUDA: float32 matmuls in TF32 ("high"), unless precision is fp32 ("highest"). CPU: denormals flushed
    to zero; denormal arithmetic made tiny's CPU steps 4x slower, and values below 1e-38 do not move a loss.
    """
    matmul, flushing = torch.get_float32_matmul_precision(), flushing_denormals()
    try:
        if device.type == "cuda":
            torch.set_float32_matmul_precision("highest" if precision == "fp32" else "high")
        if device.type == "cpu":
            torch.set_flush_denormal(True)
        yield
    finally:
        torch.set_float32_matmul_precision(matmul)
        torch.set_flush_denormal(flushing)

"""Process-wide numerics of a run, set on entry and restored on exit by one context manager.

Settings global to the process rather than to a tensor: the float32 matmul precision (TF32 on CUDA, the
published setting), flushing denormal floats to zero on CPU, and, when a run asks for it
(`TrainConfig.deterministic`), torch's deterministic algorithms with cuDNN's autotuner off and, on CUDA,
cuBLAS's fixed workspace (`CUBLAS_WORKSPACE`). `numerics` sets them for a run and puts back what it found,
so a notebook that trains and then computes something else is unaffected.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import torch

__all__ = ["numerics", "flushing_denormals", "CUBLAS_WORKSPACE"]

# cuBLAS picks a reduction order per stream workspace; a fixed workspace makes its matmuls deterministic
# (NVIDIA cuBLAS docs, "Results reproducibility"; torch refuses deterministic cuBLAS calls without it).
CUBLAS_WORKSPACE = {"CUBLAS_WORKSPACE_CONFIG": ":4096:8"}


def flushing_denormals() -> bool:
    """Whether the CPU flushes denormals to zero now (torch has a setter but no getter: probe it)."""
    return (torch.full((1,), 1e-39) * 1.0).item() == 0.0


@contextlib.contextmanager
def numerics(device: torch.device, precision: str, deterministic: bool = False) -> Iterator[None]:
    """Set the numerics of a run on `device` at `precision` ("tf32", "bf16", "fp32"), then restore them.

    CUDA: float32 matmuls in TF32 ("high"), unless precision is fp32 ("highest"). CPU: denormals flushed
    to zero; denormal arithmetic made tiny's CPU steps 4x slower, and values below 1e-38 do not move a loss.
    `deterministic`: `torch.use_deterministic_algorithms(True)` (an op with no deterministic kernel raises
    RuntimeError rather than run), cuDNN deterministic and not benchmarking, and on CUDA `CUBLAS_WORKSPACE`
    in the environment, set here before the run's first cuBLAS call (a value already set is kept).
    """
    matmul, flushing = torch.get_float32_matmul_precision(), flushing_denormals()
    cudnn = torch.backends.cudnn
    algorithms = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )
    cudnn_flags = cudnn.deterministic, cudnn.benchmark
    env = {k: os.environ.get(k) for k in CUBLAS_WORKSPACE}
    try:
        if device.type == "cuda":
            torch.set_float32_matmul_precision("highest" if precision == "fp32" else "high")
        if device.type == "cpu":
            torch.set_flush_denormal(True)
        if deterministic:
            if device.type == "cuda":
                os.environ.update({k: v for k, v in CUBLAS_WORKSPACE.items() if env[k] is None})
            torch.use_deterministic_algorithms(True)
            cudnn.deterministic, cudnn.benchmark = True, False
        yield
    finally:
        torch.set_float32_matmul_precision(matmul)
        torch.set_flush_denormal(flushing)
        torch.use_deterministic_algorithms(algorithms[0], warn_only=algorithms[1])
        cudnn.deterministic, cudnn.benchmark = cudnn_flags
        for k, v in env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

"""Process-wide numerics of a run, set on entry and restored on exit by one context manager.

Settings global to the process rather than to a tensor: the float32 matmul precision (TF32 on CUDA, the
published setting), flushing denormal floats to zero on CPU, the CPU threads of a run on CPU
(`cpu_threads`), and, when a run asks for it
(`TrainConfig.deterministic`), torch's deterministic algorithms with cuDNN's autotuner off and, on CUDA,
cuBLAS's fixed workspace (`CUBLAS_WORKSPACE`). `numerics` sets them for a run and puts back what it found,
so a notebook that trains and then computes something else is unaffected.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from pathlib import Path

import torch

__all__ = [
    "numerics",
    "flushing_denormals",
    "cpu_threads",
]

# cuBLAS picks a reduction order per stream workspace; a fixed workspace makes its matmuls deterministic
# (NVIDIA cuBLAS docs, "Results reproducibility"; torch refuses deterministic cuBLAS calls without it).
CUBLAS_WORKSPACE = {"CUBLAS_WORKSPACE_CONFIG": ":4096:8"}


def flushing_denormals() -> bool:
    """Whether the CPU flushes denormals to zero now (torch has a setter but no getter: probe it)."""
    return (torch.full((1,), 1e-39) * 1.0).item() == 0.0


def cpu_threads(cores: int, load: float, own: float, explicit: str | None) -> tuple[int, str]:
    """The threads a run on CPU computes with, and why, in words for its start line.

    `explicit` (OMP_NUM_THREADS, which torch reads at start) is kept. Otherwise one thread per core that other
    work leaves free: `cores` available to this process, less the 1-minute load average `load` without this
    process's own share `own`, rounded, at least 1. torch's default is a thread per core; under load its
    threads wait for each other at every matmul while other processes hold the cores (the tiny demo on two
    cores at a load average of 3.5: 1,300 tokens/s with 2 threads, 5,100-8,600 with 1).

    Example
    -------
    >>> cpu_threads(2, 3.5, 0.1, None)[0], cpu_threads(2, 0.2, 0.1, None)[0], cpu_threads(16, 4.2, 0.9, None)[0]
    (1, 2, 13)
    >>> cpu_threads(2, 3.5, 0.1, "2")
    (2, '2 CPU thread(s) (OMP_NUM_THREADS)')
    """
    if explicit and explicit.strip().isdigit() and int(explicit) > 0:
        return int(explicit), f"{int(explicit)} CPU thread(s) (OMP_NUM_THREADS)"
    others = max(0.0, load - own)
    threads = max(1, min(cores, round(cores - others)))
    return threads, (
        f"{threads} CPU thread(s) of {cores} core(s), the load average of other work being {others:.1f} "
        "(OMP_NUM_THREADS sets it)"
    )


def _cores() -> int:
    """The physical cores this process may run on: its CPU affinity, one per core where the kernel says which
    logical CPUs share one (SMT), at most the cgroup's CPU quota."""
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
    topology = Path("/sys/devices/system/cpu")
    cores = set()
    for cpu in cpus:
        try:
            ids = [
                (topology / f"cpu{cpu}/topology" / n).read_text().strip()
                for n in ("physical_package_id", "core_id")
            ]
        except OSError:
            ids = [str(cpu)]
        cores.add(tuple(ids))
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()
        limit = -(-int(quota) // int(period))  # cgroup v2: "max 100000" when unlimited (ValueError below)
    except (OSError, ValueError):
        limit = len(cores)
    return max(1, min(len(cores), limit))


@functools.cache
def chosen_threads() -> tuple[int, str]:
    """`cpu_threads` here, chosen once a process, so the runs of one command (a seed's variants, whose minutes
    are compared) share it. This process's own share of the load: its CPU seconds so far, over a minute."""
    own = min(1.0, sum(os.times()[:2]) / 60)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return cpu_threads(_cores(), load, own, os.environ.get("OMP_NUM_THREADS"))


@contextlib.contextmanager
def numerics(device: torch.device, precision: str, deterministic: bool = False) -> Iterator[str]:
    """Set the numerics of a run on `device` at `precision` ("tf32", "bf16", "fp32"), then restore them.

    CUDA: float32 matmuls in TF32 ("high"), unless precision is fp32 ("highest"). CPU: denormals flushed
    to zero; denormal arithmetic made tiny's CPU steps 4x slower, and values below 1e-38 do not move a loss;
    the threads `cpu_threads` chooses (what it says is what this yields, for the run's start line; "" off CPU).
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
    threads, said = torch.get_num_threads(), ""
    try:
        if device.type == "cuda":
            torch.set_float32_matmul_precision("highest" if precision == "fp32" else "high")
        if device.type == "cpu":
            torch.set_flush_denormal(True)
            chosen, said = chosen_threads()
            torch.set_num_threads(chosen)
        if deterministic:
            if device.type == "cuda":
                os.environ.update({k: v for k, v in CUBLAS_WORKSPACE.items() if env[k] is None})
            torch.use_deterministic_algorithms(True)
            cudnn.deterministic, cudnn.benchmark = True, False
        yield said
    finally:
        torch.set_num_threads(threads)
        torch.set_float32_matmul_precision(matmul)
        torch.set_flush_denormal(flushing)
        torch.use_deterministic_algorithms(algorithms[0], warn_only=algorithms[1])
        cudnn.deterministic, cudnn.benchmark = cudnn_flags
        for k, v in env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

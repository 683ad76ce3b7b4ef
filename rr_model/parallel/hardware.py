"""What the hardware can do: each data-centre GPU's datasheet dense peak by precision and its memory, and the
probes that name this machine's GPU (and its memory) and measure its CPU. Torch-free, so a dry run's
estimate loads no torch.

The peaks are NVIDIA's own datasheet figures, dense (the datasheets' tensor-core figures marked "with
sparsity" are twice these), per GPU, at the precision the trainer computes in: TF32 and BF16 on the tensor
cores, FP32 on the CUDA cores. MFU is reported against them (`rr_model.parallel.flops.mfu`); a GPU not listed gets
no MFU, with the reason (`datasheet_peak`), rather than a guess.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Peak",
    "PEAKS",
    "datasheet_peak",
    "peak_note",
    "GPU_MEMORY",
    "datasheet_memory",
    "gpu_name",
    "gpu_memory",
    "host_memory",
    "cpu_matmul_flops",
]


@dataclass(frozen=True)
class Peak:
    """One GPU's dense peak FLOP/s per precision, the device names it answers to, and where it is from."""

    gpu: str
    pattern: str  # a regular expression searched in the device name torch (or nvidia-smi) reports
    fp32: float
    tf32: float
    bf16: float
    source: str

    def at(self, precision: str) -> float:
        return getattr(self, precision)


A100 = "NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf)"
H100 = "NVIDIA H100 Tensor Core GPU datasheet (resources.nvidia.com/en-us-tensor-core)"
HOPPER = "; dense decimals from the NVIDIA H100 Tensor Core GPU Architecture whitepaper, table 3"
# Most specific first: "H100 PCIe" before the SXM part, NVL parts (other clocks) match none and get no MFU.
PEAKS: tuple[Peak, ...] = (
    Peak("A100 SXM", r"A100-SXM", 19.5e12, 156e12, 312e12, A100 + ", SXM column"),
    Peak("A100 PCIe", r"A100.*PCI[Ee]", 19.5e12, 156e12, 312e12, A100 + ", PCIe column"),
    Peak("H100 PCIe", r"H100 PCIe", 51.2e12, 378e12, 756e12, H100 + ", PCIe column" + HOPPER),
    Peak("H100 SXM", r"H100 (80GB HBM3|SXM)", 66.9e12, 494.7e12, 989.4e12, H100 + ", SXM column" + HOPPER),
    Peak(
        "H200 SXM",
        r"H200(?!.*NVL)",
        67e12,
        494.7e12,
        989.4e12,
        "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200), H200 SXM column: FP32 67 "
        "TFLOPS, TF32 989 and BF16 1,979 TFLOPS with sparsity (the H100 SXM's tensor cores and clocks)",
    ),
    Peak(
        "B200 (HGX)",
        r"B200",
        75e12,
        1.1e15,
        2.25e15,
        "NVIDIA HGX B200 specifications (nvidia.com/en-us/data-center/hgx), per GPU: FP32 75 TFLOPS, TF32 2.2 "
        "and FP16/BF16 4.5 PFLOPS with sparsity",
    ),
    Peak(
        "L40S",
        r"L40S",
        91.6e12,
        183e12,
        362.05e12,
        "NVIDIA L40S GPU datasheet (resources.nvidia.com/en-us-l40s/l40s-datasheet-28413): FP32 91.6, TF32 "
        "183, BF16 362.05 TFLOPS (366 and 733 with sparsity)",
    ),
)


def datasheet_peak(device_name: str, precision: str) -> float | None:
    """The datasheet dense peak FLOP/s of the GPU named `device_name` at `precision`, or None if not listed.

    `device_name` is the name torch (`torch.cuda.get_device_name`) or nvidia-smi reports, e.g.
    "NVIDIA H100 80GB HBM3" or "NVIDIA A100-SXM4-80GB"; `precision` is tf32, bf16 or fp32.

    Example
    -------
    >>> datasheet_peak("NVIDIA H200", "bf16") / 1e12
    989.4
    >>> datasheet_peak("NVIDIA A100-SXM4-80GB", "tf32") / 1e12
    156.0
    >>> datasheet_peak("NVIDIA GeForce RTX 4090", "bf16") is None
    True
    """
    for peak in PEAKS:
        if re.search(peak.pattern, device_name):
            return peak.at(precision)
    return None


def peak_note(device_name: str, precision: str) -> str:
    """Which datasheet peak MFU is reported against on this device, or why no MFU is shown ("MFU -")."""
    for peak in PEAKS:
        if re.search(peak.pattern, device_name):
            return (
                f"MFU against the {peak.gpu} dense {precision} peak, {peak.at(precision) / 1e12:,.1f} TFLOP/s"
            )
    listed = ", ".join(p.gpu for p in PEAKS)
    return (
        f"MFU -: no datasheet peak for {device_name!r} (listed in rr_model.parallel.hardware.PEAKS: {listed})"
    )


# Each GPU's memory in GiB, from the same datasheets (their "80GB" is 80 GiB: nvidia-smi reports 81,559 MiB
# for an H100 80GB). The memory plan (rr_model.parallel.memory) checks a run against it where the GPU is known by
# name only; a GPU's own report (torch, nvidia-smi) comes first. Most specific first, as PEAKS.
GPU_MEMORY: tuple[tuple[str, str, float, str], ...] = (
    ("A100 40GB", r"A100.*40GB", 40, A100 + ": 40GB HBM2"),
    ("A100 80GB", r"A100.*80GB", 80, A100 + ": 80GB HBM2e"),
    ("H100", r"H100(?!.*NVL)", 80, H100 + ": 80GB (SXM and PCIe)"),
    ("H200", r"H200(?!.*NVL)", 141, "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column: 141GB HBM3e"),
    ("B200 (HGX)", r"B200", 180, "NVIDIA HGX B200 specifications: 1,440GB over 8 GPUs"),
    ("L40S", r"L40S", 48, "NVIDIA L40S GPU datasheet: 48GB GDDR6"),
)


def datasheet_memory(device_name: str) -> float | None:
    """The datasheet memory in GiB of the GPU named `device_name`, or None if not listed.

    Example
    -------
    >>> datasheet_memory("NVIDIA A100-SXM4-40GB"), datasheet_memory("NVIDIA H100 80GB HBM3")
    (40, 80)
    >>> datasheet_memory("NVIDIA GeForce RTX 4090") is None
    True
    """
    for _, pattern, gib, _ in GPU_MEMORY:
        if re.search(pattern, device_name):
            return gib
    return None


def gpu_memory() -> float | None:
    """Total memory in GiB of the first NVIDIA GPU as `nvidia-smi` reports it, or None (no driver, no GPU)."""
    found = _smi("memory.total")
    return float(found) / 1024 if found and found.replace(".", "", 1).isdigit() else None


def host_memory() -> float | None:
    """GiB of memory this process may use: the machine's physical memory, or its control group's limit
    where that is lower (a container, a Slurm job); None where neither can be read."""
    try:
        found = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX, or the names unknown here
        return None
    try:
        with open("/sys/fs/cgroup/memory.max") as f:  # cgroup v2
            limit = f.read().strip()
    except OSError:
        limit = "max"
    if limit.isdigit():
        found = min(found, int(limit))
    return found / 2**30


def gpu_name() -> str | None:
    """Name of the first NVIDIA GPU as `nvidia-smi` reports it, or None (no driver, no GPU)."""
    return _smi("name")


def _smi(query: str) -> str | None:
    """One field of the first GPU from `nvidia-smi --query-gpu` (no header, no units), or None."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        found = subprocess.run(
            [exe, f"--query-gpu={query}", "--format=csv,noheader,nounits"], capture_output=True, text=True
        )
    except OSError:
        return None
    lines = found.stdout.strip().splitlines()
    return lines[0].strip() if found.returncode == 0 and lines else None


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

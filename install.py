"""Install rr with the torch build this machine can use, in one line: `python install.py test && pytest`.

Why this file: torch is an unpinned requirement of the `train` extra, and on Linux pip's default torch is
the CUDA build (about 2.6 GB of wheels with its NVIDIA libraries), which a CPU-only laptop downloads for
nothing. PyTorch publishes CPU builds (versions ending in ``+cpu``) on its own index,
https://download.pytorch.org/whl/cpu, and pip keeps an installed torch that meets the requirement. So:

- a torch already installed is kept (whatever its build);
- with an NVIDIA GPU (``nvidia-smi`` answers, or the driver's ``/proc/driver/nvidia``), or off Linux (where
  pip's default torch has no CUDA libraries), rr is installed as usual;
- otherwise the newest ``+cpu`` torch pip can see (that index, where it can be reached, and any index or
  wheel folder pip is configured with) is installed first, then rr, so pip keeps it. Where no CPU build
  can be seen, rr is installed as usual, saying so.

Usage: ``python install.py [EXTRAS]`` installs ``rr-toolkit[EXTRAS]`` editable from this folder (EXTRAS as
in pip's brackets: ``test``, ``train,hf``; none: the analysis only) into the Python that runs it; ``--cpu``
or ``--gpu`` overrides the detection. Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PROBE_TIMEOUT = (
    10  # seconds: an unreachable index costs at most this (a failed DNS lookup: a fraction of a second)
)
CPU_BUILD = re.compile(r"(\d+(?:\.\d+)*)\+cpu")  # a CPU build's version, e.g. 2.13.0+cpu


def cpu_builds(versions: Iterable[str]) -> list[str]:
    """The CPU builds (``X.Y.Z+cpu``) among `versions`, newest first.

    >>> cpu_builds(["2.15.0", "2.9.1+cpu", "2.13.0+cpu", "2.13.0", "2.10.0+cu126"])
    ['2.13.0+cpu', '2.9.1+cpu']
    """
    builds = [v for v in versions if CPU_BUILD.fullmatch(v)]
    return sorted(
        builds, key=lambda v: tuple(int(p) for p in CPU_BUILD.fullmatch(v)[1].split(".")), reverse=True
    )


def needs_torch(extras: str) -> bool:
    """Whether rr's `extras` bring torch: train (the trainer), eval (lm-evaluation-harness) and test (both),
    as pyproject.toml declares them; the analysis, cluster, logging, export and hf extras do not."""
    return bool({e.strip() for e in extras.split(",")} & {"train", "eval", "test"})


def listed_versions(pip_output: str) -> list[str]:
    """The versions `pip index versions` lists ("Available versions: 2.15.0, 2.14.1, ..."), or []."""
    for line in pip_output.splitlines():
        if line.startswith("Available versions:"):
            return [v.strip() for v in line.partition(":")[2].split(",") if v.strip()]
    return []


def has_nvidia_gpu(
    which: Callable[[str], str | None] = shutil.which, driver: Path = Path("/proc/driver/nvidia")
) -> bool:
    """Whether an NVIDIA GPU is here: its driver's folder, or ``nvidia-smi -L`` listing one."""
    if driver.exists():
        return True
    smi = which("nvidia-smi")
    if smi is None:
        return False
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, check=False)
    except OSError:
        return False
    return listed.returncode == 0 and "GPU" in listed.stdout


def torch_choice(installed: str | None, gpu: bool, platform: str, builds: list[str]) -> tuple[list[str], str]:
    """The torch builds to try, in order, before rr is installed ([]: leave torch to pip) and why, in words."""
    if installed is not None:
        return [], f"torch {installed} is installed: kept"
    if gpu:
        return [], "an NVIDIA GPU is here: torch as pip resolves it (the CUDA build)"
    if platform != "linux":
        return [], f"on {platform} pip's torch has no CUDA libraries: torch as pip resolves it"
    if not builds:
        return [], (
            f"no NVIDIA GPU here, but no CPU build of torch can be seen ({CPU_INDEX} unreachable?): torch "
            "as pip resolves it, which on Linux is the CUDA build (a few GB)"
        )
    return builds[:3], f"no NVIDIA GPU here: torch {builds[0]}, the CPU build (the newest pip can see)"


def reachable(url: str = CPU_INDEX) -> bool:
    """Whether `url` answers within `PROBE_TIMEOUT` (through the environment's proxy, as pip's requests)."""
    try:
        with urllib.request.urlopen(url + "/torch/", timeout=PROBE_TIMEOUT):
            return True
    except (OSError, ValueError):
        return False


def pip(*args: str, capture: bool = False) -> subprocess.CompletedProcess:
    """pip of the Python running this file (a virtual environment's, say), with `args`."""
    return subprocess.run(
        [sys.executable, "-m", "pip", *args], capture_output=capture, text=True, check=False
    )


def installed_torch() -> str | None:
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "extras", nargs="?", default="", help="rr's extras, as in pip's brackets: test, train,hf"
    )
    forced = parser.add_mutually_exclusive_group()
    forced.add_argument("--cpu", action="store_true", help="install the CPU build of torch, GPU or not")
    forced.add_argument("--gpu", action="store_true", help="install torch as pip resolves it (CUDA on Linux)")
    args = parser.parse_args(argv)
    root = Path(__file__).resolve().parent
    target = f"{root}[{args.extras}]" if args.extras else str(root)
    if needs_torch(args.extras):
        gpu, platform = args.gpu or (not args.cpu and has_nvidia_gpu()), "linux" if args.cpu else sys.platform
        installed, builds, index = installed_torch(), [], []
        if installed is None and not gpu and platform == "linux":
            index = ["--extra-index-url", CPU_INDEX] if reachable() else []
            builds = cpu_builds(
                listed_versions(pip("index", "versions", "torch", *index, capture=True).stdout)
            )
        tries, why = torch_choice(installed, gpu, platform, builds)
        print(f"install.py: {why}", flush=True)
        # newest first; an older one where pip's constraints refuse it (a refusal costs no download)
        if tries and all(pip("install", f"torch=={build}", *index).returncode for build in tries):
            return 1
    return pip("install", "-e", target).returncode


if __name__ == "__main__":
    sys.exit(main())

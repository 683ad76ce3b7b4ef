"""Data-parallel training under torchrun: 2 CPU processes (gloo) train the same run as 1 process.

Every rank draws the same global batch and trains on its half; gradients are averaged, so the result
differs from the single-process run only by floating-point summation order.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import TINY_RUN

from rr_model.results import provenance
from rr_model.results.dataset import load_sweep

pytestmark = pytest.mark.usefixtures("offline")


def test_two_processes_give_the_single_process_val_loss(tmp_path, tiny_run):
    out = tmp_path / "two.csv"
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    args = ["-m", "cli.main", "train", "--size", "tiny", "--variant", "standard", "--data", "synthetic"]
    args += ["--steps", str(TINY_RUN["steps"]), "--checkpoint-every", str(TINY_RUN["checkpoint_every"])]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([*launch, *args, "--out", str(out)], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]

    (two,) = provenance.read_records(provenance.sidecar_path(out))  # rank 0 alone writes
    assert two["world_size"] == 2 and len(load_sweep(out)) == 1
    assert two["result"]["val_loss"] == pytest.approx(tiny_run["result"]["val_loss"], abs=1e-5)
    assert two["result"]["ece"] == pytest.approx(tiny_run["result"]["ece"], abs=1e-5)
    assert proc.stdout.count("rr train:") == 1  # one process reports

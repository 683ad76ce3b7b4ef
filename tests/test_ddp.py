"""Data-parallel training under torchrun: 2 CPU processes (gloo) train the same run as 1 process.

Every rank draws the same global batch and trains on its half; gradients are averaged, so the result
differs from the single-process run only by floating-point summation order.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rr_model import provenance
from rr_model.dataset import load_sweep
from rr_model.train import TrainConfig, train


@pytest.fixture(autouse=True)
def offline_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("RR_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_two_processes_give_the_single_process_val_loss(tmp_path):
    steps = 6
    one = train(TrainConfig("tiny", "standard", data="synthetic", steps=steps), tmp_path / "one.csv")

    out = tmp_path / "two.csv"
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    args = ["-m", "cli.main", "train", "--size", "tiny", "--variant", "standard", "--data", "synthetic"]
    args += ["--steps", str(steps), "--out", str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([*launch, *args], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]

    (two,) = provenance.read_records(provenance.sidecar_path(out))  # rank 0 alone writes
    assert two["world_size"] == 2 and len(load_sweep(out)) == 1
    assert two["result"]["val_loss"] == pytest.approx(one["result"]["val_loss"], abs=1e-5)
    assert two["result"]["ece"] == pytest.approx(one["result"]["ece"], abs=1e-5)
    assert proc.stdout.count("rr train:") == 1  # one process reports

"""Crash safety: atomic checkpoints that load with weights_only=True, and resumed runs bitwise equal to
uninterrupted ones on CPU, whether the run stopped right after a checkpoint or was SIGKILLed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

import pytest
import torch
from typer.testing import CliRunner

from cli.main import app
from rr_model import checkpoint, provenance
from rr_model.dataset import load_sweep
from rr_model.train import TrainConfig, train


@pytest.fixture(autouse=True)
def offline_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("RR_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


class Killed(BaseException):
    """Stands for SIGKILL: nothing in the trainer catches it."""


def tiny(steps: int, every: int) -> TrainConfig:
    return TrainConfig("tiny", "standard", data="synthetic", steps=steps, checkpoint_every=every)


def result(out):
    (rec,) = provenance.read_records(provenance.sidecar_path(out))
    return rec


def test_save_is_atomic_and_loads_with_weights_only(tmp_path):
    path = tmp_path / "run.pt"
    state = {"step": 3, "w": torch.arange(4.0), "rng": {"state": 2**127 + 5, "name": "PCG64"}, "none": None}
    checkpoint.save(path, state)
    checkpoint.save(path, {**state, "step": 4})  # replaces, leaving no temporary file behind
    assert os.listdir(tmp_path) == ["run.pt"]
    loaded = torch.load(path, weights_only=True)
    assert loaded["step"] == 4 and loaded["rng"] == state["rng"] and torch.equal(loaded["w"], state["w"])


def test_save_failure_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "run.pt"
    checkpoint.save(path, {"step": 1})

    def broken(obj, f):
        f.write(b"half a checkpoint")
        raise Killed

    monkeypatch.setattr(torch, "save", broken)
    with pytest.raises(Killed):
        checkpoint.save(path, {"step": 2})
    assert os.listdir(tmp_path) == ["run.pt"] and checkpoint.load(path) == {"step": 1}


def test_resume_after_a_checkpoint_is_bitwise_identical(tmp_path, monkeypatch):
    cfg = tiny(steps=12, every=4)
    whole = train(cfg, tmp_path / "whole.csv")

    out = tmp_path / "resumed.csv"
    save = checkpoint.save

    def save_then_die(path, state):
        save(path, state)
        if state["step"] == 8:
            raise Killed

    monkeypatch.setattr(checkpoint, "save", save_then_die)
    with pytest.raises(Killed):
        train(cfg, out)
    monkeypatch.undo()
    ckpt = checkpoint.checkpoint_path(out, *cfg.key)
    assert ckpt.exists() and not out.exists()
    saved = checkpoint.load(ckpt)
    assert saved["step"] == 8 and isinstance(saved["data_rng"]["state"]["state"], int)

    with pytest.raises(ValueError, match="--resume"):
        train(cfg, out)
    with pytest.raises(ValueError, match="another config"):
        train(tiny(steps=16, every=4), out, resume=True)
    resumed = train(cfg, out, resume=True)

    assert resumed["resumed_at"] == [8] and not ckpt.exists()
    for key in ("val_loss", "ece", "params"):
        assert resumed["result"][key] == whole["result"][key]  # exact, not approximate
    assert resumed["loss_curve"] == whole["loss_curve"]
    a, b = load_sweep(tmp_path / "whole.csv"), load_sweep(out)
    assert a.drop(columns="minutes").equals(b.drop(columns="minutes"))


def test_sigkill_then_resume_is_bitwise_identical(tmp_path):
    steps, every = 24, 8
    whole = train(tiny(steps, every), tmp_path / "whole.csv")

    out = tmp_path / "killed.csv"
    ckpt = checkpoint.checkpoint_path(out, "tiny", "standard", 0)
    args = ["train", "--size", "tiny", "--variant", "standard", "--data", "synthetic", "--steps", str(steps)]
    args += ["--checkpoint-every", str(every), "--out", str(out)]
    proc = subprocess.Popen([shutil.which("rr"), *args], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not ckpt.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL and ckpt.exists() and not out.exists(), "killed too late"

    resumed = CliRunner().invoke(app, [*args, "--resume"])
    assert resumed.exit_code == 0, resumed.output
    rec = result(out)
    assert rec["resumed_at"][0] % every == 0 and rec["resumed_at"][0] > 0
    assert (rec["result"]["val_loss"], rec["result"]["ece"]) == (
        whole["result"]["val_loss"],
        whole["result"]["ece"],
    )
    assert rec["loss_curve"] == whole["loss_curve"]

"""Crash safety: atomic checkpoints that load with weights_only=True, resumed runs bitwise equal to the
uninterrupted one on CPU (whether the run stopped right after a checkpoint or was SIGKILLed), and a
corrupt or foreign checkpoint refused with one clear error."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import time
from dataclasses import replace

import pytest
import torch
from conftest import RR, TINY_RUN, rr

from rr_core.sweepfile import provenance
from rr_core.sweepfile.dataset import load_sweep
from rr_model import checkpoint
from rr_model.checkpoint import CheckpointError
from rr_model.run_config import TrainConfig
from rr_model.trainer import train

pytestmark = pytest.mark.usefixtures("offline")


class Killed(BaseException):
    """Stands for SIGKILL: nothing in the trainer catches it."""


def result(out):
    (rec,) = provenance.read_records(provenance.sidecar_path(out))
    return rec


def test_save_is_atomic_and_loads_with_weights_only(tmp_path):
    path = tmp_path / "run.pt"
    state = {"step": 3, "w": torch.arange(4.0), "rng": ("MT19937", torch.arange(3), 2), "none": None}
    checkpoint.save(path, state)
    checkpoint.save(path, {**state, "step": 4})  # replaces, leaving no temporary file behind
    assert os.listdir(tmp_path) == ["run.pt"]
    loaded = torch.load(path, weights_only=True)
    assert loaded["step"] == 4 and loaded["rng"][0] == "MT19937" and torch.equal(loaded["w"], state["w"])


def test_save_failure_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "run.pt"
    checkpoint.save(path, {"step": 1})

    def broken(obj, f):
        f.write(b"half a checkpoint")
        raise Killed

    monkeypatch.setattr(torch, "save", broken)
    with pytest.raises(Killed):
        checkpoint.save(path, {"step": 2})
    assert os.listdir(tmp_path) == ["run.pt"] and torch.load(path, weights_only=True) == {"step": 1}


class Payload:
    def __reduce__(self):
        return (os.system, ("touch pwned",))


# the "code" payload is pickled with Python's default protocol, which torch's weights-only loader warns about
# before refusing it: the refusal is what is tested
@pytest.mark.filterwarnings("ignore:Detected pickle protocol:UserWarning")
@pytest.mark.parametrize(
    "content",
    [b"", b"not a checkpoint", pickle.dumps(Payload()), "truncated", "foreign"],
    ids=["empty", "garbage", "code", "truncated", "foreign"],
)
def test_a_corrupt_or_foreign_checkpoint_is_one_clear_error(tmp_path, content, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "x.csv"
    cfg = TrainConfig(**{**TINY_RUN, "steps": 4})
    ckpt = checkpoint.checkpoint_path(out, *cfg.key)
    ckpt.parent.mkdir()
    if content == "foreign":
        torch.save({"step": 2, "model": {}}, ckpt)
    elif content == "truncated":
        torch.save({k: 0 for k in checkpoint.KEYS}, ckpt)
        ckpt.write_bytes(ckpt.read_bytes()[:100])
    else:
        ckpt.write_bytes(content)
    with pytest.raises(CheckpointError, match=str(ckpt)):
        checkpoint.load(ckpt)
    run = rr("train", *_args(cfg, out), "--resume")
    assert run.exit_code == 2 and run.stderr.startswith("rr: error:") and str(ckpt) in run.stderr
    assert "Traceback" not in run.stderr and not (tmp_path / "pwned").exists()
    # without --resume the file is not opened: only named
    run = rr("train", *_args(cfg, out))
    assert run.exit_code == 2 and "pass --resume" in run.stderr


def _args(cfg: TrainConfig, out) -> list[str]:
    args = ["--size", cfg.size, "--variant", cfg.variant, "--corpus", cfg.data, "--steps", str(cfg.steps)]
    return [*args, "--checkpoint-every", str(cfg.checkpoint_every), "--out", str(out)]


def test_resume_after_a_checkpoint_is_bitwise_identical(tmp_path, monkeypatch, tiny_run):
    cfg = TrainConfig(**TINY_RUN)
    out = tmp_path / "resumed.csv"
    save = checkpoint.save

    def save_then_die(path, state):
        save(path, state)
        if state.step == 8:
            raise Killed

    monkeypatch.setattr(checkpoint, "save", save_then_die)
    with pytest.raises(Killed):
        train(cfg, out)
    monkeypatch.undo()
    ckpt = checkpoint.checkpoint_path(out, *cfg.key)
    assert ckpt.exists() and not out.exists()
    saved = checkpoint.load(ckpt)
    assert saved.step == 8 and saved.data_rng[0] == "MT19937"  # the RandomState's whole state

    with pytest.raises(ValueError, match="--resume"):
        train(cfg, out)
    with pytest.raises(ValueError, match="another config"):
        train(TrainConfig(**{**TINY_RUN, "steps": 16}), out, resume=True)
    # An hour already spent before the checkpoint: the row's minutes must carry it, not only the resumed part
    assert saved.state["seconds"] > 0
    checkpoint.save(ckpt, replace(saved, state={**saved.state, "seconds": 3600.0}))
    resumed = train(cfg, out, resume=True)

    assert resumed["resumed_at"] == [8] and not ckpt.exists()
    # minutes: both segments' training (up to the checkpoint, then from it) and the evaluation
    assert 60 < resumed["result"]["minutes"] < 60 + tiny_run["result"]["minutes"] + 5
    assert load_sweep(out)["minutes"].iloc[0] == pytest.approx(resumed["result"]["minutes"], abs=0.05)
    for key in ("val_loss", "ece", "params"):
        assert resumed["result"][key] == tiny_run["result"][key]  # exact, not approximate
    assert resumed["loss_curve"] == tiny_run["loss_curve"]
    a, b = load_sweep(tiny_run["out"]), load_sweep(out)
    assert a.drop(columns="minutes").equals(b.drop(columns="minutes"))


def test_sigkill_then_resume_is_bitwise_identical(tmp_path, tiny_run):
    cfg = TrainConfig(**TINY_RUN)
    out = tmp_path / "killed.csv"
    ckpt = checkpoint.checkpoint_path(out, *cfg.key)
    args = ["train", *_args(cfg, out)]
    proc = subprocess.Popen([RR, *args], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    while not ckpt.exists() and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL and ckpt.exists() and not out.exists(), "killed too late"

    resumed = rr(*args, "--resume")
    assert resumed.exit_code == 0, resumed.output
    rec = result(out)
    assert rec["resumed_at"][0] % cfg.checkpoint_every == 0 and rec["resumed_at"][0] > 0
    assert (rec["result"]["val_loss"], rec["result"]["ece"]) == (
        tiny_run["result"]["val_loss"],
        tiny_run["result"]["ece"],
    )
    assert rec["loss_curve"] == tiny_run["loss_curve"]

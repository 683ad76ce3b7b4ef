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
from rr_model.checkpoint import state as checkpoint
from rr_model.checkpoint.state import CheckpointError
from rr_model.config import TrainConfig
from rr_model.run.trainer import train

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
    with pytest.raises(
        ValueError, match="written by another run than this one: config.steps 12 when saved, 16 now"
    ):
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


@pytest.mark.slow
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


# ----------------------------------------------------------------------------- files rr reads back (issue 35)


def zero_page(path, entry: str | None = None) -> None:
    """Write a page of zeros into the middle of an entry's bytes in a torch file (default: its largest entry,
    a tensor), as a disk or a copy gone wrong would; the page held other bytes before."""
    import struct
    import zipfile

    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
    info = (
        max(infos, key=lambda i: i.file_size)
        if entry is None
        else next(i for i in infos if i.filename.endswith(entry))
    )
    with open(path, "r+b") as f:
        f.seek(info.header_offset + 26)  # the local header's name and extra field lengths
        name, extra = struct.unpack("<HH", f.read(4))
        size = min(4096, info.file_size)
        start = info.header_offset + 30 + name + extra + (info.file_size - size) // 2
        f.seek(start)
        assert f.read(size) != bytes(size), "the page was zeros already"
        f.seek(start)
        f.write(bytes(size))


def test_a_page_of_zeros_in_a_checkpoint_is_refused_by_resume(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "x.csv"
    cfg = TrainConfig(**{**TINY_RUN, "steps": 4})
    ckpt = checkpoint.checkpoint_path(out, *cfg.key)
    checkpoint.save(ckpt, {**{k: 0 for k in checkpoint.KEYS}, "model": {"w": torch.randn(4096)}})
    checkpoint.load(ckpt)  # whole, it loads
    zero_page(ckpt)
    with pytest.raises(CheckpointError, match="damaged: its entry .* fails its CRC-32 check"):
        checkpoint.load(ckpt)
    run = rr("train", *_args(cfg, out), "--resume")
    assert run.exit_code == 2 and run.stderr.count("\n") == 1, run.output
    assert run.stderr.startswith(f"rr: error: {ckpt}: damaged: its entry ")
    assert run.stderr.rstrip().endswith("; delete it to start the run over, or restore it from a copy")
    assert not out.exists()


@pytest.mark.parametrize("entry", [None, "data.pkl"], ids=["weights", "pickle"])
def test_damaged_final_weights_are_refused_by_every_command_that_reads_them(tiny_run, tmp_path, entry):
    final = checkpoint.final_path(tiny_run["out"], "tiny", "standard", 0)
    damaged = tmp_path / final.name
    damaged.write_bytes(final.read_bytes())
    zero_page(damaged, entry)
    for args in (
        ["sample", "--tokens", "3"],
        ["eval", "--corpus", "synthetic", "--windows", "2"],
        ["export", "--out", tmp_path / "export"],
        ["gates"],
    ):
        result = rr(*args, "--checkpoint", damaged)
        assert result.exit_code == 2 and result.stderr.count("\n") == 1, (args, result.output)
        assert result.stderr.startswith(f"rr: error: {damaged}: damaged: its entry ")
        assert "restore it from a copy, or train the run again" in result.stderr
    assert not (tmp_path / "export").exists()


@pytest.mark.parametrize("command", ["sample", "eval", "export", "gates"])
def test_a_file_that_is_not_a_checkpoint_is_one_line_and_never_torch_s_advice(tmp_path, command):
    extra = {"eval": ["--corpus", "synthetic"], "export": ["--out", tmp_path / "e"]}.get(command, [])
    for name, text in (("runs.csv", "size,variant,seed\n60M,standard,0\n"), ("log.jsonl", '{"a": 1}\n')):
        path = tmp_path / name
        path.write_text(text)
        result = rr(command, "--checkpoint", path, *extra)
        assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.output
        assert result.stderr.startswith(f"rr: error: {path}: not an rr checkpoint (not the zip archive")
        assert "weights_only" not in result.output and "Traceback" not in result.output


CORPUS = "\n\n".join(
    f"Story {i}: the cat sat on mat number {i} and purred {i % 7} times." for i in range(400)
)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_resume_on_another_corpus_is_refused_naming_what_changed(tmp_path, monkeypatch):
    corpus = tmp_path / "stories.txt"
    corpus.write_text(CORPUS)
    cfg = TrainConfig("tiny", "standard", 0, data=str(corpus), tokenizer="bytes", steps=4, checkpoint_every=2)
    out = tmp_path / "x.csv"
    save = checkpoint.save

    def save_then_die(path, state):
        save(path, state)
        raise Killed

    monkeypatch.setattr(checkpoint, "save", save_then_die)
    with pytest.raises(Killed):
        train(cfg, out)
    monkeypatch.undo()
    ckpt = checkpoint.checkpoint_path(out, *cfg.key)
    corpus.write_text(CORPUS.replace("cat", "dog"))  # the same path, other text: other tokens
    with pytest.raises(ValueError) as err:
        train(cfg, out, resume=True)
    message = str(err.value)
    assert message.startswith(f"{ckpt} was written by another run than this one: data.")
    assert "; data.sha256 '" in message  # the stream's digest (and the cache key made from the file's)
    assert "Resuming would mix the two in one row" in message and ckpt.exists() and not out.exists()
    assert "config" not in message.split(": ", 1)[1].split(". Resuming")[0]  # the config is the same


def test_a_kill_between_a_run_s_checkpoint_and_its_row_leaves_nothing_the_next_command_cannot_finish(
    tmp_path, monkeypatch
):
    """Issue 47 class 3: the row was written before the checkpoint was removed, so a kill between the two left
    the checkpoint (the weights and the optimiser's state) for good: the run's row was in place, and nothing
    removed it. Now the checkpoint goes first: a kill at the row (here an interrupt raised as the row is
    appended) leaves the final weights and no checkpoint, and --resume writes the row without training."""
    import rr_model.run.results as results
    import rr_model.run.trainer as trainer

    cfg = TrainConfig(**{**TINY_RUN, "steps": 4, "checkpoint_every": 2})
    out = tmp_path / "runs.csv"
    real, seen = results.append_rows, []

    def killed(path, rows, **kw):
        seen.append(checkpoint.checkpoint_path(out, *cfg.key).exists())
        raise KeyboardInterrupt

    monkeypatch.setattr(results, "append_rows", killed)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, out)
    assert seen == [False]  # the checkpoint was gone before the row was written
    assert checkpoint.final_path(out, *cfg.key).exists() and not out.exists()
    monkeypatch.setattr(results, "append_rows", real)
    monkeypatch.setattr(
        trainer, "evaluate", lambda *a, **k: pytest.fail("--resume trained or evaluated again")
    )
    record = train(cfg, out, resume=True)
    assert load_sweep(out)["val_loss"].tolist() == pytest.approx([record["result"]["val_loss"]], abs=5e-5)
    assert sorted(p.name for p in out.with_name("runs.checkpoints").iterdir()) == [
        "tiny-standard-seed0.final.pt",
        "tiny-standard-seed0.lock",
    ]

"""The metrics log every run writes (JSONL), and the TensorBoard and W&B (offline) backends, read back from
the files they wrote for the session's tiny run (tests/conftest.py logs it to both)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from rr_core.sweepfile.metrics_log import load_curves, metrics_path, read_metrics


def wandb_history(run_file: Path) -> list[dict]:
    """The history rows of an offline W&B run file (`run-ID.wandb`): a LevelDB-style log of protobuf
    records (7-byte file header; 32 KiB blocks; each chunk a 7-byte header of checksum, length, type)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data, pos, chunk, rows, block = run_file.read_bytes(), 7, b"", [], 32768
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        _, n, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunk, pos = chunk + data[pos + 7 : pos + 7 + n], pos + 7 + n
        if kind in (1, 4):  # a full record, or the last piece of one
            record = pb.Record()
            record.ParseFromString(chunk)
            chunk = b""
            if record.WhichOneof("record_type") == "history":
                rows.append(
                    {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in record.history.item}
                )
    return rows


def test_every_run_writes_its_metrics_log(tiny_run):
    log = metrics_path(tiny_run["out"], "tiny", "standard", 0)
    records = read_metrics(log)
    assert records[0] == {
        "event": "start",
        "step": 0,
        "size": "tiny",
        "variant": "standard",
        "seed": 0,
        "resumed": False,
    }
    train = [r for r in records if r["event"] == "train"]
    assert [[r["step"], r["loss"]] for r in train] == tiny_run["loss_curve"]  # the same readings
    assert train[0]["lr"] == pytest.approx(
        tiny_run["config"]["recipe"]["lr"] / tiny_run["config"]["recipe"]["warmup_steps"]
    )
    assert all(r["grad_norm"] > 0 and r["tokens_per_s"] > 0 for r in train)
    assert all(r["mfu"] is None and r["memory_gib"] is None for r in train)  # on a CPU: no peak, no CUDA
    assert records[-1] == {
        "event": "eval",
        "step": 12,
        **{k: tiny_run["result"][k] for k in ("val_loss", "ece", "minutes")},
    }


def test_tensorboard_event_file_holds_the_curve(tiny_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    folder = (
        metrics_path(tiny_run["out"], "tiny", "standard", 0).parent / "tensorboard" / "tiny-standard-seed0"
    )
    events = EventAccumulator(str(folder))
    events.Reload()
    loss = events.Scalars("train/loss")
    assert [[e.step, e.value] for e in loss] == [
        [s, pytest.approx(v, rel=1e-6)] for s, v in tiny_run["loss_curve"]
    ]
    assert events.Scalars("eval/val_loss")[0].value == pytest.approx(tiny_run["result"]["val_loss"], rel=1e-6)
    assert {"train/lr", "train/grad_norm", "train/tokens_per_s"} <= set(events.Tags()["scalars"])


def test_wandb_offline_run_holds_the_curve(tiny_run):
    folders = list(
        (metrics_path(tiny_run["out"], "tiny", "standard", 0).parent / "wandb").glob("offline-run-*")
    )
    assert len(folders) == 1
    (run_file,) = folders[0].glob("run-*.wandb")
    history = wandb_history(run_file)
    curve = [[h["_step"], h["train/loss"]] for h in history if "train/loss" in h]
    assert curve == [[s, pytest.approx(v, rel=1e-12)] for s, v in tiny_run["loss_curve"]]
    assert [h["eval/val_loss"] for h in history if "eval/val_loss" in h] == [tiny_run["result"]["val_loss"]]


def test_a_resumed_run_continues_its_wandb_run_and_log(tmp_path, monkeypatch):
    from rr_model.metrics import Metrics

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    path, run = (
        tmp_path / "x.metrics" / "tiny-standard-seed0.jsonl",
        {"size": "tiny", "variant": "standard", "seed": 0},
    )
    first = Metrics(path, run, step=0, backends=("wandb",))
    first.log(1, loss=2.0)
    first.close(finished=False)
    again = Metrics(path, run, step=1, backends=("wandb",), resumed=True, wandb_id=first.wandb_id)
    again.log(1, loss=1.5)  # a step after the last checkpoint, done again
    again.log(2, loss=float("nan"))  # diverged: JSON has no NaN, the log says null
    again.close()
    runs = sorted((tmp_path / "x.metrics" / "wandb").glob("offline-run-*"))
    files = [f.name for r in runs for f in r.glob("run-*.wandb")]
    assert files == [f"run-{first.wandb_id}.wandb"] * 2  # two segments of one W&B run
    assert [r["resumed"] for r in read_metrics(path) if r["event"] == "start"] == [False, True]
    curve = load_curves([path])
    assert curve["step"].tolist() == [1, 2] and curve["loss"].iloc[0] == 1.5 and curve["loss"].isna().iloc[1]


def test_an_unknown_backend_is_refused():
    from rr_core.errors import InputError
    from rr_model.config import TrainConfig

    with pytest.raises(InputError, match="log .* must name only tensorboard and wandb"):
        TrainConfig(size="tiny", log=("mlflow",))


def test_gate_readings_go_to_the_log_and_to_tensorboard_a_diverged_one_as_null(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from rr_model.metrics import Metrics

    path = tmp_path / "x.metrics" / "tiny-highway-seed0.jsonl"
    metrics = Metrics(
        path, {"size": "tiny", "variant": "highway", "seed": 0}, step=0, backends=("tensorboard",)
    )
    gates = [
        {"layer": 0, "sublayer": "attn", "mean": 0.25, "std": 0.125},
        {"layer": 0, "sublayer": "mlp", "mean": float("nan"), "std": None},  # diverged; never counted
    ]
    metrics.log(1, gates=gates, loss=2.0)
    metrics.log(2, loss=1.5)  # an ungated record: no "gates" key
    metrics.close()
    train = [r for r in read_metrics(path) if r["event"] == "train"]
    assert train[0]["gates"] == [gates[0], {"layer": 0, "sublayer": "mlp", "mean": None, "std": None}]
    assert "gates" not in train[1]
    events = EventAccumulator(str(path.parent / "tensorboard" / "tiny-highway-seed0"))
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("gates/r_mean/0.attn")] == [(1, 0.25)]
    assert [(e.step, e.value) for e in events.Scalars("gates/r_std/0.attn")] == [(1, 0.125)]
    assert not any(tag.endswith("0.mlp") for tag in events.Tags()["scalars"])

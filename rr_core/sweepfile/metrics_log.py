"""Training curves: the per-step metrics log every run writes, and the reader behind `rr plot curves`.

A dataset ``NAME.csv`` keeps its runs' metrics in ``NAME.metrics/SIZE-VARIANT-seedS.jsonl``, beside the
checkpoint folder ``NAME.checkpoints/``: one JSON object per line, each with an ``event``:

- ``start``: a training segment began (the run's size, variant and seed; ``step``, where it began;
  ``resumed``, whether from a checkpoint);
- ``train``: a log interval ended at ``step``: ``loss`` (mean training loss of the interval), ``lr``
  (of the interval's last step), ``grad_norm`` (mean pre-clip gradient norm), ``tokens_per_s``, ``mfu``
  (None where the device's peak is unknown), ``memory_gib`` (peak CUDA memory; None off CUDA) and
  ``seconds`` (wall-clock since the segment began);
- ``eval``: the final evaluation: ``val_loss``, ``ece`` and ``minutes``.

A resumed run appends to its log and repeats the steps after its last checkpoint; the reader keeps the last
reading of each step. A line cut short (a run killed mid-write) is skipped with a note wherever it is, as the
run's next segment logs those steps again and starts on a new line. Torch-free.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from rr_core.errors import InputError
from rr_core.files import json_lines
from rr_core.sweepfile.provenance import read_records, sidecar_path

__all__ = ["metrics_path", "read_metrics", "load_curves", "CURVE_COLUMNS"]

# Columns of `load_curves`: one row per run and logged step.
CURVE_COLUMNS = ("size", "variant", "seed", "step", "loss", "lr", "source")


def metrics_path(out: str | os.PathLike, size: str, variant: str, seed: int) -> Path:
    """Where a run's metrics log lives: `data/x.csv` -> `data/x.metrics/SIZE-VARIANT-seedS.jsonl`."""
    out = Path(out)
    return out.parent / f"{out.stem}.metrics" / f"{size}-{variant}-seed{seed}.jsonl"


def read_metrics(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Every record of a metrics log, in file order.

    A line cut short (a run killed mid-write; `rr_core.files.json_lines`) is skipped with a note, as the
    run's next segment logs those steps again; a JSON line that is not a metrics record is an InputError
    naming the file and line.
    """
    path = Path(path)
    records = []
    for number, record in json_lines(path.read_text(encoding="utf-8"), path):
        if not isinstance(record, dict) or "event" not in record:
            raise InputError(f"{path}: line {number} is not a metrics record (no 'event')")
        records.append(record)
    return records


def _log_rows(path: Path) -> list[dict[str, Any]]:
    """The curve rows of one metrics log: the last reading of each step."""
    records = read_metrics(path)
    start = next((r for r in records if r["event"] == "start"), None)
    if start is None:
        raise InputError(f"{path}: no 'start' record naming the run")
    key = {k: start[k] for k in ("size", "variant", "seed")}
    by_step = {r["step"]: r for r in records if r["event"] == "train"}
    return [
        {**key, "step": s, "loss": r.get("loss"), "lr": r.get("lr"), "source": str(path)}
        for s, r in sorted(by_step.items())
    ]


def _dataset_rows(csv: Path) -> list[dict[str, Any]]:
    """The curves of a dataset's runs: each "ok" run's metrics log, else its record's loss curve (no lr)."""
    runs = {}
    for r in read_records(sidecar_path(csv)):
        if r.get("status") == "ok":
            runs[(r["size"], r["variant"], r["seed"])] = r
    rows = []
    for key, record in runs.items():
        log = metrics_path(csv, *key)
        if log.exists():
            rows += _log_rows(log)
            continue
        for step, loss in record.get("loss_curve") or []:
            rows.append(dict(zip(("size", "variant", "seed"), key, strict=True)))
            rows[-1].update(step=int(step), loss=loss, lr=None, source=str(sidecar_path(csv)))
    return rows


def load_curves(paths: Iterable[str | os.PathLike]) -> pd.DataFrame:
    """The training curves of runs, one row per run and logged step.

    Parameters
    ----------
    paths
        Each a dataset CSV (its runs are found through its provenance sidecar, their logs in
        ``NAME.metrics/``; a run without a log contributes its record's loss curve, without lr), a metrics
        folder ``NAME.metrics/`` (every log in it) or one ``.jsonl`` metrics log.

    Returns
    -------
    DataFrame with `CURVE_COLUMNS`: size, variant, seed, step, loss (mean training loss of the interval
    ending at step), lr (NaN where unknown) and source (the file read).

    Raises
    ------
    InputError
        A path that does not exist, or paths that hold no curve at all.
    """
    rows: list[dict[str, Any]] = []
    paths = [Path(p) for p in paths]
    for path in paths:
        if path.is_dir():
            for log in sorted(path.glob("*.jsonl")):
                rows += _log_rows(log)
        elif path.suffix == ".jsonl" and path.is_file():
            rows += _log_rows(path)
        elif path.is_file():
            rows += _dataset_rows(path)
        else:
            raise InputError(f"{path}: no such dataset, metrics folder or metrics log")
    if not rows:
        where = ", ".join(str(p) for p in paths)
        raise InputError(
            f"no training curves in {where}: runs trained by rr write them to NAME.metrics/ beside the "
            "dataset (the published rows were trained before rr and have none)"
        )
    df = pd.DataFrame(rows, columns=list(CURVE_COLUMNS))
    df[["loss", "lr"]] = df[["loss", "lr"]].astype(float)
    return df.drop_duplicates(["size", "variant", "seed", "step"], keep="last").reset_index(drop=True)

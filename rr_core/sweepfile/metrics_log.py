"""Training curves: the per-step metrics log every run writes, and the readers behind `rr plot curves` and
`rr plot gates` (`load_curves`, `load_gates`) and of the validation curve (`load_evals`).

A dataset ``NAME.csv`` keeps its runs' metrics in ``NAME.metrics/SIZE-VARIANT-seedS.jsonl``, beside the
checkpoint folder ``NAME.checkpoints/``: one JSON object per line, each with an ``event``:

- ``start``: a training segment began (the run's size, variant and seed; ``step``, where it began;
  ``resumed``, whether from a checkpoint);
- ``train``: a log interval ended at ``step``: ``loss`` (mean training loss of the interval), ``lr``
  (of the interval's last step), ``grad_norm`` (mean pre-clip gradient norm), ``tokens_per_s``, ``mfu``
  (None where the device's peak is unknown), ``memory_gib`` (peak CUDA memory; None off CUDA) and
  ``seconds`` (wall-clock since the segment began); for a variant with a gate r, ``gates`` too: one
  object per gated sublayer in depth order, its ``layer`` (block index), ``sublayer`` ("attn" or "mlp"),
  and the ``mean`` and ``std`` of r over every position, channel and forward pass of the interval (every
  process's share of the batch pooled; `rr_model.run.gate_watch`);
- ``eval``, two kinds: the final evaluation (``val_loss``, ``ece`` and ``minutes``, after the last step;
  scored on the published windows, which move with the step count), and, for a run trained with
  ``--eval-every N``, a periodic validation reading every N steps and at the last: ``step``, ``tokens``
  (trained so far: step x batch x block), ``val_loss`` (the mean loss on the run's held-out windows, the
  same windows at every reading of every variant, seed and size of a corpus; the record's
  ``held_out_windows`` describes them) and ``periodic``: true. An eval event with ``periodic`` true is a
  point of the validation curve; the final one has no ``periodic`` key.

A resumed run appends to its log and repeats the steps after its last checkpoint; the readers keep the last
reading of each step. A line cut short (a run killed mid-write) is skipped with a note wherever it is, as the
run's next segment logs those steps again and starts on a new line. Torch-free.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from rr_core.errors import InputError
from rr_core.files.reading import json_lines
from rr_core.sweepfile.provenance import read_records, sidecar_path
from rr_core.sweepfile.schema import record_key, run_stem

__all__ = [
    "metrics_path",
    "read_metrics",
    "load_curves",
    "load_gates",
    "load_losses",
    "load_evals",
    "CURVE_COLUMNS",
    "GATE_COLUMNS",
    "LOSS_COLUMNS",
    "EVAL_COLUMNS",
]

# Columns of `load_curves`: one row per run and logged step.
CURVE_COLUMNS = ("size", "variant", "seed", "step", "loss", "lr", "source")
# Columns of `load_gates`: one row per run, logged step and gated sublayer.
GATE_COLUMNS = ("size", "variant", "seed", "step", "layer", "sublayer", "mean", "std", "source")
# Columns of `load_losses`: one row per run, series ("train" or "val") and logged step.
LOSS_COLUMNS = ("size", "variant", "seed", "steps", "series", "step", "loss", "source")
# Columns of `load_evals`: one row per run and periodic validation reading.
EVAL_COLUMNS = ("size", "variant", "seed", "init_seed", "data_seed", "step", "tokens", "val_loss", "source")


def metrics_path(
    out: str | os.PathLike,
    size: str,
    variant: str,
    seed: int,
    lr: float | None = None,
    steps: int | None = None,
) -> Path:
    """Where a run's metrics log lives: `data/x.csv` -> `data/x.metrics/SIZE-VARIANT-seedS.jsonl` (a tuning
    run's name carries its lr, one of several budgets its steps: `rr_core.sweepfile.schema.run_stem`)."""
    out = Path(out)
    return out.parent / f"{out.stem}.metrics" / f"{run_stem(size, variant, seed, lr, steps)}.jsonl"


def read_metrics(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Every record of a metrics log, in file order.

    A line cut short (a run killed mid-write; `rr_core.files.reading.json_lines`) is skipped with a note, as the
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


def _run(records: list[dict[str, Any]], path: Path, seeds: bool = False) -> dict[str, Any]:
    """The run a metrics log names: (size, variant, seed) of its first ``start`` record; with `seeds`, its
    init_seed and data_seed too (each the seed where the log names none: a run that named its seeds,
    rr train --init-seed, --data-seed, logs them in its start record)."""
    start = next((r for r in records if r["event"] == "start"), None)
    if start is None:
        raise InputError(f"{path}: no 'start' record naming the run")
    key = {k: start[k] for k in ("size", "variant", "seed")}
    if seeds:
        key |= {k: start.get(k, start["seed"]) for k in ("init_seed", "data_seed")}
    return key


def _last_of_each_step(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last of `records` at each step, in step order (a resumed run logs the steps after its last
    checkpoint again)."""
    by_step = {r["step"]: r for r in records}
    return [by_step[s] for s in sorted(by_step)]


def _train_records(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run a metrics log names (size, variant, seed) and its last ``train`` record of each step, in
    step order."""
    records = read_metrics(path)
    return _run(records, path), _last_of_each_step([r for r in records if r["event"] == "train"])


def _eval_rows(path: Path) -> list[dict[str, Any]]:
    """The validation-curve rows of one metrics log: its periodic eval readings, the last of each step."""
    records = read_metrics(path)
    key = _run(records, path, seeds=True)
    evals = _last_of_each_step([r for r in records if r["event"] == "eval" and r.get("periodic") is True])
    return [
        {
            **key,
            "step": r["step"],
            "tokens": r.get("tokens"),
            "val_loss": r.get("val_loss"),
            "source": str(path),
        }
        for r in evals
    ]


def _curve_rows(path: Path) -> list[dict[str, Any]]:
    """The curve rows of one metrics log: the last reading of each step."""
    key, train = _train_records(path)
    return [
        {**key, "step": r["step"], "loss": r.get("loss"), "lr": r.get("lr"), "source": str(path)}
        for r in train
    ]


def _gate_rows(path: Path) -> list[dict[str, Any]]:
    """The gate rows of one metrics log: each gated sublayer's r at the last reading of each step."""
    key, train = _train_records(path)
    return [
        {
            **key,
            "step": r["step"],
            **{k: g[k] for k in ("layer", "sublayer", "mean", "std")},
            "source": str(path),
        }
        for r in train
        for g in r.get("gates") or []
    ]


def _loss_rows(path: Path) -> list[dict[str, Any]]:
    """The loss rows of one metrics log: the last training loss and periodic validation loss of each step,
    with the steps the run trained (its final evaluation's step; None where it has none yet)."""
    records = read_metrics(path)
    run, evals = _run(records, path), [r for r in records if r["event"] == "eval"]
    final = [r["step"] for r in evals if not r.get("periodic")]
    run["steps"] = final[-1] if final else None
    series = {
        "train": ([r for r in records if r["event"] == "train"], "loss"),
        "val": ([r for r in evals if r.get("periodic")], "val_loss"),
    }
    return [
        {**run, "series": name, "step": r["step"], "loss": r.get(field), "source": str(path)}
        for name, (events, field) in series.items()
        for r in _last_of_each_step(events)
    ]


def _record_losses(key: tuple, record: dict[str, Any], sidecar: Path) -> list[dict[str, Any]]:
    """The loss rows of a run without a metrics log: its provenance record's training-loss curve."""
    steps = (record.get("config") or {}).get("steps")
    return [{**r, "steps": steps, "series": "train"} for r in _record_curve(key, record, sidecar)]


def _record_curve(key: tuple, record: dict[str, Any], sidecar: Path) -> list[dict[str, Any]]:
    """The curve rows of a run without a metrics log: its provenance record's loss curve (no lr)."""
    run = dict(zip(("size", "variant", "seed"), key[:3], strict=True))  # a tuning run's lr is in its log name
    return [
        {**run, "step": int(step), "loss": loss, "lr": None, "source": str(sidecar)}
        for step, loss in record.get("loss_curve") or []
    ]


def _frame(
    paths: list[Path],
    from_log: Callable[[Path], list[dict[str, Any]]],
    from_record: Callable[[tuple, dict[str, Any], Path], list[dict[str, Any]]] | None,
    columns: tuple[str, ...],
    none: InputError,
    floats: tuple[str, ...],
) -> pd.DataFrame:
    """The rows `_rows` reads as a frame of `columns`, `floats` as floats: what every loader here starts from;
    `none` is raised where the paths hold no row of the kind."""
    rows = _rows(paths, from_log, from_record)
    if not rows:
        raise none
    df = pd.DataFrame(rows, columns=list(columns))
    df[list(floats)] = df[list(floats)].astype(float)
    return df


def _rows(
    paths: list[Path],
    from_log: Callable[[Path], list[dict[str, Any]]],
    from_record: Callable[[tuple, dict[str, Any], Path], list[dict[str, Any]]] | None = None,
) -> list[dict[str, Any]]:
    """`from_log`'s rows of every metrics log `paths` name: a ``.jsonl`` log, a metrics folder (every log in it)
    or a dataset CSV (each "ok" run's log, found through its provenance sidecar; `from_record`'s rows of its
    record where it has no log)."""
    rows: list[dict[str, Any]] = []
    for path in paths:
        if path.is_dir():
            for log in sorted(path.glob("*.jsonl")):
                rows += from_log(log)
        elif path.suffix == ".jsonl" and path.is_file():
            rows += from_log(path)
        elif path.is_file():
            sidecar = sidecar_path(path)
            runs = {record_key(r): r for r in read_records(sidecar) if r.get("status") == "ok"}
            for key, record in runs.items():
                if (log := metrics_path(path, *key)).exists():
                    rows += from_log(log)
                elif from_record is not None:
                    rows += from_record(key, record, sidecar)
        else:
            raise InputError(f"{path}: no such dataset, metrics folder or metrics log")
    return rows


def _no_curves(paths: list[Path]) -> InputError:
    return InputError(
        f"no training curves in {', '.join(map(str, paths))}: runs trained by rr write them to NAME.metrics/ "
        "beside the dataset (the published rows were trained before rr and have none)"
    )


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
    paths = [Path(p) for p in paths]
    df = _frame(paths, _curve_rows, _record_curve, CURVE_COLUMNS, _no_curves(paths), floats=("loss", "lr"))
    return df.drop_duplicates(["size", "variant", "seed", "step"], keep="last").reset_index(drop=True)


def load_gates(paths: Iterable[str | os.PathLike]) -> pd.DataFrame:
    """Each gated sublayer's r over training, from the metrics logs of runs of gated variants.

    Parameters
    ----------
    paths
        As `load_curves`: dataset CSVs (their runs' logs), metrics folders or ``.jsonl`` logs. Logs of runs
        without a gate (and runs without a log) contribute nothing.

    Returns
    -------
    DataFrame with `GATE_COLUMNS`: size, variant, seed, step, layer (block index), sublayer ("attn" or
    "mlp"), mean and std of r over the log interval ending at step (NaN where the rule's forward never
    called its r), and source (the file read).

    Raises
    ------
    InputError
        A path that does not exist, or paths that hold no gate reading at all.
    """
    paths = [Path(p) for p in paths]
    none = InputError(
        f"no gate readings in {', '.join(map(str, paths))}: runs of a variant with a gate (review_neutral, "
        "highway, a plugin's rule with r) log them in NAME.metrics/ as they train; `rr gates --checkpoint` "
        "reads a finished run's weights"
    )
    df = _frame(paths, _gate_rows, None, GATE_COLUMNS, none, floats=("mean", "std"))
    keys = ["size", "variant", "seed", "step", "layer", "sublayer"]
    return df.drop_duplicates(keys, keep="last").reset_index(drop=True)


def load_losses(paths: Iterable[str | os.PathLike]) -> pd.DataFrame:
    """The losses runs logged while they trained, one row per run, series and logged step: what
    `rr analyze curves` pairs across variants.

    Parameters
    ----------
    paths
        As `load_curves`: dataset CSVs (each "ok" run's log through the provenance sidecar; a run without
        a log contributes its record's training-loss curve), metrics folders or ``.jsonl`` logs.

    Returns
    -------
    DataFrame with `LOSS_COLUMNS`: size, variant, seed; steps, the steps the run trained (the step of its
    final evaluation, or of its record; missing for a run that has not finished), which keeps two budgets
    of one (size, variant, seed) apart; series, "train" (the mean training loss of the log interval ending
    at step) or "val" (a periodic validation, an ``eval`` event with ``"periodic": true``); step; loss; and
    source (the file read). The final evaluation is not a row: its loss is the sweep file's val_loss.

    Raises
    ------
    InputError
        A path that does not exist, or paths that hold no curve at all.

    Example
    -------
    >>> import tempfile
    >>> lines = [
    ...     '{"event": "start", "step": 0, "size": "tiny", "variant": "standard", "seed": 0}',
    ...     '{"event": "train", "step": 2, "loss": 5.0}',
    ...     '{"event": "eval", "step": 2, "tokens": 4096, "val_loss": 4.9, "periodic": true}',
    ...     '{"event": "train", "step": 4, "loss": 4.0}',
    ...     '{"event": "eval", "step": 4, "val_loss": 3.9, "ece": 0.1, "minutes": 0.1}',
    ... ]
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     log = Path(folder) / "tiny-standard-seed0.jsonl"
    ...     _ = log.write_text("\\n".join(lines))
    ...     load_losses([log])[["steps", "series", "step", "loss"]].values.tolist()
    [[4, 'train', 2, 5.0], [4, 'val', 2, 4.9], [4, 'train', 4, 4.0]]
    """
    paths = [Path(p) for p in paths]
    df = _frame(paths, _loss_rows, _record_losses, LOSS_COLUMNS, _no_curves(paths), floats=("loss",))
    df["steps"] = df["steps"].astype("Int64")
    keys = ["size", "variant", "seed", "steps", "series", "step"]
    out = df.drop_duplicates(keys, keep="last")
    return out.sort_values(["size", "variant", "seed", "steps", "step", "series"], kind="stable").reset_index(
        drop=True
    )


def load_evals(paths: Iterable[str | os.PathLike]) -> pd.DataFrame:
    """The validation curves of runs trained with ``--eval-every``: one row per run and periodic reading.

    Parameters
    ----------
    paths
        As `load_curves`: dataset CSVs (their runs' logs), metrics folders or ``.jsonl`` logs. Only eval events
        marked ``periodic`` are read; a run's final evaluation is its row's val_loss, on other windows.

    Returns
    -------
    DataFrame with `EVAL_COLUMNS`: size, variant, seed, init_seed and data_seed (the run's seeds: its seed
    where it named none; curves pair on data_seed, the batches they shared), step (optimiser steps done),
    tokens (trained by then: step x batch x block), val_loss (mean loss on the held-out windows, which are the
    same for every run of a corpus at one block size, so readings of any two runs compare on the same tokens;
    NaN for a non-finite reading) and source (the file read).

    Raises
    ------
    InputError
        A path that does not exist, or paths that hold no periodic reading at all.
    """
    paths = [Path(p) for p in paths]
    none = InputError(
        f"no periodic validation readings in {', '.join(map(str, paths))}: runs trained with "
        "--eval-every N log them in NAME.metrics/ as they train"
    )
    df = _frame(paths, _eval_rows, None, EVAL_COLUMNS, none, floats=("val_loss",))
    df["tokens"] = df["tokens"].astype("int64")
    return df.drop_duplicates(["size", "variant", "seed", "step"], keep="last").reset_index(drop=True)

"""Provenance of trained runs: a JSON-lines sidecar beside the dataset, one record per finished attempt.

The dataset row says what a run measured; its sidecar record says how it was produced: the full config and
recipe, the data, the toolkit version and git commit, torch/CUDA versions, the device, start and end times,
the loss curve, and whether it finished ("ok") or failed (diverged, crashed). Failed runs have a record but
no row. Records are appended under the same discipline as rows: an exclusive lock, one write, fsync; after
a torn last line (a write cut short by another tool) a record starts on a new line, and a reader skips the
torn line with a note (`rr_core.files.reading.json_lines`), so the records around it stay readable.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rr_core.errors import InputError
from rr_core.files.appending import append_whole
from rr_core.files.locks import locked
from rr_core.files.reading import json_lines, read_regular
from rr_core.sweepfile.schema import record_key

__all__ = [
    "sidecar_path",
    "environment",
    "append_record",
    "read_records",
    "join",
    "summarize_join",
    "JOIN_COLUMNS",
    "PUBLISHED_ENVIRONMENT",
]

# What the published runs were trained on (the dataset card: B200, TF32); they predate rr's sidecar records.
PUBLISHED_ENVIRONMENT = {"device_name": "NVIDIA B200", "precision": "tf32"}

# Columns `join` adds to a sweep DataFrame (NaN/None where a row has no "ok" record).
JOIN_COLUMNS = ("run_id", "toolkit", "git_commit", "device", "precision", "started", "ended", "record_agrees")


def sidecar_path(out: str | os.PathLike) -> Path:
    """The sidecar of a dataset: `data/scaling_v8.csv` -> `data/scaling_v8.runs.jsonl`."""
    out = Path(out)
    return out.with_name(f"{out.stem}.runs.jsonl")


def _git_commit() -> str | None:
    """The commit of the source tree rr runs from, with "-dirty" if it has uncommitted changes."""
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None  # an installed wheel, or no git
    return commit + ("-dirty" if dirty else "")


def _cpu_name() -> str:
    """The CPU model from /proc/cpuinfo (Linux), else what `platform` knows (often just the architecture)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _numerics() -> dict[str, Any]:
    """What can make two runs of one seed differ on the same recipe: cuDNN, determinism and TF32 settings."""
    import torch

    cudnn = torch.backends.cudnn
    return {
        "cudnn": cudnn.version() if cudnn.is_available() else None,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        "cudnn_deterministic": cudnn.deterministic,
        "cudnn_benchmark": cudnn.benchmark,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cuda_matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn_allow_tf32": cudnn.allow_tf32,
    }


def environment(device: str) -> dict[str, Any]:
    """Software and hardware a run used: toolkit version, commit and whether the tree was dirty, Python,
    torch, CUDA, cuDNN, the determinism and TF32 settings in force, and the device's name."""
    from importlib.metadata import PackageNotFoundError, version

    import torch

    try:
        toolkit = version("rr-toolkit")
    except PackageNotFoundError:
        toolkit = None
    if device.startswith("cuda"):
        device_name = torch.cuda.get_device_name(torch.device(device))
    else:
        device_name = _cpu_name()
    commit = _git_commit()
    return {
        "toolkit": toolkit,
        "git_commit": commit,
        "git_dirty": None if commit is None else commit.endswith("-dirty"),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": device,
        "device_name": device_name,
        "host": platform.node(),
        **_numerics(),
    }


def append_record(path: str | os.PathLike, record: Mapping[str, Any]) -> None:
    """Append one JSON record as one line, under an exclusive lock, whole or not at all.

    The line is written in one checked write and fsynced (`rr_core.files.appending.append_whole`); on a full
    disk or a file-size limit the sidecar is cut back to its old length and `Unwritten` is raised.
    """
    line = (json.dumps(record, sort_keys=True, allow_nan=False) + "\n").encode("utf-8")
    key = " ".join(str(record.get(k)) for k in ("size", "variant", "seed"))
    with locked(path, os.O_RDWR | os.O_CREAT | os.O_APPEND) as fd:  # read too: a torn tail is looked for
        append_whole(fd, line, path, f"the run record of {key}")


def read_records(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Every record of a sidecar, in file order ([] if there is none).

    A line that is not complete JSON (a torn write) is skipped with a `rr_core.errors.Note`; a line that
    is JSON but not an object (an edited file) is an InputError naming the file and line.
    """
    path = Path(path)
    if not path.exists():
        return []
    try:
        text = read_regular(path).decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not a run sidecar (not UTF-8 text: {e.reason})") from None
    records = []
    for number, record in json_lines(text, path):
        if not isinstance(record, dict):
            raise InputError(f"{path}: line {number} is not a JSON object but {type(record).__name__}")
        records.append(record)
    return records


_NEEDED = (
    "run_id",
    "environment.toolkit",
    "environment.git_commit",
    "environment.device_name",
    "config.precision",
    "started",
    "ended",
    "result.val_loss",
    "result.ece",
)


def _fields(record: dict[str, Any], path: Path) -> list[Any]:
    """The values `join` reads from an "ok" record, in `_NEEDED` order; InputError naming what is absent."""
    values = []
    for name in _NEEDED:
        value: Any = record
        for part in name.split("."):
            if not isinstance(value, dict) or part not in value:
                key = ", ".join(str(record.get(k)) for k in ("size", "variant", "seed"))
                raise InputError(f"{path}: the run record of ({key}) is incomplete: it has no {name}")
            value = value[part]
        values.append(value)
    return values


def join(df: pd.DataFrame, sidecar: str | os.PathLike | None = None) -> pd.DataFrame:
    """The rows of a sweep with the provenance of each, from the last "ok" record of its (size, variant, seed)
    (with its lr where the record has one, and its steps where the record names a budget: `record_key`).

    Parameters
    ----------
    df
        A sweep loaded with `rr_core.sweepfile.dataset.load_sweep`.
    sidecar
        Its sidecar; default `sidecar_path(df.attrs["path"])`.

    Returns
    -------
    A copy of `df` with the columns of `JOIN_COLUMNS`: run_id, toolkit (version), git_commit, device (its
    name), precision, started and ended (ISO times), and record_agrees: whether the row's val_loss and ece
    equal the record's, to the dataset's 4 decimals (None where the row has no record, as for the published
    rows, which were trained before rr).
    """
    path = Path(sidecar) if sidecar is not None else sidecar_path(df.attrs["path"])
    ok = {}
    for r in read_records(path):
        if r.get("status") == "ok":
            ok[record_key(r)] = _fields(r, path)  # a tuning run's key holds its lr
    out = df.copy()
    for col in JOIN_COLUMNS:
        out[col] = None
    lrs = df["lr"] if "lr" in df.columns else pd.Series(np.nan, index=df.index)
    for i, (row, lr) in enumerate(zip(df.itertuples(index=False), lrs, strict=True)):
        key = (row.size, row.variant, int(row.seed))
        key = key if np.isnan(lr) else (*key, float(lr))
        fields = ok.get((*key, int(row.steps))) or ok.get(key)  # one of several budgets: its steps name it
        if fields is None:
            continue
        *values, val_loss, ece = fields
        agrees = round(val_loss, 4) == round(row.val_loss, 4) and (
            pd.isna(row.ece) or round(ece, 4) == round(row.ece, 4)
        )
        for col, value in zip(JOIN_COLUMNS, (*values, agrees), strict=True):
            out.iat[i, out.columns.get_loc(col)] = value
    return out


def summarize_join(joined: pd.DataFrame, n_published: int) -> list[str]:
    """What `rr validate` says of a sweep's provenance: counts, then one line per row that needs a look.

    Rows beyond the `n_published` published ones are expected to carry a record; a row whose values differ
    from its record's, or an added row without one, is listed by its key.
    """
    has = joined["run_id"].notna()
    key = pd.Series(
        [f"{s}, {v}, {k}" for s, v, k in zip(joined["size"], joined["variant"], joined["seed"], strict=True)],
        index=joined.index,
    )
    disagree = key[joined["record_agrees"].eq(False)]
    orphans = key[~has].iloc[n_published:] if len(joined) > n_published else key.iloc[:0]
    lines = [f"provenance: {int(has.sum())} row(s) with a run record, {len(disagree)} disagree with it"]
    lines += [f"  differs from its run record: ({k})" for k in disagree]
    lines += [f"  no run record: ({k})" for k in orphans]
    return lines

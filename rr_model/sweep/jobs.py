"""The small state file a cluster sweep keeps beside its dataset: which job trains which run.

`data/scaling_v8.csv` -> `data/scaling_v8.sweep.json`, a JSON object {"jobs": [entry, ...]}. An entry is
what the submitter knew when it submitted a job: job_id, executor ("slurm", or "local" for submitit's
local executor), folder (submitit's job folder pattern, with %j), size, variant, seed, steps, out (the
results file the job appends to: the dataset, or its own part file), log (the job's stdout) and submitted
(ISO time). Everything that changes later (the job's state, the step reached) is read live by
`rr_model.sweep.slurm.job_status`, so only the submitter writes this file: it replaces it whole with
`rr_core.files.replacing.atomic_write` under `rr_core.files.locks.locked` on `<state>.lock`, so two sweeps submitting to
the same dataset at once keep both their entries. Torch-free.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rr_core.errors import InputError
from rr_core.files.locks import locked
from rr_core.files.replacing import atomic_write

__all__ = ["SLURM", "state_path", "read_jobs", "add_jobs"]

SLURM = "Slurm (--launcher slurm)"  # the help panel of the options about Slurm jobs (`Launch`'s, `Sweep`'s)


def state_path(out: str | os.PathLike) -> Path:
    """The state file of a dataset: `data/scaling_v8.csv` -> `data/scaling_v8.sweep.json`."""
    out = Path(out)
    return out.with_name(f"{out.stem}.sweep.json")


def read_jobs(out: str | os.PathLike) -> list[dict[str, Any]]:
    """The job entries recorded for the dataset `out`, oldest first ([] if none were submitted)."""
    path = state_path(out)
    if not path.exists():
        return []
    try:
        return json.loads(path.read_text(encoding="utf-8"))["jobs"]
    except (ValueError, KeyError, TypeError) as e:
        raise InputError(f"{path}: not a sweep state file ({e}); move it aside to start a new one") from None


def add_jobs(out: str | os.PathLike, entries: Iterable[Mapping[str, Any]]) -> None:
    """Append job entries to the state file of `out`, replacing the file atomically under its lock."""
    path = state_path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    with locked(path.with_name(path.name + ".lock")):
        jobs = read_jobs(out) + [dict(e) for e in entries]
        text = json.dumps({"jobs": jobs}, indent=1, sort_keys=True) + "\n"
        atomic_write(path, lambda f: f.write(text.encode("utf-8")))

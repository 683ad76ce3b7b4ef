"""Downstream evaluation: lm-evaluation-harness's tasks on trained runs (`rr eval --tasks`).

Each run is scored as transformers loads its export (`rr_model.uses.export`): a checkpoint is exported to a
temporary folder first, so the figures are those anyone loading the export gets. lm-evaluation-harness
(Gao et al., EleutherAI) runs the tasks through its ``hf`` model, on every run with the same settings: the
first `limit` documents of each task and its seeds fixed (lm-eval's defaults), so every run answers the same
examples. `measured_columns` turns the scores into a sweep file's extra columns, one per task metric.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rr_core.errors import InputError, Note, did_you_mean, nearest
from rr_core.files.replacing import scratch
from rr_model.data.hub import from_hub, hub_unreachable, in_cache, not_cached
from rr_model.uses.task_files import TaskDataset, task_datasets

__all__ = ["RunScores", "task_scores", "measured_columns", "column_name", "SEEDS"]

# What serves lm-eval's tasks when the hub cannot: said when a task's dataset cannot be had.
LOCAL_TASKS = (
    "lm-evaluation-harness downloads each task's dataset from the hub: run the command once on a machine "
    "that reaches it (the datasets stay in the Hugging Face cache, HF_HOME, and load offline after that, on "
    "this machine or one the cache is copied to, with HF_HUB_OFFLINE=1 too), or score a task of your own whose "
    "dataset is a local file (--include-path FOLDER, its YAML saying dataset_path: json and data_files)."
)

# lm-eval's own defaults, stated: the python, numpy, torch and few-shot sampling seeds of every run
SEEDS = {"random_seed": 0, "numpy_random_seed": 1234, "torch_random_seed": 1234, "fewshot_random_seed": 1234}


@dataclass(frozen=True)
class RunScores:
    """One run's scores: its identity (size, variant, seed), every task metric, lm-eval's logged samples."""

    run: dict[str, Any]
    scores: list[dict[str, Any]]  # task, metric, value, stderr (None where lm-eval gives none)
    samples: dict[str, list[dict[str, Any]]] | None = None

    @property
    def title(self) -> str:
        return f"{self.run['size']} {self.run['variant']} seed {self.run['seed']}"


def _exported(path: Path, scratch: Path) -> tuple[Path, dict[str, Any]]:
    """The export folder of `path` (an export itself, or a checkpoint exported into `scratch`) and its run."""
    from rr_model.uses.export import export  # torch: loaded after the offline check, which needs none

    if not (path.is_dir() and (path / "config.json").is_file()):
        export(path, scratch)
        path = scratch
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    if "auto_map" not in config:
        raise InputError(
            f"{path}: an export without the code transformers runs (written by an earlier rr); export its "
            "checkpoint again"
        )
    return path, config["rr"]["run"]


def _task_manager(tasks: Sequence[str], include_path: str | os.PathLike | None) -> Any:
    """lm-eval's task index: of `include_path` alone when it holds every task asked for (indexing
    lm-eval's own ~15,000 task files takes seconds), else of both."""
    from lm_eval.tasks import TaskManager

    if include_path is not None:
        own = TaskManager(include_path=str(include_path), include_defaults=False)
        if all(own.match_tasks([t]) for t in tasks):
            return own
    return TaskManager(include_path=str(include_path) if include_path is not None else None)


def _refuse_uncached(
    tasks: Sequence[str], include_path: str | os.PathLike | None, packaged: Path, why: str
) -> None:
    """With the hub unusable (`why`), refuse at once the names (tasks, groups, tags) whose tasks load a hub
    dataset the cache lacks, read from their own task files (`rr_model.uses.task_files`; `packaged`: lm-eval's)
    before lm-eval indexes every task. What the files cannot settle is left to lm-eval, which fails later if it
    must."""
    roots = [Path(include_path), packaged] if include_path is not None else [packaged]
    missing: dict[tuple[str, str], list[TaskDataset]] = {}
    for d in task_datasets(tasks, roots):
        if not in_cache(d.dataset):
            missing.setdefault((d.asked, d.dataset), []).append(d)
    if not missing:
        return
    said = []
    for (asked, dataset), of in missing.items():
        first = of[0]
        where = (
            first.file.relative_to(packaged.parent.parent)
            if first.file.is_relative_to(packaged)
            else first.file
        )
        if first.task == asked:
            said.append(f"{dataset} of task {asked} ({where})")
        else:
            held = f"{len(of)} of its tasks, e.g." if len(of) > 1 else "its task"
            said.append(f"{dataset} of {asked} ({held} {first.task}, {where})")
    raise not_cached(f"the dataset {'; '.join(said)}", why, LOCAL_TASKS)


def _check_tasks(tasks: Sequence[str], manager: Any) -> None:
    known = set(manager.all_tasks)
    unknown = [t for t in tasks if t not in known and not manager.match_tasks([t])]
    if unknown:
        hints = [t + did_you_mean(nearest(t, sorted(known))) for t in unknown]
        raise InputError(
            f"lm-evaluation-harness has no task {', '.join(hints)}; `lm-eval ls tasks` lists them, and "
            "--include-path adds a folder of your own task files"
        )


def _scores(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every task metric lm-eval reports ("acc,none": value, "acc_stderr,none": its standard error)."""
    rows = []
    for task, metrics in results.items():
        for key, value in metrics.items():
            metric, _, flt = key.partition(",")
            if not flt or metric.endswith("_stderr") or not isinstance(value, int | float):
                continue
            stderr = metrics.get(f"{metric}_stderr,{flt}")
            name = metric if flt == "none" else f"{metric},{flt}"
            rows.append(
                {
                    "task": task,
                    "metric": name,
                    "value": float(value),
                    "stderr": float(stderr) if isinstance(stderr, int | float) else None,
                }
            )
    return rows


def task_scores(
    paths: Sequence[str | os.PathLike],
    tasks: Sequence[str],
    *,
    include_path: str | os.PathLike | None = None,
    limit: int | None = None,
    batch: int = 16,
    device: str | None = None,
    log_samples: bool = False,
) -> list[RunScores]:
    """Score each run on lm-evaluation-harness's `tasks`, every run on the same examples.

    Parameters
    ----------
    paths
        Checkpoints (what `rr_model.uses.inference.load_trained` reads) or folders `rr export` wrote.
    tasks
        lm-eval task (or group) names; `include_path` adds a folder of task YAML files of your own.
    limit
        Score only the first `limit` documents of each task (all by default).
    batch, device
        Sequences per forward pass, and the torch device (default: CUDA when available, else the CPU).
    log_samples
        Keep lm-eval's per-document records (arguments, log-likelihoods, metrics) in `RunScores.samples`.

    Returns
    -------
    One `RunScores` per run, in order.

    Notes
    -----
    The model runs in float32, loaded as ``AutoModelForCausalLM.from_pretrained(FOLDER,
    trust_remote_code=True)`` through lm-eval's ``hf`` model (backend "causal"), with lm-eval's seeds
    (`SEEDS`) and its default bootstrap for the standard errors of metrics that are not means.
    """
    import lm_eval  # the 'eval' extra

    if why := hub_unreachable():  # said now: indexing lm-eval's tasks and exporting the runs take a while
        _refuse_uncached(tasks, include_path, Path(lm_eval.__file__).parent / "tasks", why)
        warnings.warn(Note(f"the Hugging Face hub will not be used: {why}"), stacklevel=2)
    import torch

    manager = _task_manager(tasks, include_path)
    _check_tasks(tasks, manager)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    out = []
    for path in paths:
        scratch_of = Path(tempfile.gettempdir()) / "rr-eval"  # one a kill leaves: removed by the next run
        with scratch(scratch_of, folder=True) as work:
            folder, run = _exported(Path(path), work / "rr_export")
            args = {
                "pretrained": str(folder),
                "trust_remote_code": True,
                "dtype": "float32",
                "backend": "causal",
            }
            with from_hub(f"the datasets of {', '.join(tasks)}", LOCAL_TASKS):
                res = lm_eval.simple_evaluate(
                    model="hf",
                    model_args=args,
                    tasks=list(tasks),
                    task_manager=manager,
                    limit=limit,
                    batch_size=batch,
                    device=device,
                    log_samples=log_samples,
                    **SEEDS,
                )
        samples = res.get("samples") if log_samples else None
        out.append(RunScores(run, _scores(res["results"]), samples))
    return out


def column_name(task: str, metric: str) -> str:
    """The sweep column of a task metric: "TASK_METRIC" lower-cased, other characters than letters, digits
    and _ as _ (arc_easy, acc -> arc_easy_acc; a filter's name follows the metric's)."""
    return re.sub(r"[^a-z0-9_]", "_", f"{task}_{metric}".lower())


def measured_columns(scores: Sequence[RunScores]) -> list[dict[str, Any]]:
    """One record per run: its size, variant and seed and each task metric's value under `column_name`,
    what `rr_core.sweepfile.merge.join_columns` joins onto a sweep file.

    Raises InputError when a column's name cannot be a sweep file's extra column (too long, say).
    """
    from rr_core.sweepfile.schema import EXTRA_NAME  # pandas: not before an offline refusal

    records = []
    for s in scores:
        values = {column_name(r["task"], r["metric"]): r["value"] for r in s.scores}
        if bad := [c for c in values if not EXTRA_NAME.fullmatch(c)]:
            raise InputError(
                f"the column(s) {', '.join(bad)} cannot be a sweep file's: a name must match "
                f"{EXTRA_NAME.pattern} (at most 40 characters); join fewer or shorter-named tasks"
            )
        records.append({k: s.run[k] for k in ("size", "variant", "seed")} | values)
    return records

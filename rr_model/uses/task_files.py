"""Which hub dataset an lm-evaluation-harness task loads, read from the task's own YAML file.

lm-eval learns what a task needs by indexing every task file it ships (about 14,000 YAML files: 10-20 s on
two cores), and only then asks for the task's dataset. Offline, that is a long wait for a refusal rr can
make at once: `task_datasets` reads the one file that defines a task (``task: NAME`` at its top level, in
an --include-path folder first, since lm-eval lets those override its own, else among lm-eval's packaged
tasks), follows its ``include:`` files as lm-eval merges them (the including file's keys win), and names the
hub dataset it loads. Reading every file's bytes to find that one takes a fraction of a second.

Whatever one file cannot settle is left to lm-eval, so nothing lm-eval could run is refused: a group or a
tag (their tasks are found by the index), a task defined in Python or by a custom loader, a name defined in
several files or given as a pattern, a dataset that is local or named without its owner.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["TaskDataset", "task_datasets"]

_SKIPPED = {"__pycache__", ".ipynb_checkpoints"}  # folders lm-eval's index does not read either
_INCLUDES = 16  # include chains deeper than this (or circular) are left to lm-eval


class TaskDataset(NamedTuple):
    """A task, the hub dataset it loads ("owner/name") and the YAML file that defines it."""

    task: str
    dataset: str
    file: Path


def _definitions(tasks: set[str], root: Path) -> dict[str, list[Path]]:
    """For each of `tasks`, the YAML files under `root` whose top level says ``task: <task>`` (key and name
    quoted or not), every file read once."""
    lines = {
        t: re.compile(
            rb"^([\"']?)task\1[ \t]*:[ \t]*([\"']?)" + re.escape(t.encode()) + rb"\2[ \t]*(#.*)?$", re.M
        )
        for t in tasks
    }
    found: dict[str, list[Path]] = {}
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [s for s in subfolders if s not in _SKIPPED]
        for name in files:
            if name.endswith(".yaml"):
                path = Path(folder, name)
                try:
                    text = path.read_bytes()
                except OSError:
                    continue
                for task, line in lines.items():
                    if task.encode() in text and line.search(text):
                        found.setdefault(task, []).append(path)
    return found


def _config(path: Path, depth: int = 0) -> dict[str, Any]:
    """The task config of `path` with its ``include:`` files merged under it, as lm-eval merges them. A
    ``!function`` (or any other tag) reads as its text: rr only looks at the dataset's keys."""
    import yaml  # lm-eval's own dependency: this module serves --tasks only

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, tag, node: str(tag))
    try:
        config = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)  # noqa: S506 (a safe loader)
    except yaml.YAMLError as e:
        raise ValueError(f"{path}: {e}") from e
    if not isinstance(config, dict):
        raise ValueError(f"{path}: not a mapping")
    includes = config.pop("include", None)
    if includes is None:
        return config
    if depth >= _INCLUDES:
        raise ValueError(f"{path}: includes nested deeper than {_INCLUDES}")
    merged: dict[str, Any] = {}
    for include in includes if isinstance(includes, list) else [includes]:
        merged |= _config(path.parent / include, depth + 1)  # an absolute include replaces the folder
    return merged | config


def _hub_dataset(config: dict[str, Any], task: str) -> str | None:
    """The hub dataset ("owner/name") a plain task config loads, or None when it is not one (a group, a
    Python task, a custom loader, a local or owner-less dataset, a cache folder of its own)."""
    if any(k in config for k in ("class", "group", "custom_dataset")) or config.get("task") != task:
        return None
    path, kwargs = config.get("dataset_path"), config.get("dataset_kwargs") or {}
    if not isinstance(path, str) or not isinstance(kwargs, dict) or "cache_dir" in kwargs:
        return None
    owner, _, name = path.partition("/")
    if not (owner and name) or "/" in name or owner.startswith(("~", ".")) or os.path.exists(path):
        return None
    return path


def _read(task: str, path: Path) -> TaskDataset | None:
    """The hub dataset of `task` as the file `path` defines it, or None (see `_hub_dataset`)."""
    try:
        dataset = _hub_dataset(_config(path), task)
    except (OSError, ValueError):  # unreadable, not YAML, an include missing: lm-eval will say
        return None
    return TaskDataset(task, dataset, path) if dataset else None


def task_datasets(tasks: Sequence[str], roots: Sequence[Path]) -> list[TaskDataset]:
    """The hub datasets of those `tasks` that the one YAML file defining each settles; the others are left
    to lm-eval's index.

    Parameters
    ----------
    tasks
        lm-eval task names, as given to --tasks.
    roots
        The folders of task files, in lm-eval's order of precedence: an --include-path folder, then
        lm-eval's packaged tasks. The first that defines a task is the one read.

    Returns
    -------
    One `TaskDataset` per task settled, in the order of `tasks`. Not settled: a group, a tag, a pattern, a
    name defined in several files of one folder, and whatever `_hub_dataset` leaves to lm-eval.
    """
    unsettled = {t for t in tasks if t and not any(c in t for c in "*?[]")}
    settled: dict[str, TaskDataset] = {}
    for root in roots:
        if not unsettled:
            break
        for task, paths in _definitions(unsettled, root).items():
            unsettled.discard(task)
            if len(paths) == 1 and (found := _read(task, paths[0])) is not None:
                settled[task] = found
    return [settled[t] for t in dict.fromkeys(tasks) if t in settled]

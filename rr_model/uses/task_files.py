"""Which hub datasets an lm-evaluation-harness task, group or tag loads, read from its own YAML files.

lm-eval learns what a task needs by indexing every task file it ships (about 14,000 YAML files: 10-20 s on
two cores), and only then asks for the task's dataset. Offline, that is a long wait for a refusal rr can
make at once: `task_datasets` reads the file that defines a name (``task: NAME`` or ``group: NAME`` at its
top level, in an --include-path folder first, since lm-eval lets those override its own, else among
lm-eval's packaged tasks), follows its ``include:`` files as lm-eval merges them (the including file's keys
win), and names the hub dataset a task loads; a group's listed members and a tag's tasks (those whose
config names the tag) are read the same way. Reading every file's bytes once takes a fraction of a second.

What the files cannot settle is left out, and with it nothing lm-eval could run is refused: a task defined
in Python or by a custom loader, a name defined in several files or given as a pattern, a group member given
as a mapping, a tag set only in an included template, a dataset that is local or named without its owner.
Every task a group or tag holds is loaded by lm-eval, so one whose dataset is missing stops the whole name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["TaskDataset", "task_datasets"]

_SKIPPED = {"__pycache__", ".ipynb_checkpoints"}  # folders lm-eval's index does not read either
_DEPTH = 16  # include chains or group nesting deeper than this (or circular) are left to lm-eval


class TaskDataset(NamedTuple):
    """A task, the hub dataset it loads ("owner/name"), the YAML file that defines it, and the name asked
    for that holds it (the task itself, or a group or tag)."""

    task: str
    dataset: str
    file: Path
    asked: str


# A top-level ``task: NAME`` or ``group: NAME`` line, key and name quoted or not (lm-eval's generated files
# quote both); a name of a list (``task:`` followed by items) is no match.
_TOP = re.compile(rb"^([\"']?)(task|group)\1[ \t]*:[ \t]*([\"']?)([^\s\"'#]+)\3[ \t]*(?:#.*)?$", re.M)


class _Root(NamedTuple):
    """One folder's YAML files, read once: their bytes, and which define each (key, name)."""

    texts: list[tuple[Path, bytes]]
    defining: dict[tuple[str, str], list[Path]]


def _read_all(roots: Sequence[Path]) -> list[_Root]:
    """Every YAML file under each root (the folders lm-eval's index skips aside), in order of precedence."""
    found = []
    for root in roots:
        texts, defining = [], {}
        for folder, subfolders, names in os.walk(root):
            subfolders[:] = [s for s in subfolders if s not in _SKIPPED]
            for name in names:
                if name.endswith(".yaml"):
                    path = Path(folder, name)
                    try:
                        text = path.read_bytes()
                    except OSError:
                        continue
                    texts.append((path, text))
                    for m in _TOP.finditer(text):
                        key = (m[2].decode(), m[4].decode(errors="replace"))
                        defining.setdefault(key, []).append(path)
        found.append(_Root(texts, defining))
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
    if depth >= _DEPTH:
        raise ValueError(f"{path}: includes nested deeper than {_DEPTH}")
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


def _resolve(name: str, files: list[_Root], depth: int = 0) -> list[tuple[str, str, Path]]:
    """(task, hub dataset, file) of each task `name` runs that the files settle: `name` itself, a group's
    members or a tag's tasks, followed down to tasks (see the module's notes for what is left out)."""
    if depth > _DEPTH or not name or any(c in name for c in "*?[]"):
        return []
    for root in files:  # the first folder that defines the name is the one lm-eval keeps
        tasks, groups = root.defining.get(("task", name), []), root.defining.get(("group", name), [])
        if not tasks and not groups:
            continue
        if len(tasks) + len(groups) != 1:
            return []
        try:
            config = _config((tasks or groups)[0])
        except (OSError, ValueError):  # unreadable, not YAML, an include missing: lm-eval will say
            return []
        if tasks:
            dataset = _hub_dataset(config, name)
            return [(name, dataset, tasks[0])] if dataset else []
        if "class" in config:
            return []
        members = config.get("task")
        members = [members] if isinstance(members, str) else members if isinstance(members, list) else []
        return [t for m in members if isinstance(m, str) for t in _resolve(m, files, depth + 1)]
    found = []  # no task or group of that name: a tag, whose tasks name it in their config
    for root in files:
        for path, text in root.texts:
            if name.encode() not in text or b"tag" not in text:
                continue
            try:
                config = _config(path)
            except (OSError, ValueError):
                continue
            tags = config.get("tag")
            member = config.get("task")
            if name in ([tags] if isinstance(tags, str) else tags or []) and isinstance(member, str):
                # the member as lm-eval resolves its name (a duplicate elsewhere may win)
                found += [t for t in _resolve(member, files, depth + 1) if t[2] == path]
    return found


def task_datasets(tasks: Sequence[str], roots: Sequence[Path]) -> list[TaskDataset]:
    """The hub datasets of `tasks` (task, group or tag names) that their YAML files settle; what they leave
    unsettled is left to lm-eval's index.

    Parameters
    ----------
    tasks
        lm-eval task, group or tag names, as given to --tasks.
    roots
        The folders of task files, in lm-eval's order of precedence: an --include-path folder, then
        lm-eval's packaged tasks. The first that defines a name is the one read.

    Returns
    -------
    One `TaskDataset` per task settled, each task once per name asked, in the order of `tasks`.
    """
    files = _read_all(roots)
    return [
        TaskDataset(task, dataset, path, asked)
        for asked in dict.fromkeys(tasks)
        for task, dataset, path in dict.fromkeys(_resolve(asked, files))
    ]

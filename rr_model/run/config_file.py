"""A training command's run config file (`--config FILE`): a TOML table of the command's options, read and
checked against them (`read_run_config`), and the options a command ran with, written back as TOML
(`config_text`) for its dry run and each run's provenance record.

A command describes its options as `Key`s (the option each key sets, the TOML type it takes, its own checks),
so the rules and their words live here once for every training command. Standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rr_core.errors import InputError, did_you_mean, nearest

__all__ = ["Key", "read_run_config", "config_text"]

# The TOML values an option takes, by its kind, and their name in an error.
_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "flag": ((bool,), "true or false"),
    "list": ((str,), "a string or a list of strings"),
    "int": ((int,), "an integer"),
    "number": ((int, float), "a number"),
    "str": ((str,), "a string"),
}


@dataclass(frozen=True)
class Key:
    """An option a run config file may set, under its long name with dashes as underscores (``checkpoint_every``).

    `name` is the parameter it sets; `kind` the TOML values it takes (flag: true or false; list: a string or a
    list of strings; int; number; str); `hidden` an old spelling, valid but not listed; `check` the option's
    own checks (its range, its choices): the refusal's words for a value, or None.
    """

    name: str
    kind: Literal["flag", "list", "int", "number", "str"]
    hidden: bool = False
    check: Callable[[object], str | None] = lambda value: None


def _value(path: Path, key: str, how: Key, value: object) -> object:
    """`value` for `how` as the file holds it, refused unless its type is the option's and the option takes it."""
    types, kind = _TYPES[how.kind]
    items = value if how.kind == "list" and isinstance(value, list) else [value]
    for item in items:
        if not isinstance(item, types) or (isinstance(item, bool) and bool not in types):
            raise InputError(
                f"{path}: key {key!r} must be {kind} (as --{key.replace('_', '-')} takes), not {item!r}"
            )
    value = items if how.kind == "list" else value
    if (problem := how.check(value)) is not None:
        raise InputError(f"{path}: key {key!r}: {problem}")
    return value


def read_run_config(path: Path, keys: Mapping[str, Key], command: str) -> dict[str, object]:
    """The options the run config file `path` sets for `command`, by the name each `Key` sets.

    Raises InputError for a file that cannot be read or is not TOML, an unknown key (naming the nearest valid
    one and every valid one), and a value of the wrong type or one the option refuses.
    """
    from rr_core.files.reading import read_toml

    try:
        table = read_toml(path, f"--config {path}")
    except OSError as e:
        raise InputError(f"--config {path}: {e.strerror or e}") from None
    found = {}
    for key, value in table.items():
        how = keys.get(key.replace("-", "_"))
        if how is None:
            valid = sorted(k for k, h in keys.items() if not h.hidden)
            hint = did_you_mean(nearest(key.replace("-", "_"), valid))
            raise InputError(
                f"{path}: unknown key {key!r} for rr {command}{hint}; valid keys: {', '.join(valid)}"
            )
        found[how.name] = _value(path, key, how, value)
    return found


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(getattr(value, "value", value)))  # a TOML basic string; an Enum by its value


def config_text(command: str, path: Path, settings: Iterable[tuple[str, object]]) -> str:
    """The options a command runs with (`settings`: each option's long name and value, None where unset),
    as TOML under a line naming the command and its file: flag over file over default.

    Example
    -------
    >>> print(config_text("train", Path("run.toml"), [("size", "tiny"), ("checkpoint-every", None)]), end="")
    # rr train: the effective options (--config run.toml, overridden by flags)
    size = "tiny"
    # checkpoint-every is unset (its default)
    """
    lines = [f"# rr {command}: the effective options (--config {path}, overridden by flags)"]
    for key, value in settings:
        lines.append(f"# {key} is unset (its default)" if value is None else f"{key} = {_toml(value)}")
    return "\n".join(lines) + "\n"

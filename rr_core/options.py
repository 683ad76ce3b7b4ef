"""Command-line options declared as dataclass fields: the one way rr states an option.

A field that a command line sets carries ``metadata=option("Help text.", ...)``: its type (choices as a
``Literal``), its default and this `Option` (help, the commands that offer it, a lower bound, its flag, an
old flag that still works, a second spelling, a help panel, a metavar) are all there is to say about it.
`declared` lists a dataclass's declared fields for one command; the command line (`cli.fields`) turns them
into options, and the dataclass checks its values against the same declarations (`Declared.problem`), so a
command line, a run config file and a notebook refuse the same values with the same words.

The dataclasses that declare their options so: `rr_model.config.TrainConfig` (the training run),
`rr_model.sweep.launch.Launch` (where a sweep's runs train), `rr_model.sweep.local.Sweep` and
`rr_model.sweep.tuning_runs.Tuning` (what `rr sweep` and `rr tune` train), `rr_analysis.comparison.Comparison`
(what an analysis compares), `rr_analysis.views.view_options.ViewOptions` (what the views read) and one per
command of a finished model (`rr_model.uses`: `Scoring`, `GateReading`, `Sampling`, `DepthCheck`). A new
documented field of one of them is a new option of every command that takes it, with no line of the command
line's code.

Standard library only: the command line reads these declarations at start-up.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, fields
from types import UnionType
from typing import Any, Literal, NamedTuple, Union, get_args, get_origin, get_type_hints

__all__ = ["Option", "option", "Declared", "declared", "choices", "read_as", "item_type"]


@dataclass(frozen=True)
class Option:
    """How a command line sets a dataclass field (`option` makes one; see the module docstring)."""

    help: str  # the option's help text; its default and choices are the field's
    commands: tuple[str, ...] | None = (
        None  # the commands that offer it; None: every one that takes its class
    )
    min: float | None = None  # the smallest value allowed (a number field)
    flag: str | None = None  # its flag; None: --field-name
    renamed: tuple[str, str] | None = None  # (an old flag that still works, with a note; why it went)
    spelling: str | None = None  # a second flag, not listed, that sets it too (--sizes beside --size)
    comma: bool = False  # a tuple field given as one comma-separated list (--branch-at 100,200) too
    panel: str | None = None  # the help panel it is listed in; None: the command's choice
    metavar: str | None = None  # what its help shows for the value; None: its type
    items: str = "names separated by commas"  # a comma-separated field's items, as its refusal asks for them


def option(help: str, **how: Any) -> dict[str, Option]:
    """The metadata of a field that command lines set: ``field(metadata=option("Help."))``; `how` holds
    `Option`'s other fields (commands, min, flag, renamed, spelling, comma, panel, metavar, items)."""
    return {"option": Option(help, **how)}


def choices(kind: Any) -> tuple[tuple[Any, ...], bool]:
    """The values a field of type `kind` may take where it is (an optional, or a tuple of) a Literal, and
    whether it holds several; ((), False) for a type without choices.

    Example
    -------
    >>> choices(Literal["a", "b"] | None), choices(tuple[Literal["x"], ...]), choices(int)
    ((('a', 'b'), False), (('x',), True), ((), False))
    """
    many = get_origin(kind) is tuple
    args = [a for a in get_args(kind) if a is not type(None) and a is not Ellipsis]
    if get_origin(kind) is Literal:
        return get_args(kind), False
    literal = [a for a in args if get_origin(a) is Literal]
    return (get_args(literal[0]), many) if literal else ((), False)


def read_as(kind: Any) -> Any:
    """The type a command line reads a field of type `kind` (without choices) as: a tuple, or one item or a
    tuple of them, a list (a repeatable option); any other union with str a text, which the dataclass's own
    function reads, as it reads an item that may be text; an optional stays optional.

    Example
    -------
    >>> read_as(str | tuple[str, ...]), read_as(str | tuple[float, ...] | None), read_as(tuple[int | str, ...])
    (list[str], str | None, list[str])
    """
    if get_origin(kind) not in (Union, UnionType):
        return list[read_as(get_args(kind)[0])] if get_origin(kind) is tuple else kind
    members = [a for a in get_args(kind) if a is not type(None)]
    tuples = [a for a in members if get_origin(a) is tuple]
    item = get_args(tuples[0])[0] if tuples else None
    if tuples and set(members) <= {tuples[0], item, *get_args(item)}:  # one item, or a tuple of them
        return list[read_as(item)]
    if len(members) == 1 or str not in members:
        return kind
    return str | None if type(None) in get_args(kind) else str


def item_type(kind: Any) -> type:
    """The item type of a tuple field (an optional one too): tuple[int, ...] -> int."""
    (inner,) = [a for a in get_args(kind) if a is not type(None)] if get_origin(kind) is not tuple else [kind]
    return get_args(inner)[0]


class Declared(NamedTuple):
    """A field that command lines set: its name, type, default (`dataclasses.MISSING`: a required option)
    and `Option`."""

    name: str
    type: Any
    default: Any
    option: Option

    @property
    def flag(self) -> str:
        """The option's flag: `Option.flag`, or --field-name."""
        return self.option.flag or "--" + self.name.replace("_", "-")

    def problem(self, value: Any) -> str | None:
        """Why `value` may not stand in this field (its choices, its bound), or None."""
        if isinstance(value, float) and not math.isfinite(value):  # a number a command line or file spelt inf
            return "must be a finite number"
        allowed, many = choices(self.type)
        if allowed and many and not set(value) <= set(allowed):
            return f"must name only {', '.join(allowed[:-1])} and {allowed[-1]}"
        if allowed and not many and value is not None and value not in allowed:
            return f"must be one of {', '.join(allowed)}"
        if self.option.min is not None and value is not None and value < self.option.min:
            return f"must be >= {self.option.min}"
        return None


@functools.cache
def declared(cls: type, command: str | None = None) -> tuple[Declared, ...]:
    """The fields of dataclass `cls` that `command` offers as options (None: every command's), in field
    order: those whose metadata holds an `Option` whose commands name `command` (or are None: all)."""
    hints = get_type_hints(cls)
    found = []
    for f in fields(cls):
        how = f.metadata.get("option")
        if how is None or (command is not None and how.commands is not None and command not in how.commands):
            continue
        found.append(Declared(f.name, hints[f.name], f.default, how))
    return tuple(found)

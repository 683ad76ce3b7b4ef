"""The one way a command gets options from a documented dataclass: `dataclass_options`.

A dataclass declares its options as fields (`rr_core.options`: type, default and ``option(...)`` metadata);
``@dataclass_options(Cls, "command", into="name")`` replaces the command function's parameter `name` with
one typer option per declared field, and hands the function the value they make (a `Cls`, or with
``build=dict`` the fields given). So `TrainConfig`'s training options, `Launch`'s launcher options and
`Comparison`'s options reach every command that takes them from their declarations alone: a new documented
field is a new option of each such command, with no line here or in the command.

Standard library, typer and the declarations (torch-free, numpy-free) at import, so `rr --help` stays light.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING
from enum import Enum
from typing import Any, TypeVar, get_args, get_origin

import typer

from cli.errors import fail
from rr_core.options import Declared, choices, declared, item_type, read_as

F = TypeVar("F", bound=Callable[..., Any])
_CONTEXT = "_rr_context"  # the parameter typer hands a command's context in (`dataclass_options`)


def cli_type(declared: Declared) -> Any:
    """The type typer parses `declared`'s field as: a Literal's values become a str Enum (typer's choices,
    shown as <a|b|c>), a comma-separated field a list of texts, and otherwise `rr_core.options.read_as` its type."""
    kind = declared.type
    if declared.option.comma:  # each given as a comma-separated list, or repeated: parsed by `comma_items`
        return list[str]
    allowed, many = choices(kind)
    if allowed:
        chosen = Enum(declared.name, [(v, v) for v in allowed], type=str)
        return list[chosen] if many else chosen | None if type(None) in get_args(kind) else chosen
    return read_as(kind)


def _plain(value: Any) -> Any:
    """A parsed option's value as the dataclass takes it: an Enum's value, a list as a tuple."""
    if isinstance(value, list | tuple):
        return tuple(_plain(v) for v in value)
    return value.value if isinstance(value, Enum) else value


def as_option(declared: Declared, panel: str | None = None) -> Any:
    """`declared`'s field as a typer option in the help panel `panel`: its flag, default, help, bound and
    metavar from the field."""
    how, required = declared.option, declared.default is MISSING  # a field without a default: required
    default = ... if required else None if declared.default == () else declared.default  # (): none given
    return typer.Option(
        default,
        declared.flag,
        help=how.help,
        min=how.min,
        metavar=how.metavar,
        show_default=not required and declared.default is not None,  # None: the help says what it means
        rich_help_panel=panel,
    )


def renamed(new: str, old: str, why: str, panel: str | None = None) -> Any:
    """A hidden option `old` that still sets what `new` sets, saying so in one line on stderr when given."""

    def note(ctx: typer.Context, value: object) -> object:
        if value not in (None, ()) and not ctx.resilient_parsing:
            typer.echo(
                f"rr: warning: {old} is deprecated on rr {ctx.command.name}: use {new} ({why})", err=True
            )
        return value

    return typer.Option(None, old, hidden=True, callback=note, rich_help_panel=panel)


def either(new: str, old: str, new_value: Any, old_value: Any, new_given: bool) -> Any:
    """The value of an option given by its flag `new` or its old flag `old` (`renamed`), not both."""
    if old_value in (None, []):
        return new_value
    if new_given:
        raise fail(f"{new} and {old} name the same thing: give {new} only")
    return old_value


def comma_items(ctx: typer.Context, declared: Declared, given: Iterable[str] | None) -> tuple:
    """A comma-separated field's items (given as one list, or repeated, or both), each of the field's item
    type; () when not given. An empty name between commas is refused; so is an item the type cannot read."""
    given, kind, flag = list(given or ()), item_type(declared.type), declared.flag
    if kind is str and (empty := [t for t in given if not all(i.strip() for i in t.split(","))]):
        raise typer.BadParameter(
            f"{empty[0]!r} has an empty name; give {declared.option.items}", ctx=ctx, param_hint=f"'{flag}'"
        )
    texts = [t.strip() for text in given for t in text.split(",") if t.strip()]
    try:
        return tuple(kind(t) for t in texts)
    except ValueError:
        raise fail(
            f"{flag} {','.join(given)!r}: expected comma-separated {kind.__name__}s, e.g. 100,200"
        ) from None


def _other_name(declared: Declared, flag: str) -> str:
    """The parameter of `declared`'s option's other flag `flag` (its old one, its second spelling)."""
    return f"{declared.name}_as_{flag.removeprefix('--').replace('-', '_')}"


def _parameters(declared: Declared, panel: str | None) -> list[inspect.Parameter]:
    """The keyword parameters of a command function that make `declared`'s option (and its old flag, its
    second spelling)."""
    kind, where, how = cli_type(declared), declared.option.panel or panel, declared.option
    made = {declared.name: as_option(declared, where)}
    if how.renamed:
        made[_other_name(declared, how.renamed[0])] = renamed(declared.flag, *how.renamed, where)
    if how.spelling:
        made[_other_name(declared, how.spelling)] = spelling(
            declared.name, how.spelling, get_origin(kind) is list
        )
    return [
        inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d, annotation=kind)
        for n, d in made.items()
    ]


def _value(ctx: typer.Context, declared: Declared, parsed: dict) -> Any:
    """The field's value from the parsed options `parsed` (which it pops): its old flag counted as its new
    one, its second spelling's values joined to its own (`spelled`), a comma-separated list split, Enums as
    their values, an empty repeatable option as ()."""
    value = parsed.pop(declared.name)
    if declared.option.renamed:
        old = parsed.pop(_other_name(declared, declared.option.renamed[0]))
        on_line = ctx.get_parameter_source(declared.name).name == "COMMANDLINE"
        value = either(declared.flag, declared.option.renamed[0], value, old, on_line)
    if declared.option.spelling:  # its value came through `spelling`'s callback
        parsed.pop(_other_name(declared, declared.option.spelling), None)
        value = spelled(ctx, declared.name, value)
    if declared.option.comma and value is not None:
        value = comma_items(ctx, declared, value)
    if value is None and (get_origin(declared.type) is tuple or declared.default == ()):
        value = ()
    return _plain(value)


def dataclass_options(
    cls: type,
    command: str | None = None,
    *,
    into: str,
    panel: str | None = None,
    exclude: tuple[str, ...] = (),
    build: Callable[..., Any] | None = None,
    place: Mapping[str, str] | None = None,
) -> Callable[[F], F]:
    """Give a command function the options `cls` declares for `command` (`rr_core.options.declared`), in
    place of its parameter `into`, in the help panel `panel` unless a field names its own.

    typer calls the returned function with every option's value; it calls the command function with the
    other parameters as given and `into` set to ``build(**fields)`` (default `cls`): the fields the options
    set, their defaults the dataclass's. `exclude` names fields this command does not offer; `place` lists
    an option of the command's own among them, after a field's ({parameter: field}), as `rr sweep --effect`
    follows --seed.
    """
    made = [d for d in declared(cls, command) if d.name not in exclude]
    make, place = build or cls, place or {}

    def add(func: F) -> F:
        signature = inspect.signature(func)
        params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in signature.parameters.values()]
        own = [p for p in params if p.name not in place]
        placed = {p.name: p for p in params if p.name in place}
        at = [p.name for p in own].index(into)
        new = [  # each field's option, then those of the command's own that `place` lists after it
            p
            for d in made
            for p in [*_parameters(d, panel), *(placed[n] for n in place if place[n] == d.name)]
        ]

        # typer hands the context to one parameter: the function's own (`ctx: typer.Context`) or one added
        named = [p.name for p in own if p.annotation in (typer.Context, "typer.Context")]
        keeps = bool(named)
        context = named[0] if keeps else _CONTEXT

        @functools.wraps(func)
        def command_function(*args: Any, **options: Any) -> Any:
            ctx = options[context] if keeps else options.pop(context)
            options[into] = make(**{d.name: _value(ctx, d, options) for d in made})
            return func(*args, **options)

        added = [inspect.Parameter(_CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)]
        command_function.__signature__ = signature.replace(
            parameters=[*own[:at], *new, *own[at + 1 :], *([] if keeps else added)]
        )
        command_function.__annotations__ = {k: v for k, v in func.__annotations__.items() if k != into}
        return command_function

    return add


def spelling(name: str, alias: str, multiple: bool = False) -> Any:
    """A hidden second spelling `alias` of the option whose parameter is `name` (``--sizes`` beside
    ``--size``): what it is given becomes that option's value, unless the option is given too (then
    `spelled` joins them). Help shows the option only."""

    def feed(ctx: typer.Context, value: Any) -> None:
        if value not in (None, ()) and not ctx.resilient_parsing:
            value = list(value) if multiple else value
            ctx.meta[f"rr.{name}"] = (alias, value)
            ctx.default_map = {**(ctx.default_map or {}), name: value}  # read before any file's (eager)
        return None

    return typer.Option(None, alias, hidden=True, callback=feed, is_eager=True, expose_value=False)


def spelled(ctx: typer.Context, name: str, value: Any) -> Any:
    """The value of the option `name` under both its spellings (`spelling`): a repeatable option's values
    under either, split at commas (None when none is given); a single option given under both is refused."""
    alias, other = ctx.meta.get(f"rr.{name}", (None, None))
    if alias is not None and ctx.get_parameter_source(name).name == "COMMANDLINE":
        if not isinstance(value, list):
            flag = next(o for p in ctx.command.params if p.name == name for o in p.opts)
            raise fail(f"{flag} and {alias} name the same thing: give {flag} only")
        value = [*value, *other]
    if not isinstance(value, list):
        return value
    return [item.strip() for text in value for item in text.split(",") if item.strip()] or None


def field_option(cls: type, name: str, panel: str | None = None) -> Any:
    """`cls`'s declared field `name` as one typer option (`as_option`), for a command that offers it on its
    own, such as `rr sizes --precision`."""
    (found,) = (d for d in declared(cls) if d.name == name)
    return as_option(found, panel)


def field_help(cls: type, name: str) -> str:
    """The help text of `cls`'s declared field `name`."""
    (found,) = (d for d in declared(cls) if d.name == name)
    return found.option.help


def field_type(cls: type, name: str) -> Any:
    """The type typer parses `cls`'s declared field `name` as (`cli_type`), beside `field_option`, so the
    option takes the same values wherever it is offered."""
    (found,) = (d for d in declared(cls) if d.name == name)
    return cli_type(found)

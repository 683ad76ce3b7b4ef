"""The training commands' run config file option, `--config FILE`: the file's options become the command's
defaults, read and checked against the command's own options by `rr_model.run.config_file` (which holds the
rules and their words), and the options a command ran with are written back as TOML for its dry run and
each run's provenance record.

Standard library and typer at import, as every command module; the library loads inside the calls.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import typer

from cli.errors import fail


def _option_keys(command) -> dict:
    """The keys a run config file may hold for `command`: each option's long name, dashes as underscores."""
    keys = {}
    for p in command.params:
        if p.param_type_name == "option" and p.name != "config":
            for opt in p.opts:
                if opt.startswith("--"):
                    keys[opt[2:].replace("-", "_")] = p
    return keys


def _kind(param) -> str:
    """The TOML values an option takes (`rr_model.run.config_file.Key.kind`)."""
    annotation = param.type_descriptor.annotation
    if param.is_flag:
        return "flag"
    if param.multiple:
        return "list"
    return {int: "int", float: "number"}.get(annotation, "str")


def _check(param, ctx: typer.Context) -> Callable[[object], str | None]:
    """The option's own checks (its range, its choices) of a value a run config file gives it."""

    def check(value: object) -> str | None:
        try:
            param.process_value(ctx, value)
        except typer.BadParameter as e:
            return e.message
        return None

    return check


def read_config(ctx: typer.Context, path: Path | None) -> Path | None:
    """`--config FILE`'s callback: the file's options (`rr_model.run.config_file.read_run_config`) become the
    command's defaults (`ctx.default_map`), so a flag given on the command line overrides them and the file
    overrides rr's defaults. Runs first (eager); a bad file is one `rr: error:`."""
    from rr_core.errors import InputError
    from rr_model.run.config_file import Key, read_run_config

    if path is None or ctx.resilient_parsing:
        return path
    keys = {k: Key(p.name, _kind(p), p.hidden, _check(p, ctx)) for k, p in _option_keys(ctx.command).items()}
    try:
        found = read_run_config(path, keys, ctx.command.name)
    except InputError as e:
        raise fail(str(e)) from None
    ctx.default_map = {**found, **(ctx.default_map or {})}  # a spelling given (`cli.fields.spelling`) wins
    return path


CONFIG = typer.Option(
    None,
    "--config",
    is_eager=True,
    callback=read_config,
    help='A TOML file of this command\'s options (keys: the option names, e.g. size = "tiny", '
    'checkpoint-every = 4, variant = ["standard"]); flags given here override it. --dry-run prints the '
    "effective options, and each run's provenance record keeps them.",
    show_default=False,
)


def effective_config(ctx: typer.Context) -> str | None:
    """The options the command runs with, as TOML (`rr_model.run.config_file.config_text`: flag over file over
    default), when they came from `--config` (None otherwise): what each run's provenance record keeps,
    printed here under --dry-run."""
    from rr_model.run.config_file import config_text

    path = ctx.params.get("config")
    if path is None:
        return None
    names: dict[str, str] = {}
    for key, param in _option_keys(ctx.command).items():
        if not param.hidden:  # an old flag (`renamed`) is shown as its new one
            names.setdefault(param.name, key.replace("_", "-"))  # one line per option, by its first long name
    names.pop("dry_run", None)  # an action, not a setting
    text = config_text(ctx.command.name, path, [(key, ctx.params[name]) for name, key in names.items()])
    if ctx.params.get("dry_run"):
        typer.echo(text)
    return text


def with_config(ctx: typer.Context, run: dict) -> dict:
    """The TrainConfig fields a command's training options give (`run`), and its effective `--config`."""
    return {**run, "run_config": effective_config(ctx)} if "config" in ctx.params else run

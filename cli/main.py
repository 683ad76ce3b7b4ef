"""Entry point of the `rr` command. Each command lives in its own module and registers itself here.

Command modules import only typer, the standard library and the training options' declarations
(`rr_model.config`, torch-free and stdlib-only) at top level, so `rr --help` stays fast; library
imports happen inside the command functions. The console script goes one step further: a
command line that names one of rr's commands builds the app with that command only (its module
imported, its options made), ~25 ms less for every command than importing and building all of them;
`rr --help`, a mistyped command and `from cli.main import app` get every command.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

import typer

from cli.errors import run
from cli.heap import skip_exit_collection
from cli.help import CASE_INSENSITIVE, RrGroup

# each command's name -> the cli module that registers it, in the order they are registered (`rr --help`
# lists them so, the `plot` group after the commands)
COMMANDS: dict[str, str] = {
    "validate": "validate",
    "sizes": "sizes",
    "depth-check": "depth",
    "gates": "gates",
    "plot": "plot",
    "analyze": "analyze",
    "train": "train",
    "reproduce": "reproduce",
    "sample": "sample",
    "eval": "evaluate",
    "export": "export",
    "sweep": "sweep",
    "tune": "tune",
    "merge": "merge",
    "report": "report",
}
HELP = ("-h", "--help")


def _root(
    version: bool = typer.Option(False, "--version", help="Print the rr version and exit.", is_eager=True),
) -> None:
    if version:
        from importlib.metadata import version as dist_version

        typer.echo(f"rr {dist_version('rr-toolkit')}")
        raise typer.Exit()


def build(names: Sequence[str] | None = None) -> typer.Typer:
    """The `rr` app with the commands `names` (keys of COMMANDS; None: all of them)."""
    app = typer.Typer(
        name="rr",
        cls=RrGroup,
        help="Review Residuals toolkit: the published sweep, its statistics, the reference model and trainer.",
        no_args_is_help=True,
        invoke_without_command=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode="markdown",
        context_settings={"help_option_names": list(HELP), **CASE_INSENSITIVE},
    )
    app.callback()(_root)
    for name in COMMANDS if names is None else names:
        importlib.import_module(f"cli.{COMMANDS[name]}").register(app)
    return app


def asked(args: Sequence[str]) -> list[str] | None:
    """The command a command line names, as a one-item list, when it is one of rr's; None otherwise.

    The root takes only flags (--version, --help), so the first argument that is not one names the
    command; it is matched without case, as the app matches it (`CASE_INSENSITIVE`). A help flag before
    it asks for the root's help, which lists every command.
    """
    for arg in args:
        if arg in HELP:
            return None
        if not arg.startswith("-"):
            name = CASE_INSENSITIVE["token_normalize_func"](arg)
            return [name] if name in COMMANDS else None
    return None


def __getattr__(name: str) -> typer.Typer:
    # `from cli.main import app` (tests, notebooks, CliRunner): the whole app, built once on first use
    if name == "app":
        globals()["app"] = app = build()
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """The `rr` console script: the app for the command asked (`asked`), then an exit that skips the
    shutdown collection (`cli.heap`)."""
    try:
        run(build(asked(sys.argv[1:])))
    finally:
        skip_exit_collection()


if __name__ == "__main__":
    main()

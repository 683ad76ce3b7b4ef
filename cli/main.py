"""Entry point of the `rr` command. Each command lives in its own module and registers itself here.

Command modules import only typer and the standard library at top level, so `rr --help` stays fast;
library imports happen inside the command functions.
"""

from __future__ import annotations

import typer

from cli import (
    analyze,
    depth,
    evaluate,
    export,
    gates,
    merge,
    plot,
    report,
    reproduce,
    sample,
    sizes,
    sweep,
    train,
    validate,
)
from cli.errors import run
from cli.heap import skip_exit_collection
from cli.help import CASE_INSENSITIVE, RrGroup

app = typer.Typer(
    name="rr",
    cls=RrGroup,
    help="Review Residuals toolkit: the published sweep, its statistics, the reference model and trainer.",
    no_args_is_help=True,
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"], **CASE_INSENSITIVE},
)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", help="Print the rr version and exit.", is_eager=True),
) -> None:
    if version:
        from importlib.metadata import version as dist_version

        typer.echo(f"rr {dist_version('rr-toolkit')}")
        raise typer.Exit()


for module in (
    validate,
    sizes,
    depth,
    gates,
    plot,
    analyze,
    train,
    reproduce,
    sample,
    evaluate,
    export,
    sweep,
    merge,
    report,
):
    module.register(app)


def main() -> None:
    """The `rr` console script: the app, then an exit that skips the shutdown collection (`cli.heap`)."""
    try:
        run(app)
    finally:
        skip_exit_collection()


if __name__ == "__main__":
    main()

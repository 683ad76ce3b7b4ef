"""How the CLI turns known library errors into one clear paragraph and an exit code."""

from __future__ import annotations

import contextlib
import sys

import typer

USAGE_OR_DATA = 2  # bad input: a file, an option value


def fail(message: str, code: int = USAGE_OR_DATA) -> typer.Exit:
    """Print `message` to stderr as `rr: error: ...` and return the Exit to raise."""
    typer.echo(f"rr: error: {message}", err=True)
    return typer.Exit(code)


@contextlib.contextmanager
def known_errors():
    """Map the library's input errors to exit 2 with their message, never a traceback."""
    from rr_analysis.dataset import DataError

    try:
        yield
    except DataError as e:
        raise fail(str(e)) from None
    except (KeyError, ValueError, FileNotFoundError, IsADirectoryError, PermissionError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        raise fail(str(msg)) from None
    except KeyboardInterrupt:
        typer.echo("rr: interrupted", err=True)
        sys.exit(130)

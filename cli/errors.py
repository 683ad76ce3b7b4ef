"""How the CLI turns rr's own errors into one clear paragraph and an exit code.

Only `rr_model.errors.RRError` (bad input, by rr's own judgement) and OSErrors about paths become
`rr: error:` and exit 2. Anything else is a bug in rr and keeps its traceback, so it gets reported.
"""

from __future__ import annotations

import contextlib
import sys

import typer

from rr_model.errors import RRError

USAGE_OR_DATA = 2  # bad input: a file, an option value


def fail(message: str, code: int = USAGE_OR_DATA) -> typer.Exit:
    """Print `message` to stderr as `rr: error: ...` and return the Exit to raise."""
    typer.echo(f"rr: error: {message}", err=True)
    return typer.Exit(code)


def _os_message(e: OSError) -> str:
    where = f"{e.filename}: " if e.filename else ""
    return f"{where}{e.strerror or e}"


@contextlib.contextmanager
def known_errors():
    """Map rr's own errors and path OSErrors to exit 2 with their message; let bugs show a traceback."""
    try:
        yield
    except RRError as e:
        raise fail(str(e)) from None
    except OSError as e:
        raise fail(_os_message(e)) from None
    except KeyboardInterrupt:
        typer.echo("rr: interrupted", err=True)
        sys.exit(130)

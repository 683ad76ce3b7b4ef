"""How the CLI turns rr's own errors into one clear paragraph and an exit code.

Only `rr_core.errors.RRError` (bad input, by rr's own judgement) and OSErrors about paths become
`rr: error:` and exit 2. Anything else is a bug in rr and keeps its traceback, so it gets reported.
"""

from __future__ import annotations

import contextlib
import re
import sys
from pathlib import Path

import typer

from rr_core.errors import Interrupted, InterruptSaid, RRError, StoppedElsewhere, notes_said

USAGE_OR_DATA = 2  # bad input: a file, an option value


def fail(message: str, code: int = USAGE_OR_DATA) -> typer.Exit:
    """Print `message` to stderr as `rr: error: ...` and return the Exit to raise."""
    typer.echo(f"rr: error: {message}", err=True)
    return typer.Exit(code)


def _os_message(e: OSError) -> str:
    """`path: reason`; for a folder that refused a file (`filename2`, `rr_core.files`), which file it was."""
    where = f"{e.filename}: " if e.filename else ""
    meant = f" (the folder of {Path(e.filename2).name}, which cannot be written there)" if e.filename2 else ""
    return f"{where}{e.strerror or e}{meant}"


def requirement_name(requirement: str) -> str:
    """The normalised distribution name a requirement starts with ('Import_Linter>=2.0' -> import-linter)."""
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def missing_extra(module: str | None) -> str | None:
    """The extra of rr-toolkit that declares `module`'s distribution (torch -> "train"), from the installed
    metadata, so pyproject.toml stays the one list; None when no extra declares it (then it is a bug)."""
    from importlib.metadata import PackageNotFoundError, requires

    top = requirement_name((module or "").partition(".")[0])
    try:
        declared = requires("rr-toolkit") or []
    except PackageNotFoundError:
        return None
    for requirement in declared:
        extra = re.search(r'extra\s*==\s*"([^"]+)"', requirement)
        if extra and requirement_name(requirement) == top:
            return extra.group(1)
    return None


def run(app: typer.Typer) -> None:
    """Run `app`; a module that only an extra installs, missing, is one sentence saying which to install."""
    try:
        app()
    except ModuleNotFoundError as e:
        extra = missing_extra(e.name)
        if extra is None:
            raise
        typer.echo(
            f"rr: error: this command needs {e.name.partition('.')[0]}, which comes with rr's '{extra}' "
            f"extra: pip install 'rr-toolkit[{extra}]' (from a checkout: pip install -e '.[{extra}]')",
            err=True,
        )
        sys.exit(USAGE_OR_DATA)


@contextlib.contextmanager
def known_errors():
    """Map rr's own errors and path OSErrors to exit 2 with their message; let bugs show a traceback. What
    rr set aside while reading (a torn line skipped) is said as ``rr: note:`` lines (`notes_said`)."""
    try:
        with notes_said():
            yield
    except StoppedElsewhere:
        raise typer.Exit(USAGE_OR_DATA) from None  # the process that failed said why, in one line
    except Interrupted as e:  # what was kept and how to go on
        typer.echo(f"rr: {e}", err=True)
        sys.exit(130)
    except RRError as e:
        raise fail(str(e)) from None
    except OSError as e:
        raise fail(_os_message(e)) from None
    except KeyboardInterrupt as e:
        if not isinstance(e, InterruptSaid):  # a sweep's child said it, with what it keeps
            typer.echo("rr: interrupted", err=True)
        sys.exit(130)

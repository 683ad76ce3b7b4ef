"""Loading `--data` for a command that computes results: validate it, and warn once if its published rows
were altered (the results would not be the published ones)."""

from __future__ import annotations

from pathlib import Path

import typer


def load_checked(data: Path | None, warn: bool = True):
    """`rr_model.results.dataset.load_sweep(data)`, with `rr: warning:` on stderr naming altered published rows
    (unless `warn` is False: a reproduction file's rows differ from the published ones on purpose)."""
    from rr_model.results.dataset import load_sweep
    from rr_model.results.integrity import integrity_warning

    df = load_sweep(data)
    if warn and (warning := integrity_warning(df)) is not None:
        typer.echo(f"rr: warning: {warning}", err=True)
    return df

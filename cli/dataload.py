"""Loading `--data` for a command that computes results: validate it, warn once if its published rows
were altered (the results would not be the published ones), and load the plugins when it holds variants
rr does not know, so theirs are labelled and coloured as registered."""

from __future__ import annotations

from pathlib import Path

import typer


def load_checked(data: Path | None, warn: bool = True):
    """`rr_core.sweepfile.dataset.load_sweep(data)`, with `rr: warning:` on stderr naming altered published rows
    (unless `warn` is False: a reproduction file's rows differ from the published ones on purpose)."""
    from rr_core.files.reading import same_file
    from rr_core.plugins import load_plugins
    from rr_core.sweepfile.dataset import bundled_path, load_sweep
    from rr_core.sweepfile.integrity import integrity_warning
    from rr_core.variants import VARIANTS

    df = load_sweep(data)
    if not set(df["variant"].unique()) <= set(VARIANTS):
        load_plugins()  # RR_PLUGINS and rr.residuals entry points: torch only for data that needs them
    # the bundled file itself has just passed its pinned digest (load_sweep): its rows are the published
    # ones, so it is not read and validated a second time to be compared with itself
    published = data is None or same_file(data, bundled_path())
    if warn and not published and (warning := integrity_warning(df)) is not None:
        typer.echo(f"rr: warning: {warning}", err=True)
    return df

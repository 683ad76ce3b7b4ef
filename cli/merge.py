"""`rr merge`: join sweep files (per-job results files, sweeps from several machines) into one new file."""

from __future__ import annotations

from pathlib import Path

import typer

from cli.errors import known_errors


def merge(
    paths: list[Path] = typer.Argument(..., help="Sweep files to merge, in order.", show_default=False),
    out: Path = typer.Option(..., "--out", help="The new merged file; must not exist.", show_default=False),
) -> None:
    """Merge sweep files into a new one, with their provenance sidecars (`X.runs.jsonl`).

    Every input is validated; a run found in several inputs is kept once when its rows are identical and
    refused when they differ; the merged rows are validated together. Never overwrites: `--out` and its
    sidecar must not exist. Exit 2 on a bad input, with nothing written.
    """
    from rr_core.sweepfile.merge import merge_sweeps

    with known_errors():
        done = merge_sweeps(paths, out)
    sidecar = f", {done['records']} provenance record(s) in its sidecar" if done["records"] else ""
    typer.echo(
        f"rr merge: {done['rows']} row(s) from {len(paths)} file(s) into {out} "
        f"({done['copies']} identical copies kept once){sidecar}"
    )


def register(app: typer.Typer) -> None:
    app.command()(merge)

"""`rr validate`: check sweep files against the schema and the published rows."""

from __future__ import annotations

from pathlib import Path

import typer

from cli.errors import fail, known_errors


def validate(
    paths: list[Path] = typer.Argument(
        None,
        help="Sweep CSV files to check. Default: the published dataset bundled with rr.",
        show_default=False,
    ),
) -> None:
    """Validate sweep CSVs: schema, types, duplicates, and whether the published rows are intact.

    Where a run sidecar (`NAME.runs.jsonl`, written by `rr train`) sits beside a file, its rows are joined to
    their run records and any row that disagrees with its record, or was added without one, is listed.

    Exit 0 when every file is valid, 2 when any is not (all problems are listed). A file that holds published
    rows but has changed or lost some of them is not valid: rows may be added, never altered.
    """
    from rr_core.sweepfile.dataset import bundled_path

    failed = False
    for path in paths or [bundled_path()]:
        try:
            failed |= not _check(path)
        except typer.Exit:  # known_errors printed the error
            failed = True
    if failed:
        raise fail("validation failed", 2) if len(paths or []) > 1 else typer.Exit(2)


def _check(path: Path) -> bool:
    """Print what `rr validate` says of one file; whether it is valid. rr's own errors exit via known_errors."""
    from rr_analysis.stats.summary import describe
    from rr_core.sweepfile.dataset import load_sweep
    from rr_core.sweepfile.integrity import check_integrity
    from rr_core.sweepfile.provenance import join, sidecar_path, summarize_join

    with known_errors():
        df = load_sweep(path)
        integrity = check_integrity(df)
        joined = join(df, sidecar_path(path)) if sidecar_path(path).exists() else None
    typer.echo(f"{path}: {'ALTERED' if integrity.altered else 'OK'}: {describe(df)}; {integrity.summary()}")
    for line in integrity.details():
        typer.echo(f"  {line}")
    if joined is not None:
        for line in summarize_join(joined, integrity.present):
            typer.echo(f"  {line}")
    return not integrity.altered


def register(app: typer.Typer) -> None:
    app.command()(validate)

"""Rendering a list of records for the terminal: an aligned table (text) or a JSON list (json)."""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import Enum

import typer


class Format(str, Enum):
    text = "text"
    json = "json"


def echo_records(
    records: list[dict],
    fmt: Format,
    title: str = "",
    formats: dict[str, Callable[[object], str]] | None = None,
) -> None:
    """Print records as JSON, or as a rich table: numbers right-aligned, `formats` maps column -> str."""
    if fmt is Format.json:
        typer.echo(json.dumps(records, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    formats = formats or {}
    table = Table(title=title or None, title_justify="left")
    for column in records[0] if records else []:
        numeric = isinstance(records[0][column], (int, float))
        table.add_column(column, justify="right" if numeric else "left")
    for record in records:
        table.add_row(*(formats.get(k, str)(v) for k, v in record.items()))
    # Never truncate a cell: a table takes only the width it needs, so a console wider than any terminal
    # prints it whole (80 columns when piped would wrap it) without measuring it twice.
    Console(width=10_000).print(table)

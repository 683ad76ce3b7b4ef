"""Rendering a list of records for the terminal in any `cli.choices.Format`: aligned text, markdown,
LaTeX, CSV or JSON, drawn by `rr_analysis.tables.grid` like the analysis tables. Standard library only, so the
commands that print records stay light.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Collection

import typer

from cli.choices import Format
from rr_analysis.tables.grid import (
    csv_text,
    latex_escape,
    latex_lines,
    markdown_lines,
    text_lines,
    wrap_columns,
)

__all__ = ["Format", "FORMAT_HELP", "echo_records"]

FORMAT_HELP = "text: an aligned table; markdown, latex: a table to paste; csv, json: the raw values."


def echo_records(
    records: list[dict],
    fmt: Format,
    title: str = "",
    formats: dict[str, Callable[[object], str]] | None = None,
    wrap: Collection[str] = ("note",),
) -> None:
    """Print records in `fmt`; `formats` maps column -> str for the human formats (text, markdown, LaTeX).

    JSON and CSV carry the raw values (machine formats); the others show each value through `formats`,
    numbers right-aligned, and the title above the table (a caption in LaTeX). In text, the prose columns
    named in `wrap` wrap to the terminal's width (`rr_analysis.tables.grid.wrap_columns`); nothing else wraps.
    """
    columns = list(records[0]) if records else []
    if fmt is Format.json:
        typer.echo(json.dumps(records, indent=2))
        return
    if fmt is Format.csv:
        typer.echo(csv_text(columns, records), nl=False)
        return
    cells = [[(formats or {}).get(k, str)(r[k]) for k in columns] for r in records]
    numeric = [isinstance(records[0][k], (int, float)) for k in columns] if records else []
    if fmt is Format.text:
        width = shutil.get_terminal_size().columns
        cells = wrap_columns(columns, cells, [k in wrap for k in columns], width)
        lines = [*([title] if title else []), *text_lines(columns, cells, numeric)]
    elif fmt is Format.markdown:
        lines = [*([f"**{title}**", ""] if title else []), *markdown_lines(columns, cells, numeric)]
    else:
        caption = [r"\caption{" + latex_escape(title) + "}"] if title else []
        lines = [r"\begin{table}", *caption, *latex_lines(columns, cells, numeric), r"\end{table}"]
    typer.echo("\n".join(lines))

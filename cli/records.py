"""Rendering a list of records for the terminal in any `cli.choices.Format`: aligned text, markdown,
LaTeX, CSV or JSON. Standard library only, so the commands that print records stay light.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable

import typer

from cli.choices import Format

__all__ = ["Format", "FORMAT_HELP", "echo_records"]

FORMAT_HELP = "text: an aligned table; markdown, latex: a table to paste; csv, json: the raw values."

_LATEX_SPECIAL = {c: "\\" + c for c in "&%$#_{}"} | {
    "~": r"\textasciitilde{}",
    "^": r"\^{}",
    "\\": r"\textbackslash{}",
}


def echo_records(
    records: list[dict],
    fmt: Format,
    title: str = "",
    formats: dict[str, Callable[[object], str]] | None = None,
) -> None:
    """Print records in `fmt`; `formats` maps column -> str for the human formats (text, markdown, LaTeX).

    JSON and CSV carry the raw values (machine formats); the others show each value through `formats`,
    numbers right-aligned, and the title above the table (a caption in LaTeX).
    """
    columns = list(records[0]) if records else []
    if fmt is Format.json:
        typer.echo(json.dumps(records, indent=2))
        return
    if fmt is Format.csv:
        out = io.StringIO()
        writer = csv.DictWriter(out, columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(records)
        typer.echo(out.getvalue(), nl=False)
        return
    cells = [[(formats or {}).get(k, str)(r[k]) for k in columns] for r in records]
    numeric = [isinstance(records[0][k], (int, float)) for k in columns] if records else []
    render = {Format.text: _text, Format.markdown: _markdown, Format.latex: _latex}[fmt]
    typer.echo(render(title, columns, cells, numeric))


def _text(title: str, columns: list[str], cells: list[list[str]], numeric: list[bool]) -> str:
    # Plain aligned text: it pipes and greps cleanly, and costs nothing to draw.
    widths = [max(len(row[i]) for row in [columns, *cells]) for i in range(len(columns))]

    def line(row: list[str]) -> str:
        pads = (c.rjust(w) if n else c.ljust(w) for c, w, n in zip(row, widths, numeric, strict=True))
        return "  ".join(pads).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([*([title] if title else []), line(columns), rule, *map(line, cells)])


def _markdown(title: str, columns: list[str], cells: list[list[str]], numeric: list[bool]) -> str:
    def row(values: list[str]) -> str:
        return "| " + " | ".join(v.replace("|", "\\|") for v in values) + " |"

    rule = "|" + "|".join("---:" if n else "---" for n in numeric) + "|"
    return "\n".join([*([f"**{title}**", ""] if title else []), row(columns), rule, *map(row, cells)])


def _latex(title: str, columns: list[str], cells: list[list[str]], numeric: list[bool]) -> str:
    def row(values: list[str]) -> str:
        return " & ".join("".join(_LATEX_SPECIAL.get(c, c) for c in v) for v in values) + r" \\"

    spec = "".join("r" if n else "l" for n in numeric)
    caption = [r"\caption{" + "".join(_LATEX_SPECIAL.get(c, c) for c in title) + "}"] if title else []
    body = [r"\begin{tabular}{" + spec + "}", r"\toprule", row(columns), r"\midrule", *map(row, cells)]
    return "\n".join([r"\begin{table}", *caption, *body, r"\bottomrule", r"\end{tabular}", r"\end{table}"])

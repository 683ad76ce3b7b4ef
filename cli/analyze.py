"""`rr analyze`: the statistics of a sweep, rendered as a table in one of several formats."""

from __future__ import annotations

from pathlib import Path

import typer

from cli.errors import fail, known_errors
from rr_model.errors import InputError


def analyze(
    table: bool = typer.Option(
        False,
        "--table",
        help="Review vs each baseline per size: Welch, paired, mixed model (the default view).",
    ),  # fmt: skip
    emergence: bool = typer.Option(False, "--emergence", help="Does Review's advantage grow with size?"),
    power: bool = typer.Option(
        False, "--power", help="Seeds needed for 80% power; smallest gap detectable now."
    ),
    notes: bool = typer.Option(False, "--notes", help="Recipe notes: confounds and gaps in the design."),
    card: bool = typer.Option(
        False, "--card", help="Rewrite the generated headline table of the dataset card."
    ),
    data: Path = typer.Option(
        None,
        "--data",
        help="Sweep CSV to analyse. Default: the published dataset bundled with rr.",
        show_default=False,
    ),
    fmt: str = typer.Option("text", "--format", help="Output format: text, markdown, latex, csv or json."),
    card_file: Path = typer.Option(
        Path("data/README.md"), "--card-file", help="The dataset card --card rewrites."
    ),
) -> None:
    """Statistics of a sweep: gap = mean(baseline) - mean(review_neutral), positive favours Review.

    Exit 0 on success, 2 for a bad --data file or option.
    """
    chosen = [name for name, on in (("table", table), ("emergence", emergence), ("power", power),
                                    ("notes", notes), ("card", card)) if on]  # fmt: skip
    if len(chosen) > 1:
        raise fail(f"choose one view, not {' and '.join('--' + c for c in chosen)}")
    view = chosen[0] if chosen else "table"
    with known_errors():
        from rr_analysis.tables import FORMATS
        from rr_model.dataset import load_sweep

        if fmt not in FORMATS:
            raise InputError(f"unknown --format {fmt!r}; choose one of {', '.join(FORMATS)}")

        df = load_sweep(data)
        if view == "card":
            _write_card(card_file, df)
            return
        typer.echo(_compute(view, df, fmt), nl=False)


def _compute(view: str, df, fmt: str) -> str:
    from rr_analysis.tables import render

    if view == "table":
        from rr_analysis.stats import gap_table as fn
    elif view == "emergence":
        from rr_analysis.emergence import emergence as fn
    elif view == "power":
        from rr_analysis.power import power_table as fn
    else:
        from rr_analysis.notes import recipe_notes as fn
    return render(fn(df), view, fmt)


def _write_card(path: Path, df) -> None:
    from rr_analysis.stats import gap_table
    from rr_analysis.tables import update_card

    if not path.is_file():
        raise InputError(f"{path}: no such dataset card (set --card-file)")
    text = path.read_text(encoding="utf-8")
    new = update_card(text, gap_table(df))
    if new != text:
        path.write_text(new, encoding="utf-8")
    typer.echo(f"{path}: headline table {'updated' if new != text else 'already up to date'}")


def register(app: typer.Typer) -> None:
    app.command()(analyze)

"""`rr report`: the whole analysis of a sweep as one Markdown file with its figures beside it."""

from __future__ import annotations

from pathlib import Path

import typer

from cli.errors import known_errors
from cli.fields import dataclass_options
from rr_analysis.comparison import Comparison


@dataclass_options(Comparison, into="comparison")
def report(
    data: Path | None = typer.Option(
        None,
        "--data",
        help="Sweep CSV to report on. Default: the published dataset bundled with rr.",
        show_default=False,
    ),
    out: Path = typer.Option(
        Path("rr-report"),
        "--out",
        "-o",
        help="Folder for report.md and its PNG figures: built beside it, then swapped in whole (created if "
        "missing; a folder holding other files is refused). A path ending in .md is the report file itself, "
        "its figures in a folder of NAME_files beside it, published with it in one step.",
    ),
    dpi: int = typer.Option(120, "--dpi", min=1, help="Resolution of the PNG figures."),
    comparison: Comparison = Comparison(),
) -> None:
    """Write the table, the emergence result, the recipe notes, the power table and every figure.

    The report is OUT/report.md (or OUT itself, for a .md path); its figures are PNG files in the same folder
    (or in a folder of OUT's NAME_files folder), linked relatively. A reader of OUT sees the old report or the new one
    whole, and only files rr wrote there are ever replaced. Prints the report's path. Exit 2 for a bad --data file
    or a folder that cannot be written; a warning on stderr if --data has altered published rows.
    --reference, --baselines, --metric and --higher-is-better report on any other comparison, --sizes on
    some sizes only.
    """
    import matplotlib

    matplotlib.use("Agg")  # headless, whatever the environment says; rr draws files only

    from cli.dataload import load_checked
    from rr_analysis.report import write_report
    from rr_core.sweepfile.dataset import bundled_path

    with known_errors():
        source = str(data or bundled_path())
        path = write_report(load_checked(data), out, source=source, dpi=dpi, comparison=comparison)
    typer.echo(str(path))


def register(app: typer.Typer) -> None:
    app.command()(report)

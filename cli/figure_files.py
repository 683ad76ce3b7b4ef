"""Writing a figure file, shared by `rr plot`'s commands: the options every figure takes (--data, --dpi,
--title, --out), and a sweep's figure, the figure of metrics logs or a gate anatomy drawn by one library
call and written to a file, its path printed (`write`, `write_logs`, `write_anatomy`).

Standard library and typer at import, as every command module; matplotlib and the library load inside the calls.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from cli.errors import fail, known_errors

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from rr_analysis.figures.output import Written

DATA = typer.Option(
    None,
    "--data",
    help="Sweep CSV to plot. Default: the published dataset bundled with rr.",
    show_default=False,
)
DPI = typer.Option(150, "--dpi", min=1, help="Resolution of PNG output (and of raster parts of PDF/SVG).")
TITLE = typer.Option(None, "--title", help="Figure title. Default: a title naming what is drawn.")


def out_option(default: str) -> typer.Option:
    return typer.Option(
        Path(default),
        "--out",
        "-o",
        help="File to write; .png, .pdf or .svg picks the format. An existing file is replaced (stderr says so).",
    )


def write(data: Path | None, out: Path, dpi: int, draw: Callable[[pd.DataFrame], Figure]) -> None:
    """Draw the figure of the sweep `data` (`draw(df)`: one `rr_analysis.figures` call) to `out`, its path
    printed, and on stderr where it is and whether it replaced a file."""
    from cli.dataload import load_checked

    written = _write(out, dpi, lambda: load_checked(data), draw)
    what = "replacing the file that was there" if written.replaced else "a new file"
    typer.echo(f"rr plot: wrote {written.path.name} in {written.path.resolve().parent} ({what})", err=True)


RUNS = typer.Argument(
    None, help="Metrics folders (OUT.metrics/) or logs (.jsonl) of runs; or use --data.", show_default=False
)
RUNS_DATA = typer.Option(
    None,
    "--data",
    help="Dataset CSV whose runs to draw (their logs are found through its sidecar in OUT.metrics/).",
    show_default=False,
)


# The options of `rr plot curves` and `rr plot gates`.
HALF_LIFE = typer.Option(
    None,
    "--half-life",
    min=0.0,
    metavar="STEPS",
    help="Smooth the loss by step distance: a reading's weight halves every STEPS steps (0: raw). "
    "Default: a share of each run's logged steps, so that few readings are drawn as they are "
    "(docs/training.md).",
    show_default=False,
)

SMOOTH = typer.Option(
    None,
    "--smooth",
    min=0.0,
    max=0.99,
    help="Deprecated: the old per-reading weight of the moving average, read as the half-life that "
    "gives the same curve on evenly logged runs; use --half-life.",
    show_default=False,
)

GAP = typer.Option(
    False,
    "--gap",
    help="Draw the seed-paired gap (baseline - reference) at every logged step with its 95% CI band, as "
    "rr analyze curves computes it, instead of each run's loss; needs --data.",
)

TUNING_LADDER = typer.Option(
    None, "--ladder", help="The ladder file whose recipe lr is its sizes' shared rate (default: rr's)."
)

CHECKPOINT = typer.Option(
    None,
    "--checkpoint",
    help="Instead: the gate anatomy of one run's weights (RUN.final.pt, a checkpoint, or a folder of one "
    "run) by layer, on held-out windows of its corpus (rr gates --anatomy).",
    show_default=False,
)


def write_logs(runs: list[Path] | None, data: Path | None, out: Path, dpi: int, draw: Callable) -> None:
    """Draw the figure of the metrics logs of `runs` and of the sweep `data` (`draw(sources, sweep)`: one
    `rr_analysis.figures` call, `sweep` reading `data` for the footnote) to `out`, its path printed. Exit 2
    when no source is given."""
    from cli.dataload import load_checked

    sources = [*(runs or []), *([data] if data else [])]
    if not sources:
        raise fail("give --data FILE.csv or at least one metrics folder or log (OUT.metrics/)")
    sweep = (lambda: load_checked(data)) if data else None  # read for the footnote once the logs are drawn
    _write(out, dpi, lambda: sources, lambda read: draw(read, sweep))


def write_anatomy(
    checkpoint: Path, corpus: str | None, windows: int, out: Path, dpi: int, title: str | None
) -> None:
    """Read the gate anatomy of `checkpoint` (`rr_model.uses.anatomy.anatomy`), draw it by layer
    (`anatomy_plot`) to `out`, its path printed."""
    from rr_analysis.figures.gate_layers import anatomy_plot
    from rr_model.uses.anatomy import anatomy

    read = partial(anatomy, checkpoint, corpus=corpus, windows=windows)
    _write(out, dpi, read, partial(anatomy_plot, title=title))


def _write(out: Path, dpi: int, read: Callable, draw: Callable[..., Figure]) -> Written:
    """Check `out`, read (`read()`), draw (`draw(read())`) and write the figure (`write_figure`), print the
    path; what was written. Exit 2 on known errors."""
    import matplotlib

    matplotlib.use("Agg")  # headless, whatever the environment says; rr draws files only

    from cli.heap import frozen_heap
    from rr_analysis.figures.output import check_writable, write_figure

    with known_errors():
        check_writable(out)  # before reading or drawing: a bad --out fails at once
        what = read()  # before the heap is frozen: what reading built is left out of full collections
        with frozen_heap():
            written = write_figure(draw(what), out, dpi=dpi)
    typer.echo(str(written.path))
    return written

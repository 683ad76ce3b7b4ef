"""Writing a figure file, shared by `rr plot`'s commands: the options every figure takes (--data, --dpi,
--title, --out), and drawing a sweep's figure, the figure of metrics logs or a gate anatomy to a file, its
path printed (`write`, `write_logs`, `write_anatomy`, `write_gap`).

Standard library and typer at import, as every command module; matplotlib and the library load inside the calls.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import typer

from cli.errors import fail, known_errors

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


def write(data: Path | None, out: Path, dpi: int, draw: Callable, asked=None) -> None:
    """Check `out`, load the data, draw and write the figure with its provenance footnote (`with_provenance`:
    the cells of the comparison `asked` whose runs differ from the published ones), print the path (and on
    stderr where it is and whether it replaced a file). Exit 2 on known errors."""
    import matplotlib

    matplotlib.use("Agg")  # headless, whatever the environment says; rr draws files only

    from cli.dataload import load_checked
    from cli.heap import frozen_heap
    from rr_analysis.figures.output import check_writable, save_figure, with_provenance

    with known_errors():
        replaced = check_writable(out).exists()  # before loading or drawing: a bad --out fails at once
        df = load_checked(data)
        with frozen_heap():
            path = save_figure(with_provenance(draw(df), df, asked), out, dpi=dpi)
    typer.echo(str(path))
    what = "replacing the file that was there" if replaced else "a new file"
    typer.echo(f"rr plot: wrote {path.name} in {path.resolve().parent} ({what})", err=True)


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


def write_logs(
    runs: list[Path] | None, data: Path | None, out: Path, dpi: int, draw: Callable, asked=None
) -> None:
    """Check `out`, draw the figure of the metrics logs of `runs` and of the sweep `data` (`draw(sources)`),
    with `data`'s provenance footnote (`with_provenance`: the cells of the comparison `asked` whose runs differ
    from the published ones), write it, print the path. Exit 2 on known errors, or when no source is given."""
    sources = [*(runs or []), *([data] if data else [])]
    import matplotlib

    matplotlib.use("Agg")

    from cli.dataload import load_checked
    from cli.heap import frozen_heap
    from rr_analysis.figures.output import check_writable, save_figure, with_provenance

    if not sources:
        raise fail("give --data FILE.csv or at least one metrics folder or log (OUT.metrics/)")
    with known_errors():
        check_writable(out)
        with frozen_heap():
            drawn = draw(sources)
            path = save_figure(
                with_provenance(drawn, load_checked(data), asked) if data else drawn, out, dpi=dpi
            )
    typer.echo(str(path))


def write_anatomy(
    checkpoint: Path, corpus: str | None, windows: int, out: Path, dpi: int, title: str | None
) -> None:
    """Read the gate anatomy of `checkpoint`, draw it by layer, write it to `out`, print the path."""
    import matplotlib

    matplotlib.use("Agg")

    from cli.heap import frozen_heap
    from rr_analysis.figures.gate_layers import anatomy_figure
    from rr_analysis.figures.output import check_writable, save_figure
    from rr_model.uses.anatomy import anatomy

    with known_errors():
        check_writable(out)
        found = anatomy(checkpoint, corpus=corpus, windows=windows)
        default = f"Gate anatomy by layer: {found.path.name}, {windows} held-out windows of {found.corpus}"
        with frozen_heap():
            path = save_figure(anatomy_figure(found.table, title=title or default), out, dpi=dpi)
    typer.echo(str(path))


def write_gap(
    runs: list[Path] | None, data: Path | None, out: Path, dpi: int, title: str | None, asked
) -> None:
    """`rr plot curves --gap`: the sweep's gap over training (`training_gap` of its rows and their logs), of
    the comparison `asked`."""
    if runs or data is None:
        raise fail("--gap pairs the runs of a sweep: give --data FILE.csv (their logs are read beside it)")

    def draw(df):
        from rr_analysis.figures.gap_curves import gap_figure
        from rr_analysis.stats.training_gap import training_gap
        from rr_core.sweepfile.metrics_log import load_losses

        return gap_figure(training_gap(df, load_losses([data]), asked), title=title)

    write(data, out, dpi, draw, asked)

"""`rr plot ...`: the paper's Figure 2 and the views it lacks, written to PNG, PDF or SVG."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import typer

from cli import options
from cli.choices import Adjust, Stat
from cli.errors import fail, known_errors
from cli.fields import dataclass_options
from cli.help import CASE_INSENSITIVE
from rr_analysis.comparison import Comparison

plot_app = typer.Typer(
    help="Draw a figure of a sweep to a file; the format follows the suffix (.png, .pdf, .svg).",
    no_args_is_help=True,
    context_settings=CASE_INSENSITIVE,
)


DATA = typer.Option(
    None,
    "--data",
    help="Sweep CSV to plot. Default: the published dataset bundled with rr.",
    show_default=False,
)
DPI = typer.Option(150, "--dpi", min=1, help="Resolution of PNG output (and of raster parts of PDF/SVG).")
TITLE = typer.Option(None, "--title", help="Figure title. Default: a title naming what is drawn.")


def _out(default: str) -> typer.Option:
    return typer.Option(
        Path(default),
        "--out",
        "-o",
        help="File to write; .png, .pdf or .svg picks the format. An existing file is replaced (stderr says so).",
    )


def _write(data: Path | None, out: Path, dpi: int, draw: Callable) -> None:
    """Check `out`, load the data, draw and write the figure, print the path (and on stderr where it is and
    whether it replaced a file). Exit 2 on known errors."""
    import matplotlib

    matplotlib.use("Agg")  # headless, whatever the environment says; rr draws files only

    from cli.dataload import load_checked
    from cli.heap import frozen_heap
    from rr_analysis.figures.output import check_writable, save_figure

    with known_errors():
        replaced = check_writable(out).exists()  # before loading or drawing: a bad --out fails at once
        df = load_checked(data)
        with frozen_heap():
            path = save_figure(draw(df), out, dpi=dpi)
    typer.echo(str(path))
    what = "replacing the file that was there" if replaced else "a new file"
    typer.echo(f"rr plot: wrote {path.name} in {path.resolve().parent} ({what})", err=True)


@plot_app.command()
@dataclass_options(Comparison, into="asked")
def emergence(
    data: Path | None = DATA,
    out: Path = _out("emergence.png"),
    stat: Stat = typer.Option(
        Stat.paired,
        "--stat",
        help="Whose estimate, error bars and stars: paired (seed-matched, the primary), mixed or welch "
        "(the paper's).",
    ),
    adjust: Adjust = typer.Option(
        Adjust.holm, "--adjust", help="Multiple-testing adjustment of the p-values behind the stars."
    ),
    ci: bool = typer.Option(False, "--ci", help="Draw 95% confidence intervals instead of +-1 SE."),
    fit: bool = typer.Option(
        True, "--fit/--no-fit", help="Draw the primary size-level model's fitted line and its 95% CI band."
    ),
    dpi: int = DPI,
    title: str | None = TITLE,
    asked: Comparison = Comparison(),
) -> None:
    """The paper's Figure 2: Review's advantage (baseline loss - Review loss) against parameters.

    One line per baseline with +-1 SE bars (or 95% CIs with --ci), a dashed zero line and a star where the
    chosen test's adjusted p < 0.05 (the subtitle names test, adjustment and family), and the primary
    size-level meta-regression's fitted line with its 95% CI band (--no-fit leaves it out). The default is
    the primary analysis, the paired test with Holm's adjustment; `--stat welch --adjust none --no-fit`
    draws the paper's figure. --reference, --baselines and --metric draw any other
    comparison.
    """

    def draw(df):
        from rr_analysis.figures.gaps import emergence_plot

        how = {"stat": stat.value, "adjust": adjust.value, "ci": ci, "fit": fit, "title": title}
        return emergence_plot(df, **how, comparison=asked)

    _write(data, out, dpi, draw)


@plot_app.command()
@dataclass_options(Comparison, into="asked")
def forecast(
    at: list[str] = typer.Option(
        ..., "--at", help="A size to forecast, a ladder name or a count such as 3B; repeat for more."
    ),
    data: Path | None = DATA,
    out: Path = _out("forecast.png"),
    dpi: int = DPI,
    title: str | None = TITLE,
    asked: Comparison = Comparison(),
) -> None:
    """The primary size-level line carried past the sweep: observed paired gaps, the line with its 95% CI
    and PI bands, and each forecast size's gap with its 95% CI and PI; shaded past the largest size."""

    def draw(df):
        from rr_analysis.figures.gaps import forecast_figure
        from rr_analysis.stats.forecast import forecast as predict
        from rr_analysis.stats.forecast import meta_line
        from rr_analysis.stats.gap_tests import gap_table

        table, line = gap_table(df, comparison=asked), meta_line(df, at, comparison=asked)
        return forecast_figure(table, line, predict(df, at, comparison=asked), title=title)

    _write(data, out, dpi, draw)


@plot_app.command()
@dataclass_options(Comparison, into="asked")
def scaling(
    data: Path | None = DATA,
    out: Path = _out("scaling.png"),
    dpi: int = DPI,
    title: str | None = TITLE,
    asked: Comparison = Comparison(),
) -> None:
    """Validation loss (or --metric) against parameters per variant: every seed a point, the mean a line, log x.

    Every variant by default; --baselines limits the variants drawn beside the reference.
    """
    from rr_analysis.figures.raw import scaling_figure

    _write(data, out, dpi, lambda df: scaling_figure(df, title=title, comparison=asked))


@plot_app.command()
@dataclass_options(Comparison, into="asked")
def seeds(
    data: Path | None = DATA,
    out: Path = _out("seeds.png"),
    dpi: int = DPI,
    title: str | None = TITLE,
    asked: Comparison = Comparison(),
) -> None:
    """A facet per size: every run, each variant's mean with its 95% t interval, a line per seed.

    Every variant by default; --baselines limits the variants drawn beside the reference.
    """
    from rr_analysis.figures.raw import seeds_figure

    _write(data, out, dpi, lambda df: seeds_figure(df, title=title, comparison=asked))


@plot_app.command()
@dataclass_options(Comparison, into="asked", exclude=("metric", "higher_is_better"))
def calibration(
    data: Path | None = DATA,
    out: Path = _out("calibration.png"),
    dpi: int = DPI,
    title: str | None = TITLE,
    asked: Comparison = Comparison(),
) -> None:
    """Expected calibration error by size and variant, where ECE was measured (the metric is ECE).

    Every variant by default; --baselines limits the variants drawn beside the reference.
    """
    from rr_analysis.figures.raw import calibration_figure

    _write(data, out, dpi, lambda df: calibration_figure(df, title=title, comparison=asked))


RUNS = typer.Argument(
    None, help="Metrics folders (OUT.metrics/) or logs (.jsonl) of runs; or use --data.", show_default=False
)
RUNS_DATA = typer.Option(
    None,
    "--data",
    help="Dataset CSV whose runs to draw (their logs are found through its sidecar in OUT.metrics/).",
    show_default=False,
)


def _write_logs(sources: list[Path], out: Path, dpi: int, draw: Callable) -> None:
    """Check `out`, draw the figure of the metrics logs `sources` name (`draw(sources)`), write it, print the
    path. Exit 2 on known errors, or when no source is given."""
    import matplotlib

    matplotlib.use("Agg")

    from cli.heap import frozen_heap
    from rr_analysis.figures.output import check_writable, save_figure

    if not sources:
        raise fail("give --data FILE.csv or at least one metrics folder or log (OUT.metrics/)")
    with known_errors():
        check_writable(out)
        with frozen_heap():
            path = save_figure(draw(sources), out, dpi=dpi)
    typer.echo(str(path))


@plot_app.command()
@dataclass_options(Comparison, into="asked", exclude=("metric", "higher_is_better"))
def curves(
    runs: list[Path] = RUNS,
    data: Path | None = RUNS_DATA,
    half_life: float | None = typer.Option(
        None,
        "--half-life",
        min=0.0,
        metavar="STEPS",
        help="Smooth the loss by step distance: a reading's weight halves every STEPS steps (0: raw). "
        "Default: a share of each run's logged steps, so that few readings are drawn as they are "
        "(docs/training.md).",
        show_default=False,
    ),
    smooth: float | None = typer.Option(
        None,
        "--smooth",
        min=0.0,
        max=0.99,
        help="Deprecated: the old per-reading weight of the moving average, read as the half-life that "
        "gives the same curve on evenly logged runs; use --half-life.",
        show_default=False,
    ),
    gap: bool = typer.Option(
        False,
        "--gap",
        help="Draw the seed-paired gap (baseline - reference) at every logged step with its 95% CI band, as "
        "rr analyze curves computes it, instead of each run's loss; needs --data.",
    ),
    out: Path = _out("curves.png"),
    dpi: int = DPI,
    title: str | None = TITLE,
    asked: Comparison = Comparison(),
) -> None:
    """Training loss (smoothed by step distance, over its raw readings) and learning rate by step: a facet
    per size, a line per run, from the metrics logs rr train writes (OUT.metrics/RUN.jsonl).

    --gap draws the gap over training instead: each baseline's seed-paired gap to the reference by tokens
    trained, a facet per size (and budget), its 95% t band shaded (--reference and --baselines choose the
    comparison)."""
    if gap:
        if half_life is not None or smooth is not None:
            raise fail("--half-life and --smooth smooth each run's loss; --gap draws the raw paired gap")
        _gap(runs, data, out, dpi, title, asked)  # the losses the runs logged
        return

    def draw(sources):
        from rr_analysis.figures.curves import curves_figure
        from rr_analysis.stats.smoothing import smooth_curves
        from rr_core.sweepfile.metrics_log import load_curves

        curves = smooth_curves(load_curves(sources), half_life, weight=smooth)
        if smooth is not None:
            lives = ", ".join(dict.fromkeys(f"{h:g}" for h in curves["half_life"]))
            typer.echo(f"rr plot: --smooth is deprecated: read as --half-life {lives}", err=True)
        return curves_figure(curves, title=title)

    _write_logs([*(runs or []), *([data] if data else [])], out, dpi, draw)


def _gap(runs: list[Path] | None, data: Path | None, out: Path, dpi: int, title: str | None, asked) -> None:
    """`rr plot curves --gap`: the sweep's gap over training (`training_gap` of its rows and their logs)."""
    if runs or data is None:
        raise fail("--gap pairs the runs of a sweep: give --data FILE.csv (their logs are read beside it)")

    def draw(df):
        from rr_analysis.figures.gap_curves import gap_figure
        from rr_analysis.stats.training_gap import training_gap
        from rr_core.sweepfile.metrics_log import load_losses

        return gap_figure(training_gap(df, load_losses([data]), asked), title=title)

    _write(data, out, dpi, draw)


@plot_app.command()
def gates(
    runs: list[Path] = RUNS,
    data: Path | None = RUNS_DATA,
    checkpoint: Path | None = typer.Option(
        None,
        "--checkpoint",
        help="Instead: the gate anatomy of one run's weights (RUN.final.pt, a checkpoint, or a folder of one "
        "run) by layer, on held-out windows of its corpus (rr gates --anatomy).",
        show_default=False,
    ),
    corpus: str | None = options.RUN_CORPUS,
    windows: int = options.WINDOWS,
    out: Path = _out("gates.png"),
    dpi: int = DPI,
    title: str | None = TITLE,
) -> None:
    """Each gated sublayer's r over training: a row per size and variant, attention and MLP apart, a line
    per run and layer (coloured by depth), from the metrics logs of runs of gated variants.

    `rr gates` reads r on one batch of a checkpoint; this draws what the trainer logged at each log point.
    With --checkpoint: the gate anatomy of one run by layer (mean r, token_share, freeze_delta and, for
    Review, the shares of its gate logit's variance), as `rr gates --anatomy` prints it.
    """
    if checkpoint is not None:
        if runs or data:
            raise fail("draw either the logs of runs (RUNS or --data) or the anatomy of one --checkpoint")
        _write_anatomy(checkpoint, corpus, windows, out, dpi, title)
        return

    def draw(sources):
        from rr_analysis.figures.curves import gates_figure
        from rr_core.sweepfile.metrics_log import load_gates

        return gates_figure(load_gates(sources), title=title)

    _write_logs([*(runs or []), *([data] if data else [])], out, dpi, draw)


def _write_anatomy(
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


@plot_app.command()
@dataclass_options(Comparison, into="asked")
def tuning(
    data: Path = typer.Option(
        ..., "--data", help="A tuning file (rr tune --out FILE): rows with lr and role."
    ),
    out: Path = _out("tuning.png"),
    ladder: Path | None = typer.Option(
        None, "--ladder", help="The ladder file whose recipe lr is its sizes' shared rate (default: rr's)."
    ),
    dpi: int = DPI,
    title: str | None = TITLE,
    asked: Comparison = Comparison(),
) -> None:
    """Each variant's metric against the learning rate on its selection seeds (mean, 95% t CI), a facet per
    size, with the rate each chose marked (hollow: at the grid's edge). `rr analyze tuning` tests the gap at
    the chosen rates."""

    def draw(df):
        from rr_analysis.figures.tuning_curves import tuning_figure
        from rr_analysis.stats.tuning import tuning_table

        return tuning_figure(
            tuning_table(df, asked, ladder=None if ladder is None else str(ladder)), title=title
        )

    _write(data, out, dpi, draw)


def register(app: typer.Typer) -> None:
    app.add_typer(plot_app, name="plot")

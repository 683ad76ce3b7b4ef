"""`rr plot ...`: the paper's Figure 2 and the views it lacks, written to PNG, PDF or SVG."""

from __future__ import annotations

from pathlib import Path

import typer

from cli import figure_files as fig
from cli.choices import Adjust, Stat
from cli.errors import fail
from cli.fields import dataclass_options, field_option
from cli.help import CASE_INSENSITIVE
from rr_analysis.comparison import Comparison
from rr_model.uses.gate_reading import GateReading

plot_app = typer.Typer(
    help="Draw a figure of a sweep to a file; the format follows the suffix (.png, .pdf, .svg).",
    no_args_is_help=True,
    context_settings=CASE_INSENSITIVE,
)


@plot_app.command()
@dataclass_options(Comparison, into="asked")
def emergence(
    data: Path | None = fig.DATA,
    out: Path = fig.out_option("emergence.png"),
    stat: Stat = typer.Option(
        Stat.paired,
        "--stat",
        help="Whose estimate, error bars and stars: paired (seed-matched, the primary), mixed or welch "
        "(the paper's).",
    ),
    adjust: Adjust = typer.Option(
        Adjust.holm, "--adjust", help="Multiple-testing adjustment of the p-values behind the stars."
    ),
    ci: bool = typer.Option(
        False, "--ci", hidden=True, help="Accepted as before: every bar is now a 95% CI, with or without it."
    ),
    fit: bool = typer.Option(
        True, "--fit/--no-fit", help="Draw the primary size-level model's fitted line and its 95% CI band."
    ),
    dpi: int = fig.DPI,
    title: str | None = fig.TITLE,
    asked: Comparison = Comparison(),
) -> None:
    """The paper's Figure 2: Review's advantage (baseline loss - Review loss) against parameters.

    One line per baseline with the chosen test's 95% CI bars (its own t quantile and df), a dashed zero line
    and a star where the chosen test's adjusted p < 0.05 (the subtitle names test, adjustment and family), and
    the primary size-level meta-regression's fitted line with its 95% CI band (--no-fit leaves it out). The
    default is the primary analysis, the paired test with Holm's adjustment; `--stat welch --adjust none
    --no-fit` draws the paper's figure. --reference, --baselines and --metric draw any other comparison.
    """

    from rr_analysis.figures.gaps import emergence_plot

    how = {"stat": stat.value, "adjust": adjust.value, "fit": fit, "title": title}
    fig.write(data, out, dpi, lambda df: emergence_plot(df, **how, comparison=asked))


@plot_app.command()
@dataclass_options(Comparison, into="asked")
def forecast(
    at: list[str] = typer.Option(
        ..., "--at", help="A size to forecast, a ladder name or a count such as 3B; repeat for more."
    ),
    data: Path | None = fig.DATA,
    out: Path = fig.out_option("forecast.png"),
    dpi: int = fig.DPI,
    title: str | None = fig.TITLE,
    asked: Comparison = Comparison(),
) -> None:
    """The primary size-level line carried past the sweep: observed paired gaps, the line with its 95% CI
    and PI bands, and each forecast size's gap with its 95% CI and PI; shaded past the largest size."""

    from rr_analysis.figures.forecast_gaps import forecast_plot

    fig.write(data, out, dpi, lambda df: forecast_plot(df, at, title=title, comparison=asked))


@plot_app.command()
@dataclass_options(Comparison, into="asked")
def scaling(
    data: Path | None = fig.DATA,
    out: Path = fig.out_option("scaling.png"),
    dpi: int = fig.DPI,
    title: str | None = fig.TITLE,
    asked: Comparison = Comparison(),
) -> None:
    """Validation loss (or --metric) against parameters per variant: every seed a point, the mean a line, log x.

    Every variant by default; --baselines limits the variants drawn beside the reference.
    """
    from rr_analysis.figures.raw import scaling_figure

    fig.write(data, out, dpi, lambda df: scaling_figure(df, title=title, comparison=asked))


@plot_app.command()
@dataclass_options(Comparison, into="asked")
def seeds(
    data: Path | None = fig.DATA,
    out: Path = fig.out_option("seeds.png"),
    dpi: int = fig.DPI,
    title: str | None = fig.TITLE,
    asked: Comparison = Comparison(),
) -> None:
    """A facet per size: every run, each variant's mean with its 95% t interval, a line per seed.

    Every variant by default; --baselines limits the variants drawn beside the reference.
    """
    from rr_analysis.figures.raw import seeds_figure

    fig.write(data, out, dpi, lambda df: seeds_figure(df, title=title, comparison=asked))


@plot_app.command()
@dataclass_options(Comparison, into="asked", exclude=("metric", "higher_is_better"))
def calibration(
    data: Path | None = fig.DATA,
    out: Path = fig.out_option("calibration.png"),
    dpi: int = fig.DPI,
    title: str | None = fig.TITLE,
    asked: Comparison = Comparison(),
) -> None:
    """Expected calibration error by size and variant, where ECE was measured (the metric is ECE).

    Every variant by default; --baselines limits the variants drawn beside the reference.
    """
    from rr_analysis.figures.raw import calibration_figure

    fig.write(data, out, dpi, lambda df: calibration_figure(df, title=title, comparison=asked))


@plot_app.command()
@dataclass_options(Comparison, into="asked", exclude=("metric", "higher_is_better"))
def curves(
    runs: list[Path] = fig.RUNS,
    data: Path | None = fig.RUNS_DATA,
    half_life: float | None = fig.HALF_LIFE,
    smooth: float | None = fig.SMOOTH,
    gap: bool = fig.GAP,
    out: Path = fig.out_option("curves.png"),
    dpi: int = fig.DPI,
    title: str | None = fig.TITLE,
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
        if runs or data is None:
            raise fail(
                "--gap pairs the runs of a sweep: give --data FILE.csv (their logs are read beside it)"
            )
        from rr_analysis.figures.gap_curves import gap_plot

        fig.write(data, out, dpi, lambda df: gap_plot(df, [data], title=title, comparison=asked))
        return
    from rr_analysis.figures.curves import curves_plot

    def draw(sources, sweep):
        how = {"half_life": half_life, "weight": smooth, "title": title, "comparison": asked, "sweep": sweep}
        drawn, lives = curves_plot(sources, **how)
        if smooth is not None:
            said = ", ".join(dict.fromkeys(f"{h:g}" for h in lives))
            typer.echo(f"rr plot: --smooth is deprecated: read as --half-life {said}", err=True)
        return drawn

    fig.write_logs(runs, data, out, dpi, draw)


@plot_app.command()
@dataclass_options(Comparison, into="asked", exclude=("reference", "baselines", "metric", "higher_is_better"))
def gates(
    runs: list[Path] = fig.RUNS,
    data: Path | None = fig.RUNS_DATA,
    checkpoint: Path | None = fig.CHECKPOINT,
    corpus: str | None = field_option(GateReading, "corpus"),
    windows: int = field_option(GateReading, "windows"),
    out: Path = fig.out_option("gates.png"),
    dpi: int = fig.DPI,
    title: str | None = fig.TITLE,
    asked: Comparison = Comparison(),
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
        fig.write_anatomy(checkpoint, corpus, windows, out, dpi, title)
        return
    from rr_analysis.figures.curves import gates_plot

    how = {"title": title, "comparison": asked}
    fig.write_logs(runs, data, out, dpi, lambda sources, sweep: gates_plot(sources, **how, sweep=sweep))


@plot_app.command()
@dataclass_options(Comparison, into="asked")
def tuning(
    data: Path = typer.Option(
        ..., "--data", help="A tuning file (rr tune --out FILE): rows with lr and role."
    ),
    out: Path = fig.out_option("tuning.png"),
    ladder: Path | None = fig.TUNING_LADDER,
    dpi: int = fig.DPI,
    title: str | None = fig.TITLE,
    asked: Comparison = Comparison(),
) -> None:
    """Each variant's metric against the learning rate on its selection seeds (mean, 95% t CI), a facet per
    size, with the rate each chose marked (hollow: at the grid's edge). `rr analyze tuning` tests the gap at
    the chosen rates."""
    from rr_analysis.figures.tuning_curves import tuning_plot

    fig.write(data, out, dpi, lambda df: tuning_plot(df, ladder=ladder, title=title, comparison=asked))


def register(app: typer.Typer) -> None:
    app.add_typer(plot_app, name="plot")

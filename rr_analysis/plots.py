"""Figures of the sweep: the paper's Figure 2 (emergence) and the views the paper lacks.

Every ``*_figure`` function takes the data it draws (the statistics library's tidy tables, or the loaded
sweep for the raw views), returns a matplotlib ``Figure`` and never computes a test itself;
`save_figure` writes a figure atomically in the format its file suffix names. Seaborn draws the views
that are its kind of plot (the per-seed strip and point plots, the scaling lines), on axes of a Figure
made here; the emergence and calibration figures are matplotlib for exact control of nudges and stars.
Seaborn is imported inside the functions that draw with it, so importing this module stays cheap, and
no figure is registered globally: a notebook shows a returned Figure as it would any other.

Colours and labels come from the variant registry (`rr_model.core.variants`), the order of sizes from
`rr_analysis.cells.sizes_in_order`: one fixed, colour-blind-safe colour per variant in every figure.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import NullLocator

from rr_analysis.cells import ALPHA, METRIC, STAMP, compare, sizes_in_order, t_quantile
from rr_analysis.estimates import adjust_name, cell_means, gap_estimates, require_gap_table, test_name
from rr_analysis.stats import PRIMARY_TEST
from rr_model.core.errors import PlotError
from rr_model.core.files import atomic_write
from rr_model.core.ladder import RECIPE, size_sort_key
from rr_model.core.variants import REFERENCE, label, matched, order_key, palette

__all__ = [
    "FORMATS",
    "DEFAULT_DPI",
    "PlotError",
    "output_format",
    "check_writable",
    "save_figure",
    "write_atomic",
    "emergence_figure",
    "forecast_figure",
    "scaling_figure",
    "seeds_figure",
    "calibration_figure",
    "curves_figure",
]

FORMATS: tuple[str, ...] = ("png", "pdf", "svg")
DEFAULT_DPI = 150

# A quiet house style, applied while a figure is built (not globally, so notebooks keep theirs).
_STYLE = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#E5E5E5",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "legend.frameon": False,
    "svg.fonttype": "none",  # SVG text stays text (searchable, editable)
    "pdf.fonttype": 42,  # TrueType in PDF, as journals ask
}


def _variants_in_order(df: pd.DataFrame, reference: str = REFERENCE) -> list[str]:
    """The variants present, the reference first, then in registry order (`order_key`)."""
    return sorted(df["variant"].unique(), key=lambda v: (v != reference, order_key(v)))


def _compared(table: pd.DataFrame) -> tuple[str, str, bool]:
    """(reference, metric, higher_is_better) a statistics table states (`rr_analysis.cells.STAMP`)."""
    if len(table) and set(STAMP) <= set(table.columns):
        return table["reference"].iloc[0], table["metric"].iloc[0], bool(table["higher_is_better"].iloc[0])
    return REFERENCE, METRIC, False


def _gap_axis(reference: str, metric: str, higher: bool) -> str:
    """The y label of a gap: which difference it is, and that positive favours the reference."""
    ref, q = label(reference), "loss" if metric == METRIC else metric
    what = f"{ref} {q} \u2212 baseline {q}" if higher else f"Baseline {q} \u2212 {ref} {q}"
    return f"{what}\n(positive: {ref} better)"


def _metric_axis(metric: str, higher: bool) -> str:
    """The y label of a raw metric: 'Validation loss' for the published one, else the column and its direction."""
    if (metric, higher) == (METRIC, False):
        return "Validation loss"
    return f"{metric} ({'higher' if higher else 'lower'} is better)"


def output_format(path: str | os.PathLike) -> str:
    """The format a path's suffix names ('png', 'pdf' or 'svg'); PlotError for anything else."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        shown = f"'.{suffix}'" if suffix else "no suffix"
        raise PlotError(
            f"cannot write {path}: the file name has {shown}; end it in one of "
            + ", ".join(f".{f}" for f in FORMATS)
            + " to choose the format"
        )
    return suffix


def check_writable(path: str | os.PathLike) -> Path:
    """Fail early, before any work, when `path` cannot be written (bad suffix, no such folder, a folder)."""
    path = Path(path)
    output_format(path)
    if path.is_dir():
        raise PlotError(
            f"cannot write {path}: it is a directory; give a file name such as {path / 'fig.png'}"
        )
    if not path.parent.is_dir():
        raise PlotError(f"cannot write {path}: the folder {path.parent} does not exist")
    return path


def save_figure(fig: Figure, path: str | os.PathLike, *, dpi: int = DEFAULT_DPI) -> Path:
    """Write `fig` to `path` in the format its suffix names; never leaves a partial file.

    The figure is written to a hidden temporary file beside `path` and renamed over it only when
    complete (`write_atomic`), so a failure (full disk, unwritable folder, interrupted run) leaves `path`
    as it was.

    Returns
    -------
    The path written. Raises PlotError (a ValueError) for an unknown suffix or an unwritable path.
    """
    path = check_writable(path)
    fmt = output_format(path)
    if dpi <= 0:
        raise PlotError(f"dpi must be a positive number, not {dpi}")
    write_atomic(
        path, lambda f: fig.savefig(f, format=fmt, dpi=dpi, bbox_inches="tight", metadata=_metadata(fmt))
    )
    return path


def write_atomic(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """`rr_model.core.files.atomic_write`, with an unwritable folder reported as a PlotError."""
    try:
        atomic_write(path, write)
    except OSError as e:
        raise PlotError(f"cannot write {path}: {e.strerror or e}") from None


def _metadata(fmt: str) -> dict:
    # No creation date: the same data give byte-identical PDF and SVG files.
    return {"png": {}, "pdf": {"CreationDate": None}, "svg": {"Date": None}}[fmt]


def _figure(width: float, height: float, title: str | None) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


def _size_ticks(ax, at: pd.Series, notes: dict[str, str] | None = None) -> None:
    """Log x axis with one tick per size at `at[size]` (its parameter count), labelled with its name.

    `notes` adds a second line under a size's name (its steps, or that it has fewer seeds).
    """
    notes = notes or {}
    ax.set_xscale("log")
    labels = [f"{s}\n{notes[s]}" if notes.get(s) else s for s in at.index]
    ax.set_xticks(at.to_numpy(float), labels=labels)
    ax.xaxis.set_minor_locator(NullLocator())


def _size_positions(df: pd.DataFrame, sizes: list[str], reference: str = REFERENCE) -> pd.Series:
    """Each size's x position: the reference's mean parameter count there (any variant's where it is absent)."""
    ref = df[df["variant"] == reference].groupby("size", observed=True)["params_M"].mean()
    every = df.groupby("size", observed=True)["params_M"].mean()
    return ref.reindex(sizes).fillna(every.reindex(sizes))


def _few_seeds(n_seeds: pd.Series) -> dict[str, str]:
    """ "2 seeds" under each size that has fewer seeds than the best-covered size in the figure.

    A reader comparing sizes should see at once where an estimate rests on fewer runs (320M has two).
    """
    n_seeds = n_seeds.astype(int)
    return {s: f"{n} seed{'s' * (n != 1)}" for s, n in n_seeds.items() if n < n_seeds.max()}


def _steps_per_size(df: pd.DataFrame, sizes: list[str]) -> dict[str, str]:
    """Each size's training steps ("8000 steps", or a range), shown where the sizes differ in steps.

    The published 590M and 1B runs trained 7000 and 6000 steps against 8000 below: their losses are not
    on one compute curve, and the figure must not let a reader forget it.
    """
    steps = df.groupby("size", observed=True)["steps"].agg(["min", "max"]).loc[sizes]
    if steps["min"].nunique() == 1 and steps["max"].nunique() == 1 and (steps["min"] == steps["max"]).all():
        return {}
    return {
        s: f"{lo:g} steps" if lo == hi else f"{lo:g}-{hi:g} steps"
        for s, (lo, hi) in steps.astype(int).iterrows()
    }


def _runs(ax, x, y, variant: str, colour: str, *, ms: float, alpha: float = 0.6) -> None:
    """Every run as a small point in its variant's colour."""
    ax.plot(x, y, "o", color=colour, ms=ms, alpha=alpha, mew=0, zorder=3, gid=f"runs:{variant}")


def _require_sizes(df: pd.DataFrame, what: str, n: int = 2) -> list[str]:
    sizes = sizes_in_order(df)
    if len(sizes) < n:
        raise PlotError(
            f"the {what} plot needs at least {n} sizes to draw a trend; the data have "
            f"{len(sizes)} ({', '.join(sizes) or 'none'})"
        )
    return sizes


def emergence_figure(
    table: pd.DataFrame,
    *,
    stat: str = PRIMARY_TEST,
    ci: bool = False,
    title: str | None = None,
    line: pd.DataFrame | None = None,
) -> Figure:
    """The paper's Figure 2: Review's (the reference's) advantage over each baseline against model size.

    Parameters
    ----------
    table
        `rr_analysis.stats.gap_table` of the sweep; its ``adjust`` method decides the stars, its comparison
        columns (`rr_analysis.cells.STAMP`) the reference and metric the labels name. Needs a gap at two
        sizes or more.
    stat
        Which test's estimate, error bar and significance are drawn: ``"paired"`` (the declared primary,
        `rr_analysis.stats.PRIMARY_TEST`), ``"mixed"`` or ``"welch"`` (the paper's; see
        `rr_analysis.estimates.gap_estimates`).
    ci
        Draw the 95% confidence interval instead of +-1 standard error.
    title
        Figure title; None for the default.
    line
        `rr_analysis.forecast.meta_line`: the primary size-level model's fitted line per baseline, drawn
        with its 95% confidence band; None draws none.

    Notes
    -----
    x: the reference's mean parameter count at each size (log scale, ticks labelled with the size names). y:
    the test's estimate of gap = baseline loss - reference loss (of the table's metric; reference - baseline
    when higher is better), one line per baseline, positive favours the reference. A
    dashed line marks zero; a star marks an adjusted p < `rr_analysis.cells.ALPHA` (the table's method
    over its family of cells, named in the subtitle) and sits beyond the bar on the estimate's side of
    zero. The paper's figure is ``stat="welch"`` on ``gap_table(df, adjust="none")``. The baselines are
    nudged a few points apart horizontally so their bars do not hide each other; the data coordinates stay
    exact. A point whose test is n/a is drawn without a bar (its reason is in the table).

    Example
    -------
    >>> from rr_model.results.dataset import load_sweep
    >>> from rr_analysis.stats import gap_table
    >>> fig = emergence_figure(gap_table(load_sweep()), ci=True)
    """
    require_gap_table(table, "emergence_figure")
    reference, metric, higher = _compared(table)
    ref = label(reference)
    est = gap_estimates(table, stat)
    est = est[np.isfinite(est["estimate"])]
    sizes = list(dict.fromkeys(table["size"]))
    drawn = [s for s in sizes if s in set(est["size"])]
    if len(drawn) < 2:
        raise PlotError(
            f"the emergence plot needs the gap at two sizes or more ({ref} and a baseline both run there); "
            f"the data have it at {len(drawn)} ({', '.join(drawn) or 'none'})"
        )
    baselines = list(dict.fromkeys(est["baseline"]))
    colours = palette(baselines)
    with mpl.rc_context(_STYLE):
        fig = _figure(6.4, 4.4, title or f"{ref}'s advantage over each baseline, by model size")
        ax = fig.add_subplot()
        ax.axhline(0.0, color="0.35", ls="--", lw=0.9, zorder=1, gid="zero")
        for i, b in enumerate(baselines):
            points = (i - (len(baselines) - 1) / 2) * 5 / 72
            nudge = ax.transData + mpl.transforms.ScaledTranslation(points, 0, fig.dpi_scale_trans)
            _gap_line(ax, est[est["baseline"] == b], b, colours[b], nudge, ci, reference == REFERENCE)
        if line is not None:
            _fitted_lines(ax, line, colours)
        seeds = table.groupby("size", sort=False, observed=True)[
            "n_pairs" if stat == "paired" else "n_review"
        ].max()
        _size_ticks(ax, table.drop_duplicates("size").set_index("size")["params_M"][sizes], _few_seeds(seeds))
        ax.margins(x=0.08, y=0.12)
        ax.set_xlabel(f"Parameters ({ref}, log scale)")
        ax.set_ylabel(_gap_axis(reference, metric, higher))
        ax.set_title(_stars_say(table, stat, ci), loc="left", fontsize=8, color="0.3")
        ax.legend(title=f"{ref} vs.", loc="best")
    return fig


LINE_SAYS = "dotted: size-level meta-regression on log10(params)\n(primary; REML, Knapp-Hartung), band 95% CI"


def _fitted_lines(ax, line: pd.DataFrame, colours: dict[str, str], pi: bool = False) -> None:
    """Each baseline's fitted size-level line with its 95% CI band (and PI band), and one legend entry."""
    for b, g in line.groupby("baseline", sort=False, observed=True):
        c = colours.get(b, "0.4")
        x = g["params_M"].to_numpy(float)
        ax.plot(x, g["pred"], color=c, lw=1.0, ls=":", zorder=2, gid=f"fit:{b}")
        ax.fill_between(x, g["ci_low"], g["ci_high"], color=c, alpha=0.15, lw=0, zorder=1, gid=f"fit_ci:{b}")
        if pi:
            ax.fill_between(
                x, g["pi_low"], g["pi_high"], color=c, alpha=0.07, lw=0, zorder=1, gid=f"fit_pi:{b}"
            )
    if len(line):
        ax.plot([], [], color="0.4", lw=1.0, ls=":", label=LINE_SAYS + (", light band 95% PI" if pi else ""))


def forecast_figure(
    table: pd.DataFrame, line: pd.DataFrame, forecast: pd.DataFrame, *, title: str | None = None
) -> Figure:
    """The primary size-level line carried past the sweep: observed gaps, the line, and each forecast point.

    Parameters
    ----------
    table
        `rr_analysis.stats.gap_table` of the sweep: the observed seed-paired gaps and their 95% CIs.
    line
        `rr_analysis.forecast.meta_line` reaching the forecast sizes: the line with its CI and PI bands.
    forecast
        `rr_analysis.forecast.forecast`: each forecast size's predicted gap, 95% CI (thick bar) and 95% PI
        (thin bar).
    title
        Figure title; None for the default.

    Notes
    -----
    One facet per baseline. x: Review's parameter count (log scale; ticks at the sweep's sizes and the
    forecast sizes), y: gap = baseline loss - Review loss. Shaded: past the largest size of the sweep, where
    the line is an extrapolation (its warning is in the forecast table). The line is the primary size-level
    test's model, the band its 95% CI, the lighter band its 95% PI.

    Example
    -------
    >>> from rr_model.results.dataset import load_sweep
    >>> from rr_analysis.forecast import forecast, meta_line
    >>> from rr_analysis.stats import gap_table
    >>> d = load_sweep()
    >>> fig = forecast_figure(gap_table(d), meta_line(d, ["3B"]), forecast(d, ["3B"]))
    """
    require_gap_table(table, "forecast_figure")
    fc = forecast[np.isfinite(forecast["pred"].to_numpy(float))]
    if fc.empty:
        raise PlotError(
            "the forecast plot needs a size-level line (3 or more sizes with a paired gap) for a baseline; "
            "there is none here (rr analyze forecast says why)"
        )
    baselines = list(dict.fromkeys(fc["baseline"]))
    colours, est = palette(baselines), gap_estimates(table, "paired")
    ref = label(fc["reference"].iloc[0]) if "reference" in fc else label(REFERENCE)
    sizes = table.drop_duplicates("size").set_index("size")["params_M"]
    ticks = pd.concat([sizes, fc.drop_duplicates("at").set_index("at")["params"] / 1e6])
    with mpl.rc_context(_STYLE):
        fig = _figure(4.2 * len(baselines) + 0.6, 4.4, title or f"{ref}'s advantage, forecast past the sweep")
        axes = fig.subplots(1, len(baselines), squeeze=False, sharey=True).ravel()
        for ax, b in zip(axes, baselines, strict=True):
            ax.set_xscale("log")
            _forecast_facet(ax, est[est["baseline"] == b], line[line["baseline"] == b], fc[fc["baseline"] == b],
                            colours[b], sizes.max(), ticks.max() * 1.4)  # fmt: skip
            _size_ticks(ax, ticks[~ticks.index.duplicated()])
            ax.set_xlim(ticks.min() / 1.4, ticks.max() * 1.4)
            ax.set_title(f"{ref} vs. {label(b)}")
        axes[0].set_ylabel(f"Baseline \u2212 {ref} (the gap)\n(positive: {ref} better)")
        axes[0].legend(loc="upper left", fontsize=7)
        fig.supxlabel(
            f"Parameters ({ref}, log scale); shaded: past the largest size in the sweep", fontsize=8
        )
    return fig


def _forecast_facet(ax, e, line, fc, colour: str, largest: float, right: float) -> None:
    """One baseline: the zero line, the shaded extrapolation, observed gaps, the fitted line, forecasts."""
    ax.axhline(0.0, color="0.35", ls="--", lw=0.9, zorder=1, gid="zero")
    ax.axvspan(largest, right, color="0.93", lw=0, zorder=0, gid="beyond")
    e = e[np.isfinite(e["estimate"].to_numpy(float))]
    y = e["estimate"].to_numpy(float)
    ax.errorbar(e["params_M"].to_numpy(float), y, yerr=[y - e["ci_low"], e["ci_high"] - y], fmt="o",
                color=colour, ms=5, elinewidth=1.0, capsize=3, label="observed: seed-paired gap, 95% CI",
                gid="observed")  # fmt: skip
    _fitted_lines(ax, line, {line["baseline"].iloc[0]: colour} if len(line) else {}, pi=True)
    x, p = fc["params"].to_numpy(float) / 1e6, fc["pred"].to_numpy(float)
    ax.errorbar(x, p, yerr=[p - fc["pi_low"], fc["pi_high"] - p], fmt="none", ecolor=colour, elinewidth=1.0,
                capsize=5, gid="forecast_pi")  # fmt: skip
    ax.errorbar(x, p, yerr=[p - fc["ci_low"], fc["ci_high"] - p], fmt="D", color=colour, mfc="white", ms=6,
                elinewidth=3.0, capsize=0, label="forecast: 95% CI (thick), 95% PI (thin)", gid="forecast")  # fmt: skip


def _stars_say(table: pd.DataFrame, stat: str, ci: bool) -> str:
    """The subtitle: which test, which bars, and which p-values the stars use over which family."""
    method = table["adjust"].iloc[0]
    family = f" over {int(table[f'family_m_{stat}'].iloc[0])} cells" if method != "none" else ""
    bars = "95% CI" if ci else "\u00b11 SE"
    return f"{test_name(stat)}; bars {bars}; * {adjust_name(method)} p < {ALPHA:g}{family}"


def _gap_line(ax, e: pd.DataFrame, baseline: str, colour: str, nudge, ci: bool, published: bool) -> None:
    """One baseline's gaps with their bars, and a star beyond the bar where the adjusted p is small.

    `published`: the reference is the published one, to whose parameter count the registry's matched
    baselines are widened, so their legend says so."""
    y = e["estimate"].to_numpy()
    lo, hi = (e["ci_low"].to_numpy(), e["ci_high"].to_numpy()) if ci else (y - e["se"], y + e["se"])
    bars = ax.errorbar(
        e["params_M"].to_numpy(float),
        y,
        yerr=[y - lo, hi - y],
        fmt="-o",
        color=colour,
        ms=5,
        lw=1.6,
        elinewidth=1.1,
        capsize=3,
        label=label(baseline) + " (parameter-matched)" * (published and matched(baseline)),
        gid=baseline,
    )
    for artist in (bars.lines[0], *bars.lines[1], *bars.lines[2]):
        artist.set_transform(nudge)  # after autoscaling, which used exact x
    star = e["significant"].to_numpy()
    above = y[star] >= 0
    ends = np.where(above, np.fmax(hi, y)[star], np.fmin(lo, y)[star])
    for x, end, up in zip(e["params_M"][star], ends, above, strict=True):
        ax.annotate(
            "*",
            (x, end),
            xytext=(0, 1 if up else -1),
            textcoords="offset points",
            xycoords=nudge,
            ha="center",
            va="bottom" if up else "top",
            fontsize=13,
            fontweight="bold",
            color=colour,
            gid=f"star:{baseline}",
        )


def _t_interval(values) -> tuple[float, float]:
    """95% t interval of a mean, mean -/+ t_{0.975, n-1} sd / sqrt(n): seaborn's `errorbar` for seed means.

    Seaborn's own "ci" bootstraps, which with three seeds is both random and too narrow.
    """
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return (np.nan, np.nan)
    half = float(t_quantile(0.975, len(x) - 1)) * x.std(ddof=1) / np.sqrt(len(x))
    return (x.mean() - half, x.mean() + half)


def _by_label(df: pd.DataFrame, reference: str = REFERENCE) -> tuple[pd.DataFrame, list[str], dict[str, str]]:
    """`df` with a ``Variant`` column of registry labels, the labels in order and their registry colours.

    Seaborn names hue levels by their values, so legends and tick labels read "Review", not "review_neutral".
    """
    order = _variants_in_order(df, reference)
    labels = [label(v) for v in order]
    colours = palette(order)
    return df.assign(Variant=df["variant"].map(label)), labels, {label(v): colours[v] for v in order}


def scaling_figure(
    df: pd.DataFrame,
    *,
    title: str | None = None,
    reference: str = REFERENCE,
    baselines: Sequence[str] | None = None,
    metric: str = METRIC,
    higher_is_better: bool = False,
) -> Figure:
    """Validation loss (or another metric) against parameter count: every run a point, each variant's seed
    mean a line.

    Parameters
    ----------
    df
        A loaded sweep (`load_sweep`). Needs at least two sizes.
    title
        Figure title; None for the default.
    reference, baselines, metric, higher_is_better
        Which variants and which metric are drawn (`rr_analysis.cells.compare`, descriptive): by default every
        variant, on val_loss; the reference is drawn first, and named baselines limit the variants.

    Notes
    -----
    Drawn by seaborn: a scatter of the runs and, per variant, a line through the mean of its seeds at
    each size (the seeds figure shows each mean's interval). x is each variant's own parameter count (log
    scale; ticks at each size's mean count, labelled with the size name), y the validation loss.
    """
    import seaborn as sns

    df = compare(df, reference, baselines, metric, higher_is_better, require_reference=False)[0]
    sizes = _require_sizes(df, "scaling")
    runs, labels, palette = _by_label(df, reference)
    hue = dict(x="params_M", y=metric, hue="Variant", hue_order=labels, palette=palette)
    axis = _metric_axis(metric, higher_is_better)
    with mpl.rc_context(_STYLE):
        fig = _figure(6.4, 4.2, title or f"{axis} against model size")
        ax = fig.add_subplot()
        ax.set_xscale("log")
        sns.lineplot(runs, **hue, errorbar=None, lw=1.5, ax=ax)
        sns.scatterplot(runs, **hue, s=12, alpha=0.5, lw=0, legend=False, ax=ax)
        _size_ticks(
            ax, df.groupby("size", observed=True)["params_M"].mean()[sizes], _steps_per_size(df, sizes)
        )
        ax.set_xlabel("Parameters (log scale)")
        ax.set_ylabel(axis)
        ax.legend(title="Variant (points: seeds, line: mean)", loc="upper right")
    return fig


def seeds_figure(
    df: pd.DataFrame,
    *,
    title: str | None = None,
    reference: str = REFERENCE,
    baselines: Sequence[str] | None = None,
    metric: str = METRIC,
    higher_is_better: bool = False,
) -> Figure:
    """One facet per size: each run, each variant's mean with its interval, and lines joining a seed's runs.

    Parameters
    ----------
    df
        A loaded sweep (`load_sweep`). Needs a size with at least two variants.
    title
        Figure title; None for the default.
    reference, baselines, metric, higher_is_better
        Which variants and which metric are drawn (`rr_analysis.cells.compare`, descriptive): by default every
        variant, on val_loss; the reference is drawn first, and named baselines limit the variants.

    Notes
    -----
    One facet per size, each with its own y scale. Seaborn draws a strip plot of the runs (no jitter, so
    a run sits exactly on its variant) and a point plot of each variant's seed mean with its 95% t
    interval (`_t_interval`); a grey line per seed joins its runs. Within a size a seed fixes the data
    order for every variant, so runs of the same seed are matched: lines that run parallel mean the seed
    shifts every variant alike (a block effect the paired and mixed tests remove); crossing lines mean
    the ranking changes with the seed. The facets are axes of one Figure made here rather than a
    figure-level grid, so drawing registers no figure globally.
    """
    df = compare(df, reference, baselines, metric, higher_is_better, require_reference=False)[0]
    sizes = [s for s in sizes_in_order(df) if df.loc[df["size"] == s, "variant"].nunique() >= 2]
    axis = _metric_axis(metric, higher_is_better)
    if not sizes:
        raise PlotError("the seeds plot needs a size with at least two variants; every size here has one")
    ncols = min(len(sizes), 5)
    nrows = -(-len(sizes) // ncols)
    with mpl.rc_context(_STYLE):
        fig = _figure(2.3 * ncols + 0.6, 2.7 * nrows + 0.6, title or f"{axis} per seed within each size")
        axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
        few = _few_seeds(df[df["size"].isin(sizes)].groupby("size", observed=True)["seed"].nunique())
        for ax, size in zip(axes, sizes, strict=True):
            _seed_facet(ax, df[df["size"] == size], metric, reference)
            ax.set_title(f"{size} ({few[size]})" if size in few else size)
        for ax in axes[len(sizes) :]:
            ax.set_visible(False)
        axes[0].set_ylabel(axis)
        fig.supxlabel(
            "points: runs; grey lines: one seed's runs; diamond and bar: the mean and its 95% t interval",
            fontsize=8,
        )
    return fig


def _seed_facet(ax, runs: pd.DataFrame, metric: str, reference: str) -> None:
    """One size of `seeds_figure`: a line per seed, then each variant's runs and mean on top."""
    import seaborn as sns

    runs, labels, palette = _by_label(runs, reference)
    at = runs["Variant"].map({v: i for i, v in enumerate(labels)})
    for seed, g in runs.assign(x=at).sort_values("x").groupby("seed", observed=True):
        ax.plot(g["x"], g[metric], color="0.6", lw=0.8, zorder=1, gid=f"seed:{seed}")
    hue = dict(x="Variant", y=metric, hue="Variant", order=labels, hue_order=labels, palette=palette)
    sns.stripplot(runs, **hue, jitter=False, size=5, legend=False, zorder=3, ax=ax)
    sns.pointplot(
        runs,
        **hue,
        errorbar=_t_interval,
        linestyle="none",
        marker="D",
        markersize=4,
        capsize=0.12,
        err_kws={"linewidth": 1.0, "alpha": 0.7},
        legend=False,
        ax=ax,
    )
    ax.tick_params(axis="x", labelrotation=30)
    ax.set_xlim(-0.5, len(labels) - 0.5)
    ax.set(xlabel="", ylabel="")
    ax.grid(axis="x", visible=False)


def calibration_figure(
    df: pd.DataFrame,
    *,
    title: str | None = None,
    reference: str = REFERENCE,
    baselines: Sequence[str] | None = None,
) -> Figure:
    """Expected calibration error by size and variant, where ECE was measured.

    Parameters
    ----------
    df
        A loaded sweep (`load_sweep`). Needs at least one ECE value; rows without one are left out.
    title
        Figure title; None for the default.
    reference, baselines
        Which variants are drawn (`rr_analysis.cells.compare`, descriptive): by default every variant; the
        reference is drawn first and sets each size's x position, and named baselines limit the variants.
        The metric is ECE by definition.

    Notes
    -----
    x: Review's mean parameter count at each size with any ECE value (log scale, ticks labelled with the
    size names), as in the other figures; the variants are nudged a few points apart around it. Each seed
    is a small point, each variant's seed mean a larger marker joined across sizes.
    """
    measured = df[df["ece"].notna()]
    if measured.empty:
        raise PlotError("the calibration plot needs ECE values; the column ece is empty in every row")
    measured = compare(measured, reference, baselines, "ece", require_reference=False)[0]
    sizes, order = sizes_in_order(measured), _variants_in_order(measured, reference)
    colours = palette(order)
    means = cell_means(measured, "ece")
    at = _size_positions(measured, sizes, reference)
    with mpl.rc_context(_STYLE):
        fig = _figure(max(4.5, 1.1 * len(sizes) + 2.5), 4.0, title or "Calibration by size and variant")
        ax = fig.add_subplot()
        for i, v in enumerate(order):
            points = (i - (len(order) - 1) / 2) * 6 / 72
            nudge = ax.transData + mpl.transforms.ScaledTranslation(points, 0, fig.dpi_scale_trans)
            runs = measured[measured["variant"] == v]
            line = means[means["variant"] == v].set_index("size")["mean"]
            line = line.reindex([s for s in sizes if s in line.index])
            ax.plot(at[line.index], line, "-D", color=colours[v], ms=5, lw=1.2, label=label(v), gid=v)
            _runs(ax, runs["size"].map(at), runs["ece"], v, colours[v], ms=3, alpha=0.5)
            for artist in ax.get_lines()[-2:]:
                artist.set_transform(nudge)
        _size_ticks(ax, at)
        ax.margins(x=0.1)
        ax.set_xlabel(f"Parameters ({label(reference)}, log scale)")
        ax.set_ylabel(f"Expected calibration error ({RECIPE.ece_bins} bins)")
        ax.set_ylim(bottom=0)
        ax.legend(title="Variant (points: seeds)")
    return fig


def curves_figure(curves: pd.DataFrame, *, title: str | None = None) -> Figure:
    """Training loss (smoothed) and learning rate by step: a facet per size, one line per run.

    Parameters
    ----------
    curves
        `rr_analysis.curves.smooth_curves` of `rr_model.results.curves.load_curves`: columns size,
        variant, seed, step, loss, loss_smooth and lr.
    title
        Figure title; None for the default.

    Notes
    -----
    Top row: each run's smoothed training loss (a line in its variant's colour; the raw readings faint
    behind it). Bottom row: its learning rate (runs without a logged lr draw none). Sizes left to right
    in ladder order; each line's gid is ``loss:VARIANT:SEED`` or ``lr:VARIANT:SEED``.
    """
    sizes = sorted(curves["size"].unique(), key=lambda s: (size_sort_key(s), s))
    colours = palette(_variants_in_order(curves))
    with mpl.rc_context(_STYLE):
        fig = _figure(3.2 * len(sizes) + 0.8, 5.2, title or "Training loss and learning rate by step")
        axes = fig.subplots(2, len(sizes), squeeze=False, sharex="col")
        for col, size in enumerate(sizes):
            runs = curves[curves["size"] == size]
            for (variant, seed), run in runs.groupby(["variant", "seed"], sort=False, observed=True):
                _curve(axes[0, col], axes[1, col], run, f"{variant}:{seed}", colours[variant])
            axes[0, col].set_title(size)
            axes[1, col].set_xlabel("Optimiser step")
        axes[0, 0].set_ylabel("Training loss (EMA)")
        axes[1, 0].set_ylabel("Learning rate")
        handles = {label(v): Line2D([], [], color=c) for v, c in colours.items()}
        axes[0, -1].legend(handles.values(), handles.keys(), title="Variant (a line per seed)")
    return fig


def _curve(loss_ax, lr_ax, run: pd.DataFrame, name: str, c: str) -> None:
    """One run's raw and smoothed loss, and its lr where logged; `name` is VARIANT:SEED."""
    loss_ax.plot(run["step"], run["loss"], color=c, alpha=0.25, lw=0.8, gid=f"raw:{name}")
    loss_ax.plot(run["step"], run["loss_smooth"], color=c, lw=1.4, gid=f"loss:{name}")
    if run["lr"].notna().any():
        lr_ax.plot(run["step"], run["lr"], color=c, lw=1.2, gid=f"lr:{name}")

"""Figures of the sweep: the paper's Figure 2 (emergence) and the views the paper lacks.

Every ``*_figure`` function takes the data it draws (the statistics library's tidy tables, or the loaded
sweep for the raw views), returns a matplotlib ``Figure`` and never computes a test itself;
`save_figure` writes a figure atomically in the format its file suffix names. Figures are built with
matplotlib's object API, without pyplot: nothing here needs a display or touches pyplot's global state,
and a notebook shows a returned Figure as it would any other.

Colours and labels come from the variant registry (`rr_model.variants`), the order of sizes from
`rr_analysis.summary.sizes_in_order`: one fixed, colour-blind-safe colour per variant in every figure.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from rr_analysis.cells import sizes_in_order
from rr_analysis.estimates import ALPHA, cell_means, gap_estimates, test_name
from rr_model.errors import PlotError
from rr_model.files import atomic_write
from rr_model.ladder import RECIPE
from rr_model.variants import NAMES, REFERENCE, VARIANTS, colour, label

__all__ = [
    "FORMATS",
    "DEFAULT_DPI",
    "PlotError",
    "output_format",
    "check_writable",
    "save_figure",
    "write_atomic",
    "emergence_figure",
    "scaling_figure",
    "seeds_figure",
    "calibration_figure",
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


def _variants_in_order(df: pd.DataFrame) -> list[str]:
    """The variants present, the reference first, then in registry order."""
    return sorted(df["variant"].unique(), key=lambda v: (v != REFERENCE, NAMES.index(v)))


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
    """`rr_model.files.atomic_write`, with an unwritable folder reported as a PlotError."""
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


def _size_ticks(ax, at: pd.Series) -> None:
    """Log x axis with one tick per size at `at[size]` (its parameter count), labelled with its name."""
    ax.set_xscale("log")
    ax.set_xticks(at.to_numpy(float), labels=list(at.index))
    ax.xaxis.set_minor_locator(NullLocator())


def _runs(ax, x, y, variant: str, *, ms: float, alpha: float = 0.6) -> None:
    """Every run as a small point in its variant's colour."""
    ax.plot(x, y, "o", color=colour(variant), ms=ms, alpha=alpha, mew=0, zorder=3, gid=f"runs:{variant}")


def _require_sizes(df: pd.DataFrame, what: str, n: int = 2) -> list[str]:
    sizes = sizes_in_order(df)
    if len(sizes) < n:
        raise PlotError(
            f"the {what} plot needs at least {n} sizes to draw a trend; the data have "
            f"{len(sizes)} ({', '.join(sizes) or 'none'})"
        )
    return sizes


def emergence_figure(
    table: pd.DataFrame, *, stat: str = "welch", ci: bool = False, title: str | None = None
) -> Figure:
    """The paper's Figure 2: Review's advantage over each baseline against model size.

    Parameters
    ----------
    table
        `rr_analysis.stats.gap_table` of the sweep. Needs a gap at two sizes or more.
    stat
        Which test's estimate, error bar and significance are drawn: ``"welch"`` (the paper's), ``"paired"``
        or ``"mixed"`` (see `rr_analysis.estimates.gap_estimates`).
    ci
        Draw the 95% confidence interval instead of +-1 standard error.
    title
        Figure title; None for the default.

    Notes
    -----
    x: Review's mean parameter count at each size (log scale, ticks labelled with the size names). y: the
    test's estimate of gap = baseline loss - Review loss, one line per baseline, positive favours Review. A
    dashed line marks zero; a star above a point marks p < `rr_analysis.estimates.ALPHA`. The baselines are
    nudged a few points apart horizontally so their bars do not hide each other; the data coordinates stay
    exact. A point whose test is n/a is drawn without a bar (its reason is in the table).

    Example
    -------
    >>> from rr_analysis.stats import gap_table
    >>> fig = emergence_figure(gap_table(load_sweep()), stat="paired", ci=True)
    """
    est = gap_estimates(table, stat)
    est = est[np.isfinite(est["estimate"])]
    sizes = list(dict.fromkeys(table["size"]))
    drawn = [s for s in sizes if s in set(est["size"])]
    if len(drawn) < 2:
        raise PlotError(
            "the emergence plot needs the gap at two sizes or more (Review and a baseline both run there); "
            f"the data have it at {len(drawn)} ({', '.join(drawn) or 'none'})"
        )
    baselines = list(dict.fromkeys(est["baseline"]))
    at = table.drop_duplicates("size").set_index("size")["params_M"]
    bar = "95% CI" if ci else "\u00b11 SE"
    with mpl.rc_context(_STYLE):
        fig = _figure(6.4, 4.4, title or "Review's advantage over each baseline, by model size")
        ax = fig.add_subplot()
        ax.axhline(0.0, color="0.35", ls="--", lw=0.9, zorder=1, gid="zero")
        for i, b in enumerate(baselines):
            e = est[est["baseline"] == b]
            y = e["estimate"].to_numpy()
            lo, hi = (e["ci_low"], e["ci_high"]) if ci else (y - e["se"], y + e["se"])
            nudge = mpl.transforms.ScaledTranslation(
                (i - (len(baselines) - 1) / 2) * 5 / 72, 0, fig.dpi_scale_trans
            )
            bars = ax.errorbar(
                e["params_M"].to_numpy(float),
                y,
                yerr=[y - lo.to_numpy(), hi.to_numpy() - y],
                fmt="-o",
                color=colour(b),
                ms=5,
                lw=1.6,
                elinewidth=1.1,
                capsize=3,
                label=label(b) + " (parameter-matched)" * VARIANTS[b].matched,
                gid=b,
            )
            for artist in (bars.lines[0], *bars.lines[1], *bars.lines[2]):
                artist.set_transform(ax.transData + nudge)  # after autoscaling, which used exact x
            star = e["significant"].to_numpy()
            for x, top in zip(e["params_M"][star], np.fmax(hi, y)[star], strict=True):
                ax.annotate(
                    "*",
                    (x, top),
                    xytext=(0, 1),
                    textcoords="offset points",
                    xycoords=ax.transData + nudge,
                    ha="center",
                    va="bottom",
                    fontsize=13,
                    fontweight="bold",
                    color=colour(b),
                    gid=f"star:{b}",
                )
        _size_ticks(ax, at[sizes])
        ax.margins(x=0.08, y=0.12)
        ax.set_xlabel("Parameters (Review, log scale)")
        ax.set_ylabel("Baseline loss \u2212 Review loss\n(positive: Review better)")
        ax.set_title(f"{test_name(stat)}; bars {bar}; * p < {ALPHA:g}", loc="left", fontsize=8, color="0.3")
        ax.legend(title="Review vs.", loc="best")
    return fig


def scaling_figure(df: pd.DataFrame, *, title: str | None = None) -> Figure:
    """Validation loss against parameter count: every run a point, each variant's seed mean a line.

    Parameters
    ----------
    df
        A loaded sweep (`load_sweep`). Needs at least two sizes.
    title
        Figure title; None for the default.

    Notes
    -----
    x is each variant's own parameter count (log scale; ticks at each size's mean count, labelled with
    the size name), y the validation loss. Lines join the per-(size, variant) means of the seeds.
    """
    sizes = _require_sizes(df, "scaling")
    with mpl.rc_context(_STYLE):
        fig = _figure(6.4, 4.2, title or "Validation loss against model size")
        ax = fig.add_subplot()
        means = cell_means(df, "val_loss")
        for v in _variants_in_order(df):
            runs, line = df[df["variant"] == v], means[means["variant"] == v].sort_values("params_M")
            ax.plot(line["params_M"], line["mean"], "-", color=colour(v), lw=1.5, label=label(v), gid=v)
            _runs(ax, runs["params_M"], runs["val_loss"], v, ms=4)
        _size_ticks(ax, df.groupby("size")["params_M"].mean()[sizes])
        ax.set_xlabel("Parameters (log scale)")
        ax.set_ylabel("Validation loss")
        ax.legend(title="Variant (points: seeds, line: mean)", loc="upper right")
    return fig


_SEED_STYLES = ("-", "--", ":", "-.")
_SEED_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def seeds_figure(df: pd.DataFrame, *, title: str | None = None) -> Figure:
    """One panel per size, one line per seed joining its variants: the pairing behind the paired test.

    Parameters
    ----------
    df
        A loaded sweep (`load_sweep`). Needs a size with at least two variants.
    title
        Figure title; None for the default.

    Notes
    -----
    Within a size a seed fixes the data order for every variant, so runs of the same seed are matched.
    Lines that run parallel mean the seed shifts every variant alike (a large block effect the paired
    and mixed views remove); crossing lines mean the variants' ranking changes with the seed. Each panel
    has its own y scale; markers carry the variant's colour.
    """
    sizes = [s for s in sizes_in_order(df) if df.loc[df["size"] == s, "variant"].nunique() >= 2]
    if not sizes:
        raise PlotError("the seeds plot needs a size with at least two variants; every size here has one")
    seeds = sorted(df["seed"].unique())
    ncols = min(len(sizes), 5)
    nrows = -(-len(sizes) // ncols)
    with mpl.rc_context(_STYLE):
        fig = _figure(
            2.3 * ncols + 0.6, 2.7 * nrows + 0.5, title or "Validation loss per seed within each size"
        )
        axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
        for ax, size in zip(axes[: len(sizes)], sizes, strict=True):
            runs = df[df["size"] == size]
            order = _variants_in_order(runs)
            pos = {v: i for i, v in enumerate(order)}
            many = len(seeds) > len(_SEED_MARKERS)
            for seed, g in runs.groupby("seed"):
                k = seeds.index(seed)
                g = g.assign(x=g["variant"].map(pos)).sort_values("x")
                ax.plot(
                    g["x"],
                    g["val_loss"],
                    color="0.35",
                    lw=0.6 if many else 1.0,
                    ls="-" if many else _SEED_STYLES[k % len(_SEED_STYLES)],
                    marker=None if many else _SEED_MARKERS[k],
                    ms=7,
                    mfc="none",
                    label=f"seed {seed}",
                    gid=f"seed:{seed}",
                )
            for v in order:
                y = runs.loc[runs["variant"] == v, "val_loss"]
                _runs(ax, [pos[v]] * len(y), y, v, ms=5, alpha=0.85)
            ax.set_xticks(range(len(order)), labels=[label(v) for v in order], rotation=30, ha="right")
            ax.set_xlim(-0.4, len(order) - 0.6)
            ax.set_title(size)
            ax.grid(axis="x", visible=False)
        for ax in axes[len(sizes) :]:
            ax.set_visible(False)
        axes[0].set_ylabel("Validation loss")
        if len(seeds) <= len(_SEED_MARKERS):
            handles = {}
            for ax in axes[: len(sizes)]:
                for line in ax.get_lines():
                    if (line.get_gid() or "").startswith("seed:"):
                        handles.setdefault(line.get_label(), line)
            fig.legend(list(handles.values()), list(handles), loc="outside lower center", ncols=len(handles))
    return fig


def calibration_figure(df: pd.DataFrame, *, title: str | None = None) -> Figure:
    """Expected calibration error by size and variant, where ECE was measured.

    Parameters
    ----------
    df
        A loaded sweep (`load_sweep`). Needs at least one ECE value; rows without one are left out.
    title
        Figure title; None for the default.

    Notes
    -----
    x: the sizes with any ECE value, in order of parameter count; within a size the variants sit side by
    side. Each seed is a small point, each variant's seed mean a larger marker joined across sizes.
    """
    measured = df[df["ece"].notna()]
    if measured.empty:
        raise PlotError("the calibration plot needs ECE values; the column ece is empty in every row")
    sizes, order = sizes_in_order(measured), _variants_in_order(measured)
    means = cell_means(measured, "ece")
    width = 0.7 / len(order)
    with mpl.rc_context(_STYLE):
        fig = _figure(max(4.5, 1.1 * len(sizes) + 2.5), 4.0, title or "Calibration by size and variant")
        ax = fig.add_subplot()
        for i, v in enumerate(order):
            runs = measured[measured["variant"] == v]
            x = {s: sizes.index(s) + (i - (len(order) - 1) / 2) * width for s in sizes}
            line = means[means["variant"] == v].set_index("size")["mean"]
            line = line.reindex([s for s in sizes if s in line.index])
            ax.plot(
                [x[s] for s in line.index], line, "-D", color=colour(v), ms=5, lw=1.2, label=label(v), gid=v
            )
            _runs(ax, runs["size"].map(x), runs["ece"], v, ms=3, alpha=0.5)
        ax.set_xticks(range(len(sizes)), labels=sizes)
        ax.set_xlim(-0.6, len(sizes) - 0.4)
        ax.grid(axis="x", visible=False)
        ax.set_xlabel("Size")
        ax.set_ylabel(f"Expected calibration error ({RECIPE.ece_bins} bins)")
        ax.set_ylim(bottom=0)
        ax.legend(title="Variant (points: seeds)")
    return fig

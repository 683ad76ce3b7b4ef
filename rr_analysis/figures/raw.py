"""Figures of the runs themselves: the loss against parameters (`scaling_figure`), every seed with each
mean's 95% t interval (`seeds_figure`) and calibration (`calibration_figure`), each as `rr plot` draws it:
with the footnote naming the cells whose runs differ from the published ones (`output.with_provenance`).
Seaborn draws the strip, point and line plots, imported inside the functions that use it.
"""

from __future__ import annotations

from dataclasses import replace

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from rr_analysis.comparison import Comparison, asked, compare, sizes_in_order, t_quantile
from rr_analysis.figures.axes import (
    STYLE,
    few_seeds,
    metric_axis,
    new_figure,
    require_sizes,
    run_rows,
    size_positions,
    size_ticks,
    steps_per_size,
    variants_in_order,
)
from rr_analysis.figures.estimates import cell_means
from rr_analysis.figures.output import with_provenance
from rr_core.errors import PlotError
from rr_core.ladder import RECIPE
from rr_core.palette import palette
from rr_core.variants import REFERENCE, label

__all__ = [
    "scaling_figure",
    "seeds_figure",
    "calibration_figure",
]


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
    order = variants_in_order(df, reference)
    labels = [label(v) for v in order]
    colours = palette(order)
    return df.assign(Variant=df["variant"].map(label)), labels, {label(v): colours[v] for v in order}


def scaling_figure(
    df: pd.DataFrame,
    *,
    title: str | None = None,
    comparison: Comparison | None = None,
) -> Figure:
    """Validation loss (or another metric) against parameter count: every run a point, each variant's seed
    mean a line.

    Parameters
    ----------
    df
        A loaded sweep (`load_sweep`). Needs at least two sizes.
    title
        Figure title; None for the default.
    comparison
        Which variants and which metric are drawn (`rr_analysis.comparison.Comparison`; descriptive): by
        default every variant, on val_loss; the reference is drawn first, and named baselines limit the
        variants.

    Notes
    -----
    Drawn by seaborn: a scatter of the runs and, per variant, a line through the mean of its seeds at
    each size (the seeds figure shows each mean's interval). x is each variant's own parameter count (log
    scale; ticks at each size's mean count, labelled with the size name), y the validation loss.
    """
    import seaborn as sns

    rows, c = compare(df, comparison, require_reference=False)
    sizes = require_sizes(rows, "scaling")
    runs, labels, palette = _by_label(rows, c.reference)
    hue = dict(x="params_M", y=c.metric, hue="Variant", hue_order=labels, palette=palette)
    axis = metric_axis(c.metric, c.higher_is_better)
    with mpl.rc_context(STYLE):
        fig = new_figure(6.4, 4.2, title or f"{axis} against model size")
        ax = fig.add_subplot()
        ax.set_xscale("log")
        sns.lineplot(runs, **hue, errorbar=None, lw=1.5, ax=ax)
        sns.scatterplot(runs, **hue, s=12, alpha=0.5, lw=0, legend=False, ax=ax)
        size_ticks(
            ax, rows.groupby("size", observed=True)["params_M"].mean()[sizes], steps_per_size(rows, sizes)
        )
        ax.set_xlabel("Parameters (log scale)")
        ax.set_ylabel(axis)
        ax.legend(title="Variant (points: seeds, line: mean)", loc="upper right")
    return with_provenance(fig, df, comparison)


def seeds_figure(
    df: pd.DataFrame,
    *,
    title: str | None = None,
    comparison: Comparison | None = None,
) -> Figure:
    """One facet per size: each run, each variant's mean with its interval, and lines joining a seed's runs.

    Parameters
    ----------
    df
        A loaded sweep (`load_sweep`). Needs a size with at least two variants.
    title
        Figure title; None for the default.
    comparison
        Which variants and which metric are drawn (`rr_analysis.comparison.Comparison`; descriptive): by
        default every variant, on val_loss; the reference is drawn first, and named baselines limit the
        variants.

    Notes
    -----
    One facet per size, each with its own y scale and as wide as the variants it holds (`_facet_grid`), five
    a row. Seaborn draws a strip plot of the runs (no jitter, so
    a run sits exactly on its variant) and a point plot of each variant's seed mean with its 95% t
    interval (`_t_interval`); a grey line per seed joins its runs. Within a size a seed fixes the data
    order for every variant, so runs of the same seed are matched: lines that run parallel mean the seed
    shifts every variant alike (a block effect the paired and mixed tests remove); crossing lines mean
    the ranking changes with the seed. The facets are axes of one Figure made here rather than a
    figure-level grid, so drawing registers no figure globally.
    """
    rows, c = compare(df, comparison, require_reference=False)
    sizes = [s for s in sizes_in_order(rows) if rows.loc[rows["size"] == s, "variant"].nunique() >= 2]
    axis = metric_axis(c.metric, c.higher_is_better)
    if not sizes:
        raise PlotError("the seeds plot needs a size with at least two variants; every size here has one")
    facets = _facet_grid([rows.loc[rows["size"] == s, "variant"].nunique() for s in sizes])
    units = max(end for _, _, end in facets)
    with mpl.rc_context(STYLE):
        fig = new_figure(
            0.8 * units + 0.6, 2.7 * (facets[-1][0] + 1) + 0.6, title or f"{axis} per seed within each size"
        )
        grid = fig.add_gridspec(facets[-1][0] + 1, units)
        axes = [fig.add_subplot(grid[row, start:end]) for row, start, end in facets]
        few = few_seeds(rows[rows["size"].isin(sizes)].groupby("size", observed=True)["seed"].nunique())
        cut = False
        for ax, size in zip(axes, sizes, strict=True):
            cut |= _seed_facet(ax, rows[rows["size"] == size], c.metric, c.reference)
            ax.set_title(f"{size} ({few[size]})" if size in few else size)
        axes[0].set_ylabel(axis)
        fig.supxlabel(
            "points: runs; grey lines: one seed's runs; diamond and bar: the mean and its 95% t interval"
            + ("; a triangle: the interval runs on past the facet's edge" if cut else ""),
            fontsize=8,
        )
    return with_provenance(fig, df, comparison)


FACETS_PER_ROW = 5  # the seeds figure's sizes, left to right, then on the next row


def _facet_grid(variants: list[int]) -> list[tuple[int, int, int]]:
    """Where each facet of the seeds figure sits: (row, first column, end column) on a grid whose columns
    are variants, so a facet is as wide as the variants it holds (a 2-variant size is not stretched to a
    3-variant one's width, nor a 3-variant one squeezed beside it) and a variant is equally wide in every
    facet; `FACETS_PER_ROW` facets a row.

    >>> _facet_grid([2, 3, 3])
    [(0, 0, 2), (0, 2, 5), (0, 5, 8)]
    """
    out, row, column = [], 0, 0
    for i, n in enumerate(variants):
        if i and i % FACETS_PER_ROW == 0:
            row, column = row + 1, 0
        out.append((row, column, column + n))
        column += n
    return out


SPAN = 1.5  # a facet shows its runs' range and this many times it either side; an interval beyond is cut


def _seed_facet(ax, runs: pd.DataFrame, metric: str, reference: str) -> bool:
    """One size of `seeds_figure`: a line per seed, then each variant's runs and mean on top. Whether an
    interval was cut at the facet's edge (`_cut`)."""
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
    return _cut(ax, runs, metric, labels, palette)


def _cut(ax, runs: pd.DataFrame, metric: str, labels: list[str], palette: dict[str, str]) -> bool:
    """Keep a facet's runs readable where a mean's interval dwarfs them: with two seeds the 95% t interval
    is +-12.7 SE (t_{0.975, 1}), and drawn whole it squashed 320M's runs into a tenth of the facet. Where
    an interval reaches beyond the runs' range plus `SPAN` times it either side, the y axis stops there and
    a triangle in the variant's colour marks each end cut (the bar's data stay whole). Whether any was cut.
    """
    values = runs[metric].to_numpy(float)
    low, high = np.nanmin(values), np.nanmax(values)
    pad = SPAN * max(high - low, 1e-9 * max(abs(high), 1.0))
    bottom, top = low - pad, high + pad
    ends = {v: _t_interval(runs.loc[runs["Variant"] == v, metric]) for v in labels}
    if all(not (lo < bottom or hi > top) for lo, hi in ends.values()):
        return False
    ax.set_ylim(bottom, top)
    for x, (v, (lo, hi)) in enumerate(ends.items()):
        for end, edge, marker in ((lo, bottom, "v"), (hi, top, "^")):
            if end < edge if marker == "v" else end > edge:
                ax.plot(
                    [x],
                    [edge],
                    marker=marker,
                    ms=5,
                    color=palette[v],
                    ls="none",
                    clip_on=False,
                    zorder=4,
                    gid=f"cut:{v}",
                )
    return True


def calibration_figure(
    df: pd.DataFrame,
    *,
    title: str | None = None,
    comparison: Comparison | None = None,
) -> Figure:
    """Expected calibration error by size and variant, where ECE was measured.

    Parameters
    ----------
    df
        A loaded sweep (`load_sweep`). Needs at least one ECE value; rows without one are left out.
    title
        Figure title; None for the default.
    comparison
        Which variants are drawn (`rr_analysis.comparison.Comparison`; descriptive): by default every variant;
        the reference is drawn first and sets each size's x position, and named baselines limit the variants.
        The metric is ECE by definition, whatever the comparison's.

    Notes
    -----
    x: Review's mean parameter count at each size with any ECE value (log scale, ticks labelled with the
    size names), as in the other figures; the variants are nudged a few points apart around it. Each seed
    is a small point, each variant's seed mean a larger marker joined across sizes.
    """
    measured = df[df["ece"].notna()]
    if measured.empty:
        raise PlotError("the calibration plot needs ECE values; the column ece is empty in every row")
    ece = replace(asked(comparison), metric="ece", higher_is_better=False)
    measured = compare(measured, ece, require_reference=False)[0]
    reference = ece.reference
    sizes, order = sizes_in_order(measured), variants_in_order(measured, reference)
    colours = palette(order)
    means = cell_means(measured, "ece")
    at = size_positions(measured, sizes, reference)
    with mpl.rc_context(STYLE):
        fig = new_figure(max(4.5, 1.1 * len(sizes) + 2.5), 4.0, title or "Calibration by size and variant")
        ax = fig.add_subplot()
        for i, v in enumerate(order):
            points = (i - (len(order) - 1) / 2) * 6 / 72
            nudge = ax.transData + mpl.transforms.ScaledTranslation(points, 0, fig.dpi_scale_trans)
            runs = measured[measured["variant"] == v]
            line = means[means["variant"] == v].set_index("size")["mean"]
            line = line.reindex([s for s in sizes if s in line.index])
            ax.plot(at[line.index], line, "-D", color=colours[v], ms=5, lw=1.2, label=label(v), gid=v)
            run_rows(ax, runs["size"].map(at), runs["ece"], v, colours[v], ms=3, alpha=0.5)
            for artist in ax.get_lines()[-2:]:
                artist.set_transform(nudge)
        size_ticks(ax, at)
        ax.margins(x=0.1)
        ax.set_xlabel(f"Parameters ({label(reference)}, log scale)")
        ax.set_ylabel(f"Expected calibration error ({RECIPE.ece_bins} bins)")
        ax.set_ylim(bottom=0)
        ax.legend(title="Variant (points: seeds)")
    return with_provenance(fig, df, comparison)

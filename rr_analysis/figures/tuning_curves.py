"""The tuning curves (`rr plot tuning`): each variant's metric against the learning rate on its selection seeds,
with the rate it chose marked, so a reader sees how flat each optimum is and whether one lies at the grid's
edge.
"""

from __future__ import annotations

import os

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from rr_analysis.comparison import Comparison
from rr_analysis.figures.axes import STYLE, compared, metric_axis, new_figure, variants_in_order
from rr_analysis.figures.output import with_provenance
from rr_analysis.stats.tuning import tuning_table
from rr_core.palette import palette
from rr_core.variants import label

__all__ = ["tuning_plot", "tuning_figure"]


def tuning_plot(
    df: pd.DataFrame,
    *,
    ladder: str | os.PathLike | None = None,
    title: str | None = None,
    comparison: Comparison | None = None,
) -> Figure:
    """The tuning curves of a tuning file as `rr plot tuning` draws them, in one call.

    Parameters
    ----------
    df
        A tuning file (`rr tune --out FILE`, loaded by `load_sweep`): rows with ``lr`` and ``role``.
    ladder
        The ladder file whose recipe lr is its sizes' shared rate (None: rr's own).
    title, comparison
        The title (None: the default) and the comparison drawn (default the paper's).

    Returns
    -------
    `tuning_figure` of `rr_analysis.stats.tuning.tuning_table`, with the footnote naming the cells whose runs
    differ from the published ones (`with_provenance`).
    """
    table = tuning_table(df, comparison, ladder=None if ladder is None else str(ladder))
    return with_provenance(tuning_figure(table, title=title), df, comparison)


def tuning_figure(table: pd.DataFrame, *, title: str | None = None) -> Figure:
    """The metric by learning rate, a facet per size and a line per variant, each chosen rate marked.

    Parameters
    ----------
    table
        `rr_analysis.stats.tuning.tuning_table`: its "selection" rows are drawn (the "tuned" and "shared"
        gaps are the table's).
    title
        Figure title; None for the default.

    Notes
    -----
    x: the peak learning rate on a log2 axis (a grid of doublings is evenly spaced); y: the mean metric of
    the selection seeds at that rate with its 95% t interval as an error bar (none for one seed). The rate each
    variant chose is a larger marker outlined in black, a hollow one when it is the grid's edge. Gids:
    ``curve:VARIANT`` and ``chosen:VARIANT``.
    """
    curves = table[table["part"] == "selection"]
    reference, metric, higher = compared(table)
    sizes = list(dict.fromkeys(curves["size"]))
    colours = palette(variants_in_order(curves, reference))
    with mpl.rc_context(STYLE):
        fig = new_figure(
            3.4 * len(sizes) + 0.8, 3.6, title or f"{metric_axis(metric, higher)} by learning rate"
        )
        axes = fig.subplots(1, len(sizes), squeeze=False)[0]
        for ax, size in zip(axes, sizes, strict=True):
            for variant, colour in colours.items():
                rows = curves[(curves["size"] == size) & (curves["variant"] == variant)].sort_values("lr")
                if not rows.empty:
                    _curve(ax, rows, variant, colour)
            ax.set_xscale("log", base=2)
            grid = sorted(curves.loc[curves["size"] == size, "lr"].unique())
            ax.set_xticks(grid, [f"{lr:g}" for lr in grid])  # the rates tried, as --lr gave them
            ax.minorticks_off()
            ax.set_title(size)
            ax.set_xlabel("Peak learning rate")
        axes[0].set_ylabel(metric_axis(metric, higher) + "\n(selection seeds, mean and 95% CI)")
        axes[-1].legend(title="Variant (marked: the rate chosen)")
    return fig


def _curve(ax, rows: pd.DataFrame, variant: str, colour: str) -> None:
    """One variant's curve, its intervals, and its chosen rate."""
    x, y = rows["lr"].to_numpy(float), rows["estimate"].to_numpy(float)
    low, high = rows["ci_low"].to_numpy(float), rows["ci_high"].to_numpy(float)
    err = np.where(np.isnan(low), 0.0, [y - low, high - y])
    ax.errorbar(
        x,
        y,
        yerr=err,
        color=colour,
        marker="o",
        ms=4,
        lw=1.4,
        capsize=2,
        label=label(variant),
        gid=f"curve:{variant}",
    )
    for r in rows[rows["chosen"]].itertuples():
        face = "none" if r.edge else colour
        ax.plot(
            [r.lr],
            [r.estimate],
            ls="none",
            marker="o",
            ms=10,
            mfc=face,
            mec="black",
            mew=1.4,
            gid=f"chosen:{variant}",
        )

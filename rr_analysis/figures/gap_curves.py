"""The gap over training (`rr plot curves --gap`): the seed-paired gap at every logged step with its 95% t band,
a facet per cell (a size and its budget of steps), a line per baseline, so a reader sees whether an advantage
built early holds to the end of training or fades.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import matplotlib as mpl
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from rr_analysis.comparison import Comparison
from rr_analysis.figures.axes import STYLE, compared, gap_axis, new_figure
from rr_analysis.figures.output import with_provenance
from rr_analysis.stats.training_gap import SERIES, training_gap
from rr_core.palette import palette
from rr_core.sweepfile.metrics_log import load_losses
from rr_core.variants import label

__all__ = ["gap_plot", "gap_figure"]

_DASHES = {"train": "-", "val": "--"}  # the line style of each series


def gap_plot(
    df: pd.DataFrame,
    sources: Iterable[str | os.PathLike],
    *,
    title: str | None = None,
    comparison: Comparison | None = None,
) -> Figure:
    """The gap over training of a sweep as `rr plot curves --gap` draws it, in one call.

    Parameters
    ----------
    df
        The sweep (`load_sweep`): its finished runs are paired.
    sources
        Where its runs' losses were logged (`rr_core.sweepfile.metrics_log.load_losses`): the sweep file itself,
        whose runs' logs are found beside it, or metrics folders and logs.
    title, comparison
        The title (None: the default) and the reference and baselines paired (default the paper's).

    Returns
    -------
    `gap_figure` of `rr_analysis.stats.training_gap.training_gap`, with the footnote naming the cells whose
    runs differ from the published ones (`with_provenance`).
    """
    gaps = training_gap(df, load_losses(sources), comparison)
    return with_provenance(gap_figure(gaps, title=title), df, comparison)


def gap_figure(gaps: pd.DataFrame, *, title: str | None = None) -> Figure:
    """The paired gap by tokens trained: a facet per cell, a line per baseline and series, its 95% CI shaded.

    Parameters
    ----------
    gaps
        `rr_analysis.stats.training_gap.training_gap`.
    title
        Figure title; None for the default.

    Notes
    -----
    x: tokens trained (optimiser steps where a cell's tokens per step are unknown); y: baseline - reference of
    the loss at each logged step, positive favouring the reference, over the pairs that logged it, with its 95%
    t interval shaded (none at a step with one pair). The training loss is a solid line, the periodic
    validation loss (where logged) a dashed one with points; a dashed grey line marks 0. A facet is titled by
    its size, and its steps where a size was trained at several. Gids: ``gap:SIZE:STEPS:BASELINE:SERIES`` and
    ``band:SIZE:STEPS:BASELINE:SERIES``.
    """
    reference, metric, higher = compared(gaps)
    drawn = gaps[gaps["step"].notna()]
    cells = list(dict.fromkeys(zip(drawn["size"], drawn["steps"], strict=True)))
    budgets = drawn.groupby("size", sort=False, observed=True)["steps"].nunique()
    colours = palette(list(dict.fromkeys(drawn["baseline"])))
    with mpl.rc_context(STYLE):
        fig = new_figure(
            3.4 * len(cells) + 1.0,
            3.6,
            title or f"The gap over training: seed-paired, 95% CI ({label(reference)} against each baseline)",
        )
        axes = fig.subplots(1, len(cells), squeeze=False)[0]
        for ax, (size, steps) in zip(axes, cells, strict=True):
            cell = drawn[(drawn["size"] == size) & (drawn["steps"] == steps)]
            by_tokens = cell["tokens"].notna().all()
            for (baseline, series), rows in cell.groupby(["baseline", "series"], sort=False, observed=True):
                x = rows["tokens" if by_tokens else "step"]
                gid = f"{size}:{steps}:{baseline}:{series}"
                c = colours[baseline]
                ax.fill_between(
                    x, rows["ci_low"], rows["ci_high"], color=c, alpha=0.18, lw=0, gid=f"band:{gid}"
                )
                marker = "o" if series == "val" else None
                ax.plot(
                    x, rows["gap"], _DASHES[series], color=c, lw=1.4, marker=marker, ms=3, gid=f"gap:{gid}"
                )
            ax.axhline(0.0, color="0.5", lw=0.8, ls="--", zorder=1)
            ax.set_title(f"{size}, {steps} steps" if budgets[size] > 1 else size)
            ax.set_xlabel("Tokens trained" if by_tokens else "Optimiser step")
        axes[0].set_ylabel(gap_axis(reference, metric, higher))
        handles = {label(b): Line2D([], [], color=c) for b, c in colours.items()}
        handles |= {
            SERIES[s].capitalize(): Line2D(
                [], [], color="0.3", ls=_DASHES[s], marker="o" if s == "val" else None
            )
            for s in dict.fromkeys(drawn["series"])
        }
        axes[-1].legend(handles.values(), handles.keys(), title="Baseline; series")
    return fig

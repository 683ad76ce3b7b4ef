"""Training curves: the smoothed loss and the learning rate by step, a facet per size and a line per run,
from the metrics logs every run writes.
"""

from __future__ import annotations

import matplotlib as mpl
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from rr_analysis.figures.axes import STYLE, new_figure, variants_in_order
from rr_core.ladder import size_sort_key
from rr_core.variants import label, palette

__all__ = [
    "curves_figure",
]


def curves_figure(curves: pd.DataFrame, *, title: str | None = None) -> Figure:
    """Training loss (smoothed) and learning rate by step: a facet per size, one line per run.

    Parameters
    ----------
    curves
        `rr_analysis.stats.smoothing.smooth_curves` of `rr_core.sweepfile.metrics_log.load_curves`: columns size,
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
    colours = palette(variants_in_order(curves))
    with mpl.rc_context(STYLE):
        fig = new_figure(3.2 * len(sizes) + 0.8, 5.2, title or "Training loss and learning rate by step")
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

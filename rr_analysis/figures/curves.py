"""Training curves: the smoothed loss and the learning rate by step, a facet per size and a line per run,
from the metrics logs every run writes.
"""

from __future__ import annotations

import matplotlib as mpl
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from rr_analysis.figures.axes import STYLE, new_figure, variants_in_order
from rr_analysis.numbers import significant
from rr_core.ladder import size_sort_key
from rr_core.variants import label, palette

__all__ = [
    "curves_figure",
    "RAW_MARKERS",
]

RAW_MARKERS = 200  # a run's raw readings are drawn as points up to this many; beyond, a thin line alone


def curves_figure(curves: pd.DataFrame, *, title: str | None = None) -> Figure:
    """Training loss (smoothed) and learning rate by step: a facet per size, one line per run.

    Parameters
    ----------
    curves
        `rr_analysis.stats.smoothing.smooth_curves` of `rr_core.sweepfile.metrics_log.load_curves`: columns size,
        variant, seed, step, loss, loss_smooth, half_life and lr.
    title
        Figure title; None for the default.

    Notes
    -----
    Top row: each run's smoothed training loss (a line in its variant's colour) over its raw readings, drawn
    as points joined by a thin line so that they stay visible where the smoothed line covers them (the points
    are left out above `RAW_MARKERS` readings a run, where they would be a smear). The y label names the
    half-life. Bottom row: its learning rate (runs without a logged lr draw none). Sizes left to right in
    ladder order; each line's gid is ``raw:VARIANT:SEED``, ``loss:VARIANT:SEED`` or ``lr:VARIANT:SEED``.
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
        axes[0, 0].set_ylabel(_smoothed(curves))
        axes[1, 0].set_ylabel("Learning rate")
        handles = {label(v): Line2D([], [], color=c) for v, c in colours.items()}
        axes[0, -1].legend(handles.values(), handles.keys(), title="Variant (a line per seed)")
    return fig


def _smoothed(curves: pd.DataFrame) -> str:
    """The loss axis' label, naming the half-life every run was smoothed with (or that each run has its own)."""
    lives = curves["half_life"].unique()
    if len(lives) == 1 and lives[0] == 0:
        return "Training loss (raw)"
    if len(lives) == 1:
        return f"Training loss (EMA, half-life {significant(lives[0], 3)} steps)"
    return f"Training loss (EMA, half-life {significant(lives.min(), 3)}-{significant(lives.max(), 3)} steps)"


def _curve(loss_ax, lr_ax, run: pd.DataFrame, name: str, c: str) -> None:
    """One run's raw and smoothed loss, and its lr where logged; `name` is VARIANT:SEED."""
    marker = "o" if len(run) <= RAW_MARKERS else None
    loss_ax.plot(
        run["step"], run["loss"], color=c, alpha=0.45, lw=0.7, marker=marker, ms=2.5, gid=f"raw:{name}"
    )
    loss_ax.plot(run["step"], run["loss_smooth"], color=c, lw=1.4, gid=f"loss:{name}")
    if run["lr"].notna().any():
        lr_ax.plot(run["step"], run["lr"], color=c, lw=1.2, gid=f"lr:{name}")

"""Training curves from the metrics logs every run writes: the smoothed loss and the learning rate by step, a
facet per size and a line per run; and the gates over training, each gated sublayer's r by step.

`rr gates` reads r on one batch of one checkpoint; `gates_figure` draws what the trainer logged at every log
point (`rr_core.sweepfile.metrics_log.load_gates`), so it shows where each layer's gates opened or closed
while the run learned. `curves_plot` and `gates_plot` draw each from the logs in one call, as `rr plot curves`
and `rr plot gates` do.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

import matplotlib as mpl
import pandas as pd
from matplotlib.cm import ScalarMappable
from matplotlib.colors import BoundaryNorm
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from rr_analysis.cells import of_sizes
from rr_analysis.comparison import Comparison
from rr_analysis.figures.axes import STYLE, new_figure, variants_in_order
from rr_analysis.figures.output import with_provenance
from rr_analysis.numbers import significant
from rr_analysis.stats.smoothing import smooth_curves
from rr_core.ladder import size_sort_key
from rr_core.palette import palette
from rr_core.sweepfile.metrics_log import load_curves, load_gates
from rr_core.variants import label

__all__ = ["curves_plot", "curves_figure", "gates_plot", "gates_figure", "RAW_MARKERS", "LAYER_COLOURS"]

LAYER_COLOURS = "viridis"  # depth on a sequential, colour-blind-safe scale: first layer dark, last light
_SUBLAYERS = {"attn": "attention", "mlp": "MLP"}

RAW_MARKERS = 200  # a run's raw readings are drawn as points up to this many; beyond, a thin line alone

Sources = Iterable[str | os.PathLike]
# the sweep whose runs a figure of logs draws, for its footnote: its rows, or a function that reads them, which
# is called once the logs are read (so that a log that cannot be read is what is reported, as the command does)
Sweep = pd.DataFrame | Callable[[], pd.DataFrame] | None


def curves_plot(
    sources: Sources,
    *,
    half_life: float | None = None,
    weight: float | None = None,
    title: str | None = None,
    comparison: Comparison | None = None,
    sweep: Sweep = None,
) -> tuple[Figure, tuple[float, ...]]:
    """The training curves of runs as `rr plot curves` draws them, from their metrics logs, in one call.

    Parameters
    ----------
    sources
        Dataset CSVs, metrics folders or ``.jsonl`` logs (`rr_core.sweepfile.metrics_log.load_curves`).
    half_life, weight
        The smoothing (`rr_analysis.stats.smoothing.smooth_curves`): a half-life in steps (None: each run's
        default), or the deprecated per-reading weight of the old ``--smooth``, read as a half-life per run.
    title
        Figure title; None for the default.
    comparison
        Its sizes choose the runs drawn (`rr_analysis.cells.of_sizes`); default every size.
    sweep
        The sweep file whose runs these are (its rows, or a function returning them), for the footnote naming
        its cells whose runs differ from the published ones (`with_provenance`); None draws none.

    Returns
    -------
    The figure (`curves_figure`), and the half-lives the runs were smoothed with, each once in run order: what
    `weight` was read as, which the command tells its user.
    """
    c = comparison or Comparison()
    curves = smooth_curves(of_sizes(load_curves(sources), c), half_life, weight=weight)
    fig = _footnoted(curves_figure(curves, title=title), sweep, c)
    return fig, tuple(dict.fromkeys(curves["half_life"]))


def gates_plot(
    sources: Sources, *, title: str | None = None, comparison: Comparison | None = None, sweep: Sweep = None
) -> Figure:
    """Each gated sublayer's r over training as `rr plot gates` draws it, from the runs' metrics logs.

    Parameters
    ----------
    sources
        Dataset CSVs, metrics folders or ``.jsonl`` logs (`rr_core.sweepfile.metrics_log.load_gates`).
    title, comparison, sweep
        As `curves_plot`'s: the title, the sizes drawn, and the sweep whose cells the footnote names.

    Returns
    -------
    `gates_figure` of the runs' gate readings, with the footnote of `sweep`.
    """
    c = comparison or Comparison()
    return _footnoted(gates_figure(of_sizes(load_gates(sources), c), title=title), sweep, c)


def _footnoted(fig: Figure, sweep: Sweep, comparison: Comparison) -> Figure:
    """`fig` with the provenance footnote of `sweep` (read now, when a function), or as it is without one."""
    if sweep is None:
        return fig
    return with_provenance(fig, sweep() if callable(sweep) else sweep, comparison)


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
    """The loss axis' label, naming the half-life every run was smoothed with (or the range of the runs' own),
    on two lines so that it is no taller than a facet."""
    lives = curves["half_life"].unique()
    if len(lives) == 1 and lives[0] == 0:
        return "Training loss\n(raw readings)"
    if len(lives) == 1:
        return f"Training loss\n(EMA, half-life {significant(lives[0], 3)} steps)"
    return (
        f"Training loss\n(EMA, half-life {significant(lives.min(), 3)}-{significant(lives.max(), 3)} steps)"
    )


def _curve(loss_ax, lr_ax, run: pd.DataFrame, name: str, c: str) -> None:
    """One run's raw and smoothed loss, and its lr where logged; `name` is VARIANT:SEED."""
    marker = "o" if len(run) <= RAW_MARKERS else None
    loss_ax.plot(
        run["step"], run["loss"], color=c, alpha=0.45, lw=0.7, marker=marker, ms=2.5, gid=f"raw:{name}"
    )
    loss_ax.plot(run["step"], run["loss_smooth"], color=c, lw=1.4, gid=f"loss:{name}")
    if run["lr"].notna().any():
        lr_ax.plot(run["step"], run["lr"], color=c, lw=1.2, gid=f"lr:{name}")


def gates_figure(gates: pd.DataFrame, *, title: str | None = None) -> Figure:
    """Each gated sublayer's mean r by step: a row per size and variant, attention and MLP side by side,
    a line per run and layer coloured by depth, and one grey band per panel for the typical spread.

    Parameters
    ----------
    gates
        `rr_core.sweepfile.metrics_log.load_gates`: columns size, variant, seed, step, layer, sublayer, mean
        and std.
    title
        Figure title; None for the default.

    Notes
    -----
    r near 1 lets a sublayer's update through, near 0 holds it back; Review's gates start at exactly 0.5.
    Each layer is a line (no band of its own: twelve overlapping bands hid the lines and each other); the
    panel's one band is the summary of spread, at each step the mean over its runs and layers of r
    -/+ the mean over them of r's standard deviation (over the positions, channels and forward passes of
    the log interval): a spread, not an interval of an estimate. Rows follow the ladder, then the registry's
    variant order; each row's colour bar runs over its own layers. Each line's gid is
    ``r:SIZE:VARIANT:SEED:LAYER:SUBLAYER``, each band's ``spread:SIZE:VARIANT:SUBLAYER``.
    """
    order = {v: i for i, v in enumerate(variants_in_order(gates))}
    rows = sorted(
        gates[["size", "variant"]].drop_duplicates().itertuples(index=False),
        key=lambda r: (size_sort_key(r.size), r.size, order[r.variant]),
    )
    cmap = mpl.colormaps[LAYER_COLOURS]
    with mpl.rc_context(STYLE):
        fig = new_figure(
            8.4,
            2.6 * len(rows) + 0.6,
            title or "Gate r by step: a line per layer; grey: mean over layers, +-1 mean std",
        )
        axes = fig.subplots(len(rows), len(_SUBLAYERS), squeeze=False, sharex="row", sharey=True)
        for row, (size, variant) in enumerate(rows):
            runs = gates[(gates["size"] == size) & (gates["variant"] == variant)]
            layers = int(runs["layer"].max()) + 1
            norm = BoundaryNorm(range(layers + 1), cmap.N)
            for col, (sublayer, name) in enumerate(_SUBLAYERS.items()):
                ax = axes[row, col]
                part = runs[runs["sublayer"] == sublayer]
                _spread(ax, part, f"spread:{size}:{variant}:{sublayer}")
                for (seed, layer), line in part.groupby(["seed", "layer"], sort=True, observed=True):
                    ax.plot(
                        line["step"],
                        line["mean"],
                        color=cmap(norm(layer)),
                        lw=1.1,
                        gid=f"r:{size}:{variant}:{seed}:{layer}:{sublayer}",
                    )
                ax.set_title(f"{size} {label(variant)}: {name}")
                ax.set_xlabel("Optimiser step")
            axes[row, 0].set_ylabel("Gate r (a line per run and layer)")
            shown = range(0, layers, -(-layers // 8))  # at most 8 labels, the first layer's always
            bar = fig.colorbar(
                ScalarMappable(norm, cmap), ax=axes[row, :].tolist(), ticks=[i + 0.5 for i in shown]
            )
            bar.ax.set_yticklabels([str(i) for i in shown])
            bar.set_label("Layer")
    return fig


def _spread(ax, part: pd.DataFrame, gid: str) -> None:
    """A panel's one band: at each step, the mean over runs and layers of r -/+ the mean of r's std."""
    at = part.groupby("step", observed=True)[["mean", "std"]].mean()
    ax.fill_between(
        at.index, at["mean"] - at["std"], at["mean"] + at["std"], color="0.5", alpha=0.18, lw=0, gid=gid
    )

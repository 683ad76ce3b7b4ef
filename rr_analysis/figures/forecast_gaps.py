"""The gap by size carried past the sweep: the primary size-level line with its CI and PI bands, each
forecast size's gap (`forecast_figure`), drawn from a sweep as `rr plot forecast` draws it by `forecast_plot`.
"""

from __future__ import annotations

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from rr_analysis.comparison import Comparison, asked
from rr_analysis.figures.axes import (
    STYLE,
    fitted_lines,
    legend_beside,
    new_figure,
    size_ticks,
    tokens_ticks,
    unequal_rings,
    unequal_says,
)
from rr_analysis.figures.estimates import gap_estimates, require_gap_table
from rr_analysis.figures.output import with_provenance
from rr_analysis.stats.forecast import forecast as predict
from rr_analysis.stats.forecast import meta_line
from rr_analysis.stats.gap_tests import gap_table
from rr_core.errors import PlotError
from rr_core.palette import palette
from rr_core.variants import REFERENCE, label

__all__ = ["forecast_plot", "forecast_figure"]


def forecast_plot(
    df: pd.DataFrame, at: list[str], *, title: str | None = None, comparison: Comparison | None = None
) -> Figure:
    """The forecast figure of a sweep as `rr plot forecast --at ...` draws it, in one call.

    Parameters
    ----------
    df
        A loaded sweep (`load_sweep`).
    at
        The sizes to forecast: ladder names or counts such as ``"3B"``.
    title, comparison
        The title (None: the default) and the comparison drawn (default the paper's).

    Returns
    -------
    `forecast_figure` of the sweep's `gap_table`, `meta_line` to `at` and `forecast` at `at`, with the
    footnote naming the cells whose runs differ from the published ones (`with_provenance`).
    """
    c = asked(comparison)
    table, line = gap_table(df, comparison=c), meta_line(df, at, comparison=c)
    return with_provenance(forecast_figure(table, line, predict(df, at, comparison=c), title=title), df, c)


def forecast_figure(
    table: pd.DataFrame, line: pd.DataFrame, forecast: pd.DataFrame, *, title: str | None = None
) -> Figure:
    """The primary size-level line carried past the sweep: observed gaps, the line, and each forecast point.

    Parameters
    ----------
    table
        `rr_analysis.stats.gap_tests.gap_table` of the sweep: the observed seed-paired gaps and their 95% CIs.
    line
        `rr_analysis.stats.forecast.meta_line` reaching the forecast sizes: the line with its CI and PI bands.
    forecast
        `rr_analysis.stats.forecast.forecast`: each forecast size's predicted gap, 95% CI (thick bar) and 95% PI
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
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> from rr_analysis.stats.forecast import forecast, meta_line
    >>> from rr_analysis.stats.gap_tests import gap_table
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
    per_param = pd.concat(
        [
            table.drop_duplicates("size").set_index("size").get("tokens_per_param", sizes * np.nan),
            fc.drop_duplicates("at").set_index("at").get("tokens_per_param", pd.Series(dtype=float)),
        ]
    )
    dn = tokens_ticks(
        per_param[~per_param.index.duplicated()], prefix=""
    )  # the ticks are close: the label says
    with mpl.rc_context(STYLE):
        fig = new_figure(
            4.2 * len(baselines) + 3.4, 4.4, title or f"{ref}'s advantage, forecast past the sweep"
        )
        axes = fig.subplots(1, len(baselines), squeeze=False, sharey=True).ravel()
        for ax, b in zip(axes, baselines, strict=True):
            ax.set_xscale("log")
            _forecast_facet(
                ax,
                est[est["baseline"] == b],
                line[line["baseline"] == b],
                fc[fc["baseline"] == b],
                colours[b],
                sizes.max(),
                ticks.max() * 1.4,
            )
            size_ticks(ax, ticks[~ticks.index.duplicated()], tokens=dn)
            ax.set_xlim(ticks.min() / 1.4, ticks.max() * 1.4)
            ax.set_title(f"{ref} vs. {label(b)}")
        axes[0].set_ylabel(f"Baseline \u2212 {ref} (the gap)\n(positive: {ref} better)")
        handles, labels = axes[0].get_legend_handles_labels()  # every facet's entries are alike
        legend_beside(axes[-1], handles, labels, fontsize=7)
        fig.supxlabel(
            f"Parameters ({ref}, log scale); shaded: past the largest size in the sweep"
            + (
                "\nunder each size: training tokens per parameter (D/N; past the sweep, the path's, which the "
                "line assumes)"
                if dn
                else ""
            ),
            fontsize=8,
        )
    return fig


def _forecast_facet(ax, e, line, fc, colour: str, largest: float, right: float) -> None:
    """One baseline: the zero line, the shaded extrapolation, observed gaps, the fitted line, forecasts."""
    ax.axhline(0.0, color="0.35", ls="--", lw=0.9, zorder=1, gid="zero")
    ax.axvspan(largest, right, color="0.93", lw=0, zorder=0, gid="beyond")
    e = e[np.isfinite(e["estimate"].to_numpy(float))]
    y = e["estimate"].to_numpy(float)
    ax.errorbar(
        e["params_M"].to_numpy(float),
        y,
        yerr=[y - e["ci_low"], e["ci_high"] - y],
        fmt="o",
        color=colour,
        ms=5,
        elinewidth=1.0,
        capsize=3,
        label="observed: seed-paired gap, 95% CI",
        gid="observed",
    )
    unequal_rings(ax, e, y, colour, "unequal")
    unequal_says(ax, e)
    fitted_lines(ax, line, {line["baseline"].iloc[0]: colour} if len(line) else {}, pi=True)
    x, p = fc["params"].to_numpy(float) / 1e6, fc["pred"].to_numpy(float)
    ax.errorbar(
        x,
        p,
        yerr=[p - fc["pi_low"], fc["pi_high"] - p],
        fmt="none",
        ecolor=colour,
        elinewidth=1.0,
        capsize=5,
        gid="forecast_pi",
    )
    ax.errorbar(
        x,
        p,
        yerr=[p - fc["ci_low"], fc["ci_high"] - p],
        fmt="D",
        color=colour,
        mfc="white",
        ms=6,
        elinewidth=3.0,
        capsize=0,
        label="forecast: 95% CI (thick), 95% PI (thin)",
        gid="forecast",
    )

"""The gap by size: the paper's Figure 2 (`emergence_figure`) with the primary size-level line and its
band, drawn from a sweep as `rr plot emergence` draws it by `emergence_plot`. The same line carried past the
sweep is `rr_analysis.figures.forecast_gaps`'.
"""

from __future__ import annotations

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from rr_analysis.cells import cell_size
from rr_analysis.comparison import (
    ALPHA,
    PRIMARY_TEST,
    Comparison,
    asked,
    for_reference,
)
from rr_analysis.figures.axes import (
    STYLE,
    compared,
    few_seeds,
    fitted_lines,
    gap_axis,
    legend_beside,
    new_figure,
    size_ticks,
    tokens_ticks,
    unequal_rings,
    unequal_says,
)
from rr_analysis.figures.estimates import adjust_name, gap_estimates, require_gap_table, test_name
from rr_analysis.figures.output import with_provenance
from rr_analysis.numbers import significant
from rr_analysis.stats.forecast import meta_line
from rr_analysis.stats.gap_tests import gap_table
from rr_core.errors import PlotError
from rr_core.palette import palette
from rr_core.variants import REFERENCE, label, matched

__all__ = ["emergence_plot", "emergence_figure"]


def emergence_plot(
    df: pd.DataFrame,
    *,
    stat: str = PRIMARY_TEST,
    adjust: str = "holm",
    fit: bool = True,
    title: str | None = None,
    comparison: Comparison | None = None,
) -> Figure:
    """The emergence figure of a sweep as `rr plot emergence` draws it with the same options: the one recipe
    behind every emergence file rr writes, so that a file name means one figure whoever wrote it (the
    command, `rr report`).

    Parameters
    ----------
    df
        A loaded sweep (`load_sweep`).
    stat, adjust, fit, title
        `rr plot emergence`'s ``--stat``, ``--adjust``, ``--fit/--no-fit`` and ``--title``; the defaults draw
        the primary analysis (the seed-paired test, Holm, its 95% CIs, the size-level line and its band).
        ``stat="welch", adjust="none", fit=False`` is the paper's Figure 2, with 95% CIs where the paper drew
        +-1 SE (`emergence_figure` says why).
    comparison
        The comparison drawn (`rr_analysis.comparison.Comparison`, or its fields); default the paper's.

    Returns
    -------
    `emergence_figure` of ``gap_table(df, adjust, comparison)``, with ``meta_line(df)``'s fitted line when
    `fit`, and the footnote naming the cells whose runs differ from the published ones (`with_provenance`).

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> fig = emergence_plot(load_sweep(), stat="welch", adjust="none", fit=False)  # the paper's
    """
    c = asked(comparison)
    line = meta_line(df, comparison=c) if fit else None
    drawn = emergence_figure(gap_table(df, adjust, c), stat=stat, title=title, line=line)
    return with_provenance(drawn, df, c)


def emergence_figure(
    table: pd.DataFrame,
    *,
    stat: str = PRIMARY_TEST,
    title: str | None = None,
    line: pd.DataFrame | None = None,
) -> Figure:
    """The paper's Figure 2: Review's (the reference's) advantage over each baseline against model size.

    Parameters
    ----------
    table
        `rr_analysis.stats.gap_tests.gap_table` of the sweep; its ``adjust`` method decides the stars, its comparison
        columns (`rr_analysis.comparison.STAMP`) the reference and metric the labels name. Needs a gap at two
        sizes or more.
    stat
        Which test's estimate, error bar and significance are drawn: ``"paired"`` (the declared primary,
        `rr_analysis.comparison.PRIMARY_TEST`), ``"mixed"`` or ``"welch"`` (the paper's; see
        `rr_analysis.figures.estimates.gap_estimates`).
    title
        Figure title; None for the default.
    line
        `rr_analysis.stats.forecast.meta_line`: the primary size-level model's fitted line per baseline, drawn
        with its 95% confidence band; None draws none.

    Notes
    -----
    x: the reference's mean parameter count at each size (log scale, ticks labelled with the size names). y:
    the test's estimate of gap = baseline loss - reference loss (of the table's metric; reference - baseline
    when higher is better), one line per baseline, positive favours the reference, with the 95% confidence
    interval of the test drawn: estimate -/+ t_{0.975, df} SE with that test's own df (Welch-Satterthwaite,
    n_pairs - 1, the mixed model's), so a bar clear of zero agrees with its unadjusted two-sided p < 0.05.
    Every interval bar rr draws is a 95% interval (the forecast's, the seeds figure's, the tuning curves'),
    so bars of one gap in two figures are the same bars; the paper's Figure 2 drew +-1 SE, which a reader
    takes for a CI and which with two or three seeds spans a third of one or less. A
    dashed line marks zero; a star marks an adjusted p < `rr_analysis.comparison.ALPHA` (the table's method
    over its family of cells, named in the subtitle) and sits beyond the bar on the estimate's side of
    zero. The paper's figure is ``stat="welch"`` on ``gap_table(df, adjust="none")``. The baselines are
    nudged a few points apart horizontally so their bars do not hide each other; the data coordinates stay
    exact. A point whose test is n/a is drawn without a bar (its reason is in the table). A point whose arms'
    parameter counts differ by more than `rr_analysis.comparison.PARAMS_TOLERANCE` is ringed (the tables mark
    its gap), since part of such a gap may be capacity rather than the rule.

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> from rr_analysis.stats.gap_tests import gap_table
    >>> fig = emergence_figure(gap_table(load_sweep()))
    """
    require_gap_table(table, "emergence_figure")
    reference, metric, higher = compared(table)
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
    cells = table.drop_duplicates("size").set_index("size")
    budgets = _budgets(table)  # a file of several budgets: one line per (baseline, budget)
    lines = [(b, steps) for b in baselines for steps in (budgets or [None])]
    with mpl.rc_context(STYLE):
        fig = new_figure(9.0, 4.4, title or f"{ref}'s advantage over each baseline, by model size")
        ax = fig.add_subplot()
        ax.axhline(0.0, color="0.35", ls="--", lw=0.9, zorder=1, gid="zero")
        for i, (b, steps) in enumerate(lines):
            points = (i - (len(lines) - 1) / 2) * 5 / 72
            nudge = ax.transData + mpl.transforms.ScaledTranslation(points, 0, fig.dpi_scale_trans)
            e = est[(est["baseline"] == b) & (est["size"].map(cells["steps"]) == steps if steps else True)]
            style = _BUDGET_STYLES[budgets.index(steps) % len(_BUDGET_STYLES)] if steps else "-o"
            _gap_line(ax, e, b, colours[b], nudge, reference == REFERENCE, steps, style)
        if line is not None:
            fitted_lines(ax, line, colours)
        unequal_says(ax, est)
        seeds = table.groupby("size", sort=False, observed=True)[
            "n_pairs" if stat == "paired" else for_reference("n_review", reference)
        ].max()
        if budgets:  # the cells of one size share its x: a tick per size, D/N told by the lines' budgets
            at = cells["params_M"][sizes].groupby(cells["params_M"][sizes], sort=False, observed=True).head(1)
            size_ticks(ax, at.rename(index=cell_size))
            dn = {}
        else:
            dn = tokens_ticks(cells["tokens_per_param"][sizes]) if "tokens_per_param" in cells else {}
            size_ticks(ax, cells["params_M"][sizes], few_seeds(seeds), dn)
        ax.margins(x=0.08, y=0.12)
        ax.set_xlabel(
            f"Parameters ({ref}, log scale)"
            + ("; D/N: training tokens per parameter" if dn else "")
            + ("; a line per budget (steps)" if budgets else "")
        )
        ax.set_ylabel(gap_axis(reference, metric, higher))
        ax.set_title(_stars_say(table, stat), loc="left", fontsize=8, color="0.3")
        legend_beside(ax, title=f"{ref} vs.")
    return fig


def _stars_say(table: pd.DataFrame, stat: str) -> str:
    """The subtitle: which test, which bars, and which p-values the stars use over which family."""
    method = table["adjust"].iloc[0]
    family = f" over {int(table[f'family_m_{stat}'].iloc[0])} cells" if method != "none" else ""
    return f"{test_name(stat)}; bars 95% CI; * {adjust_name(method)} p < {significant(ALPHA)}{family}"


_BUDGET_STYLES = ("-o", "--s", ":^", "-.D")  # a file of several budgets: one line style per budget


def _budgets(table: pd.DataFrame) -> list[int]:
    """The step counts of a gap table whose sizes hold several budgets (cells `SIZE@STEPS`), smallest first;
    [] for a table of one budget per size."""
    if "steps" not in table or table.groupby("params_M", observed=True)["steps"].nunique().max() < 2:
        return []
    return sorted(int(s) for s in table["steps"].dropna().unique())


def _gap_line(
    ax,
    e: pd.DataFrame,
    baseline: str,
    colour: str,
    nudge,
    published: bool,
    steps: int | None = None,
    style: str = "-o",
) -> None:
    """One baseline's gaps with their 95% CI bars, and a star beyond the bar where the adjusted p is small.

    `published`: the reference is the published one, to whose parameter count the registry's matched
    baselines are widened, so their legend says so. `steps`: the budget this line is of, in a file of
    several budgets (drawn in `style`, and named in the legend)."""
    y = e["estimate"].to_numpy()
    lo, hi = e["ci_low"].to_numpy(), e["ci_high"].to_numpy()
    named = label(baseline) + " (parameter-matched)" * (published and matched(baseline))
    bars = ax.errorbar(
        e["params_M"].to_numpy(float),
        y,
        yerr=[y - lo, hi - y],
        fmt=style,
        color=colour,
        ms=5,
        lw=1.6,
        elinewidth=1.1,
        capsize=3,
        label=named + (f", {steps} steps" if steps else ""),
        gid=baseline + (f"@{steps}" if steps else ""),
    )
    for artist in (bars.lines[0], *bars.lines[1], *bars.lines[2]):
        artist.set_transform(nudge)  # after autoscaling, which used exact x
    unequal_rings(ax, e, y, colour, f"unequal:{baseline}", nudge)
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

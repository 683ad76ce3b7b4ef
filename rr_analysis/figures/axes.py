"""What every figure shares: the house style (applied while a figure is built, never globally), the order
and colour of variants and sizes, the axes of a gap or a metric, and the marks both gap-by-size figures
draw (the fitted size-level line and its bands, the rings around gaps whose arms differ in size).

Colours and labels come from the variant registry (`rr_core.variants`), the order of sizes from
`rr_analysis.comparison.sizes_in_order`: one fixed, colour-blind-safe colour per variant in every figure.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from rr_analysis.comparison import METRIC, PARAMS_TOLERANCE, STAMP, sizes_in_order
from rr_analysis.numbers import percent, significant
from rr_core.errors import PlotError
from rr_core.variants import REFERENCE, label, order_key

# A quiet house style, applied while a figure is built (not globally, so notebooks keep theirs).
STYLE = {
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


def variants_in_order(df: pd.DataFrame, reference: str = REFERENCE) -> list[str]:
    """The variants present, the reference first, then in registry order (`order_key`)."""
    return sorted(df["variant"].unique(), key=lambda v: (v != reference, order_key(v)))


def compared(table: pd.DataFrame) -> tuple[str, str, bool]:
    """(reference, metric, higher_is_better) a statistics table states (`rr_analysis.comparison.STAMP`)."""
    if len(table) and set(STAMP) <= set(table.columns):
        return table["reference"].iloc[0], table["metric"].iloc[0], bool(table["higher_is_better"].iloc[0])
    return REFERENCE, METRIC, False


def gap_axis(reference: str, metric: str, higher: bool) -> str:
    """The y label of a gap: which difference it is, and that positive favours the reference."""
    ref, q = label(reference), "loss" if metric == METRIC else metric
    what = f"{ref} {q} \u2212 baseline {q}" if higher else f"Baseline {q} \u2212 {ref} {q}"
    return f"{what}\n(positive: {ref} better)"


def metric_axis(metric: str, higher: bool) -> str:
    """The y label of a raw metric: 'Validation loss' for the published one, else the column and its direction."""
    if (metric, higher) == (METRIC, False):
        return "Validation loss"
    return f"{metric} ({'higher' if higher else 'lower'} is better)"


def new_figure(width: float, height: float, title: str | None) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


def legend_beside(ax, handles=None, labels=None, **kwargs) -> None:
    """`ax`'s legend (or the given entries) outside it on the right, top-aligned: a legend inside the axes
    hides whatever data lie under it (the forecast's crossed the 7B interval, the emergence figure's
    95% CIs), and the constrained layout makes room for it beside the axes."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), **kwargs)


def size_ticks(
    ax, at: pd.Series, notes: dict[str, str] | None = None, tokens: dict[str, str] | None = None
) -> None:
    """Log x axis with one tick per size at `at[size]` (its parameter count), labelled with its name.

    `tokens` adds a line under a size's name (its tokens per parameter, "D/N 2.20"), `notes` one more (its
    steps, or that it has fewer seeds).
    """
    notes, tokens = notes or {}, tokens or {}
    ax.set_xscale("log")
    labels = ["\n".join(x for x in (s, tokens.get(s), notes.get(s)) if x) for s in at.index]
    ax.set_xticks(at.to_numpy(float), labels=labels)
    ax.xaxis.set_minor_locator(NullLocator())


def size_positions(df: pd.DataFrame, sizes: list[str], reference: str = REFERENCE) -> pd.Series:
    """Each size's x position: the reference's mean parameter count there (any variant's where it is absent)."""
    ref = df[df["variant"] == reference].groupby("size", observed=True)["params_M"].mean()
    every = df.groupby("size", observed=True)["params_M"].mean()
    return ref.reindex(sizes).fillna(every.reindex(sizes))


def tokens_ticks(per_param: pd.Series, prefix: str = "D/N ") -> dict[str, str]:
    """ "D/N 2.20" under each size: its tokens per parameter (`rr_analysis.stats.tokens`), where a table gives
    them, so a reader of a trend with size sees the training budget move with it (`prefix` "" where the
    ticks are close: the axis label then says what the line is)."""
    from rr_analysis.stats.tokens import per_param as words

    return {s: f"{prefix}{words(v)}" for s, v in per_param.items() if pd.notna(v)}


def few_seeds(n_seeds: pd.Series) -> dict[str, str]:
    """ "2 seeds" under each size that has fewer seeds than the best-covered size in the figure.

    A reader comparing sizes should see at once where an estimate rests on fewer runs (320M has two).
    """
    n_seeds = n_seeds.astype(int)
    return {s: f"{n} seed{'s' * (n != 1)}" for s, n in n_seeds.items() if n < n_seeds.max()}


def steps_per_size(df: pd.DataFrame, sizes: list[str]) -> dict[str, str]:
    """Each size's training steps ("8000 steps", or a range), shown where the sizes differ in steps.

    The published 590M and 1B runs trained 7000 and 6000 steps against 8000 below: their losses are not
    on one compute curve, and the figure must not let a reader forget it.
    """
    steps = df.groupby("size", observed=True)["steps"].agg(["min", "max"]).loc[sizes]
    if steps["min"].nunique() == 1 and steps["max"].nunique() == 1 and (steps["min"] == steps["max"]).all():
        return {}
    return {
        s: f"{significant(lo)} steps" if lo == hi else f"{significant(lo)}-{significant(hi)} steps"
        for s, (lo, hi) in steps.astype(int).iterrows()
    }


def run_rows(ax, x, y, variant: str, colour: str, *, ms: float, alpha: float = 0.6) -> None:
    """Every run as a small point in its variant's colour."""
    ax.plot(x, y, "o", color=colour, ms=ms, alpha=alpha, mew=0, zorder=3, gid=f"runs:{variant}")


def require_sizes(df: pd.DataFrame, what: str, n: int = 2) -> list[str]:
    sizes = sizes_in_order(df)
    if len(sizes) < n:
        raise PlotError(
            f"the {what} plot needs at least {n} sizes to draw a trend; the data have "
            f"{len(sizes)} ({', '.join(sizes) or 'none'})"
        )
    return sizes


LINE_SAYS = "dotted: size-level meta-regression on log10(params)\n(primary; REML, Knapp-Hartung), band 95% CI"


def fitted_lines(ax, line: pd.DataFrame, colours: dict[str, str], pi: bool = False) -> None:
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


UNEQUAL_SAYS = f"ring: the arms' parameter counts differ by more than {percent(PARAMS_TOLERANCE)}\n(part of the gap may be capacity)"


def unequal_rings(ax, e: pd.DataFrame, y, colour: str, gid: str, transform=None) -> None:
    """An open ring around each gap whose arms differ in size beyond `PARAMS_TOLERANCE` (``params_flagged``),
    so the figure flags it where the gap is drawn, as the tables do with their mark."""
    flagged = e["params_flagged"].to_numpy(dtype=bool)
    if flagged.any():
        ax.plot(
            e["params_M"].to_numpy(float)[flagged],
            np.asarray(y)[flagged],
            ls="none",
            marker="o",
            ms=11,
            mfc="none",
            mec=colour,
            mew=1.2,
            zorder=4,
            gid=gid,
            **({"transform": transform} if transform else {}),
        )


def unequal_says(ax, est: pd.DataFrame) -> None:
    """The legend entry of the rings, where any gap drawn has them."""
    if est["params_flagged"].to_numpy(dtype=bool).any():
        ax.plot([], [], ls="none", marker="o", ms=11, mfc="none", mec="0.3", mew=1.2, label=UNEQUAL_SAYS)

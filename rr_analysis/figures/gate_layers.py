"""The gate anatomy of one run, by layer: how open each gate is, how much of it depends on the token, what
freezing it costs, and for Review which half of its gate matrix moves the logit (`rr plot gates --checkpoint`).

Draws the table `rr_model.uses.anatomy.gate_anatomy` returns (its columns are documented there); this module
reads only that table (and, for `anatomy_plot`'s title, what `rr_model.uses.anatomy.anatomy` says it read), so
a notebook draws a table of its own the same way.
"""

from __future__ import annotations

import matplotlib as mpl
import pandas as pd
from matplotlib.figure import Figure

from rr_analysis.figures.axes import STYLE, new_figure

__all__ = ["anatomy_plot", "anatomy_figure", "SUBLAYER_COLOURS", "SHARE_STYLES"]

# attention and MLP apart (Okabe-Ito blue and vermillion), a line each
SUBLAYER_COLOURS = {"attn": ("#0072B2", "attention"), "mlp": ("#D55E00", "MLP")}
# the logit's variance shares: the stream half of W, the update half, twice their covariance
SHARE_STYLES = {
    "state_share": ("-", "stream half"),
    "update_share": ("--", "update half"),
    "cov_share": (":", "2 cov"),
}


def anatomy_plot(found, *, title: str | None = None) -> Figure:
    """The gate anatomy of one run as `rr plot gates --checkpoint` draws it: `anatomy_figure`, titled by default
    with the weights, the windows and the corpus it was read on.

    Parameters
    ----------
    found
        `rr_model.uses.anatomy.anatomy`'s result (its ``table``, ``path``, ``windows`` and ``corpus``; the
        analysis does not import the model, so any object with those serves).
    title
        Figure title; None names the run's weights and the text read.

    Returns
    -------
    `anatomy_figure` of ``found.table``.
    """
    default = f"Gate anatomy by layer: {found.path.name}, {found.windows} held-out windows of {found.corpus}"
    return anatomy_figure(found.table, title=title or default)


def anatomy_figure(table: pd.DataFrame, *, title: str | None = None) -> Figure:
    """A panel per measure against the layer, attention and MLP apart.

    Parameters
    ----------
    table
        `rr_model.uses.anatomy.gate_anatomy`'s: layer, sublayer, mean, std, token_share, freeze_delta,
        logit_var, state_share, update_share, cov_share.
    title
        Figure title; None for the default.

    Notes
    -----
    Panels: mean r with +-1 std shaded; token_share (0: a fixed level per channel, 1: all token); freeze_delta
    (the loss change when r is frozen at its per-channel mean; dashed zero line); and, where the rule splits
    its logit (Review), the shares of the logit's token variance carried by the stream half of W (solid), the
    update half (dashed) and twice their covariance (dotted). A missing value (no spread to share) is a gap.
    Each line's gid is ``MEASURE:SUBLAYER``.
    """
    split = table["state_share"].notna().any()
    panels = ["mean", "token_share", "freeze_delta", *(["shares"] if split else [])]
    labels = {
        "mean": "Gate r (mean, +-1 std)",
        "token_share": "token_share of r's variance",
        "freeze_delta": "Loss change, r frozen\n(freeze_delta)",
        "shares": "Share of the logit's\ntoken variance",
    }
    with mpl.rc_context(STYLE):
        fig = new_figure(3.0 * len(panels) + 1.4 * split, 3.0, title or "Gate anatomy by layer")
        axes = fig.subplots(1, len(panels), squeeze=False, sharex=True)[0]
        for ax, panel in zip(axes, panels, strict=True):
            for sublayer, (colour, name) in SUBLAYER_COLOURS.items():
                part = table[table["sublayer"] == sublayer].sort_values("layer")
                if part.empty:
                    continue
                x = part["layer"]
                if panel == "mean":
                    lo, hi = part["mean"] - part["std"], part["mean"] + part["std"]
                    ax.fill_between(x, lo, hi, color=colour, alpha=0.15, lw=0)
                if panel == "shares":
                    for column, (style, what) in SHARE_STYLES.items():
                        ax.plot(
                            x,
                            part[column],
                            color=colour,
                            ls=style,
                            marker="o",
                            ms=3,
                            label=f"{name}: {what}",
                            gid=f"{column}:{sublayer}",
                        )
                else:
                    ax.plot(
                        x, part[panel], color=colour, marker="o", ms=3, label=name, gid=f"{panel}:{sublayer}"
                    )
            if panel == "freeze_delta":
                ax.axhline(0, color="#777777", lw=0.8, ls="--")
            ax.set_xlabel("Layer")
            ax.set_ylabel(labels[panel])
            ax.xaxis.get_major_locator().set_params(integer=True)
        axes[0].legend(loc="best")
        if split:  # six lines: beside the panel, not over it
            axes[-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7, handlelength=2.6)
    return fig

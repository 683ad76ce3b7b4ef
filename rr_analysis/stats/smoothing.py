"""Training curves smoothed for reading: an exponential moving average of each run's logged loss, weighted by
the distance in optimiser steps between readings, not by how many readings lie between them.

Why by step distance: a run logged every 4 steps and one logged every 400 are then smoothed over the same
stretch of training, and a run with few readings (a tiny run's ten) is not dragged behind its own curve. A
per-reading weight (TensorBoard's 0.6, rr's old `--smooth`) averages over a fixed count of readings instead:
ten readings of a falling loss put the smoothed line half a nat above the last raw one.

The curves themselves are read by `rr_core.sweepfile.metrics_log.load_curves` from the metrics logs every run
writes; `rr_analysis.figures.curves.curves_figure` draws what `smooth_curves` returns.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rr_core.errors import InputError

__all__ = ["ema", "default_half_life", "half_life_of_weight", "smooth_curves", "SPAN_SHARE"]

# The default half-life, as a share of a run's logged steps: the smoothed line of a steadily falling loss
# lags it by at most half-life / ln 2, 1.4% of the run, whatever the logging interval. Ten readings are then
# drawn as they are (each weighs about 2^-11 of the next); a thousand are averaged over about ten.
SPAN_SHARE = 0.01


def ema(steps: np.ndarray, values: np.ndarray, half_life: float) -> np.ndarray:
    """Debiased exponential moving average of readings `values` logged at `steps` (increasing), each
    reading's weight halving every `half_life` steps; NaN readings skipped (they carry the last value).

    Notes
    -----
    s_i = sum_j 2^(-(t_i - t_j)/h) x_j / sum_j 2^(-(t_i - t_j)/h), over the finite readings j <= i. On
    readings logged every D steps this is the per-reading EMA s_t = w s_{t-1} + (1 - w) x_t with weight
    w = 2^(-D/h) and its bias correction s_t / (1 - w^n) (Adam's and TensorBoard's), so the first reading is
    itself. h = 0 gives the raw readings. On evenly logged readings of a line x = a - b t the smoothed value
    lags by at most h / ln 2 steps (the weights' mean age, D / (2^(D/h) - 1) at most): s_i <= x(t_i - h / ln 2).

    Example
    -------
    >>> ema(np.array([0, 10, 30]), np.array([4.0, 2.0, 2.0]), 10).round(4).tolist()  # weights 1; 1/2, 1; 1/8, 1/4, 1
    [4.0, 2.6667, 2.1818]
    """
    if not half_life >= 0:
        raise InputError(f"the smoothing half-life {half_life} must be a number of steps >= 0")
    t, x = np.asarray(steps, dtype=float), np.asarray(values, dtype=float)
    out, num, den, last = np.full(len(x), np.nan), 0.0, 0.0, None
    for i in range(len(x)):
        if np.isfinite(x[i]):
            keep = 0.0 if last is None or half_life == 0 else 2.0 ** (-(t[i] - t[last]) / half_life)
            num, den, last = keep * num + x[i], keep * den + 1.0, i
        out[i] = num / den if last is not None else np.nan
    return out


def default_half_life(steps: np.ndarray) -> float:
    """The half-life a run's curve is smoothed with unless one is asked for: `SPAN_SHARE` of the steps its
    readings span (0 for a single reading).

    Example
    -------
    >>> default_half_life(np.arange(4, 44, 4))  # ten readings, steps 4 to 40
    0.36
    """
    steps = np.asarray(steps, dtype=float)
    return round(SPAN_SHARE * float(np.ptp(steps)), 12) if len(steps) else 0.0


def half_life_of_weight(steps: np.ndarray, weight: float) -> float:
    """The half-life in steps that smooths readings logged at `steps` as the per-reading weight `weight`
    did (rr's old `--smooth`): the median log interval x ln 0.5 / ln weight, the same curve where the
    readings are evenly spaced.

    Example
    -------
    >>> half_life_of_weight(np.array([0, 10, 20]), 0.5)  # a reading's weight halves at the next one
    10.0
    """
    if not 0 <= weight < 1:
        raise InputError(f"smoothing weight {weight} must be in [0, 1)")
    gaps = np.diff(np.asarray(steps, dtype=float))
    if weight == 0 or not len(gaps):
        return 0.0
    return float(np.median(gaps)) * math.log(0.5) / math.log(weight)


def smooth_curves(
    curves: pd.DataFrame, half_life: float | None = None, *, weight: float | None = None
) -> pd.DataFrame:
    """`curves` (from `load_curves`) with each run's loss smoothed by `ema`, in step order.

    Parameters
    ----------
    curves
        Columns size, variant, seed, step and loss (and any others, kept).
    half_life
        In steps, for every run; None: each run's `default_half_life`.
    weight
        Deprecated: the per-reading weight of rr's old `--smooth`, turned into each run's half-life by
        `half_life_of_weight` (the old curve where readings are evenly spaced). Not with `half_life`.

    Returns
    -------
    A copy sorted by size, variant, seed and step, with the added columns loss_smooth and half_life (the
    run's half-life in steps).
    """
    if half_life is not None and weight is not None:
        raise InputError("give a smoothing half-life or the old per-reading weight, not both")
    out = curves.sort_values(["size", "variant", "seed", "step"]).reset_index(drop=True)
    out["loss_smooth"], out["half_life"] = np.nan, np.nan
    for _, idx in out.groupby(["size", "variant", "seed"], sort=False, observed=True).groups.items():
        steps = out.loc[idx, "step"].to_numpy(float)
        if weight is not None:
            h = half_life_of_weight(steps, weight)
        else:
            h = default_half_life(steps) if half_life is None else half_life
        out.loc[idx, "loss_smooth"] = ema(steps, out.loc[idx, "loss"].to_numpy(float), h)
        out.loc[idx, "half_life"] = h
    return out

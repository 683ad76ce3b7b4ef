"""Training curves smoothed for reading: an exponential moving average of each run's logged loss.

The curves themselves are read by `rr_core.sweepfile.metrics_log.load_curves` from the metrics logs every run
writes; `rr_analysis.figures.curves.curves_figure` draws what `smooth_curves` returns.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rr_core.errors import InputError

__all__ = ["ema", "smooth_curves", "SMOOTHING"]

SMOOTHING = 0.6  # TensorBoard's default weight: light enough for the ten readings of a tiny run


def ema(values: np.ndarray, weight: float = SMOOTHING) -> np.ndarray:
    """Debiased exponential moving average of a series, NaN readings skipped (they carry the last value).

    Notes
    -----
    s_t = w s_{t-1} + (1 - w) x_t with s_0 = 0, reported as s_t / (1 - w^n_t), n_t the readings so far
    (the bias correction of Adam and TensorBoard), so the first reading is itself and no curve starts at 0.

    Example
    -------
    >>> ema(np.array([4.0, 2.0, 2.0]), 0.5).round(4).tolist()  # s = 2, 2, 2 over 1 - w^n = 0.5, 0.75, 0.875
    [4.0, 2.6667, 2.2857]
    """
    if not 0 <= weight < 1:
        raise InputError(f"smoothing weight {weight} must be in [0, 1)")
    out, s, n = np.empty(len(values)), 0.0, 0
    for i, x in enumerate(np.asarray(values, dtype=float)):
        if np.isfinite(x):
            s, n = weight * s + (1 - weight) * x, n + 1
        out[i] = s / (1 - weight**n) if n else np.nan
    return out


def smooth_curves(curves: pd.DataFrame, weight: float = SMOOTHING) -> pd.DataFrame:
    """`curves` (from `load_curves`) with ``loss_smooth``: each run's loss through `ema`, in step order.

    Returns
    -------
    A copy sorted by size, variant, seed and step, with the added column loss_smooth.
    """
    out = curves.sort_values(["size", "variant", "seed", "step"]).reset_index(drop=True)
    out["loss_smooth"] = np.nan
    for _, idx in out.groupby(["size", "variant", "seed"], sort=False, observed=True).groups.items():
        out.loc[idx, "loss_smooth"] = ema(out.loc[idx, "loss"].to_numpy(float), weight)
    return out

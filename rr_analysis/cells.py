"""The cells every analysis is built on: sizes and baselines in order, the (size, baseline) frame, t tails.

Shared by `stats`, `mixed` and `emergence`, which import this module and never each other backwards; `ALPHA`,
the one significance level, lives here too.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rr_model.core.errors import InputError
from rr_model.core.ladder import size_sort_key
from rr_model.core.variants import BASELINES, REFERENCE, order_key

__all__ = ["ALPHA", "sizes_in_order", "baselines_in_order", "cell_frame", "t_sf2", "t_quantile"]

# Every test's two-sided level: a p below it is "significant" (the paper's star), a TOST below it shows
# equivalence, a slope below it is evidence of emergence, and power is planned at it.
ALPHA = 0.05


def sizes_in_order(df: pd.DataFrame) -> list[str]:
    """The sizes present, ordered by mean parameter count (then by label)."""
    m = df.groupby("size")["params_M"].mean()
    return sorted(m.index, key=lambda s: (m[s], size_sort_key(s), s))


def baselines_in_order(df: pd.DataFrame) -> list[str]:
    """Every non-reference variant present: the registry's BASELINES first, then the rest in registry order
    (`order_key`: names nobody registered last, by name)."""
    present = set(df["variant"].unique())  # unique first: iterating 10^5 arrow strings is slow
    order = [*BASELINES, *sorted(present - set(BASELINES), key=order_key)]
    return [v for v in order if v in present and v != REFERENCE]


def cell_frame(df: pd.DataFrame) -> pd.DataFrame:
    """The (size, baseline) skeleton every table is built on, with Review's parameter count."""
    sizes, baselines = sizes_in_order(df), baselines_in_order(df)
    if not (df["variant"] == REFERENCE).any():
        raise InputError(f"no {REFERENCE} runs in the data: every comparison is against {REFERENCE}")
    if not baselines:
        raise InputError(f"only {REFERENCE} runs in the data: there is no baseline to compare with")
    out = pd.DataFrame(
        {"size": np.repeat(sizes, len(baselines)), "baseline": np.tile(baselines, len(sizes))}, dtype=object
    )
    ref = df[df["variant"] == REFERENCE].groupby("size")["params_M"].mean()
    out["params_M"] = out["size"].map(ref).astype(float)
    return out


def t_sf2(t: np.ndarray, dof: np.ndarray) -> np.ndarray:
    """Two-sided p of a t statistic."""
    from scipy.special import stdtr

    return 2.0 * stdtr(dof, -np.abs(t))


def t_quantile(q: float, dof: np.ndarray) -> np.ndarray:
    """The q-quantile of t with `dof` degrees of freedom."""
    from scipy.special import stdtrit

    return stdtrit(dof, q)

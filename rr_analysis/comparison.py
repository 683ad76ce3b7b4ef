"""The cells every analysis is built on: the comparison (reference, baselines, metric), sizes and baselines in
order, the (size, baseline) frame, t tails.

Shared by `stats`, `mixed` and `emergence`, which import this module and never each other backwards; `ALPHA`,
the one significance level, lives here too.

Any comparison, not only the paper's: `compare` picks the reference's and the baselines' rows and the metric
every test reads, as the column `RESPONSE`. The response is oriented so that lower is better (the metric
itself, or its negation under ``higher_is_better``), so every gap = mean(baseline) - mean(reference) of the
response, and a positive gap always means the reference is better. The defaults are the published comparison:
review_neutral against every other variant present (highway and standard), on val_loss, lower is better.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rr_core.errors import InputError
from rr_core.sweepfile.dataset import size_order
from rr_core.variants import BASELINES, REFERENCE, order_key

__all__ = [
    "ALPHA",
    "METRIC",
    "RESPONSE",
    "STAMP",
    "Comparison",
    "compare",
    "sizes_in_order",
    "baselines_in_order",
    "cell_frame",
    "t_sf2",
    "t_quantile",
]

# Every test's two-sided level: a p below it is "significant" (the paper's star), a TOST below it shows
# equivalence, a slope below it is evidence of emergence, and power is planned at it.
ALPHA = 0.05
METRIC = "val_loss"  # the published response; lower is better
RESPONSE = "response"  # the column `compare` adds: the metric, negated under higher_is_better
STAMP: tuple[str, ...] = ("reference", "metric", "higher_is_better")  # what every result frame states
_KEYS = ("size", "variant", "seed")  # design columns, never a response


@dataclass(frozen=True)
class Comparison:
    """What a result compares: the reference, the baselines in order, the metric and its direction."""

    reference: str = REFERENCE
    baselines: tuple[str, ...] = ()
    metric: str = METRIC
    higher_is_better: bool = False

    @property
    def keywords(self) -> dict:
        """The keyword arguments that ask every analysis function for this comparison."""
        return {"reference": self.reference, "baselines": self.baselines, "metric": self.metric,
                "higher_is_better": self.higher_is_better}  # fmt: skip

    def stamp(self, out: pd.DataFrame) -> pd.DataFrame:
        """`out` with the `STAMP` columns (re)placed at its end, so JSON and CSV state the comparison."""
        out = out.drop(columns=[c for c in STAMP if c in out])
        return out.assign(
            reference=self.reference, metric=self.metric, higher_is_better=self.higher_is_better
        )


def _variants_in_order(present: Sequence[str]) -> list[str]:
    """`present` with the registry's BASELINES first, then in registry order (`order_key`: names nobody
    registered last, by name)."""
    return [v for v in BASELINES if v in present] + sorted(set(present) - set(BASELINES), key=order_key)


def _check_metric(df: pd.DataFrame, metric: str) -> None:
    numeric = [
        c for c in df.columns if c not in _KEYS and c != RESPONSE and pd.api.types.is_numeric_dtype(df[c])
    ]
    if metric in _KEYS or metric not in df.columns or metric not in numeric:
        what = (
            "a design column"
            if metric in _KEYS
            else "not a numeric column"
            if metric in df
            else "not a column"
        )
        raise InputError(
            f"the metric {metric!r} is {what} of the data; the numeric columns are {', '.join(numeric)}"
        )


def _chosen(present: list[str], reference: str, baselines: Sequence[str] | None) -> list[str]:
    """The baselines asked for, checked against the variants present, or every other variant present."""
    if baselines is None:
        return [v for v in _variants_in_order(present) if v != reference]
    baselines = list(baselines)
    shown = ", ".join(present)
    for problem, names in (
        ("is the reference; a variant is not compared with itself", [b for b in baselines if b == reference]),
        ("is named twice", sorted({b for b in baselines if baselines.count(b) > 1})),
        (
            f"has no runs in the data (the variants present: {shown})",
            [b for b in baselines if b not in present],
        ),
    ):
        if names:
            raise InputError(f"the baseline {names[0]!r} {problem}")
    if not baselines:
        raise InputError(
            "no baseline named: give at least one, or leave the baselines out to compare with every other variant"
        )
    return baselines


def compare(
    df: pd.DataFrame,
    reference: str = REFERENCE,
    baselines: Sequence[str] | None = None,
    metric: str = METRIC,
    higher_is_better: bool = False,
    *,
    require_reference: bool = True,
) -> tuple[pd.DataFrame, Comparison]:
    """The rows a comparison reads, with its oriented response, and the comparison with its baselines resolved.

    Parameters
    ----------
    df
        A validated sweep (`rr_core.sweepfile.dataset.load_sweep`).
    reference
        The variant every gap is measured against (default: review_neutral, the paper's).
    baselines
        The variants compared with it, in this order; None: every other variant present, the registry's
        `BASELINES` first, then the registry's order, then names nobody registered, by name.
    metric
        A numeric column of `df` (val_loss, ece, minutes, or an extra column the file carries); rows without a
        value are left out.
    higher_is_better
        The metric is better when higher (an accuracy): the response is its negation.
    require_reference
        False for descriptive views (notes, the raw figures): with the default reference and no baselines
        named, every variant is kept and data without the reference are described as before.

    Returns
    -------
    (rows, comparison): the rows of the reference and the baselines that have the metric, with a column
    `RESPONSE` (the metric, or minus it under higher_is_better, so that lower is better and a positive gap
    favours the reference); the `Comparison` with the baselines listed. Raises InputError for a reference or
    baseline absent from the data, a reference named as a baseline, and a metric that is missing, not
    numeric, or empty in every compared row.

    Notes
    -----
    response = metric (lower is better) or -metric (higher is better); every test then reads
    gap = mean(response | baseline) - mean(response | reference), which is mean(baseline) - mean(reference)
    of the metric, or mean(reference) - mean(baseline) under higher_is_better: positive favours the reference.
    Negation is exact in floating point, so a higher-is-better analysis is the lower-is-better one of -metric
    to the last bit.

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> rows, c = compare(load_sweep(), "highway", ["standard"], "ece")
    >>> c.baselines, sorted(rows["variant"].unique()), int(rows["response"].notna().sum())
    (('standard',), ['highway', 'standard'], 28)
    """
    _check_metric(df, metric)
    present = list(df["variant"].unique())  # unique first: iterating 10^5 arrow strings is slow
    required = require_reference or baselines is not None or reference != REFERENCE
    if required and reference not in present:
        shown = "" if reference == REFERENCE else f" (the variants present: {', '.join(present)})"
        raise InputError(f"no {reference} runs in the data: every comparison is against {reference}{shown}")
    chosen = _chosen(present, reference, baselines)
    has = df[metric].notna()
    rows = df[df["variant"].isin([reference, *chosen]) & has] if required else df[has]
    if rows.empty:
        raise InputError(f"the metric {metric!r} is empty in every row compared")
    valued = set(rows["variant"].unique())
    for v in [reference, *chosen] if required else []:
        if v not in valued:
            raise InputError(
                f"the metric {metric!r} has no value in any {v} row: {v} cannot be compared on it"
            )
    rows = rows.assign(**{RESPONSE: -rows[metric] if higher_is_better else rows[metric]})
    return rows, Comparison(reference, tuple(chosen), metric, bool(higher_is_better))


def sizes_in_order(df: pd.DataFrame) -> list[str]:
    """The sizes present, ordered by mean parameter count (then by label): `rr_core.sweepfile.dataset.size_order`,
    the order of a loaded sweep's ``size`` categories."""
    return size_order(df)


def baselines_in_order(df: pd.DataFrame, reference: str = REFERENCE) -> list[str]:
    """Every variant present but the reference: the registry's BASELINES first, then the rest in registry order
    (`order_key`: names nobody registered last, by name)."""
    return [v for v in _variants_in_order(list(df["variant"].unique())) if v != reference]


def cell_frame(rows: pd.DataFrame, c: Comparison) -> pd.DataFrame:
    """The (size, baseline) skeleton every table is built on, with the reference's parameter count.

    `rows` and `c` are what `compare` returns; the sizes are those of `rows` (`sizes_in_order`).
    """
    if not c.baselines:
        raise InputError(f"only {c.reference} runs in the data: there is no baseline to compare with")
    sizes, baselines = sizes_in_order(rows), list(c.baselines)
    out = pd.DataFrame(
        {"size": np.repeat(sizes, len(baselines)), "baseline": np.tile(baselines, len(sizes))}, dtype=object
    )
    ref = rows[rows["variant"] == c.reference].groupby("size", observed=True)["params_M"].mean()
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

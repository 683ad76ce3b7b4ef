"""The comparison every analysis is built on, and the cells it reads: `Comparison` (reference, baselines,
metric, direction, sizes), sizes and baselines in order, the (size, baseline) frame, t tails.

Shared by `stats`, `mixed` and `emergence`, which import this module and never each other backwards; `ALPHA`,
the one significance level, lives here too.

A comparison is one value, `Comparison`, that flows from the command line (`cli.fields.dataclass_options`)
through every analysis function to the `STAMP` columns of its result; its fields' defaults are the published
comparison (review_neutral against every other variant present, on val_loss, lower is better), and their
metadata are the command line's options (`rr_core.options.option`): a new documented field is an option of
every command that takes a comparison. Every analysis function takes it one way, as ``comparison=`` (None: the
paper's; `asked`). `compare` picks the rows of the sizes asked for (`of_sizes`), the reference's and the
baselines' rows and the metric every test reads, as the column `RESPONSE`. The response is oriented so that
lower is better (the metric itself, or its negation under ``higher_is_better``), so every gap =
mean(baseline) - mean(reference) of the response, and a positive gap always means the reference is better.

Light to import (numpy and pandas load inside the functions that compute), so the command line reads the
options' declarations here without loading them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from rr_analysis.cells import budget_cells, of_sizes
from rr_core.errors import InputError, did_you_mean
from rr_core.options import option
from rr_core.variants import BASELINES, REFERENCE, nearest, order_key

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

__all__ = [
    "ALPHA",
    "POWER",
    "METRIC",
    "RESPONSE",
    "PAIR",
    "STAMP",
    "Comparison",
    "asked",
    "compare",
    "sizes_in_order",
    "cell_frame",
    "t_sf2",
    "t_quantile",
    "t_interval",
    "PARAMS_TOLERANCE",
    "PARAMS_COLUMNS",
    "for_reference",
    "PRIMARY_TEST",
    "TESTS",
    "ADJUST_METHODS",
]

# Every test's two-sided level: a p below it is "significant" (the paper's star), a TOST below it shows
# equivalence, a slope below it is evidence of emergence, and power is planned at it.
ALPHA = 0.05
POWER = 0.8  # the power every seed plan aims for (Cohen's conventional 80%)
# The per-size tests (`rr_analysis.stats.gap_tests.gap_table` runs each) and the multiple-testing adjustments of
# a family of them; held here, light, so that the command line lists them without loading pandas.
PRIMARY_TEST = "paired"  # the declared primary per-size test; "mixed" is its twin, "welch" the paper's
TESTS: tuple[str, ...] = ("welch", "paired", "mixed")
ADJUST_METHODS: tuple[str, ...] = ("holm", "bonferroni", "fdr_bh", "none")
METRIC = "val_loss"  # the published response; lower is better
RESPONSE = "response"  # the column `compare` adds: the metric, negated under higher_is_better
# The column `compare` adds: the block a run is paired on (the batches it trained on): its data_seed where the
# file records one, else its seed, which then set the data order too. Every seed-paired or seed-blocked
# analysis reads it.
PAIR = "pair"
STAMP: tuple[str, ...] = ("reference", "metric", "higher_is_better")  # what every result frame states
_KEYS = ("size", "variant", "seed", "size_name", "init_seed", "data_seed")  # design columns, never a response
# Two arms' parameter counts may differ by this fraction before a gap between them is flagged as partly capacity.
PARAMS_TOLERANCE = 0.02
# What `cell_frame` says of the two arms' sizes, beside size and baseline; every per-cell table carries them.
PARAMS_COLUMNS: tuple[str, ...] = ("params_M", "baseline_params_M", "params_mismatch", "params_flagged")
# Result columns holding the reference's own numbers: their names for the paper's reference (review_neutral) and,
# with {} the reference's name, for any other (`for_reference`).
_OF_REFERENCE = {"n_review": "n_{}", "review_mean": "{}_mean"}


@dataclass(frozen=True)
class Comparison:
    """What a result compares: the reference, the baselines in order, the metric and its direction, and the
    sizes read (`of_sizes`).

    The defaults are the paper's comparison. Each field's metadata is its command-line option (`rr_core.options`).
    """

    reference: str = field(
        default=REFERENCE,
        metadata=option(
            "The variant every gap is measured against (positive gap: the reference is better).",
            metavar="NAME",
        ),
    )
    baselines: tuple[str, ...] | None = field(
        default=None,
        metadata=option(
            "The variants compared with the reference, comma-separated, in this order. Default: every other "
            "variant present (the published sweep: highway, standard).",
            metavar="A,B,...",
            comma=True,
            items="variant names separated by commas, e.g. highway,standard",
        ),
    )  # None: every other variant present (`compare` resolves them)
    metric: str = field(
        default=METRIC,
        metadata=option(
            "The numeric column compared: val_loss, ece (where measured) or any extra numeric column of the "
            "file. Lower is better unless --higher-is-better.",
            metavar="COLUMN",
        ),
    )
    higher_is_better: bool = field(
        default=False,
        metadata=option(
            "The metric is better when higher (an accuracy): gaps become reference - baseline, so a positive "
            "gap still favours the reference."
        ),
    )
    sizes: tuple[str, ...] | None = field(
        default=None,
        metadata=option(
            "Only these sizes, comma-separated, in any case (e.g. 60M,1B): every test, family, figure and "
            "note reads their rows alone. Default: every size present.",
            metavar="A,B,...",
            comma=True,
            items="size names separated by commas, e.g. 60M,150M",
        ),
    )  # None: every size present; otherwise the size labels (`of_sizes`)

    def __post_init__(self) -> None:
        if self.baselines is not None:
            object.__setattr__(self, "baselines", tuple(self.baselines))
        if self.sizes is not None:
            object.__setattr__(self, "sizes", tuple(self.sizes))
        object.__setattr__(self, "higher_is_better", bool(self.higher_is_better))

    @property
    def published(self) -> bool:
        """Whether this is the paper's comparison as asked for (every field at its default)."""
        return self == Comparison()

    def stamp(self, out: pd.DataFrame) -> pd.DataFrame:
        """`out` with the `STAMP` columns (re)placed at its end, so JSON and CSV state the comparison, and the
        reference's own columns named for it (`for_reference`: ``n_myrule``, not ``n_review``, when myrule is
        the reference)."""
        out = out.drop(columns=[c for c in STAMP if c in out])
        out = out.rename(columns={c: for_reference(c, self.reference) for c in _OF_REFERENCE if c in out})
        return out.assign(
            reference=self.reference, metric=self.metric, higher_is_better=self.higher_is_better
        )


def for_reference(column: str, reference: str) -> str:
    """The name a result column holding the reference's numbers has when `reference` is the reference: the
    paper's names (``n_review``, ``review_mean``) for review_neutral, the reference's own otherwise, so a table
    of myrule against standard never reads as if Review had run. Any other column keeps its name, as does
    every column where the reference's name would make it another's (a variant named ``baseline``).

    Example
    -------
    >>> for_reference("n_review", "myrule"), for_reference("review_mean", "review_neutral")
    ('n_myrule', 'review_mean')
    """
    if column not in _OF_REFERENCE or reference in (REFERENCE, "baseline"):
        return column
    return _OF_REFERENCE[column].format(reference)


def asked(comparison: Comparison | None = None) -> Comparison:
    """The comparison a function is asked for: `comparison`, or the paper's where it is None.

    Every analysis function takes the comparison one way, as one `Comparison` (``comparison=``), never its
    fields as keywords beside it: a notebook writes ``gap_table(df, comparison=Comparison("highway"))``.

    Example
    -------
    >>> asked(), asked(Comparison("highway", ["standard"])).baselines
    (Comparison(reference='review_neutral', baselines=None, metric='val_loss', higher_is_better=False, sizes=None), ('standard',))
    """
    return Comparison() if comparison is None else comparison


def _variants_in_order(present: Sequence[str]) -> list[str]:
    """`present` with the registry's BASELINES first, then in registry order (`order_key`: names nobody
    registered last, by name)."""
    return [v for v in BASELINES if v in present] + sorted(set(present) - set(BASELINES), key=order_key)


def _check_metric(df: pd.DataFrame, metric: str) -> None:
    import pandas as pd

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
            hint = did_you_mean(nearest(names[0], present)) if names[0] not in present else ""
            raise InputError(f"the baseline {names[0]!r}{hint} {problem}")
    if not baselines:
        raise InputError(
            "no baseline named: give at least one, or leave the baselines out to compare with every other variant"
        )
    return baselines


def one_rate(df: pd.DataFrame, what: str) -> None:
    """InputError when `df` trains one (size, variant, seed) at several learning rates (a tuning, `rr tune`).

    Every analysis that pairs runs by seed, or pools a cell's seeds, would mix rows of different rates in one
    cell; only the tuning view (`rr analyze tuning`, `rr plot tuning`) reads such a file. `what` names the
    analysis in the message (a view, a figure)."""
    if "lr" in df.columns and df.duplicated(["size", "variant", "seed", "steps"]).any():
        where = df.attrs.get("path") or "the data"
        raise InputError(
            f"{where} holds runs of one (size, variant, seed) at several learning rates (a tuning, rr tune); "
            f"{what} pairs runs by seed and would mix the rates: use rr analyze tuning or rr plot tuning, or "
            "give it a file of one rate per run"
        )


def compare(
    df: pd.DataFrame,
    comparison: Comparison | None = None,
    *,
    require_reference: bool = True,
    several_rates: bool = False,
) -> tuple[pd.DataFrame, Comparison]:
    """The rows a comparison reads, with its oriented response, and the comparison with its baselines resolved.

    Parameters
    ----------
    df
        A validated sweep (`rr_core.sweepfile.dataset.load_sweep`).
    comparison
        The comparison (`Comparison`; default the paper's): the
        reference every gap is measured against; the baselines compared with it, in this order (None: every
        other variant present, the registry's `BASELINES` first, then the registry's order, then names
        nobody registered, by name); the metric, a numeric column of `df` (val_loss, ece, minutes, or an
        extra column the file carries; rows without a value are left out); and whether it is better when
        higher (an accuracy: the response is its negation).
    require_reference
        False for descriptive views (notes, the raw figures): with the default reference and no baselines
        named, every variant is kept and data without the reference are described as before.
    several_rates
        True only for the tuning analysis: `df` may hold a (size, variant, seed) at several learning rates.
        Otherwise such a file is refused (`one_rate`): every other analysis and figure would mix the rates.

    Returns
    -------
    (rows, comparison): the rows of the reference and the baselines that have the metric, with a column
    `RESPONSE` (the metric, or minus it under higher_is_better, so that lower is better and a positive gap
    favours the reference) and a column `PAIR` (the block each run is paired on: its data_seed where the file
    records one, else its seed); the `Comparison` with the baselines listed. Raises InputError for a reference or
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
    >>> rows, c = compare(load_sweep(), Comparison("highway", ["standard"], "ece"))
    >>> c.baselines, sorted(rows["variant"].unique()), int(rows["response"].notna().sum())
    (('standard',), ['highway', 'standard'], 28)
    """
    c = asked(comparison)
    reference, baselines, metric = c.reference, c.baselines, c.metric
    df = of_sizes(df, c)
    if not several_rates:
        one_rate(df, "this analysis")
    df = budget_cells(df)
    _check_metric(df, metric)
    present = list(df["variant"].unique())  # unique first: iterating 10^5 arrow strings is slow
    required = require_reference or baselines is not None or reference != REFERENCE
    if required and reference not in present:
        shown = "" if reference == REFERENCE else f" (the variants present: {', '.join(present)})"
        hint = did_you_mean(nearest(reference, present))
        raise InputError(
            f"no {reference} runs in the data{hint}: every comparison is against {reference}{shown}"
        )
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
    rows = rows.assign(
        **{RESPONSE: -rows[metric] if c.higher_is_better else rows[metric], PAIR: _pairs(rows)}
    )
    return rows, replace(c, baselines=tuple(chosen))


def _pairs(rows: pd.DataFrame) -> pd.Series:
    """The block each row is paired on (`PAIR`): the seed of its data order, so arms that trained on the same
    batches are paired; a run's seed where the file has no data_seed or its cell is empty (the published way:
    one seed set both)."""
    if "data_seed" not in rows.columns:
        return rows["seed"]
    return rows["data_seed"].fillna(rows["seed"]).astype("int64")


def sizes_in_order(df: pd.DataFrame) -> list[str]:
    """The sizes present, ordered by mean parameter count (then by label): `rr_core.sweepfile.dataset.size_order`,
    the order of a loaded sweep's ``size`` categories."""
    from rr_core.sweepfile.dataset import size_order

    return size_order(df)


def cell_frame(rows: pd.DataFrame, c: Comparison) -> pd.DataFrame:
    """The (size, baseline) skeleton every table is built on, with both arms' parameter counts.

    `rows` and `c` are what `compare` returns; the sizes are those of `rows` (`sizes_in_order`). Columns:
    ``size, baseline, params_M`` (the reference's mean parameter count at the size, millions: the x of every
    figure), ``baseline_params_M`` (the baseline's), ``params_mismatch`` (the larger count over the smaller,
    minus 1, as `rr_analysis.stats.notes` measures a size's spread) and ``params_flagged`` (params_mismatch >
    `PARAMS_TOLERANCE`: the arms differ in size as well as in rule, so part of their gap may be capacity; a
    plugin rule compared with baselines widened to Review's count is the usual case).
    """
    import numpy as np
    import pandas as pd

    if not c.baselines:
        raise InputError(f"only {c.reference} runs in the data: there is no baseline to compare with")
    sizes, baselines = sizes_in_order(rows), list(c.baselines)
    out = pd.DataFrame(
        {"size": np.repeat(sizes, len(baselines)), "baseline": np.tile(baselines, len(sizes))}, dtype=object
    )
    ref = rows[rows["variant"] == c.reference].groupby("size", observed=True)["params_M"].mean()
    out["params_M"] = out["size"].map(ref).astype(float)
    params = rows.groupby(["size", "variant"], observed=True)["params_M"].mean()
    cells = pd.MultiIndex.from_arrays([out["size"], out["baseline"]])
    out["baseline_params_M"] = params.reindex(cells).to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        arms = out[["params_M", "baseline_params_M"]]
        out["params_mismatch"] = arms.max(axis=1, skipna=False) / arms.min(axis=1, skipna=False) - 1.0
    out["params_flagged"] = (out["params_mismatch"] > PARAMS_TOLERANCE).to_numpy(dtype=bool)
    return out


def t_sf2(t: np.ndarray, dof: np.ndarray) -> np.ndarray:
    """Two-sided p of a t statistic."""
    import numpy as np
    from scipy.special import stdtr

    return 2.0 * stdtr(dof, -np.abs(t))


def t_quantile(q: float, dof: np.ndarray) -> np.ndarray:
    """The q-quantile of t with `dof` degrees of freedom."""
    from scipy.special import stdtrit

    return stdtrit(dof, q)


def t_interval(mean: np.ndarray, sd: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 95% t interval of a mean: mean +- t(0.975, n - 1) sd / sqrt(n); NaN below two values.

    Example
    -------
    >>> import numpy as np
    >>> low, high = t_interval(np.array([1.0]), np.array([2.0]), np.array([4]))  # t(0.975, 3) = 3.1824
    >>> round(float(low[0]), 4), round(float(high[0]), 4)
    (-2.1824, 4.1824)
    """
    import numpy as np

    n = np.asarray(n, dtype=float)
    ok = n >= 2
    half = np.where(ok, t_quantile(0.975, np.maximum(n - 1, 1)) * sd / np.sqrt(np.maximum(n, 1)), np.nan)
    return np.where(ok, mean - half, np.nan), np.where(ok, mean + half, np.nan)

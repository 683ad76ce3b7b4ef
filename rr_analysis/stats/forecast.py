"""What the size-level line says about a size the sweep has not run: the gap it predicts there, how sure that
is, and the run-level models' predictions beside it, with a warning that grows with the extrapolation.

The primary forecast is the primary emergence model's (`rr_analysis.stats.emergence`, level (c)): the per-size
seed-paired gaps meta-regressed on log10(params) (`rr_analysis.stats.meta.meta_predict`, metafor's
``predict(rma(..., test = "knha"), newmods = ...)``). The per-run (a) and size-deviation (b) models are refitted
with log size centred at the forecast size, so that a baseline's indicator is its gap there and the fitted
coefficient's SE and df (Satterthwaite; Kenward-Roger for (b)) are the prediction's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from rr_analysis.cells import budget_cells
from rr_analysis.comparison import (
    PAIR,
    RESPONSE,
    STAMP,
    Comparison,
    compare,
    sizes_in_order,
    t_quantile,
)
from rr_analysis.numbers import fixed
from rr_analysis.stats.emergence import emergence
from rr_analysis.stats.gap_tests import paired_table
from rr_analysis.stats.meta import meta_predict
from rr_analysis.stats.mixed import BlockModel
from rr_analysis.stats.slopes import SizeModel, kenward_roger
from rr_analysis.stats.targets import at_budget, path_words, sizes_at
from rr_analysis.stats.tokens import cell_budgets, path_tokens_per_param

__all__ = [
    "forecast",
    "size_gaps",
    "meta_line",
    "FORECAST_COLUMNS",
    "LEVEL",
]

LEVEL = 0.95  # coverage of every interval here

# The columns of `forecast`, in order: what `rr analyze forecast --format json/csv` emits.
FORECAST_COLUMNS: tuple[str, ...] = (
    "at", "params", "params_source", "baseline", "decades_beyond", "largest", "tokens_per_param", "budget",
    "meta_sizes", "meta_df",
    "meta_tau2", "pred", "pred_se", "ci_low", "ci_high", "pi_low", "pi_high",
    "dev_pred", "dev_se", "dev_df", "dev_ci_low", "dev_ci_high", "dev_pi_low", "dev_pi_high",
    "run_pred", "run_se", "run_df", "run_ci_low", "run_ci_high", "extrapolation", "note", *STAMP,
)  # fmt: skip


def size_gaps(df: pd.DataFrame, baseline: str, c: Comparison = Comparison()) -> tuple[pd.DataFrame, str]:
    """The per-size seed-paired gaps the size-level line is fitted to, and which sizes were left out and why.

    Returns
    -------
    (DataFrame with ``size, lx`` (log10 of the reference's mean parameter count), ``gap, se``
    (`paired_table`'s paired_diff and paired_se under comparison `c`), ``log_params, log_tokens_per_param``
    (the cell's log10 N and log10 D/N, `rr_analysis.stats.tokens.cell_budgets`), one row per size (per
    (size, budget) cell in a file of several budgets) with a paired gap and SE; a note naming the sizes left
    out with their reason, "" when none was).
    """
    df = budget_cells(df)
    p = paired_table(df, replace(c, baselines=(baseline,)))
    ref = df[df["variant"] == c.reference]
    lx = np.log10(ref.groupby("size", observed=True)["params_M"].mean()) + 6.0
    p = p[(p["baseline"] == baseline) & p["size"].isin(lx.index)]
    left = [f"{s} ({n})" for s, n in zip(p["size"], p["paired_note"], strict=True) if n]
    used = p[p["paired_note"] == ""]
    budgets = cell_budgets(df, c.reference).set_index("size").reindex(used["size"])
    out = pd.DataFrame(
        {
            "size": used["size"].to_numpy(),
            "lx": used["size"].map(lx).to_numpy(float),
            "gap": used["paired_diff"].to_numpy(float),
            "se": used["paired_se"].to_numpy(float),
            "log_params": budgets["log_params"].to_numpy(float),
            "log_tokens_per_param": budgets["log_tokens_per_param"].to_numpy(float),
        }
    )
    return out, (f"left out {', '.join(left)}" if left else "")


def _extrapolation(decades: float, largest: str, span: float) -> str:
    """A warning whose strength grows with the decades past the largest size."""
    if decades <= 0:
        return f"within the data's range (up to {largest}): an interpolation along the line"
    how = f"{fixed(decades, 2)} decades past {largest}, {fixed(decades / span, 1)} times the {fixed(span, 2)} decades the sizes span"
    if decades <= 0.5:
        return f"extrapolation: {how}; the interval assumes the line holds there"
    if decades <= 1.0:
        return f"strong extrapolation: {how}; nothing in the data checks the line out there"
    return (
        f"far extrapolation: {how}; over a decade out, the forecast is the straight line's assumption, "
        "not evidence"
    )


def _centred_design(df: pd.DataFrame, baselines: list[str], x0: float, reference: str):
    """The rows of sizes with reference runs, and (a)'s design with log size centred at x0: a baseline's
    indicator column is then its gap at x0. Returns (data, X, columns, blocks, baselines seen at 3+ sizes)."""
    sizes = [s for s in sizes_in_order(df) if ((df["size"] == s) & (df["variant"] == reference)).any()]
    lx = np.log10(df[df["variant"] == reference].groupby("size", observed=True)["params_M"].mean()) + 6.0
    data = df[df["size"].isin(sizes)]
    lxc = data["size"].map(lx - x0).to_numpy(float)
    at = {v: int(data.loc[data["variant"] == v, "size"].nunique()) for v in baselines}
    ind = {v: (data["variant"] == v).to_numpy(float) for v in baselines if at[v] >= 1}
    cols = [(data["size"] == s).to_numpy(float) for s in sizes] + list(ind.values())
    cols += [ind[v] * lxc for v in baselines if at[v] >= 2]
    names = [*sizes, *ind]
    blocks = data.groupby(["size", PAIR], sort=False, observed=True).ngroup().to_numpy()
    return data, np.column_stack(cols), names, blocks, [v for v in baselines if at[v] >= 3]


def _run_level(rows: pd.DataFrame, c: Comparison, x0: float, ran: pd.DataFrame) -> dict[str, dict]:
    """(a) and (b) refitted with log size centred at x0: each sloped baseline's gap at x0, SE, df, intervals.
    `rows` are `compare`'s, with the oriented response."""
    baselines = list(c.baselines)
    data, X, names, blocks, varied = _centred_design(rows, baselines, x0, c.reference)
    y = data[RESPONSE].to_numpy(float)
    q = lambda dof: float(t_quantile(0.5 + LEVEL / 2, dof))  # noqa: E731
    out: dict[str, dict] = {v: {} for v in baselines}
    if np.isfinite(ran["run_slope"]).any():
        fit = BlockModel(y, X, blocks).fit(reml=True)
        for v in baselines:
            if np.isfinite(ran.loc[v, "run_slope"]):
                j = names.index(v)
                est, se, dof = fit.beta[j], float(np.sqrt(fit.cov[j, j])), float(fit.df[j])
                out[v].update(
                    run_pred=est,
                    run_se=se,
                    run_df=dof,
                    run_ci_low=est - q(dof) * se,
                    run_ci_high=est + q(dof) * se,
                )
    if varied and np.isfinite(ran["dev_kr_df"]).any():
        U = np.column_stack([(data["variant"] == v).to_numpy(float) for v in varied])
        model = SizeModel(y, X, data["size"].to_numpy(), blocks, U)
        fit = model.fit()
        kr_se, kr_df = kenward_roger(model, fit)
        for k, v in enumerate(varied):
            j = names.index(v)
            est, se, dof = fit.beta[j], float(kr_se[j]), float(kr_df[j])
            pi = q(dof) * np.sqrt(se**2 + fit.sigma2 * fit.theta[1 + k] ** 2)
            out[v].update(
                dev_pred=est,
                dev_se=se,
                dev_df=dof,
                dev_ci_low=est - q(dof) * se,
                dev_ci_high=est + q(dof) * se,
                dev_pi_low=est - pi,
                dev_pi_high=est + pi,
            )
    return out


def _primary(
    df: pd.DataFrame, baseline: str, x0s: np.ndarray, c: Comparison, dn: float | None = None
) -> list[dict]:
    """(c), primary: the size-level line's prediction at each x0; none below 3 sizes (`emergence` says why).
    With `dn` (log10 tokens per parameter), the fit on size and D/N together at (x0, dn); none below 4 cells."""
    gaps = size_gaps(df, baseline, c)[0]
    base = {"meta_sizes": len(gaps)}
    if dn is not None:
        X = gaps[["log_params", "log_tokens_per_param"]].to_numpy(float)
        if len(gaps) < 4 or np.linalg.matrix_rank(np.column_stack([np.ones(len(X)), X])) < 3:
            return [dict(base) for _ in x0s]
        at = np.column_stack([x0s, np.full(len(x0s), dn)])
        p = meta_predict(gaps["gap"].to_numpy(), gaps["se"].to_numpy(), X, at, LEVEL)
    elif len(gaps) < 3:
        return [dict(base) for _ in x0s]
    else:
        p = meta_predict(gaps["gap"].to_numpy(), gaps["se"].to_numpy(), gaps["lx"].to_numpy(), x0s, LEVEL)
    return [
        {
            **base,
            "meta_df": p["df"],
            "meta_tau2": p["tau2"],
            "pred": p["pred"][i],
            "pred_se": p["se"][i],
            **{k: p[k][i] for k in ("ci_low", "ci_high", "pi_low", "pi_high")},
        }
        for i in range(len(x0s))
    ]


def _two_note(primary: dict) -> str:
    """Why a forecast at a stated budget has no (c), and that (a) and (b), size-only, are not read there."""
    why = (
        "" if "pred" in primary else "(c) no fit on size and D/N: fewer than 4 cells, or cells on one line; "
    )
    return why + "(a) and (b) are size-only: not read at a stated budget"


def forecast(
    df: pd.DataFrame,
    at: Sequence[str],
    *,
    ladder: str | None = None,
    tokens_per_param: float | None = None,
    comparison: Comparison | None = None,
) -> pd.DataFrame:
    """The gap each baseline is predicted to have at sizes the sweep has not run, by the primary model.

    Parameters
    ----------
    df
        A validated sweep (`load_sweep`).
    at
        Forecast sizes: ladder names or parameter counts such as ``"3B"``
        (`rr_analysis.stats.targets.forecast_size`).
    ladder
        A ladder file giving forecast sizes their exact counts (`rr_analysis.stats.targets.forecast_size`);
        None: rr's ladder.
    tokens_per_param
        The budget to forecast at, D/N at every forecast size. None: the sweep's own path (a sweep of one
        budget per size: where D/N falls with N as it did). Given, it is read from the fit on size and D/N
        together where the cells tell them apart (`emergence`'s ``meta2_*``); a sweep that cannot is refused
        (`rr_analysis.stats.targets.at_budget`), never carried to another budget silently.
    comparison
        The comparison (`rr_analysis.comparison.Comparison`; default: the paper's,
        val_loss against review_neutral).

    Returns
    -------
    DataFrame, one row per (forecast size, baseline), columns `FORECAST_COLUMNS`: ``at, params`` (parameter
    count), ``params_source`` ("ladder": the exact count of the ladder's shape; "label": the label's number),
    ``baseline``, ``decades_beyond`` (log10(params / the largest size's), negative inside the data) and
    ``largest``; ``tokens_per_param`` (the D/N the line assumes there: the path's, `path_tokens_per_param`,
    or the one asked) and ``budget`` (in words: "the sweep's path, where D/N falls with N ...", or "asked:
    read from the fit on size and D/N together"); (c), primary: ``meta_sizes, meta_df, meta_tau2``, ``pred, pred_se`` (gap and Knapp-Hartung
    SE), ``ci_low, ci_high`` (95% CI of the mean gap at that size), ``pi_low, pi_high`` (95% prediction
    interval of the gap a new size there would show, tau^2 included); (b) size-deviation model ``dev_pred,
    dev_se, dev_df`` (Kenward-Roger), ``dev_ci_*``, ``dev_pi_*`` (with this baseline's size-deviation
    variance); (a) per-run model ``run_pred, run_se, run_df`` (Satterthwaite), ``run_ci_*`` (a new size lies
    on (a)'s line, so its prediction interval is the CI); ``extrapolation`` (a warning that grows with
    decades_beyond), ``note`` (why a value is n/a) and `rr_analysis.comparison.STAMP` (the comparison). Gaps:
    baseline - reference of the oriented response, positive favours the reference.

    Notes
    -----
    (c): gap_i = b0 + b1 lx_i + u_i + e_i, u_i ~ N(0, tau^2), e_i ~ N(0, SE_i^2) (`emergence`, (c)); at x0 =
    log10(params), pred = b0 + b1 x0, se^2 = x0' V x0 with V the Knapp-Hartung covariance, CI = pred -/+
    t_{0.975, k-2} se, PI = pred -/+ t_{0.975, k-2} sqrt(se^2 + tau^2): metafor's ``predict.rma``. (a) and
    (b) are `emergence`'s models with lx centred at x0, so the baseline's coefficient is its gap at x0;
    (b)'s PI adds the baseline's size-deviation variance. Both lean on stronger assumptions than (c): (a)
    that every size lies exactly on the line, (b) that the seed and residual variances are shared by every
    size. Every interval is conditional on the line being straight in log10(params) out to x0, and on the
    recipe changing with size as it did (steps fell from 8000 to 6000; tokens per parameter from 2.20 to
    0.10, to about 0.03 at 3B along that path); five sizes cannot check either. With `tokens_per_param` and a
    sweep that separates size from D/N, (c) is the fit on both, pred = b0 + b1 x0 + b2 log10(D/N) (metafor's
    ``predict.rma`` with two moderators, t on cells - 3 df), and (a) and (b), size-only, are not given.

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> f = forecast(load_sweep(), ["3B"])
    >>> f[["baseline", "pred", "pi_low"]].round(4).values.tolist()
    [['highway', 0.0179, 0.0037], ['standard', 0.0256, 0.0183]]
    """
    rows, c = compare(df, comparison)
    parsed = sizes_at(rows, at, c.reference, ladder)
    chosen = list(c.baselines)
    budget = at_budget(rows, c.reference, tokens_per_param, [a for a, _, _ in parsed])
    ran = emergence(df, c).set_index("baseline").reindex(chosen)
    ref = rows[rows["variant"] == c.reference].groupby("size", observed=True)["params_M"].mean() * 1e6
    lxs = np.log10(ref.to_numpy(float))
    span = float(np.ptp(lxs)) if len(lxs) else np.nan
    x0s = np.log10([n for _, n, _ in parsed])
    budgets = cell_budgets(rows, c.reference)
    if budget == "separable":
        dn = np.full(len(x0s), float(tokens_per_param))
        basis = "asked: read from the fit on size and tokens per parameter together"
    else:
        dn = (
            path_tokens_per_param(budgets, 10**x0s)
            if budget == "path"
            else np.full(len(x0s), tokens_per_param)
        )
        basis = f"the sweep's path, where {path_words(budgets)}"
    two = np.log10(tokens_per_param) if budget == "separable" else None
    primary = {v: _primary(df, v, x0s, c, two) for v in chosen}
    largest = dict(zip(budgets["size"], budgets["size_name"], strict=True)).get(ref.idxmax(), ref.idxmax())
    records = []
    for i, (name, n, source) in enumerate(parsed):
        level = _run_level(rows, c, x0s[i], ran) if two is None else {v: {} for v in chosen}
        decades = float(x0s[i] - lxs.max())
        for v in chosen:
            note = ran.loc[v, "note"] if two is None else _two_note(primary[v][i])
            records.append(
                {
                    "at": name,
                    "params": n,
                    "params_source": source,
                    "baseline": v,
                    "decades_beyond": decades,
                    "largest": largest,
                    "tokens_per_param": dn[i],
                    "budget": basis,
                    **primary[v][i],
                    **level[v],
                    "extrapolation": _extrapolation(decades, largest, span),
                    "note": note,
                }
            )
    out = pd.DataFrame(records)
    for col in FORECAST_COLUMNS:
        if col not in out and col not in STAMP:
            out[col] = np.nan
    out["meta_sizes"] = out["meta_sizes"].astype("int64")
    return c.stamp(out)[list(FORECAST_COLUMNS)]


def meta_line(
    df: pd.DataFrame,
    at: Sequence[str] = (),
    *,
    points: int = 60,
    ladder: str | None = None,
    comparison: Comparison | None = None,
) -> pd.DataFrame:
    """The primary size-level line and its intervals on a grid of sizes, for figures to draw.

    Parameters
    ----------
    df
        A validated sweep (`load_sweep`).
    at
        Forecast sizes the grid must reach (`rr_analysis.stats.targets.forecast_size`); none: the grid ends at
        the largest size.
    points
        Grid points per baseline, evenly spaced in log10(params) from the smallest size.
    ladder, comparison
        As for `forecast`.

    Returns
    -------
    DataFrame with columns ``baseline, params_M`` (the reference's parameter count / 1e6, the emergence figure's x),
    ``pred, ci_low, ci_high, pi_low, pi_high`` (`meta.meta_predict` at each point), one block of rows per
    baseline with a size-level line (3+ sizes with a paired gap); empty, with those columns, when none has.

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> line = meta_line(load_sweep(), points=5)
    >>> line.groupby("baseline", observed=True).size().tolist()
    [5, 5]
    """
    rows, c = compare(df, comparison)
    ref = rows[rows["variant"] == c.reference].groupby("size", observed=True)["params_M"].mean() * 1e6
    ends = [ref.max(), *(n for _, n, _ in sizes_at(rows, at, c.reference, ladder))] if at else [ref.max()]
    grid = np.linspace(np.log10(ref.min()), np.log10(max(ends)), points)
    blocks = []
    for v in c.baselines:
        gaps = size_gaps(df, v, c)[0]
        if len(gaps) >= 3:
            p = meta_predict(
                gaps["gap"].to_numpy(), gaps["se"].to_numpy(), gaps["lx"].to_numpy(), grid, LEVEL
            )
            cols = {k: p[k] for k in ("pred", "ci_low", "ci_high", "pi_low", "pi_high")}
            blocks.append(pd.DataFrame({"baseline": v, "params_M": 10 ** (grid - 6), **cols}))
    empty = pd.DataFrame(columns=["baseline", "params_M", "pred", "ci_low", "ci_high", "pi_low", "pi_high"])
    return pd.concat(blocks, ignore_index=True) if blocks else empty

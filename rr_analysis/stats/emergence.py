"""Does Review's advantage grow with size? The gap's slope per decade of parameters, per baseline, at three
levels of evidence: per run (a), with each size's gap free to leave the line (b), and per size (c, primary);
and, at the size level, whether the data can tell growth with size from growth with falling tokens per
parameter (both moderators in one meta-regression, where the cells vary in both).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rr_analysis.comparison import (
    ALPHA,
    PAIR,
    RESPONSE,
    STAMP,
    Comparison,
    cell_frame,
    compare,
    sizes_in_order,
    t_sf2,
)
from rr_analysis.numbers import fixed, significant
from rr_analysis.stats.gap_tests import paired_table
from rr_analysis.stats.meta import meta_moderators, meta_regression
from rr_analysis.stats.mixed import SINGULAR_RATIO, BlockModel
from rr_analysis.stats.slopes import SizeModel, kenward_roger
from rr_analysis.stats.tokens import cell_budgets, confound_words, size_and_tokens, tokens_source
from rr_core.variants import label

__all__ = ["emergence", "EMERGENCE_COLUMNS", "PRIMARY_LEVEL"]

# The columns of `emergence` that `rr analyze --emergence --format json/csv` emits, in order.
EMERGENCE_COLUMNS: tuple[str, ...] = (
    "baseline", "n_sizes", "primary", "verdict",
    "meta_slope", "meta_se", "meta_df", "meta_p", "meta_tau2", "meta_qe", "meta_qe_df", "meta_qe_p",
    "meta_sizes",
    "tokens_per_param", "tokens_source", "dn_r", "dn_sizes_with_budgets", "dn_reading",
    "meta2_size_slope", "meta2_size_se", "meta2_size_p", "meta2_dn_slope", "meta2_dn_se", "meta2_dn_p",
    "meta2_df", "meta2_tau2", "meta2_qe", "meta2_qe_df", "meta2_qe_p",
    "dev_slope", "dev_se", "dev_df", "dev_p", "dev_kr_se", "dev_kr_df", "dev_kr_p",
    "dev_var_seed", "dev_var_size", "dev_var_resid", "dev_singular",
    "run_slope", "run_se", "run_df", "run_p", "run_gap_at_centre", "lrt_chi2", "lrt_df", "lrt_p",
    "confound", "note", *STAMP,
)  # fmt: skip
PRIMARY_LEVEL = "meta"  # the size-level two-stage meta-regression (c): the question is about sizes, not runs
KR_MAX_RUNS = 2000  # Kenward-Roger is dense per size: O(n_size^3)
MAX_DECADES = 20.0  # a ladder wider than 10^20 in parameter count is a data error, not a scaling study


@dataclass
class _Design:
    """The rows, sizes and design matrices shared by the per-run (a) and size-deviation (b) models."""

    reference: str
    sizes: list[str]  # sizes with reference (Review) runs, in order
    lx: pd.Series  # log10(the reference's parameter count) per size
    at: dict[str, int]  # baseline -> number of those sizes it ran at
    data: pd.DataFrame
    X0: np.ndarray  # size intercepts + baseline indicators
    X: np.ndarray  # X0 + indicator x centred lx for baselines at >= 2 sizes
    names: list  # the columns of X
    blocks: np.ndarray
    why: str  # why no model can be fitted, "" when one can


def _design(df: pd.DataFrame, c: Comparison) -> _Design:
    """`df`: the rows `compare` returns for `c`."""
    baselines, reference = list(c.baselines), c.reference
    sizes = [s for s in sizes_in_order(df) if ((df["size"] == s) & (df["variant"] == reference)).any()]
    # log10(params_M) + 6, not log10(1e6 params_M): the latter overflows for absurd parameter counts.
    lx = np.log10(df[df["variant"] == reference].groupby("size", observed=True)["params_M"].mean()) + 6.0
    data = df[df["size"].isin(sizes)]
    lxc = data["size"].map(lx - lx[sizes].mean()).to_numpy(float)
    at = {v: int(data.loc[data["variant"] == v, "size"].nunique()) for v in baselines}
    ind = {v: (data["variant"] == v).to_numpy(float) for v in baselines if at[v] >= 1}
    sloped = [v for v in baselines if at[v] >= 2]
    X0 = np.column_stack([(data["size"] == s).to_numpy(float) for s in sizes] + list(ind.values()))
    X = np.column_stack([X0] + [ind[v] * lxc for v in sloped])
    names = [*sizes, *ind, *((v, "slope") for v in sloped)]
    blocks = data.groupby(["size", PAIR], sort=False, observed=True).ngroup().to_numpy()
    why = ""
    if len(sizes) < 2:
        why = f"needs at least 2 sizes with {reference} runs"
    elif not np.isfinite(lx[sizes]).all() or np.ptp(lx[sizes].to_numpy()) > MAX_DECADES:
        why = (
            f"{reference}'s parameter counts (params_M {significant(df['params_M'].min(), 3)} to "
            f"{significant(df['params_M'].max(), 3)}) span over {significant(MAX_DECADES)} decades or overflow: not a size ladder; "
            "no slope is fitted"
        )
    elif len(data) - X.shape[1] < 1:
        why = "no residual degrees of freedom"
    elif np.bincount(blocks).max() < 2:
        why = "no size:seed block holds two runs: seed and residual variance are not separable"
    elif np.linalg.matrix_rank(X) < X.shape[1]:
        why = "the fixed effects are not identifiable from these cells"
    return _Design(reference, sizes, lx, at, data, X0, X, names, blocks, why)


def _p(est: np.ndarray, se: np.ndarray, dof: np.ndarray) -> np.ndarray:
    ok = np.isfinite(est) & np.isfinite(dof) & (se > 0)
    return np.where(ok, t_sf2(np.where(ok, est / np.where(ok, se, 1.0), 0.0), np.where(ok, dof, 1.0)), np.nan)


def _per_run(d: _Design, baselines: list[str]) -> tuple[dict, dict[str, list[str]]]:
    """(a): every run as evidence, the gap exactly linear in log size; LRT of all slopes by ML refits. Its one
    variance component besides the residual, the seed's, is every baseline's: a singular fit is noted on every
    row."""
    from scipy.special import chdtrc

    cols = {
        c: np.full(len(baselines), np.nan) for c in ("run_slope", "run_se", "run_df", "run_gap_at_centre")
    }
    cols.update({c: np.nan for c in ("lrt_chi2", "lrt_df", "lrt_p")})
    y = d.data[RESPONSE].to_numpy(float)
    fit = BlockModel(y, d.X, d.blocks).fit(reml=True)
    se = np.sqrt(np.diag(fit.cov))
    for i, v in enumerate(baselines):
        if v in d.names:
            cols["run_gap_at_centre"][i] = fit.beta[d.names.index(v)]
        if (v, "slope") in d.names:
            j = d.names.index((v, "slope"))
            cols["run_slope"][i], cols["run_se"][i], cols["run_df"][i] = fit.beta[j], se[j], fit.df[j]
    cols["run_p"] = _p(cols["run_slope"], cols["run_se"], cols["run_df"])
    k = d.X.shape[1] - d.X0.shape[1]
    if k:
        ml = [BlockModel(y, X, d.blocks).fit(reml=False).deviance for X in (d.X0, d.X)]
        chi2 = max(ml[0] - ml[1], 0.0)
        cols.update(lrt_chi2=chi2, lrt_df=float(k), lrt_p=float(chdtrc(k, chi2)))
    notes = []
    if fit.ratio < SINGULAR_RATIO:
        notes.append(
            f"(a) singular fit: sd(seed)/sd(residual) = {significant(fit.ratio, 2, scientific=True)} < {significant(SINGULAR_RATIO)}"
        )
    return cols, {v: notes for v in baselines}


def _size_dev(d: _Design, baselines: list[str]) -> tuple[dict, dict[str, list[str]]]:
    """(b): seed blocks plus a random size deviation per baseline seen at >= 3 sizes; Satterthwaite and KR.

    One model is fitted to every baseline's rows at once, so its components are of two kinds: the seed's,
    shared by every baseline (a singular one is flagged and noted on every row fitted), and each baseline's own
    size deviation (flagged and noted on that baseline's row alone, naming it; the other rows stay clean)."""
    keys = ("dev_slope", "dev_se", "dev_df", "dev_kr_se", "dev_kr_df", "dev_var_size")
    cols = {c: np.full(len(baselines), np.nan) for c in keys}
    cols.update(dev_var_seed=np.nan, dev_var_resid=np.nan, dev_singular=np.zeros(len(baselines), dtype=bool))
    notes: dict[str, list[str]] = {v: [] for v in baselines}
    varied = [v for v in baselines if d.at[v] >= 3]
    if not varied:
        return cols, notes
    U = np.column_stack([(d.data["variant"] == v).to_numpy(float) for v in varied])
    model = SizeModel(d.data[RESPONSE].to_numpy(float), d.X, d.data["size"].to_numpy(), d.blocks, U)
    fit = model.fit()
    se = np.sqrt(np.diag(fit.cov))
    big = int(d.data["size"].value_counts().max()) > KR_MAX_RUNS
    kr_se, kr_df = (np.full(len(se), np.nan),) * 2 if big else kenward_roger(model, fit)
    for i, v in enumerate(baselines):
        if v in varied:
            j = d.names.index((v, "slope"))
            cols["dev_slope"][i], cols["dev_se"][i], cols["dev_df"][i] = fit.beta[j], se[j], fit.df[j]
            cols["dev_kr_se"][i], cols["dev_kr_df"][i] = kr_se[j], kr_df[j]
            cols["dev_var_size"][i] = fit.sigma2 * fit.theta[1 + varied.index(v)] ** 2
    cols.update(dev_var_seed=fit.sigma2 * fit.theta[0] ** 2, dev_var_resid=fit.sigma2)
    others = {v: ", ".join(label(o) for o in varied if o != v) for v in varied}
    for i, v in enumerate(baselines):
        if v not in varied:
            continue
        low = ["the seed variance, shared by every baseline"] if fit.theta[0] < SINGULAR_RATIO else []
        if fit.theta[1 + varied.index(v)] < SINGULAR_RATIO:
            low.append(f"{label(v)}'s own size deviation")
        cols["dev_singular"][i] = bool(low)
        notes[v] = [f"Kenward-Roger not computed: a size holds over {KR_MAX_RUNS} runs"] if big else []
        if low:
            joint = f" (one model fitted jointly with {others[v]})" if others[v] else ""
            notes[v].append(
                f"(b) singular fit{joint}: sd/sd(residual) < {significant(SINGULAR_RATIO)} for {' and '.join(low)} "
                "(lme4's rule); Satterthwaite then drops that component and its df can far exceed the sizes, "
                "Kenward-Roger keeps it"
            )
    return cols, notes


def _meta(p: pd.DataFrame, d: _Design, baseline: str, budgets: pd.DataFrame) -> tuple[dict, str]:
    """(c), primary: the per-size seed-paired gaps and their SEs (`p`: `paired_table`), meta-regressed on
    log10(params); and on log10(params) and log10(tokens per parameter) together (`_meta2`)."""
    p = p[(p["baseline"] == baseline) & p["size"].isin(d.sizes)]
    used = p[p["paired_note"] == ""]
    left = [f"{s} ({n})" for s, n in zip(p["size"], p["paired_note"], strict=True) if n]
    note = f"(c) left out {', '.join(left)}" if left else ""
    cells = budgets.set_index("size").reindex(used["size"])
    reading = size_and_tokens(cells.reset_index())
    out = {
        "meta_sizes": len(used),
        "tokens_per_param": dict(zip(map(str, cells.index), cells["tokens_per_param"], strict=True)),
        "dn_r": reading["r"],
        "dn_sizes_with_budgets": reading["sizes_with_budgets"],
        "dn_reading": reading["reading"],
    }
    if len(used) < 3:
        why = f"(c) no size-level test: {len(used)} size(s) with a paired gap and SE; a line needs 3 or more"
        return out, "; ".join(filter(None, [note, why]))
    x = used["size"].map(d.lx).to_numpy(float)
    r = meta_regression(used["paired_diff"].to_numpy(float), used["paired_se"].to_numpy(float), x)
    out.update({f"meta_{k}": val for k, val in r.items()})
    if len(used) < 5:
        note = "; ".join(
            filter(None, [note, f"only {len(used)} sizes: the size-level df ({len(used) - 2}) are few"])
        )
    two, why2 = _meta2(used, cells, reading)
    out.update(two)
    return out, "; ".join(filter(None, [note, why2]))


def _meta2(used: pd.DataFrame, cells: pd.DataFrame, reading: dict) -> tuple[dict, str]:
    """(c) on both moderators, log10 N and log10 D/N, where the cells vary in both: metafor's
    ``rma(yi, sei = sei, mods = ~ lN + lDN, test = "knha")``; none with fewer than 4 cells or collinear ones."""
    if not reading["varies"]:
        return {}, ""
    X = cells[["log_params", "log_tokens_per_param"]].to_numpy(float)
    # too few cells, or D/N exactly 1/N times a constant: the verdict says they move together
    if len(used) < 4 or np.linalg.matrix_rank(np.column_stack([np.ones(len(X)), X])) < 3:
        return {}, ""
    r = meta_moderators(used["paired_diff"].to_numpy(float), used["paired_se"].to_numpy(float), X)
    out = {
        "meta2_df": r["df"],
        "meta2_tau2": r["tau2"],
        "meta2_qe": r["qe"],
        "meta2_qe_df": r["qe_df"],
        "meta2_qe_p": r["qe_p"],
    }
    for i, name in enumerate(("size", "dn")):
        out |= {
            f"meta2_{name}_slope": r["coef"][i],
            f"meta2_{name}_se": r["se"][i],
            f"meta2_{name}_p": r["p"][i],
        }
    if reading["separable"]:
        return out, ""
    n = reading["sizes_with_budgets"]
    held = "no size holds two budgets" if n == 0 else f"only {n} size holds two budgets or more"
    r_is = (
        f"log10 N and log10 D/N correlate at r = {fixed(reading['r'], 3)} and "
        if np.isfinite(reading["r"])
        else ""
    )
    return (
        out,
        f"(c2) shown, not read: {r_is}{held}, so its slopes extrapolate along a direction the cells barely span",
    )


def _strength(r: pd.Series) -> tuple[str, str]:
    """How strongly the size-only line (c) says the gap changes, checked against the size-deviation model (b):
    ("robust" | "primary" | "suggestive" | "none", its p-values in words)."""
    dev = np.nanmax([r["dev_p"], r["dev_kr_p"]]) if np.isfinite([r["dev_p"], r["dev_kr_p"]]).any() else np.nan
    p = significant(r["meta_p"], 2)
    if r["meta_p"] < ALPHA and dev < ALPHA:
        return "robust", f"robust (primary p = {p}, size-deviation model p = {significant(dev, 2)})"
    if r["meta_p"] < ALPHA:
        return "primary", f"in the primary test (p = {p}) but not in the size-deviation model"
    if dev < ALPHA or r["run_p"] < ALPHA:
        return "suggestive", (
            f"suggestive, not robust: the primary size-level test gives p = {p}; only models "
            "that lean on the runs or on the line's shape reach p < 0.05"
        )
    return "none", f"(primary p = {p})"


def _size_only(r: pd.Series) -> str:
    """The size-only line's verdict, as it reads where tokens per parameter do not move with size."""
    level, words = _strength(r)
    way = "grows" if r["meta_slope"] > 0 else "shrinks"
    if level == "none":
        return f"no evidence that the gap changes with size {words}"
    return words if level == "suggestive" else f"{way} with size{':' if level == 'robust' else ''} {words}"


def _trend(slope: float, p: float, along: str) -> str:
    """One moderator of the two-moderator fit in words."""
    if not p < ALPHA:
        return f"no evidence that the gap changes {along} (p = {significant(p, 2)})"
    return f"the gap {'grows' if slope > 0 else 'shrinks'} {along} (p = {significant(p, 2)})"


def _verdict(r: pd.Series) -> str:
    """One line in words. Where size and tokens per parameter move together, that comes first; where they are
    told apart, the two-moderator fit leads; where tokens per parameter are the same in every cell, the
    primary size-only line, checked against the size-deviation model."""
    if not np.isfinite(r["meta_p"]):
        return "not testable at the size level (see the notes)"
    if r["dn_reading"] == "confounded":
        together = "size and tokens per parameter move together" + (
            f" (r = {fixed(r['dn_r'], 3)})" if np.isfinite(r["dn_r"]) else ""
        )
        level, words = _strength(r)
        if level == "none":
            return (
                f"no evidence that the gap changes along the sweep {words}, where {together}; nor could the "
                "data attribute a change to size"
            )
        way = "grows" if r["meta_slope"] > 0 else "shrinks"
        lead = f"the gap {way} along the sweep, where {together}, so the data cannot attribute it to size"
        return f"{lead}{': ' if level == 'robust' else '; '}{words}"
    if r["dn_reading"] == "separable" and np.isfinite(r["meta2_size_p"]):
        return (
            f"size and tokens per parameter told apart (r = {fixed(r['dn_r'], 3)}): at fixed tokens per "
            f"parameter, {_trend(r['meta2_size_slope'], r['meta2_size_p'], 'with size')}; at fixed size, "
            f"{_trend(r['meta2_dn_slope'], r['meta2_dn_p'], 'with tokens per parameter')}; the size-only line "
            f"would read: {_size_only(r)}"
        )
    return _size_only(r)


def _confound(d: _Design, budgets: pd.DataFrame) -> str:
    """What changes with size along the sweep besides size, in words (`confound_words`)."""
    ref = d.data[d.data["variant"] == d.reference].groupby("size", observed=True)["steps"].median()
    return confound_words(d.sizes, [int(ref[s]) for s in d.sizes], budgets)


def emergence(
    df: pd.DataFrame,
    comparison: Comparison | None = None,
) -> pd.DataFrame:
    """Does the reference's (Review's) advantage grow with size? The gap's slope per decade of parameters, at
    three levels.

    Parameters
    ----------
    df
        A validated sweep (`load_sweep`).
    comparison
        The comparison (`rr_analysis.comparison.Comparison`; default the paper's):
        the reference variant, the baselines in order (None: every other variant present), the numeric
        column compared and whether higher is better.

    Returns
    -------
    DataFrame, one row per baseline. ``baseline, n_sizes`` (sizes it ran at beside Review), ``primary``
    (`PRIMARY_LEVEL`: which test the verdict leads with), ``verdict`` (one line in words);
    (c), primary, ``meta_slope, meta_se, meta_df, meta_p`` (Knapp-Hartung), ``meta_tau2`` (REML between-size
    variance), ``meta_qe, meta_qe_df, meta_qe_p`` (residual heterogeneity), ``meta_sizes`` (sizes used);
    tokens: ``tokens_per_param`` (cell -> D/N of the cells (c) used, `rr_analysis.stats.tokens.cell_budgets`),
    ``tokens_source`` (where tokens and parameter counts come from, in words), ``dn_r`` (Pearson's r of log10 N
    and log10 D/N over those cells), ``dn_sizes_with_budgets`` (sizes holding two budgets or more),
    ``dn_reading`` ("constant": D/N or N the same in every cell; "separable"; "confounded": |r| >= 0.9 or
    fewer than two sizes with two budgets; `rr_analysis.stats.tokens.size_and_tokens`); (c) on both
    moderators, where the cells vary in both, ``meta2_size_slope, meta2_size_se, meta2_size_p`` (per decade of
    N at fixed D/N), ``meta2_dn_slope, meta2_dn_se, meta2_dn_p`` (per decade of D/N at fixed N; Knapp-Hartung
    t on cells - 3 df), ``meta2_df, meta2_tau2, meta2_qe, meta2_qe_df, meta2_qe_p``;
    (b) ``dev_slope, dev_se, dev_df, dev_p`` (Satterthwaite), ``dev_kr_se, dev_kr_df, dev_kr_p``
    (Kenward-Roger), ``dev_var_seed, dev_var_size, dev_var_resid`` (REML variance components; dev_var_size
    is this baseline's), ``dev_singular`` (lme4's rule, for a component of this row: the shared seed variance
    or this baseline's own size deviation, never another baseline's); (a) ``run_slope, run_se, run_df, run_p``
    (Satterthwaite), ``run_gap_at_centre``, ``lrt_chi2, lrt_df, lrt_p`` (joint LRT of all slopes under (a));
    ``confound`` (steps and tokens per parameter that change with size where the data cannot tell them from
    size), ``note`` (n/a reasons, singular fits, few sizes), then
    `rr_analysis.comparison.STAMP`. Slopes are changes of the gap (baseline - reference of the response, positive
    favours the reference) per decade of the reference's parameter count; positive: the gap grows.

    Notes
    -----
    lxc = log10(Review's parameter count at the size), centred over the sizes with Review runs; x_v the 0/1
    indicator of baseline v.
    The response y is the metric (val_loss by default), negated when higher is better.
    (a) ``y ~ 0 + size + sum_v (x_v + x_v:lxc) + (1 | size:seed)``, REML (`mixed.BlockModel`): every
    run is evidence and each gap lies exactly on the line, so its df come from within-block residuals.
    (b) (a) plus ``(0 + x_v | size)`` per baseline seen at 3+ sizes: each size's gap may leave the line, so the
    slope's evidence is the between-size scatter (`slopes.SizeModel`); lmerTest's Satterthwaite df and
    pbkrtest's Kenward-Roger adjusted SE and df.
    (c) seed-paired gap per size (`stats.paired_table`) and its SE, regressed on lx with REML tau^2 and the
    Knapp-Hartung t on (sizes - 2) df (`meta.meta_regression`, metafor's ``rma(..., test = "knha")``).
    Fewer than 3 sizes: no size-level p. (c) on both moderators: the same per-cell gaps regressed on lN =
    log10(N) and lDN = log10(D/N), N the reference's exact parameter count and D its tokens (metafor's
    ``rma(yi, sei = sei, mods = ~ lN + lDN, method = "REML", test = "knha")``), wherever 4 or more cells vary
    in both without lying on one line.
    The verdict: where D/N moves with N (``dn_reading`` "confounded"), it says first that the data cannot
    attribute the change to size, with r; where they are told apart, it reads the two-moderator fit, size at
    fixed D/N and D/N at fixed size; otherwise the size-only line: robust when (c) and the more conservative
    of (b)'s two p are below 0.05; suggestive when only (b) or (a) is. (a) and (b) are size-only throughout.

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> e = emergence(load_sweep())
    >>> e["meta_p"].round(3).tolist()
    [0.063, 0.001]
    """
    rows, comparison = compare(df, comparison)
    cell_frame(rows, comparison)  # no baseline: a clear InputError
    baselines = list(comparison.baselines)
    d = _design(rows, comparison)
    out = pd.DataFrame({"baseline": baselines, "n_sizes": [d.at[v] for v in baselines]})
    out["primary"] = PRIMARY_LEVEL
    notes = {v: [] for v in baselines}
    if not d.why:
        for part in (_per_run, _size_dev):
            cols, own = part(d, baselines)
            for c, vals in cols.items():
                out[c] = vals
            notes = {v: notes[v] + own[v] for v in baselines}
    for c in ("dev_p", "dev_kr_p"):
        if not d.why:
            out[c] = _p(out["dev_slope"], out[c.replace("_p", "_se")], out[c.replace("_p", "_df")])
    paired = paired_table(df, comparison) if not d.why else None
    budgets = cell_budgets(rows, comparison.reference) if not d.why else None
    metas = [_meta(paired, d, v, budgets) if not d.why else ({}, "") for v in baselines]
    for c in EMERGENCE_COLUMNS:
        if c.startswith(("meta_", "meta2_", "dn_")) or c == "tokens_per_param":
            out[c] = [m[0].get(c, np.nan) for m in metas]
    for c in EMERGENCE_COLUMNS:
        if c not in out and c not in STAMP:
            out[c] = False if c == "dev_singular" else np.nan
    out["meta_sizes"] = out["meta_sizes"].fillna(0).astype("int64")
    out["dn_sizes_with_budgets"] = out["dn_sizes_with_budgets"].fillna(0).astype("int64")
    out["dn_reading"] = [v if isinstance(v, str) else "" for v in out["dn_reading"]]
    out["tokens_per_param"] = [v if isinstance(v, dict) else {} for v in out["tokens_per_param"]]
    out["verdict"] = [_verdict(r) for _, r in out.iterrows()]
    out["confound"] = _confound(d, budgets) if budgets is not None else ""
    out["tokens_source"] = tokens_source(budgets) if budgets is not None and len(budgets) else ""
    for i, v in enumerate(baselines):
        few = "" if d.at[v] >= 3 else f"at {d.at[v]} size(s) with {d.reference}: no size-level slope test"
        notes[v] = [d.why or few, metas[i][1], *notes[v]]
    out["note"] = ["; ".join(n for n in notes[v] if n) for v in baselines]
    return comparison.stamp(out)[list(EMERGENCE_COLUMNS)]

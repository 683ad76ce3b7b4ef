"""Review against each baseline at each size: Welch, paired and mixed-model tests, side by side.

Every function takes the validated sweep (`rr_core.sweepfile.dataset.load_sweep`) and returns a tidy DataFrame
with one row per (size, baseline), sizes ordered by parameter count and baselines in registry order. Any
comparison: a `rr_analysis.comparison.Comparison` (``comparison=``) chooses it; the defaults are the paper's,
review_neutral against highway and standard on val_loss. Every frame ends with the columns `rr_analysis.comparison.STAMP` (reference, metric,
higher_is_better). Sign convention everywhere: gap = mean(baseline) - mean(reference) of the response (the
metric, negated when higher is better); positive favours the reference. The reference's own columns are named for
it (``n_review``, ``review_mean`` for the paper's; ``n_myrule``, ``myrule_mean`` for a reference myrule:
`rr_analysis.comparison.for_reference`). Each test's 95% CI sits beside its p under the test's name
(``welch_ci_*``, ``paired_ci_*``, ``mixed_ci_*``), so no table pairs one test's p with another's interval. A statistic that does not exist for a cell is NaN with the reason in the `*_note` column;
never inf.

The declared primary per-size test is the seed-paired t-test (`PRIMARY_TEST`): the design blocks by seed, and the
paired test is the comparison that uses the blocks with the fewest assumptions; the per-size mixed model is its
twin (same blocks, residual pooled over the variants of a size). Welch reproduces the paper's Table 2.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rr_analysis.comparison import (
    ADJUST_METHODS,
    PAIR,
    PRIMARY_TEST,
    RESPONSE,
    STAMP,
    TESTS,
    Comparison,
    asked,
    cell_frame,
    compare,
    t_quantile,
    t_sf2,
)
from rr_analysis.stats.effect import hedges_g
from rr_analysis.stats.exact import sign_flip
from rr_analysis.stats.mixed import mixed_table
from rr_analysis.stats.tokens import cell_budgets
from rr_core.errors import InputError

__all__ = [
    "adjust_p",
    "welch_table",
    "paired_table",
    "gap_table",
    "TABLE_COLUMNS",
]


# The columns of `gap_table` that `rr analyze table --format json/csv` emits, in order; n_review and review_mean
# are named for the reference when it is another (`rr_analysis.comparison.for_reference`).
TABLE_COLUMNS: tuple[str, ...] = (
    "size", "baseline", "params_M", "baseline_params_M", "params_mismatch", "params_flagged",
    "steps", "tokens", "tokens_source", "tokens_per_param",
    "n_review", "n_baseline", "n_pairs", "review_mean", "baseline_mean", "gap",
    "welch_t", "welch_df", "welch_p", "welch_ci_low", "welch_ci_high", "hedges_g", "g_ci_low", "g_ci_high",
    "paired_diff", "paired_se", "paired_t", "paired_df", "paired_p", "paired_ci_low", "paired_ci_high",
    "signflip_p", "signflip_floor",
    "mixed_coef", "mixed_se", "mixed_df", "mixed_p", "mixed_ci_low", "mixed_ci_high", "seed_var", "resid_var",
    "singular",
    "p_adj_welch", "p_adj_paired", "p_adj_mixed", "adjust", "primary",
    "family_m_welch", "family_m_paired", "family_m_mixed",
    "welch_note", "paired_note", "mixed_note", "signflip_method", "mixed_method", *STAMP,
)  # fmt: skip


def _reasons(rules: list[tuple[np.ndarray, str]], n: int) -> np.ndarray:
    """The first rule that applies to each row, or "" where none does."""
    out = np.full(n, "", dtype=object)
    for mask, reason in reversed(rules):
        out[np.asarray(mask, dtype=bool)] = reason
    return out


def adjust_p(p, method: str = "holm") -> np.ndarray:
    """Adjust a family of p-values for multiple testing; NaN (a test that did not run) stays NaN, uncounted.

    Parameters
    ----------
    p
        The family's raw p-values.
    method
        One of `ADJUST_METHODS`: ``holm`` (step-down, family-wise error under any dependence), ``bonferroni``,
        ``fdr_bh`` (Benjamini-Hochberg false discovery rate, independent or positively dependent tests) or
        ``none``.

    Notes
    -----
    statsmodels' `multipletests` on the m non-missing p-values. Holm: with p_(1) <= ... <= p_(m),
    p_holm_(i) = min(1, max_{j <= i} (m - j + 1) p_(j)).

    Example
    -------
    >>> adjust_p([0.01, 0.04, float("nan"), 0.03]).round(2).tolist()
    [0.03, 0.06, nan, 0.06]
    """
    if method not in ADJUST_METHODS:
        raise InputError(f"unknown adjustment {method!r}; choose one of {', '.join(ADJUST_METHODS)}")
    p = np.asarray(p, dtype=float)
    out = p.copy()
    ok = ~np.isnan(p)
    if method != "none" and ok.any():
        from statsmodels.stats.multitest import multipletests

        out[ok] = multipletests(p[ok], method=method)[1]
    return out


def _cells(rows: pd.DataFrame) -> pd.DataFrame:
    return rows.groupby(["size", "variant"], observed=True)[RESPONSE].agg(n="count", mean="mean", var="var")


def welch_table(
    df: pd.DataFrame,
    comparison: Comparison | None = None,
) -> pd.DataFrame:
    """Welch's unequal-variance t-test of each baseline against the reference (Review) at each size.

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
    DataFrame, one row per (size, baseline), with columns
    ``size, baseline, params_M, baseline_params_M, params_mismatch, params_flagged`` (each arm's parameter
    count at that size and whether they differ by more than `rr_analysis.comparison.PARAMS_TOLERANCE`:
    `rr_analysis.comparison.cell_frame`), ``n_review, n_baseline``, ``review_mean, baseline_mean`` (the
    reference's and the baseline's mean of the metric; the reference's two named for it when it is not
    review_neutral: ``n_myrule``, ``myrule_mean``), ``gap`` (baseline -
    reference of the response: positive favours the reference), ``welch_se, welch_t, welch_df, welch_p``
    (two-sided), ``welch_ci_low, welch_ci_high`` (95% CI of the gap from Welch's t: the interval of the p
    beside it), ``pooled_sd``, ``hedges_g, g_ci_low, g_ci_high``
    (Hedges' g and the 95% CI of the standardised effect, `rr_analysis.stats.effect.hedges_g`) and ``welch_note``
    (why the test is n/a, "" when it ran), then `STAMP`. Statistics that do not exist are NaN.

    Notes
    -----
    Two-sample t-test without assuming equal variances (Welch 1947); runs of one seed are independent draws.
    With sample means m, variances s^2 and sizes n of baseline (b) and Review (r):
    SE = sqrt(s_b^2/n_b + s_r^2/n_r), t = (m_b - m_r) / SE, Welch-Satterthwaite
    df = SE^4 / ((s_b^2/n_b)^2/(n_b-1) + (s_r^2/n_r)^2/(n_r-1)), p = 2 P(T_df > |t|),
    CI = gap -/+ t_{0.975, df} SE. Hedges' g = J (m_b - m_r)/s_pooled with
    s_pooled^2 = ((n_b-1) s_b^2 + (n_r-1) s_r^2)/(n_b+n_r-2) and the exact J of `rr_analysis.stats.effect.hedges_j`
    on n_b+n_r-2 df; its CI inverts the noncentral t. m is the mean of the response (the metric, or minus it
    when higher is better), so positive favours the reference. Needs at least 2 runs per arm.

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> w = welch_table(load_sweep())
    >>> w.loc[(w["size"] == "590M") & (w["baseline"] == "standard"), "welch_t"].round(2).item()
    3.67
    >>> from rr_analysis.comparison import Comparison
    >>> w = welch_table(load_sweep(), Comparison("highway", ["standard"]))
    >>> w.loc[w["size"] == "590M", "welch_t"].round(2).item()
    0.42
    """
    rows, c = compare(df, comparison)
    out = cell_frame(rows, c)
    cells = _cells(rows)
    ref = cells.xs(c.reference, level="variant").reindex(out["size"])
    base = cells.reindex(pd.MultiIndex.from_arrays([out["size"], out["baseline"]]))
    n_r, m_r, v_r = (ref[c].to_numpy(dtype=float) for c in ("n", "mean", "var"))
    n_b, m_b, v_b = (base[c].to_numpy(dtype=float) for c in ("n", "mean", "var"))
    n_r, n_b = np.nan_to_num(n_r), np.nan_to_num(n_b)
    gap = m_b - m_r
    with np.errstate(divide="ignore", invalid="ignore"):
        a, b = v_b / n_b, v_r / n_r
        se = np.sqrt(a + b)
        dof = (a + b) ** 2 / (a**2 / (n_b - 1) + b**2 / (n_r - 1))
        s_pool = np.sqrt(((n_b - 1) * v_b + (n_r - 1) * v_r) / (n_b + n_r - 2))
    note = _reasons(
        [
            (n_r == 0, f"no {c.reference} runs at this size"),
            (n_b == 0, "no runs of this baseline at this size"),
            ((n_r < 2) | (n_b < 2), "fewer than 2 runs in an arm: no variance"),
            (~(se > 0), "zero variance in both arms"),
        ],
        len(out),
    )
    ok = note == ""
    t = np.where(ok, gap / np.where(ok, se, 1.0), np.nan)
    dof = np.where(ok, dof, np.nan)
    half = t_quantile(0.975, np.where(ok, dof, 1.0)) * se
    out["n_review"], out["n_baseline"] = n_r.astype("int64"), n_b.astype("int64")
    sign = -1.0 if c.higher_is_better else 1.0  # back from the response to the metric (exact: a negation)
    out["review_mean"], out["baseline_mean"], out["gap"] = sign * m_r, sign * m_b, gap
    out["welch_se"] = np.where(ok, se, np.nan)
    out["welch_t"], out["welch_df"] = t, dof
    out["welch_p"] = np.where(ok, t_sf2(np.nan_to_num(t), np.where(ok, dof, 1.0)), np.nan)
    out["welch_ci_low"] = np.where(ok, gap - half, np.nan)
    out["welch_ci_high"] = np.where(ok, gap + half, np.nan)
    out["pooled_sd"] = np.where(ok, s_pool, np.nan)
    g, g_low, g_high = hedges_g(np.where(ok, gap, np.nan), s_pool, n_b, n_r)
    out["hedges_g"], out["g_ci_low"], out["g_ci_high"] = g, g_low, g_high
    out["welch_note"] = note
    return c.stamp(out)


def paired_table(
    df: pd.DataFrame,
    comparison: Comparison | None = None,
) -> pd.DataFrame:
    """Seed-matched paired t-test of each baseline against the reference (Review) at each size.

    Parameters
    ----------
    df
        A validated sweep (`load_sweep`).
    comparison
        The comparison (`rr_analysis.comparison.Comparison`), as in `welch_table`.

    Returns
    -------
    DataFrame, one row per (size, baseline), with columns ``size, baseline, n_pairs, paired_diff`` (mean of
    baseline - reference of the response over the seeds present in both arms), ``paired_sd`` (SD of those differences),
    ``paired_se`` (sd / sqrt(n_pairs), the SE of paired_diff), ``paired_t, paired_df, paired_p`` (two-sided),
    ``paired_ci_low, paired_ci_high`` (95% CI of paired_diff from the same t: the interval of paired_p, so a
    table that shows the paired p shows this interval beside it, never Welch's),
    ``signflip_p, signflip_floor, signflip_method`` (the exact sign-flip test of the same differences and the
    smallest p it can reach, `rr_analysis.stats.exact.sign_flip`), ``paired_note`` (why the t-test is n/a, ""
    when it ran) and `STAMP`.

    Notes
    -----
    Within a size, seed s fixes the data order for every variant, so d_s = y_baseline,s - y_reference,s removes
    the seed's effect. t = mean(d) / (sd(d)/sqrt(n)), df = n - 1, p = 2 P(T_df > |t|), the one-sample t-test
    of the differences (scipy.stats.ttest_rel); CI = mean(d) -/+ t_{0.975, n-1} sd(d)/sqrt(n)
    (``ttest_rel(...).confidence_interval()``). Seeds present in only one arm are left out. Needs n >= 2
    pairs and differences that are not all equal. Where the file records a ``data_seed`` (runs that named
    their own seeds), s is the data seed (`rr_analysis.comparison.PAIR`): arms are paired on the batches they
    shared, and an arm's several runs of one data seed (other init seeds) enter as their mean, so n counts
    data seeds.

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> p = paired_table(load_sweep())
    >>> p.loc[(p["size"] == "1B") & (p["baseline"] == "highway"), "paired_df"].item()
    2.0
    """
    rows, c = compare(df, comparison)
    out = cell_frame(rows, c)[["size", "baseline"]]
    y = rows.pivot_table(  # an arm's runs that share a data seed (several init seeds): their mean
        index=["size", PAIR], columns="variant", values=RESPONSE, aggfunc="mean", observed=True
    )
    d = y.drop(columns=c.reference).sub(y[c.reference], axis=0)
    d = d.rename_axis(columns="baseline").stack().rename("d").reset_index()
    stats = d.groupby(["size", "baseline"], observed=True)["d"].agg(n="count", mean="mean", sd="std")
    stats = stats.reindex(pd.MultiIndex.from_arrays([out["size"], out["baseline"]]))
    n = np.nan_to_num(stats["n"].to_numpy(dtype=float))
    mean, sd = stats["mean"].to_numpy(dtype=float), stats["sd"].to_numpy(dtype=float)
    # "All differences equal" relative to their size: rounding in the CSV makes an exact 0 test too strict.
    flat = ~(sd > 1e-12 * np.maximum(np.abs(mean), 1e-12))
    note = _reasons(
        [
            (n == 0, "no seed present in both arms"),
            (n < 2, "fewer than 2 seed-matched pairs"),
            (flat, "the seed-matched differences have zero variance"),
        ],
        len(out),
    )
    ok = note == ""
    t = np.where(ok, mean / np.where(ok, sd / np.sqrt(np.maximum(n, 1)), 1.0), np.nan)
    out["n_pairs"] = n.astype("int64")
    out["paired_diff"] = np.where(n > 0, mean, np.nan)
    out["paired_sd"] = np.where(n > 1, sd, np.nan)
    out["paired_se"] = np.where(n > 1, sd / np.sqrt(np.maximum(n, 1)), np.nan)
    out["paired_t"], out["paired_df"] = t, np.where(ok, n - 1, np.nan)
    out["paired_p"] = np.where(ok, t_sf2(np.nan_to_num(t), np.maximum(n - 1, 1)), np.nan)
    half = t_quantile(0.975, np.maximum(n - 1, 1)) * out["paired_se"].to_numpy(float)
    out["paired_ci_low"] = np.where(ok, mean - half, np.nan)
    out["paired_ci_high"] = np.where(ok, mean + half, np.nan)
    out["paired_note"] = note
    flips = _sign_flips(d, out)
    out["signflip_p"], out["signflip_floor"], out["signflip_method"] = flips
    return c.stamp(out)


def _sign_flips(d: pd.DataFrame, cells: pd.DataFrame) -> tuple[list, list, list]:
    """`sign_flip` of each cell's seed-matched differences (long frame `d`), in the order of `cells`."""
    groups = {k: g.dropna().to_numpy(float) for k, g in d.groupby(["size", "baseline"], observed=True)["d"]}
    res = [sign_flip(groups.get(k, [])) for k in zip(cells["size"], cells["baseline"], strict=True)]
    return [r[0] for r in res], [r[1] for r in res], [r[2] for r in res]


def gap_table(
    df: pd.DataFrame,
    adjust: str = "holm",
    comparison: Comparison | None = None,
) -> pd.DataFrame:
    """The full comparison: Welch, paired (primary) and per-size mixed model, each adjusted over its family.

    Parameters
    ----------
    df
        A validated sweep (`load_sweep`).
    adjust
        Multiple-testing adjustment, one of `ADJUST_METHODS` (default Holm).
    comparison
        The comparison (`rr_analysis.comparison.Comparison`), as in `welch_table`.

    Returns
    -------
    DataFrame, one row per (size, baseline): the columns of `welch_table` with, after ``params_flagged``, the
    cell's budget (`rr_analysis.stats.tokens.cell_budgets`: ``steps`` and ``tokens`` of the reference's runs,
    ``tokens_source`` "recipe" or "file", ``tokens_per_param`` of the reference's parameter count, the same for
    every arm; NaN where the reference did not run), `paired_table` and
    `rr_analysis.stats.mixed.mixed_table` (see those), then ``p_adj_welch, p_adj_paired, p_adj_mixed`` (adjusted
    p), ``adjust`` (the method), ``primary`` (the name of the declared primary test, `PRIMARY_TEST`) and
    ``family_m_welch, family_m_paired, family_m_mixed`` (how many tests each family holds), then `STAMP`.
    `TABLE_COLUMNS` lists the stable subset the CLI emits as JSON/CSV.

    Notes
    -----
    Each test forms its own family: the size x baseline cells where it ran. Cells where it is n/a (the
    reason is in ``*_note``) are not counted in m. The paired family is the primary one; the Welch family
    reproduces the paper's ten tests; the mixed family is the primary test's twin. The sign-flip p is shown
    raw, with its floor: it is a check on the t-tests' normality, not a family of its own.

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> t = gap_table(load_sweep())
    >>> t["welch_t"].round(2).tolist()
    [0.42, -1.01, 0.81, -0.53, 0.5, 0.39, 3.28, 3.67, 2.31, 2.36]
    """
    c = asked(comparison)
    key = ["size", "baseline", *STAMP]
    out = (
        welch_table(df, c)
        .merge(paired_table(df, c), on=key, how="left")
        .merge(mixed_table(df, c), on=key, how="left")
    )
    for test in TESTS:
        out[f"p_adj_{test}"] = adjust_p(out[f"{test}_p"], adjust)
    out["adjust"], out["primary"] = adjust, PRIMARY_TEST
    for test in TESTS:
        out[f"family_m_{test}"] = int(out[f"{test}_p"].notna().sum())
    budgets = cell_budgets(compare(df, c)[0], c.reference).set_index("size")
    at = out.columns.get_loc("params_flagged") + 1
    for i, col in enumerate(("steps", "tokens", "tokens_source", "tokens_per_param")):
        out.insert(at + i, col, out["size"].map(budgets[col]).to_numpy())
    out["tokens_source"] = out["tokens_source"].fillna("")
    for col in ("steps", "tokens"):  # counts: 8000, not 8000.0 (a median over seeds rounded to a whole count)
        out[col] = pd.array(
            [None if np.isnan(v) else round(v) for v in out[col].astype(float)], dtype="Int64"
        )
    return out[[c for c in out if c not in STAMP] + list(STAMP)]

"""Is the comparison fair once every variant is tuned? The statistics of a tuning file (`rr tune`).

A tuning file's rows record their learning rate (`lr`) and why they were trained (`role`): selection runs
train every variant at every rate of a grid; comparison runs train other seeds at the rate each variant's
selection picked (`rr_core.lr_choice.choose_rate`, the one rule `rr tune` used). `tuning_table` reports the
metric against the rate on the selection seeds, the rate picked, and the primary seed-paired test of the gap
at the tuned rates on the comparison seeds only: the seeds that picked a rate never test the gap at it, so
the noise that made a rate look best does not also make the gap look large (no winner's curse). Beside it,
the gap at the shared rate (the recipe's, 2e-4 unless --ladder says otherwise) where the file has comparison
seeds there, else its sign from the selection means (descriptive, no test), and a verdict: does the ranking
survive tuning?
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rr_analysis.comparison import (
    ALPHA,
    RESPONSE,
    Comparison,
    asked,
    compare,
    sizes_in_order,
    t_interval,
    t_quantile,
)
from rr_analysis.stats.gap_tests import adjust_p, paired_table
from rr_core.errors import InputError
from rr_core.ladder import RECIPE, get_size
from rr_core.lr_choice import choose_rate
from rr_core.variants import label

__all__ = ["tuning_table", "TUNING_COLUMNS", "shared_rate"]

# The columns of `tuning_table`, in order (JSON and CSV emit them all).
TUNING_COLUMNS: tuple[str, ...] = (
    "size",
    "part",
    "variant",
    "lr",
    "reference_lr",
    "n",
    "estimate",
    "sd",
    "ci_low",
    "ci_high",
    "t",
    "df",
    "p",
    "p_adj",
    "adjust",
    "family_m",
    "chosen",
    "edge",
    "verdict",
    "note",
)


def shared_rate(size: str, ladder: str | None = None) -> tuple[float, str]:
    """The rate every variant shares without tuning (the size's recipe lr), and where it comes from; a size
    neither rr's ladder nor `ladder` knows gets the published recipe's, saying so."""
    try:
        return get_size(size, ladder).recipe.lr, "the size's recipe"
    except InputError:
        return RECIPE.lr, "the published recipe's (give --ladder FILE for a ladder file's own)"


def _curves(sel: pd.DataFrame, c: Comparison) -> pd.DataFrame:
    """The selection rows' metric by (size, variant, lr): n, mean, sd, 95% t CI, the rate chosen, its edge."""
    stats = sel.groupby(["size", "variant", "lr"], observed=True)[c.metric].agg(
        n="count", estimate="mean", sd="std"
    )
    out = stats.reset_index()
    n = out["n"].to_numpy(dtype=float)
    out["ci_low"], out["ci_high"] = t_interval(out["estimate"].to_numpy(float), out["sd"].to_numpy(float), n)
    out["chosen"], out["edge"], out["note"] = False, "", ""
    for (size, variant), cell in sel.groupby(["size", "variant"], observed=True):
        seeds = cell["seed"].nunique()
        choice = choose_rate(cell.groupby("lr", observed=True)[RESPONSE].apply(list).to_dict(), seeds=seeds)
        here = (out["size"] == size) & (out["variant"] == variant)
        if choice is None:
            continue
        at = here & (out["lr"] == choice.lr)
        out.loc[at, "chosen"], out.loc[at, "edge"], out.loc[at, "note"] = (
            True,
            choice.edge or "",
            choice.advice,
        )
        for lr in choice.incomplete:
            out.loc[here & (out["lr"] == lr), "note"] = f"not eligible: {seeds} selection seed(s), fewer here"
    return out.assign(part="selection")


def _gap(rows: pd.DataFrame, c: Comparison, part: str, lrs: dict) -> pd.DataFrame:
    """The primary seed-paired test of each baseline against the reference on `rows` (one rate per variant
    and size): `rr_analysis.stats.gap_tests.paired_table`, with its 95% t interval; `lrs` {(size, variant):
    lr} names the rates."""
    if rows.empty:
        return pd.DataFrame()
    present = set(rows["variant"])
    baselines = [b for b in c.baselines if b in present]
    if c.reference not in present or not baselines:
        return pd.DataFrame()
    p = paired_table(
        rows.drop(columns=RESPONSE), Comparison(c.reference, tuple(baselines), c.metric, c.higher_is_better)
    )
    n = p["n_pairs"].to_numpy(dtype=float)
    mean, se = p["paired_diff"].to_numpy(float), p["paired_se"].to_numpy(float)
    half = np.where(n >= 2, t_quantile(0.975, np.maximum(n - 1, 1)) * se, np.nan)
    return pd.DataFrame(
        {
            "size": p["size"].astype(str),
            "part": part,
            "variant": p["baseline"],
            "lr": [
                lrs.get((s, b), np.nan) for s, b in zip(p["size"].astype(str), p["baseline"], strict=True)
            ],
            "reference_lr": [lrs.get((s, c.reference), np.nan) for s in p["size"].astype(str)],
            "n": p["n_pairs"],
            "estimate": mean,
            "sd": p["paired_sd"],
            "ci_low": mean - half,
            "ci_high": mean + half,
            "t": p["paired_t"],
            "df": p["paired_df"],
            "p": p["paired_p"],
            "note": p["paired_note"],
        }
    )


def _decision(row: pd.Series) -> str:
    """A test's decision in words: its adjusted p against alpha, naming the test and the adjustment."""
    if pd.isna(row["p_adj"]):
        return "untested"
    below = row["p_adj"] < ALPHA
    words = "significant" if below else "not significant"
    return f"{words} (paired t, {row['adjust']} p {row['p_adj']:.3g} {'<' if below else '>='} {ALPHA:g})"


def _verdict(tuned: pd.Series, reference: str, shared_gap: float, shared: str) -> str:
    """Does the ranking survive tuning? The sign of the gap at the tuned rates against its sign at the shared
    rate, with each gap's decision (`shared`: the shared-rate test's, or how its gap was read)."""
    if pd.isna(tuned["estimate"]):
        return "no gap at the tuned rates (comparison seeds missing)"
    winner = label(reference if tuned["estimate"] > 0 else tuned["variant"])
    other = label(tuned["variant"]) if winner == label(reference) else label(reference)
    if pd.isna(shared_gap):
        return f"tuned: {winner} ahead, {_decision(tuned)}; no gap at the shared rate to compare with"
    gaps = f"tuned gap {_decision(tuned)}, shared-rate gap {shared}"
    if np.sign(shared_gap) == np.sign(tuned["estimate"]):
        return f"ranking survives tuning: {winner} ahead at the shared rate and tuned; {gaps}"
    return f"ranking flips with tuning: {other} ahead at the shared rate, {winner} once tuned; {gaps}"


def tuning_table(
    df: pd.DataFrame,
    comparison: Comparison | None = None,
    adjust: str = "holm",
    ladder: str | None = None,
) -> pd.DataFrame:
    """The metric by learning rate, each variant's chosen rate, and the gap at the tuned rates (a tuning file).

    Parameters
    ----------
    df
        A validated sweep with the columns ``lr`` and ``role`` (`rr tune`'s file): selection rows (every
        variant at every rate on the selection seeds) and comparison rows (other seeds, each variant at its
        chosen rate). An empty lr is the shared rate.
    comparison
        The comparison (`rr_analysis.comparison.Comparison`): reference, baselines, metric and direction.
    adjust
        The correction over the family of tuned-rate tests (every size x baseline): one of
        `rr_analysis.comparison.ADJUST_METHODS`; the shared-rate tests are a second family.
    ladder
        The ladder file whose recipe lr is the shared rate of its sizes (None: rr's own).

    Returns
    -------
    DataFrame with `TUNING_COLUMNS`, then `rr_analysis.comparison.STAMP`. ``part`` says what a row is:
    "selection" (one per size, variant and rate: ``n`` selection seeds, ``estimate`` the mean metric, ``sd``,
    ``ci_low``/``ci_high`` its 95% t interval, ``chosen`` the rate picked, ``edge`` "lowest"/"highest" when
    it is the grid's end, with the advice in ``note``); "tuned" (one per size and baseline: the seed-paired
    gap, baseline - reference of the response, on the comparison seeds, each variant at its chosen rate: ``lr``
    the baseline's, ``reference_lr`` the reference's, ``n`` pairs, ``t``, ``df``, two-sided ``p``, ``p_adj``
    over the family of tuned tests, ``family_m`` its size, ``verdict``); "shared" (the same test at the
    shared rate, on comparison seeds the file has there, a family of its own).

    Notes
    -----
    The rate is picked as `rr tune` picks it (`rr_core.lr_choice.choose_rate`: the lowest mean response on the
    selection seeds among rates every selection seed finished; ties to the smaller rate). The test is the
    primary per-size test (`rr_analysis.stats.gap_tests.paired_table`): d_s = y_baseline,s - y_reference,s over
    comparison seeds s, t = mean(d) / (sd(d)/sqrt(n)), df = n - 1 (scipy.stats.ttest_rel); its 95% CI is
    mean(d) +- t_{0.975, n-1} sd(d)/sqrt(n). A curve point's CI is mean +- t_{0.975, n-1} sd/sqrt(n). Selection
    rows never enter a test.

    Example
    -------
    >>> import io
    >>> from rr_core.sweepfile.dataset import read_sweep_text
    >>> rows = ["size,variant,seed,params_M,steps,val_loss,ece,minutes,lr,role"]
    >>> for v, d in (("review_neutral", 0.0), ("highway", 0.02)):
    ...     rows += [f"tiny,{v},{s},1,4,{3 + d + 0.01 * s + 0.1 * (lr == 1e-3)},,,{lr},selection"
    ...              for s in (0, 1) for lr in (1e-3, 2e-3)]
    ...     rows += [f"tiny,{v},{s},1,4,{3 + d + 0.013 * s * s},,,0.002,comparison" for s in (2, 3, 4)]
    >>> t = tuning_table(read_sweep_text("\\n".join(rows)))
    >>> t.loc[t["part"] == "tuned", ["variant", "lr", "n", "estimate"]].round(4).values.tolist()
    [['highway', 0.002, 3, 0.02]]
    """
    c = asked(comparison)
    rows, c, shared = _tuning_rows(df, c, ladder)
    sel, compared = rows[rows["role"] == "selection"], rows[rows["role"] == "comparison"]
    if sel.empty:
        raise InputError("the file has no selection rows (role selection): no rate was picked here")
    curves = _curves(sel, c)
    chosen = {(r.size, r.variant): r.lr for r in curves[curves["chosen"]].itertuples()}
    picked = [
        chosen.get((s, v)) == lr
        for s, v, lr in zip(*(compared[k] for k in ("size", "variant", "lr")), strict=True)
    ]
    tuned = _gap(compared[picked], c, "tuned", chosen)
    # at the shared rate: comparison rows, and rows of no role (a plain sweep's) on seeds that picked no rate
    picking = set(zip(sel["size"], sel["seed"], strict=True))
    plain = rows[
        (rows["role"] == "")
        & np.array([k not in picking for k in zip(rows["size"], rows["seed"], strict=True)], dtype=bool)
    ]
    at_shared = pd.concat([compared, plain])
    at_shared = at_shared[at_shared["lr"] == at_shared["size"].map(shared)]
    common = _gap(
        at_shared, c, "shared", {(s, v): lr for s, lr in shared.items() for v in [c.reference, *c.baselines]}
    )
    for part in (tuned, common):
        if not part.empty:
            part["p_adj"] = adjust_p(part["p"], adjust)
            part["adjust"], part["family_m"] = adjust, int(part["p"].notna().sum())
    if not tuned.empty:
        tuned["verdict"] = [_survives(r, common, curves, shared[r["size"]], c) for _, r in tuned.iterrows()]
        tested = set() if common.empty else set(zip(common["size"], common["variant"], strict=True))
        untested = np.array(
            [k not in tested for k in zip(tuned["size"], tuned["variant"], strict=True)], bool
        )
        tuned.loc[untested, "note"] = [
            f"no comparison seeds at the shared rate (lr {shared[s]:g}, {shared_rate(s, ladder)[1]}), so the "
            "ranking there is read from the selection means (descriptive: those seeds picked the rates)"
            for s in tuned.loc[untested, "size"]
        ]
    return _tidy(pd.concat([curves, tuned, common], ignore_index=True), df, c)


def _tuning_rows(df: pd.DataFrame, c: Comparison, ladder: str | None):
    """The compared rows of a tuning file (sizes as plain labels, an empty lr as the shared rate), the
    comparison resolved, and each size's shared rate; InputError for a file that is not a tuning file."""
    if not {"lr", "role"} <= set(df.columns):
        missing = ", ".join(sorted({"lr", "role"} - set(df.columns)))
        raise InputError(
            f"not a tuning file: it lacks the column(s) {missing} (rr tune writes lr and role on every row); "
            "the tuning view reads the rows of rr tune --out FILE"
        )
    rows, c = compare(df, c, several_rates=True)
    rows = rows.assign(size=rows["size"].astype(str))
    shared = {s: shared_rate(s, ladder)[0] for s in rows["size"].unique()}
    return rows.assign(lr=rows["lr"].fillna(rows["size"].map(shared))), c, shared


def _survives(tuned: pd.Series, common: pd.DataFrame, curves: pd.DataFrame, lr: float, c: Comparison) -> str:
    """The verdict of one tuned gap against the gap at the shared rate `lr`: tested there on comparison seeds
    where the file has them, else the difference of the selection means there (descriptive)."""
    at = (
        common[(common["size"] == tuned["size"]) & (common["variant"] == tuned["variant"])]
        if len(common)
        else common
    )
    if len(at) and not pd.isna(at["estimate"].iloc[0]):
        return _verdict(tuned, c.reference, at["estimate"].iloc[0], _decision(at.iloc[0]))
    here = curves[(curves["size"] == tuned["size"]) & (curves["lr"] == lr)].set_index("variant")["estimate"]
    sign = -1 if c.higher_is_better else 1  # the gap of the response, as the test's
    gap = sign * (here.get(tuned["variant"], np.nan) - here.get(c.reference, np.nan))
    return _verdict(tuned, c.reference, gap, "from the selection means (descriptive, untested)")


def _tidy(out: pd.DataFrame, df: pd.DataFrame, c: Comparison) -> pd.DataFrame:
    """`TUNING_COLUMNS` filled (empty text, no chosen) and ordered: by size, part, variant (the reference
    first) and rate; then the comparison's stamp."""
    for col in TUNING_COLUMNS:
        if col not in out:
            out[col] = np.nan
    out["chosen"] = out["chosen"].fillna(False).astype(bool)
    for col in ("edge", "verdict", "note", "adjust"):
        out[col] = out[col].fillna("")
    order = {s: i for i, s in enumerate(sizes_in_order(df))}
    variants = {v: i for i, v in enumerate([c.reference, *c.baselines])}
    out["_size"], out["_variant"] = out["size"].map(order), out["variant"].map(variants)
    out["_part"] = out["part"].map({"selection": 0, "tuned": 1, "shared": 2})
    keys = ["_size", "_part", "_variant", "lr"]
    out = out.sort_values(keys, kind="stable").drop(columns=keys[:3]).reset_index(drop=True)
    out["n"] = out["n"].astype("int64")
    return c.stamp(out[list(TUNING_COLUMNS)])

"""The paper's claims audited statcheck-style: each reported number recomputed from the data and judged over
the interval its rounding allows, next to what the declared primary analysis says.

The claims are data, not code: one record per reported number in `claims.toml`, shipped in the package
(`CLAIMS_FILE`; its header lists the fields). Qualitative claims ("the gap grows across every size") are
records too, each naming the check that judges it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from rr_analysis.claims.reported import load_claims, parse_reported
from rr_analysis.claims.verdicts import (
    budget_verdict,
    claims_significant,
    equivalence_verdict,
    grim_possible,
    grows_verdict,
    judge,
    primary_verdict,
    recompute,
    statistic_of,
)
from rr_analysis.comparison import ALPHA, sizes_in_order
from rr_analysis.numbers import count, fixed, significant
from rr_analysis.stats.equivalence import DEFAULT_MARGIN, equivalence
from rr_analysis.stats.gap_tests import gap_table
from rr_analysis.stats.tokens import cell_budgets, per_param, run_tokens, size_and_tokens, tokens_source
from rr_core.variants import REFERENCE, label

__all__ = [
    "claims",
    "CLAIM_COLUMNS",
]


# Each column of a claims row, and whether it holds text (else a number, NaN until the audit fills it in).
_TEXT_COLUMNS: dict[str, bool] = {
    "id": True,
    "claim": True,
    "source": True,
    "size": True,
    "variant": True,
    "test": True,
    "sided": True,
    "reported": True,
    "statistic": True,
    "relation": True,
    "reported_value": False,
    "reported_low": False,
    "reported_high": False,
    "n": False,
    "recomputed": False,
    "recomputed_low": False,
    "recomputed_high": False,
    "df": False,
    "p": False,
    "p_adj": False,
    "grim": True,
    "verdict": True,
    "primary_p_adj": False,
    "primary": True,
    "evidence": True,
    "numbers": False,
}
CLAIM_COLUMNS: tuple[str, ...] = tuple(_TEXT_COLUMNS)


def _arrays(df: pd.DataFrame, r: dict) -> tuple[list[np.ndarray], str]:
    """The cell's runs a record is recomputed from, and why there are too few ("" when there are enough)."""
    cell = df[df["size"] == r["size"]]
    if r["test"] == "mean":
        y = cell.loc[cell["variant"] == r["variant"], "val_loss"].to_numpy(float)
        return [y], "" if len(y) else f"no {r['variant']} runs at {r['size']} in the data"
    b = cell[cell["variant"] == r["baseline"]].set_index("seed")["val_loss"]
    a = cell[cell["variant"] == REFERENCE].set_index("seed")["val_loss"]
    if r["test"] == "paired":
        shared = b.index.intersection(a.index)
        b, a = b[shared], a[shared]
    arrays = [b.to_numpy(float), a.to_numpy(float)]
    few = min(len(x) for x in arrays) < 2
    return arrays, f"fewer than 2 runs of {r['baseline']} or {REFERENCE} at {r['size']}" if few else ""


def _row(r: dict, **fields) -> dict:
    """A claims row: the record's id, words and source, `fields`, and NaN/"" for the rest."""
    row = {c: "" if text else math.nan for c, text in _TEXT_COLUMNS.items()}
    row.update(id=r["id"], claim=r["words"], source=r.get("source", ""), numbers={})
    return {**row, **fields}


def _evidence(test: str, stat: str, v: dict, adjust: str, m: int) -> str:
    """The recomputed numbers in words; each of them is a column of the row too."""
    lo, hi = v["recomputed_low"], v["recomputed_high"]
    if test == "mean":
        return f"mean of {v['n']} runs {fixed(v['recomputed'], 6)} (within the rows' rounding {fixed(lo, 6)} to {fixed(hi, 6)}); GRIM: {v['grim']}"
    d = 3 if stat == "t" else 4
    name = "Welch" if test == "welch" else "paired"
    p = "" if stat == "p" else f", p {fixed(v['p'], 4)}"
    shown = f"{name} {stat} {fixed(v['recomputed'], d)} (within the rows' rounding {fixed(lo, d)} to {fixed(hi, d)})"
    return f"{shown} on {fixed(v['df'], 2)} df{p}; {adjust} over {m} {name} tests {fixed(v['p_adj'], 4)}"


def _number_row(df: pd.DataFrame, r: dict, t: pd.DataFrame) -> dict:
    """One reported number: recomputed from its cell's runs, judged, and read by the primary test."""
    rep, sided = parse_reported(r["reported"], r.get("statistic")), r.get("sided", "two-sided")
    low, high = rep.interval()
    variant = r.get("baseline", r.get("variant"))
    fields = dict(
        size=r["size"],
        variant=variant,
        test=r["test"],
        sided="" if r["test"] == "mean" else sided,
        reported=r["reported"],
        statistic=rep.statistic,
        relation=rep.relation,
        reported_value=rep.value,
        reported_low=low if np.isfinite(low) else math.nan,
        reported_high=high if np.isfinite(high) else math.nan,
    )
    arrays, short = _arrays(df, r)
    if short:
        return _row(r, **fields, n=min(len(a) for a in arrays), verdict=f"n/a: {short}", evidence=short)
    stat = statistic_of(r["test"], sided)
    at = 2 if rep.statistic == "p" else 0
    v = dict(
        zip(
            ("recomputed", "recomputed_low", "recomputed_high"),
            recompute(lambda a: stat(a)[at], arrays),
            strict=True,
        )
    )
    _, v["df"], v["p"] = stat(arrays)
    v["n"] = min(len(a) for a in arrays)
    claimed, found = claims_significant(rep, v["df"], sided), None if r["test"] == "mean" else v["p"] < ALPHA
    verdict = judge(rep, v["recomputed"], v["recomputed_low"], v["recomputed_high"], claimed, found)
    if r["test"] == "mean":
        v["grim"] = "possible" if grim_possible(rep, v["n"]) else "impossible"
        return _row(
            r,
            **fields,
            **v,
            verdict=verdict,
            primary="n/a: a mean, not a comparison",
            evidence=_evidence("mean", "mean", v, "", 0),
        )
    cell = t[(t["size"] == r["size"]) & (t["baseline"] == variant)]
    v["p_adj"] = float(cell[f"p_adj_{r['test']}"].iloc[0]) if len(cell) else math.nan
    primary = float(cell["p_adj_paired"].iloc[0]) if len(cell) else math.nan
    m = int(t[f"family_m_{r['test']}"].iloc[0])
    return _row(
        r,
        **fields,
        **v,
        verdict=verdict,
        primary_p_adj=primary,
        primary=primary_verdict(primary, claimed),
        evidence=_evidence(r["test"], rep.statistic, v, t["adjust"].iloc[0], m),
    )


def _number(x) -> float | None:
    return None if pd.isna(x) else float(x)


def _grows(r: dict, t: pd.DataFrame) -> dict:
    """ "the gap grows across every size": every consecutive pair of sizes, per baseline (paired gaps)."""
    sizes, falls, numbers = list(dict.fromkeys(t["size"])), [], {}
    for b, g in t.groupby("baseline", sort=False, observed=True):
        gaps = g.set_index("size")["paired_diff"].reindex(sizes)
        numbers |= {f"gap_{b}_{s}": _number(gaps[s]) for s in sizes}
        falls += [
            f"{label(b)} {s0} {fixed(gaps[s0], 4)} -> {s1} {fixed(gaps[s1], 4)}"
            for s0, s1 in zip(sizes, sizes[1:], strict=False)
            if gaps[s1] < gaps[s0]
        ]
    return _row(
        r,
        test="per-size seed-paired gaps, consecutive sizes",
        numbers=numbers,
        verdict=grows_verdict(falls),
        evidence=("falls: " + "; ".join(falls)) if falls else "rises at every step",
    )


def _emergence(r: dict, e: pd.DataFrame) -> dict:
    """The emergence module's primary size-level verdict for the record's baseline, when it gives one."""
    row = e[e["baseline"] == r["baseline"]] if "verdict" in e else e.iloc[:0]
    if not len(row):
        return _row(
            r, variant=r["baseline"], verdict=f"n/a: no size-level test of {r['baseline']} on these data"
        )
    x = row.iloc[0]
    test = str(x.get("primary", ""))
    slope, p = x.get(f"{test}_slope"), x.get(f"{test}_p")
    numbers = {"slope_per_decade": _number(slope), "p": _number(p), "size_tokens_r": _number(x.get("dn_r"))}
    shown = (
        f"slope {fixed(slope, 4)} per decade, p {significant(p, 3)}"
        if pd.notna(slope) and pd.notna(p)
        else "no slope"
    )
    if x.get("dn_reading") == "confounded" and pd.notna(x.get("dn_r")):  # issue 44: along the sweep only
        shown += f" along the sweep, where log10 N and log10 D/N correlate at r = {fixed(x['dn_r'], 3)}"
    elif x.get("dn_reading") == "separable" and pd.notna(x.get("meta2_size_p")):
        numbers |= {
            "size_slope_at_fixed_dn": _number(x["meta2_size_slope"]),
            "size_p": _number(x["meta2_size_p"]),
            "dn_slope_at_fixed_size": _number(x["meta2_dn_slope"]),
            "dn_p": _number(x["meta2_dn_p"]),
        }
        shown += (
            f" (size only); at fixed tokens per parameter {fixed(x['meta2_size_slope'], 4)} per decade of "
            f"size, p {significant(x['meta2_size_p'], 3)}"
        )
    return _row(
        r,
        variant=r["baseline"],
        test=f"emergence, primary size-level test ({test})",
        numbers=numbers,
        evidence=shown,
        verdict=x["verdict"],
        p=_number(p),
    )


def _no_advantage(r: dict, t: pd.DataFrame, e: pd.DataFrame, margin: float) -> dict:
    """ "no advantage through <size>": differences the primary test finds, and whether TOST shows equivalence."""
    small = [s for s in r["sizes"] if s in set(t["size"])]
    cells = t[t["size"].isin(small)]
    found = [
        f"{c.size} {label(c.baseline)} {fixed(c.gap, 4, sign=True)} (p {fixed(c.paired_p, 3)}, mixed {fixed(c.mixed_p, 3)})"
        for c in cells.itertuples()
        if c.paired_p < ALPHA or c.mixed_p < ALPHA
    ]
    eq = e[e["size"].isin(small)]
    top = eq["paired_tost_p"].max()
    numbers = {
        "margin": margin,
        "tost_p_max": _number(top),
        "cells": len(eq),
        "cells_failing": int((~(eq["paired_tost_p"] < ALPHA)).sum()),
        **{f"gap_{c.baseline}_{c.size}": _number(c.gap) for c in cells.itertuples()},
        **{f"paired_p_{c.baseline}_{c.size}": _number(c.paired_p) for c in cells.itertuples()},
        **{f"mixed_p_{c.baseline}_{c.size}": _number(c.mixed_p) for c in cells.itertuples()},
    }
    tost = f"; TOST p max {fixed(top, 3)}" if eq["paired_tost_p"].notna().any() else "; TOST n/a"
    return _row(
        r,
        test=f"paired (primary) and mixed, raw p; TOST paired, margin ±{significant(margin)}",
        numbers=numbers,
        evidence=("differences at 5%: " + "; ".join(found) if found else "no difference at 5%") + tost,
        verdict=equivalence_verdict(eq["paired_tost_p"], margin),
        p=_number(top),
    )


def _budget(r: dict, df: pd.DataFrame) -> dict:
    """ "identical token budget": each size's tokens per run (`rr_analysis.stats.tokens.run_tokens`), and the
    tokens per parameter they give the reference, with their correlation with size."""
    tokens, _ = run_tokens(df)
    per = pd.Series(tokens, index=df.index).groupby(df["size"].astype(str), observed=True).agg(["min", "max"])
    order = [s for s in sizes_in_order(df) if s in per.index]
    within = bool((per["min"] != per["max"]).any())
    budgets = cell_budgets(df, REFERENCE)
    dn = dict(zip(budgets["size"], budgets["tokens_per_param"], strict=True))
    numbers = {f"steps_{s}": int(df.loc[df["size"] == s, "steps"].max()) for s in order}
    numbers |= {f"tokens_{s}": float(per.loc[s, "max"]) for s in order}
    numbers |= {f"tokens_per_param_{s}": float(dn[s]) for s in order if s in dn}
    groups = [list(g) for _, g in itertools.groupby(order, key=lambda s: per.loc[s, "max"])]
    shown = ", ".join(
        f"{count(per.loc[g[0], 'max'])} at {g[0] if len(g) == 1 else f'{g[0]}-{g[-1]}'}" for g in groups
    )
    across = ""
    if len(groups) > 1:
        reading = size_and_tokens(budgets)
        corr = f" (r = {fixed(reading['r'], 3)} with log10 N)" if np.isfinite(reading["r"]) else ""
        first, last = budgets.iloc[0], budgets.iloc[-1]
        across = (
            f"tokens per run {shown}, so tokens per parameter go from {per_param(first['tokens_per_param'])} "
            f"at {first['size']} to {per_param(last['tokens_per_param'])} at {last['size']}{corr}"
        )
    return _row(
        r,
        test="recipe: tokens per run (steps x batch x block)",
        numbers=numbers,
        evidence=f"tokens per run {shown} ({tokens_source(budgets)}); tokens per parameter "
        + ", ".join(f"{s} {per_param(v)}" for s, v in dn.items())
        + "; "
        + ("variants differ within a size" if within else "identical within each size"),
        verdict=budget_verdict(across, within),
    )


def claims(
    df: pd.DataFrame,
    margin: float = DEFAULT_MARGIN,
    adjust: str = "holm",
    records: str | Path | None = None,
    baselines: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The paper's claims audited: each reported number recomputed and judged statcheck-style.

    Parameters
    ----------
    df
        A validated sweep (`load_sweep`); the claims are read on this data.
    margin
        Equivalence margin (nats) for "no advantage" (`rr_analysis.stats.equivalence`).
    adjust
        Multiple-testing adjustment of each test's family (`rr_analysis.comparison.ADJUST_METHODS`).
    records
        A claims file (`load_claims`); default `CLAIMS_FILE`, the paper's.
    baselines
        Audit only the claims about these baselines (and the claims that name none); None: every claim.

    Returns
    -------
    DataFrame with `CLAIM_COLUMNS`, one row per record, in the file's order: ``id, claim`` (the paper's
    words), ``source``, ``size, variant`` (the baseline compared with Review, or the arm of a mean),
    ``test, sided``, ``reported`` (as written), ``statistic, relation, reported_value, reported_low,
    reported_high`` (the interval the written number stands for; empty where unbounded), ``n`` (runs per
    arm), ``recomputed, recomputed_low, recomputed_high`` (from the data, and its range within the data's own
    4-decimal rounding), ``df, p`` (the recomputed test), ``p_adj`` (that test adjusted over its family),
    ``grim`` (means: "possible" or "impossible"), ``verdict`` (one of `VERDICTS` for a number, the check's
    statement for a qualitative claim, "n/a: <reason>" where the data cannot say), ``primary_p_adj,
    primary`` (the primary test's adjusted p for the cell and what it says of the claim), ``evidence``
    (the numbers in words) and ``numbers`` (a qualitative claim's numbers by name; {} for a number).

    Notes
    -----
    A number written with d decimals stands for [v - h, v + h), h = 0.5 10^-d (p < 0.05 for (-inf, 0.05)).
    "decision error": the significance at 0.05 that the written number states (for t, through the
    recomputed df) differs from the recomputed one. The primary analysis is the seed-paired t-test per size,
    adjusted over its family (`gap_table`); Welch is the paper's test.

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> c = claims(load_sweep()).set_index("id")
    >>> round(float(c.loc["t_590M_highway", "recomputed"]), 2), c.loc["t_590M_highway", "verdict"]
    (3.28, 'consistent')
    """
    t, rows, fits = gap_table(df, adjust), [], {}
    for r in load_claims(records):
        if baselines is not None and r.get("baseline") not in (None, *baselines):
            continue
        if "check" not in r:
            sizes = set(df["size"])
            rows.append(
                _number_row(df, r, t)
                if r["size"] in sizes
                else _row(
                    r,
                    size=r["size"],
                    variant=r.get("baseline", r.get("variant")),
                    reported=r["reported"],
                    verdict=f"n/a: no runs at {r['size']} in the data",
                )
            )
        elif r["check"] == "grows":
            rows.append(_grows(r, t))
        elif r["check"] == "emergence":
            from rr_analysis.stats.emergence import emergence

            fits.setdefault("emergence", emergence(df))
            rows.append(_emergence(r, fits["emergence"]))
        elif r["check"] == "no_advantage":
            rows.append(_no_advantage(r, t, equivalence(df, margin), margin))
        else:
            rows.append(_budget(r, df))
    out = pd.DataFrame(rows, columns=list(CLAIM_COLUMNS))
    return out.astype({"n": "Int64"})

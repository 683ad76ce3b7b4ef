"""The paper's claims audited statcheck-style: each reported number recomputed from the data and judged over
the interval its rounding allows, next to what the declared primary analysis says.

The claims are data, not code: one record per reported number in `claims.toml`, shipped in the package
(`CLAIMS_FILE`; its header lists the fields). Qualitative claims ("the gap grows across every size") are
records too, each naming the check that judges it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rr_analysis.cells import ALPHA
from rr_analysis.equivalence import DEFAULT_MARGIN, equivalence
from rr_analysis.notes import recipe_notes
from rr_analysis.numbers import fixed
from rr_analysis.stats import gap_table
from rr_model.core.errors import InputError
from rr_model.core.files import read_toml
from rr_model.core.variants import REFERENCE, label

__all__ = [
    "claims",
    "load_claims",
    "parse_reported",
    "Reported",
    "recompute",
    "judge",
    "grim_possible",
    "CLAIMS_FILE",
    "CLAIM_COLUMNS",
    "VERDICTS",
    "DATA_DECIMALS",
    "NOT_RUN",
    "primary_verdict",
    "grows_verdict",
    "equivalence_verdict",
    "budget_verdict",
]

CLAIMS_FILE = Path(__file__).with_name("claims.toml")
DATA_DECIMALS = 4  # the sweep file's precision: every val_loss is written at 4 decimals
CONSISTENT, BY_ROUNDING = "consistent", "consistent only by rounding"
VALUE_ERROR, DECISION_ERROR = "value error", "decision error"
VERDICTS: tuple[str, ...] = (CONSISTENT, BY_ROUNDING, VALUE_ERROR, DECISION_ERROR)
NOT_RUN = "n/a: the test does not run on these data (see `rr analyze table` for the reason)"
CLAIM_COLUMNS: tuple[str, ...] = (
    "id", "claim", "source", "size", "variant", "test", "sided", "reported", "statistic", "relation",
    "reported_value", "reported_low", "reported_high", "n", "recomputed", "recomputed_low", "recomputed_high",
    "df", "p", "p_adj", "grim", "verdict", "primary_p_adj", "primary", "evidence", "numbers",
)  # fmt: skip
TESTS = ("welch", "paired", "mean")
SIDES = ("two-sided", "greater", "less")
CHECKS = ("grows", "emergence", "no_advantage", "budget")
_FIELDS = {"id", "words", "source", "size", "baseline", "variant", "statistic", "reported", "test", "sided",
           "check", "sizes"}  # fmt: skip
_REPORTED = re.compile(r"^\s*(?:(?P<stat>t|p|mean)\s*)?(?P<rel><=|>=|=|<|>)?\s*(?P<num>[-+]?\d*\.?\d+)\s*$")


@dataclass(frozen=True)
class Reported:
    """A number as the paper wrote it: statistic, relation, value and the decimals it was rounded to."""

    statistic: str
    relation: str
    value: float
    decimals: int

    def interval(self) -> tuple[float, float]:
        """The values the written number stands for: t = 3.3 is [3.25, 3.35); p < 0.05 is (-inf, 0.05)."""
        if self.relation == "=":
            # rounded to one more decimal: 3.3 + 0.05 is 3.35, not 3.3499999999999996
            half, d = 0.5 * 10.0**-self.decimals, self.decimals + 1
            return round(self.value - half, d), round(self.value + half, d)
        return (-math.inf, self.value) if self.relation in ("<", "<=") else (self.value, math.inf)

    def holds(self, x: float) -> bool:
        """Whether `x` is a value the written number stands for (rounding half away from zero)."""
        low, high = self.interval()
        if self.relation == "=":
            return low <= x < high if self.value >= 0 else low < x <= high
        return {"<": x < high, "<=": x <= high, ">": x > low, ">=": x >= low}[self.relation]


def parse_reported(text: str, statistic: str | None = None) -> Reported:
    """A reported value as written ("0.07", "t=3.3", "p<0.05", "mean=1.6891") as a `Reported`.

    Example
    -------
    >>> parse_reported("t=3.3").interval()
    (3.25, 3.35)
    """
    m = _REPORTED.match(text)
    stat = (m["stat"] if m else None) or statistic
    if not m or stat is None:
        raise InputError(f"cannot read the reported value {text!r}: expect e.g. '0.07', 't=3.3' or 'p<0.05'")
    num = m["num"].lstrip("+-")
    return Reported(stat, m["rel"] or "=", float(m["num"]), len(num.split(".")[1]) if "." in num else 0)


def _check_record(r: dict) -> str | None:
    """What is wrong with one record, as a phrase, or None."""
    if not isinstance(r.get("id"), str) or not isinstance(r.get("words"), str):
        return "needs an id and the paper's words"
    if unknown := sorted(set(r) - _FIELDS):
        return f"unknown field(s) {', '.join(unknown)}; the fields are {', '.join(sorted(_FIELDS))}"
    if "check" in r:
        return None if r["check"] in CHECKS else f"check must be one of {', '.join(CHECKS)}"
    if "reported" not in r or "size" not in r:
        return "needs `reported` and `size` (or a `check`)"
    if r.get("test") not in TESTS or r.get("sided", "two-sided") not in SIDES:
        return f"test must be one of {', '.join(TESTS)} and sided one of {', '.join(SIDES)}"
    if ("variant" if r["test"] == "mean" else "baseline") not in r:
        return "a mean names its `variant`; a test names its `baseline`"
    try:
        parse_reported(r["reported"], r.get("statistic"))
    except InputError as e:
        return str(e)
    return None


def load_claims(path: str | Path | None = None) -> list[dict]:
    """The claim records of a claims file (default `CLAIMS_FILE`, the paper's), validated.

    Example
    -------
    >>> [r["reported"] for r in load_claims() if r["id"].startswith("t_590M")]
    ['t=3.3', 't=3.7']
    """
    path = Path(path) if path is not None else CLAIMS_FILE
    records = read_toml(path, str(path), "TOML claims file").get("claim", [])
    seen: set[str] = set()
    for i, r in enumerate(records, 1):
        problem = _check_record(r) or (f"the id {r['id']!r} is used twice" if r["id"] in seen else None)
        if problem:
            raise InputError(f"{path}: claim {i} ({r.get('id', 'no id')}): {problem}")
        seen.add(r["id"])
    return records


def _statistic(test: str, sided: str) -> Callable[[list[np.ndarray]], tuple[float, float, float]]:
    """(statistic, df, p) of one cell's arrays: Welch t (baseline, Review), paired t, or the mean."""
    from scipy import stats

    alt = {"two-sided": "two-sided", "greater": "greater", "less": "less"}[sided]
    if test == "mean":
        return lambda a: (float(np.mean(a[0])), math.nan, math.nan)
    fn = (
        stats.ttest_rel if test == "paired" else lambda b, r, **k: stats.ttest_ind(b, r, equal_var=False, **k)
    )

    def t_test(a: list[np.ndarray]) -> tuple[float, float, float]:
        res = fn(a[0], a[1], alternative=alt)
        return float(res.statistic), float(res.df), float(res.pvalue)

    return t_test


def recompute(
    f: Callable[[list[np.ndarray]], float], arrays: list[np.ndarray], decimals: int = DATA_DECIMALS
):
    """f on the data, and its range when each input may be off by its own rounding (half a unit of `decimals`).

    Notes
    -----
    Each value y_i stands for [y_i - h, y_i + h], h = 0.5 10^-decimals. The range is f at the two corners
    y +/- h sign(df/dy_i), the signs from central differences: exact for f monotone in each input (a mean),
    first-order otherwise (t, p: their curvature over h is negligible next to the seed SD).

    Example
    -------
    >>> v, lo, hi = recompute(lambda a: float(np.mean(a[0])), [np.array([1.0, 2.0])])
    >>> (v, round(lo, 6), round(hi, 6))
    (1.5, 1.49995, 1.50005)
    """
    h = 0.5 * 10.0**-decimals
    sizes = [len(a) for a in arrays]
    flat = np.concatenate(arrays).astype(float)

    def at(y: np.ndarray) -> float:
        return f(np.split(y, np.cumsum(sizes)[:-1]))

    signs = np.array([np.sign(at(flat + h * e) - at(flat - h * e)) for e in np.eye(len(flat))])
    ends = sorted([at(flat + h * signs), at(flat - h * signs)])
    return at(flat), ends[0], ends[1]


def _claims_significant(rep: Reported, dof: float, sided: str) -> bool | None:
    """The significance at ALPHA that the reported number states, or None where it states none."""
    if rep.statistic == "t" and rep.relation == "=" and np.isfinite(dof):
        from scipy import stats

        p = {"two-sided": 2 * stats.t.sf(abs(rep.value), dof), "greater": stats.t.sf(rep.value, dof),
             "less": stats.t.cdf(rep.value, dof)}[sided]  # fmt: skip
        return bool(p < ALPHA)
    if rep.statistic != "p":
        return None
    if rep.relation == "=":
        return rep.value < ALPHA
    if rep.relation in ("<", "<=") and rep.value <= ALPHA:
        return True
    return False if rep.relation in (">", ">=") and rep.value >= ALPHA else None


def judge(
    rep: Reported, value: float, low: float, high: float, claimed: bool | None, found: bool | None
) -> str:
    """statcheck's judgement of one reported number against its recomputed value.

    Parameters
    ----------
    rep
        The reported number (`parse_reported`).
    value, low, high
        The recomputed value and its range within the data's own rounding (`recompute`).
    claimed, found
        The significance at 0.05 the report states and the one recomputed (None where there is none).

    Returns
    -------
    "consistent" (the value lies in the reported interval), "consistent only by rounding" (only some value
    within the data's rounding does), "decision error" (neither, and the significance verdict flips) or
    "value error" (neither, the verdict stands).

    Example
    -------
    >>> judge(parse_reported("t=3.3"), 3.28, 3.27, 3.29, True, True)
    'consistent'
    >>> judge(parse_reported("0.07", "p"), 0.083, 0.082, 0.084, False, False)
    'value error'
    """
    if np.isnan(value):
        return NOT_RUN
    if rep.holds(value):
        return CONSISTENT
    a, b = rep.interval()
    if rep.holds(low) or rep.holds(high) or (low < a and high >= b):
        return BY_ROUNDING
    return DECISION_ERROR if None not in (claimed, found) and claimed != found else VALUE_ERROR


def grim_possible(rep: Reported, n: int, decimals: int = DATA_DECIMALS) -> bool:
    """GRIM: can a mean of `n` values written at `decimals` decimals round to the reported mean?

    Notes
    -----
    With values on a grid of u = 10^-decimals, a mean is S u / n for an integer S; the reported mean m at d
    decimals stands for [m - h, m + h), h = 0.5 10^-d. Possible iff an integer S lies in [n (m - h)/u,
    n (m + h)/u) (Brown & Heathers 2017, for integer data; here u is the sweep file's last decimal). When d
    <= decimals every mean of n >= 1 values is possible: the check can only fail for means written finer
    than the data.

    Example
    -------
    >>> grim_possible(parse_reported("mean=1.68912"), 3)
    False
    """
    low, high = rep.interval()
    u = 10.0**-decimals
    first = math.ceil(round(n * low / u, 9))
    return first < round(n * high / u, 9)


def primary_verdict(adjusted_p: float, claimed: bool | None, alpha: float = ALPHA) -> str:
    """What the primary test (seed-paired, adjusted over its family) says of a claim's significance.

    Example
    -------
    >>> primary_verdict(0.009, False)
    'understated: significant under the primary test'
    """
    if np.isnan(adjusted_p):
        return NOT_RUN
    sig = adjusted_p < alpha
    if claimed is None:
        return "significant under the primary test" if sig else "not significant under the primary test"
    if claimed:
        return "holds under the primary test" if sig else "not shown: not significant under the primary test"
    return (
        "understated: significant under the primary test"
        if sig
        else "supported: not significant under the primary test"
    )


def grows_verdict(falls: Sequence[str]) -> str:
    """ "the gap grows across every size", given the consecutive pairs of sizes where it falls.

    Example
    -------
    >>> grows_verdict([])
    'supported'
    """
    return "not supported: the gap falls between some sizes" if len(falls) else "supported"


def equivalence_verdict(tost_p: Sequence[float], margin: float, alpha: float = ALPHA) -> str:
    """ "no advantage": every cell's TOST rejects |gap| >= margin (intersection-union, no adjustment).

    Example
    -------
    >>> equivalence_verdict([0.01, 0.2], 0.005)
    'not shown: equivalence within ±0.005 fails in 1 of 2 cells'
    """
    passed = np.asarray(tost_p, dtype=float) < alpha
    if passed.all():
        return f"supported: equivalent within ±{margin:g} in every cell"
    return f"not shown: equivalence within ±{margin:g} fails in {int((~passed).sum())} of {len(passed)} cells"


def budget_verdict(differs_across_sizes: bool, differs_within_a_size: bool) -> str:
    """ "identical token budget": steps per run, across sizes and between the variants of one size.

    Example
    -------
    >>> budget_verdict(True, False)
    'true within each size only: steps differ across sizes'
    """
    if differs_within_a_size:
        return "not supported"
    return "true within each size only: steps differ across sizes" if differs_across_sizes else "supported"


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
    text = {"id", "claim", "source", "size", "variant", "test", "sided", "reported", "statistic", "relation",
            "grim", "verdict", "primary", "evidence"}  # fmt: skip
    row = {c: "" if c in text else math.nan for c in CLAIM_COLUMNS}
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
    fields = dict(size=r["size"], variant=variant, test=r["test"], sided="" if r["test"] == "mean" else sided,
                  reported=r["reported"], statistic=rep.statistic, relation=rep.relation, reported_value=rep.value,
                  reported_low=low if np.isfinite(low) else math.nan,
                  reported_high=high if np.isfinite(high) else math.nan)  # fmt: skip
    arrays, short = _arrays(df, r)
    if short:
        return _row(r, **fields, n=min(len(a) for a in arrays), verdict=f"n/a: {short}", evidence=short)
    stat = _statistic(r["test"], sided)
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
    claimed, found = _claims_significant(rep, v["df"], sided), None if r["test"] == "mean" else v["p"] < ALPHA
    verdict = judge(rep, v["recomputed"], v["recomputed_low"], v["recomputed_high"], claimed, found)
    if r["test"] == "mean":
        v["grim"] = "possible" if grim_possible(rep, v["n"]) else "impossible"
        return _row(r, **fields, **v, verdict=verdict, primary="n/a: a mean, not a comparison",
                    evidence=_evidence("mean", "mean", v, "", 0))  # fmt: skip
    cell = t[(t["size"] == r["size"]) & (t["baseline"] == variant)]
    v["p_adj"] = float(cell[f"p_adj_{r['test']}"].iloc[0]) if len(cell) else math.nan
    primary = float(cell["p_adj_paired"].iloc[0]) if len(cell) else math.nan
    m = int(t[f"family_m_{r['test']}"].iloc[0])
    return _row(r, **fields, **v, verdict=verdict, primary_p_adj=primary, primary=primary_verdict(primary, claimed),
                evidence=_evidence(r["test"], rep.statistic, v, t["adjust"].iloc[0], m))  # fmt: skip


def _number(x) -> float | None:
    return None if pd.isna(x) else float(x)


def _grows(r: dict, t: pd.DataFrame) -> dict:
    """ "the gap grows across every size": every consecutive pair of sizes, per baseline (paired gaps)."""
    sizes, falls, numbers = list(dict.fromkeys(t["size"])), [], {}
    for b, g in t.groupby("baseline", sort=False, observed=True):
        gaps = g.set_index("size")["paired_diff"].reindex(sizes)
        numbers |= {f"gap_{b}_{s}": _number(gaps[s]) for s in sizes}
        falls += [f"{label(b)} {s0} {fixed(gaps[s0], 4)} -> {s1} {fixed(gaps[s1], 4)}"
                  for s0, s1 in zip(sizes, sizes[1:], strict=False) if gaps[s1] < gaps[s0]]  # fmt: skip
    return _row(r, test="per-size seed-paired gaps, consecutive sizes", numbers=numbers, verdict=grows_verdict(falls),
                evidence=("falls: " + "; ".join(falls)) if falls else "rises at every step")  # fmt: skip


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
    numbers = {"slope_per_decade": _number(slope), "p": _number(p)}
    shown = (
        f"slope {fixed(slope, 4)} per decade, p {p:.3g}" if pd.notna(slope) and pd.notna(p) else "no slope"
    )
    return _row(r, variant=r["baseline"], test=f"emergence, primary size-level test ({test})", numbers=numbers,
                evidence=shown, verdict=x["verdict"], p=_number(p))  # fmt: skip


def _no_advantage(r: dict, t: pd.DataFrame, e: pd.DataFrame, margin: float) -> dict:
    """ "no advantage through <size>": differences the primary test finds, and whether TOST shows equivalence."""
    small = [s for s in r["sizes"] if s in set(t["size"])]
    cells = t[t["size"].isin(small)]
    found = [f"{c.size} {label(c.baseline)} {fixed(c.gap, 4, sign=True)} (p {fixed(c.paired_p, 3)}, mixed {fixed(c.mixed_p, 3)})"
             for c in cells.itertuples() if c.paired_p < ALPHA or c.mixed_p < ALPHA]  # fmt: skip
    eq = e[e["size"].isin(small)]
    top = eq["paired_tost_p"].max()
    numbers = {"margin": margin, "tost_p_max": _number(top), "cells": len(eq),
               "cells_failing": int((~(eq["paired_tost_p"] < ALPHA)).sum()),
               **{f"gap_{c.baseline}_{c.size}": _number(c.gap) for c in cells.itertuples()},
               **{f"paired_p_{c.baseline}_{c.size}": _number(c.paired_p) for c in cells.itertuples()},
               **{f"mixed_p_{c.baseline}_{c.size}": _number(c.mixed_p) for c in cells.itertuples()}}  # fmt: skip
    tost = f"; TOST p max {fixed(top, 3)}" if eq["paired_tost_p"].notna().any() else "; TOST n/a"
    return _row(r, test=f"paired (primary) and mixed, raw p; TOST paired, margin ±{margin:g}", numbers=numbers,
                evidence=("differences at 5%: " + "; ".join(found) if found else "no difference at 5%") + tost,
                verdict=equivalence_verdict(eq["paired_tost_p"], margin), p=_number(top))  # fmt: skip


def _budget(r: dict, df: pd.DataFrame) -> dict:
    n = recipe_notes(df)
    across, within = bool((n["kind"] == "token_budget").any()), bool((n["kind"] == "steps_within_size").any())
    steps = df.groupby("size", observed=True)["steps"].max()
    order = [s for s in dict.fromkeys(df["size"]) if s in steps]
    shown = "/".join(str(int(steps[s])) for s in order)
    return _row(r, test="recipe: steps per run", numbers={f"steps_{s}": int(steps[s]) for s in order},
                evidence=f"steps by size {shown}; "
                + ("variants differ within a size" if within else "identical within each size"),
                verdict=budget_verdict(across, within))  # fmt: skip


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
        Equivalence margin (nats) for "no advantage" (`rr_analysis.equivalence`).
    adjust
        Multiple-testing adjustment of each test's family (`rr_analysis.stats.ADJUST_METHODS`).
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
    >>> from rr_model.results.dataset import load_sweep
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
            rows.append(_number_row(df, r, t) if r["size"] in sizes else _row(
                r, size=r["size"], variant=r.get("baseline", r.get("variant")), reported=r["reported"],
                verdict=f"n/a: no runs at {r['size']} in the data"))  # fmt: skip
        elif r["check"] == "grows":
            rows.append(_grows(r, t))
        elif r["check"] == "emergence":
            from rr_analysis.emergence import emergence

            fits.setdefault("emergence", emergence(df))
            rows.append(_emergence(r, fits["emergence"]))
        elif r["check"] == "no_advantage":
            rows.append(_no_advantage(r, t, equivalence(df, margin), margin))
        else:
            rows.append(_budget(r, df))
    out = pd.DataFrame(rows, columns=list(CLAIM_COLUMNS))
    return out.astype({"n": "Int64"})

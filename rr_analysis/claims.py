"""The paper's quantitative claims, each next to what the data say under the declared primary analysis."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rr_analysis.cells import ALPHA
from rr_analysis.equivalence import DEFAULT_MARGIN, equivalence
from rr_analysis.notes import recipe_notes
from rr_analysis.stats import gap_table
from rr_model.core.variants import label

__all__ = [
    "claims",
    "CLAIM_COLUMNS",
    "NOT_RUN",
    "near_reported_verdict",
    "trend_verdict",
    "grows_verdict",
    "significance_verdict",
    "equivalence_verdict",
    "budget_verdict",
]

CLAIM_COLUMNS: tuple[str, ...] = ("id", "claim", "test", "evidence", "verdict")
NOT_RUN = "n/a: the test does not run on these data (see `rr analyze table` for the reason)"


def _cells(t: pd.DataFrame, size: str, col: str, spec: str = ".3f") -> str:
    rows = t[t["size"] == size]
    return ", ".join(
        f"{label(b)} {'n/a' if pd.isna(v) else format(v, spec)}"
        for b, v in zip(rows["baseline"], rows[col], strict=True)
    )


def _at(t: pd.DataFrame, size: str) -> pd.DataFrame:
    return t[t["size"] == size]


def near_reported_verdict(p: Sequence[float], reported: float = 0.07, tolerance: float = 0.015) -> str:
    """ "p about `reported`": every p within `tolerance` of it (the old claims view's fixed tolerance).

    Example
    -------
    >>> near_reported_verdict([0.083, 0.077])
    'reproduced, to rounding'
    """
    p = np.asarray(p, dtype=float)
    if np.isnan(p).all():
        return NOT_RUN
    return "reproduced, to rounding" if bool((np.abs(p - reported) <= tolerance).all()) else "not reproduced"


def trend_verdict(adjusted_p: Sequence[float], alpha: float = ALPHA) -> str:
    """ "a trend, not significant", judged on the primary test's adjusted p of every baseline.

    Example
    -------
    >>> trend_verdict([0.009, 0.0018])
    'understated: significant under the primary test'
    """
    p = np.asarray(adjusted_p, dtype=float)
    if np.isnan(p).all():
        return NOT_RUN
    if (p < alpha).all():
        return "understated: significant under the primary test"
    return "supported: not significant under the primary test"


def grows_verdict(falls: Sequence[str]) -> str:
    """ "the gap grows across every size", given the consecutive pairs of sizes where it falls.

    Example
    -------
    >>> grows_verdict([])
    'supported'
    """
    return "not supported: the gap falls between some sizes" if len(falls) else "supported"


def significance_verdict(raw_p: Sequence[float], adjusted_p: Sequence[float], alpha: float = ALPHA) -> str:
    """ "p < alpha" for every baseline: raw (the paper's) and after adjustment over the paper's family.

    Example
    -------
    >>> significance_verdict([0.031, 0.021], [0.28, 0.21])
    'holds only uncorrected'
    """
    raw, adj = np.asarray(raw_p, dtype=float), np.asarray(adjusted_p, dtype=float)
    if np.isnan(raw).all():
        return NOT_RUN
    if (raw < alpha).all() and not (adj < alpha).all():
        return "holds only uncorrected"
    return "holds after adjustment" if (adj < alpha).all() else "not reproduced"


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


def _trend_claims(t: pd.DataFrame, top: str) -> list[dict]:
    """ "p about 0.07" and "a trend" at the largest size."""
    welch, paired = _at(t, top)["welch_p"], _at(t, top)["p_adj_paired"]
    family = f"{t['adjust'].iloc[0]} over {t['family_m_paired'].iloc[0]} tests"
    evidence = f"adjusted p: {_cells(t, top, 'p_adj_paired', '.4f')}; gap {_cells(t, top, 'gap', '.4f')}"
    return [
        {"id": "p_about_0.07", "claim": f"{top}: p about 0.07", "test": "Welch (the paper's test), raw p",
         "evidence": f"Welch p: {_cells(t, top, 'welch_p')}", "verdict": near_reported_verdict(welch)},
        {"id": "a_trend", "claim": f"{top}: the advantage is a trend, not significant",
         "test": f"paired (primary), {family}", "evidence": evidence, "verdict": trend_verdict(paired)},
    ]  # fmt: skip


def _grows(t: pd.DataFrame, sizes: list[str]) -> dict:
    """ "the gap grows across every size": every consecutive pair of sizes, per baseline (paired gaps)."""
    falls = []
    for b, g in t.groupby("baseline", sort=False):
        gaps = g.set_index("size")["paired_diff"].reindex(sizes)
        falls += [f"{label(b)} {s0} {gaps[s0]:.4f} -> {s1} {gaps[s1]:.4f}"
                  for s0, s1 in zip(sizes, sizes[1:], strict=False) if gaps[s1] < gaps[s0]]  # fmt: skip
    return {"id": "grows_every_size", "claim": "the gap grows across every size",
            "test": "per-size seed-paired gaps, consecutive sizes",
            "evidence": ("falls: " + "; ".join(falls)) if falls else "rises at every step",
            "verdict": grows_verdict(falls)}  # fmt: skip


def _emergence(df: pd.DataFrame) -> list[dict]:
    """The emergence module's primary size-level verdict per baseline, when it gives one."""
    from rr_analysis.emergence import emergence

    e = emergence(df)
    if "verdict" not in e:
        return []
    rows = []
    for _, r in e.iterrows():
        test = str(r.get("primary", ""))
        slope, p = r.get(f"{test}_slope"), r.get(f"{test}_p")
        numbers = (
            f"slope {slope:.4f} per decade, p {p:.3g}" if pd.notna(slope) and pd.notna(p) else "no slope"
        )
        rows.append({"id": f"emerges_{r['baseline']}", "test": f"emergence, primary size-level test ({test})",
                     "claim": f"the advantage over {label(r['baseline'])} grows with scale",
                     "evidence": numbers, "verdict": r["verdict"]})  # fmt: skip
    return rows


def _significant(t: pd.DataFrame, size: str) -> dict:
    """ "p < 0.05" at `size`: raw Welch, Welch after adjustment over the paper's family, and the primary."""
    raw, adj = _at(t, size)["welch_p"], _at(t, size)["p_adj_welch"]
    evidence = (f"Welch p {_cells(t, size, 'welch_p')}; {t['adjust'].iloc[0]} over {t['family_m_welch'].iloc[0]} "
                f"Welch tests {_cells(t, size, 'p_adj_welch', '.2f')}; primary adjusted "
                f"{_cells(t, size, 'p_adj_paired', '.4f')}")  # fmt: skip
    return {"id": f"significant_{size}", "claim": f"{size}: p < 0.05", "test": "Welch, raw and adjusted; paired (primary)",
            "evidence": evidence, "verdict": significance_verdict(raw, adj)}  # fmt: skip


def _no_advantage(t: pd.DataFrame, e: pd.DataFrame, small: list[str], margin: float) -> dict:
    """ "no advantage through <size>": differences the primary test finds, and whether TOST shows equivalence."""
    cells = t[t["size"].isin(small)]
    found = [f"{r.size} {label(r.baseline)} {r.gap:+.4f} (p {r.paired_p:.3f}, mixed {r.mixed_p:.3f})"
             for r in cells.itertuples() if r.paired_p < ALPHA or r.mixed_p < ALPHA]  # fmt: skip
    eq = e[e["size"].isin(small)]
    tost = (
        f"; TOST p max {eq['paired_tost_p'].max():.3f}" if eq["paired_tost_p"].notna().any() else "; TOST n/a"
    )
    return {"id": "no_advantage_small", "claim": f"no advantage through {small[-1]}",
            "test": f"paired (primary) and mixed, raw p; TOST paired, margin ±{margin:g}",
            "evidence": ("differences at 5%: " + "; ".join(found) if found else "no difference at 5%") + tost,
            "verdict": equivalence_verdict(eq["paired_tost_p"], margin)}  # fmt: skip


def _budget(df: pd.DataFrame) -> dict:
    n = recipe_notes(df)
    across, within = bool((n["kind"] == "token_budget").any()), bool((n["kind"] == "steps_within_size").any())
    steps = df.groupby("size")["steps"].max()
    shown = "/".join(str(int(steps[s])) for s in dict.fromkeys(df["size"]) if s in steps)
    return {"id": "identical_token_budget", "claim": "identical token budget", "test": "recipe: steps per run",
            "evidence": f"steps by size {shown}; "
            + ("variants differ within a size" if within else "identical within each size"),
            "verdict": budget_verdict(across, within)}  # fmt: skip


def claims(df: pd.DataFrame, margin: float = DEFAULT_MARGIN, adjust: str = "holm") -> pd.DataFrame:
    """Each quantitative claim of the paper, the test that checks it, what the data say, and a verdict.

    Parameters
    ----------
    df
        A validated sweep (`load_sweep`); the claims are the published paper's, read on this data.
    margin
        Equivalence margin (nats) for "no advantage" (`rr_analysis.equivalence`).
    adjust
        Multiple-testing adjustment of each test's family (`rr_analysis.stats.ADJUST_METHODS`).

    Returns
    -------
    DataFrame with `CLAIM_COLUMNS`: ``id`` (stable key), ``claim``, ``test``, ``evidence`` (the numbers)
    and ``verdict``. The paper's sizes are read by role: the largest size for "p about 0.07" and "a trend",
    the second largest for "p < 0.05", the sizes below it for "no advantage".

    Notes
    -----
    The primary analysis is the seed-paired t-test per size, adjusted over its family (`gap_table`); Welch
    is the paper's test. "The gap grows" is read on the per-size gaps, consecutive sizes; the size-level
    emergence verdict comes from `rr_analysis.emergence.emergence` where it gives one.

    Example
    -------
    >>> from rr_model.results.dataset import load_sweep
    >>> claims(load_sweep()).set_index("id").loc["a_trend", "verdict"]
    'understated: significant under the primary test'
    """
    t = gap_table(df, adjust)
    sizes = list(dict.fromkeys(t["size"]))
    rows = _trend_claims(t, sizes[-1]) + [_grows(t, sizes)] + _emergence(df)
    if len(sizes) >= 3:
        rows.append(_significant(t, sizes[-2]))
        rows.append(_no_advantage(t, equivalence(df, margin), sizes[:-2], margin))
    rows.append(_budget(df))
    return pd.DataFrame(rows, columns=list(CLAIM_COLUMNS))

"""The claims view: the paper's claims audited, each reported number recomputed and judged over its rounding
interval (`rr_analysis.claims.audit`); about the paper's own comparison only.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rr_analysis.claims.audit import claims
from rr_analysis.numbers import fixed
from rr_analysis.stats.equivalence import DEFAULT_MARGIN
from rr_analysis.tables.columns import GAP, Col, cell_of, missing
from rr_analysis.views.analysis_view import AnalysisView
from rr_core.variants import label


def _claim_cell(r: pd.Series) -> str:
    cell = " ".join(x for x in (r["size"], label(r["variant"]) if r["variant"] else "") if x)
    return f"{r['claim']} [{cell}]" if cell else r["claim"]


def _reported_cell(r: pd.Series) -> str:
    return f"{r['reported']} ({', '.join(x for x in (r['test'], r['sided']) if x)})" if r["reported"] else ""


def _primary_cell(r: pd.Series) -> str:
    return (
        r["primary"]
        if missing(r["primary_p_adj"])
        else f"{r['primary']} (p adj {fixed(r['primary_p_adj'], 4)})"
    )


def _claims(df: pd.DataFrame, *, margin: float | None, adjust: str, claims_file: Path | None) -> pd.DataFrame:
    return claims(df, DEFAULT_MARGIN if margin is None else margin, adjust, records=claims_file)


VIEW = AnalysisView(
    name="claims",
    title="The paper's claims audited: each reported number recomputed (statcheck-style)",
    columns=(
        Col("claim", _claim_cell, 0),
        Col("reported", _reported_cell, 0),
        Col("test", lambda r: "" if r["reported"] else r["test"], 0),  # a number's test is in "reported"
        Col("what the data say", cell_of("evidence", str), 0),
        Col("verdict", cell_of("verdict", str), 0),
        Col("primary analysis", _primary_cell, 0),
    ),
    legend=(
        GAP,
        "A number written with d decimals stands for the interval its rounding allows (t = 3.3: [3.25, 3.35)). "
        "Verdict: consistent (the recomputed value lies in it); consistent only by rounding (only within the "
        "rows' own 4-decimal rounding); decision error (outside, and significance at {alpha} flips); value error "
        "(outside, the decision stands). GRIM: whether a mean of n 4-decimal runs can round to the reported mean.",
        "Primary analysis: the seed-paired t-test per size, adjusted over its family; Welch is the paper's test.",
    ),
    notes=lambda t: [],
    stacked=True,
    compute=_claims,
    summary="the paper's, audited",
    paper_only=True,
)

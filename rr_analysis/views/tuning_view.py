"""The tuning view (`rr analyze tuning --data tune.csv`): each variant's metric against the learning rate on its
selection seeds, the rate picked, and the gap at the tuned rates on the comparison seeds: does the ranking
survive tuning?
"""

from __future__ import annotations

import pandas as pd

from rr_analysis.comparison import Comparison
from rr_analysis.numbers import NA, fixed, missing
from rr_analysis.stats.tuning import tuning_table
from rr_analysis.tables.columns import GAP, Col, cell_of, interval, p_cell
from rr_analysis.views.analysis_view import AnalysisView
from rr_core.variants import label

_PART = {"selection": "selection", "tuned": "gap, tuned", "shared": "gap, shared lr"}


def _tuning(
    df: pd.DataFrame, *, adjust: str | None, ladder: str | None, comparison: Comparison
) -> pd.DataFrame:
    return tuning_table(df, comparison, adjust or "holm", ladder)


def _rate(v) -> str:
    return NA if missing(v) else f"{v:g}"


def _estimate(r: pd.Series) -> str:
    """A curve point's mean, or a gap with its sign."""
    return fixed(r["estimate"], 4, sign=r["part"] != "selection")


def _notes(t: pd.DataFrame) -> list[str]:
    """Each verdict, then each edge's advice, why a test did not run, and where the shared rate's ranking
    comes from."""
    notes = [f"{r['size']} {label(r['variant'])}: {r['verdict']}" for _, r in t.iterrows() if r["verdict"]]
    for _, r in t.iterrows():
        where = f"{r['size']} {label(r['variant'])}"
        if r["note"]:
            at = f" at lr {_rate(r['lr'])}" if r["part"] == "selection" else f" ({_PART[r['part']]})"
            notes.append(f"{where}{at}: {r['note']}")
    return notes


VIEW = AnalysisView(
    name="tuning",
    title="Tuning: each variant at its own learning rate, chosen on seeds kept apart from the test",
    columns=(
        Col("size", cell_of("size", str), 0),
        Col("part", cell_of("part", _PART.get), 0),
        Col("variant", cell_of("variant", label), 0),
        Col("lr", cell_of("lr", _rate), 0),
        Col("{ref}\nlr", cell_of("reference_lr", _rate), 2),
        Col("n", cell_of("n", str), 1),
        Col("mean or\ngap", _estimate, 0),
        Col("95% CI", interval("ci_low", "ci_high", ".4f"), 0),
        Col("paired* t\np", cell_of("p", p_cell), 1),
        Col("p adj", cell_of("p_adj", p_cell), 0),
        Col(
            "chosen",
            lambda r: ("chosen" + (f" ({r['edge']} of grid)" if r["edge"] else "")) if r["chosen"] else "",
            0,
        ),
    ),
    legend=(
        "selection: the mean {metric} of the selection seeds at each rate, its 95% t CI (mean +- t(0.975, n-1) "
        "SD/sqrt(n)); chosen: the rate rr tune picks (lowest mean among rates every selection seed finished; "
        "ties to the smaller rate), flagged at the grid's edge.",
        GAP,
        "gap, tuned: each variant at its chosen rate, on the comparison seeds only (the selection seeds picked "
        "the rates and never enter a test). paired* (PRIMARY): seed-paired t-test, two-sided, df = pairs - 1 "
        "(scipy ttest_rel), 95% CI mean(d) +- t(0.975, n-1) SE; p adj: Holm (or --adjust) over the family of "
        "tuned gaps (every size x baseline).",
        "gap, shared lr: the same test with every variant at the recipe's rate, where the file has comparison "
        "seeds there; a second family, adjusted on its own.",
    ),
    notes=_notes,
    compute=_tuning,
    summary="--data tune.csv: each variant at its own tuned learning rate",
    rates=True,
)

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

# Short enough that the rows fit 80 columns with the columns that always show (`rr analyze tuning`, issue 49.10)
_PART = {"selection": "selection", "tuned": "tuned gap", "shared": "shared gap"}
_EDGE = {"highest": "high", "lowest": "low"}  # the chosen rate at the grid's edge, in the chosen column


def _tuning(
    df: pd.DataFrame, *, adjust: str | None, ladder: str | None, comparison: Comparison
) -> pd.DataFrame:
    return tuning_table(df, comparison, adjust or "holm", ladder)


def _rate(v) -> str:
    """A learning rate as the literature writes it, mantissa and power of ten: 4e-4, 1.5e-3 (at most 3
    significant digits); 6 characters fewer than 0.0004 at most, so the table fits a terminal.

    >>> _rate(0.0004), _rate(0.0015), _rate(0.02), _rate(float("nan"))
    ('4e-4', '1.5e-3', '2e-2', 'n/a')
    """
    if missing(v):
        return NA
    mantissa, exponent = f"{v:.2e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def _chosen(r: pd.Series) -> str:
    """'yes' where rr tune picked the rate, with 'high' or 'low' where it is the grid's edge."""
    if not r["chosen"]:
        return ""
    return "yes" + (f", {_EDGE.get(r['edge'], r['edge'])}" if r["edge"] else "")


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
        Col("chosen", _chosen, 0),
    ),
    legend=(
        "selection: the mean {metric} of the selection seeds at each rate, its 95% t CI (mean +- t(0.975, n-1) "
        "SD/sqrt(n)); chosen: yes at the rate rr tune picks (lowest mean among rates every selection seed finished; "
        "ties to the smaller rate), 'high' or 'low' where it is the grid's highest or lowest (the optimum may lie "
        "beyond it).",
        GAP,
        "tuned gap: each variant at its chosen rate, on the comparison seeds only (the selection seeds picked "
        "the rates and never enter a test). paired* (PRIMARY): seed-paired t-test, two-sided, df = pairs - 1 "
        "(scipy ttest_rel), 95% CI mean(d) +- t(0.975, n-1) SE; p adj: Holm (or --adjust) over the family of "
        "tuned gaps (every size x baseline).",
        "shared gap: the same test with every variant at the recipe's (shared) rate, where the file has comparison "
        "seeds there; a second family, adjusted on its own.",
    ),
    notes=_notes,
    compute=_tuning,
    summary="--data tune.csv: each variant at its own tuned learning rate",
    rates=True,
)

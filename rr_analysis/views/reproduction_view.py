"""The reproduction view (`rr analyze reproduction --data repro.csv`): each re-run beside the published row of its
key, and whether the re-runs as a whole reproduce; about the paper's own comparison only.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rr_analysis.numbers import NA, fixed
from rr_analysis.stats.reproduction import reproduction
from rr_analysis.tables.columns import Col, cell_of, missing, number, p_cell
from rr_analysis.views.analysis_view import AnalysisView
from rr_core.sweepfile.dataset import load_sweep
from rr_core.variants import label


def _reproduction_notes(t: pd.DataFrame) -> list[str]:
    """The test over all re-runs, and where its noise and margin come from, in words."""
    if not len(t):
        return []
    r = t.iloc[0]
    test = (
        f"paired t = {fixed(r['t'], 2)} on {fixed(r['df'], 0)} df, p {p_cell(r['p'])} (two-sided)"
        if not missing(r["t"])
        else f"no t-test: {r['test_note']}"
    )
    tost = f"p {p_cell(r['tost_p'])}" if not missing(r["tost_p"]) else NA
    sd = NA if missing(r["offset_sd"]) else f"{fixed(r['offset_sd'], 5)}"
    return [
        f"over {r['n']} re-run(s): mean offset {fixed(r['mean_offset'], 5, sign=True)} (SD {sd}, RMS {fixed(r['rms_offset'], 5)}); {test}",
        f"TOST of |mean offset| < {fixed(r['margin'], 5)} ({r['margin_source']}): {tost}; pooling is {r['pooling']}",
        f"same-seed noise: {r['noise_source']}",
        *([f"{r['not_rerun']} published row(s) have no re-run in this file"] if r["not_rerun"] else []),
    ]


def _reproduction(
    df: pd.DataFrame, *, against: Path | None, noise: float | None, margin: float | None
) -> pd.DataFrame:
    return reproduction(df, load_sweep(against) if against else None, noise, margin)


VIEW = AnalysisView(
    name="reproduction",
    title="Does it reproduce? Each re-run beside the published row of its key",
    columns=(
        Col("size", cell_of("size", str), 0),
        Col("variant", cell_of("variant", label), 0),
        Col("seed", cell_of("seed", str), 0),
        Col("published", cell_of("published", number(".4f")), 2),
        Col("re-run", cell_of("reproduced", number(".4f")), 2),
        Col("diff", cell_of("diff", number("+.5f")), 0),
        Col("seed SD", cell_of("seed_sd", number(".5f")), 3),
        Col("diff /\nseed SD", cell_of("diff_in_sd", number("+.2f")), 1),
        Col("noise", cell_of("noise", number(".5f")), 3),
        Col("verdict", cell_of("verdict", str), 0),
    ),
    legend=(
        "diff = re-run - published. Verdict: reproduced within rounding (|diff| <= 0.00005, the published "
        "value's 4th decimal), within same-seed noise (|diff| <= 2 x noise, the SD of the difference between "
        "two runs of one seed), or outside it. seed SD: the published between-seed SD at that size and variant.",
    ),
    notes=_reproduction_notes,
    compute=_reproduction,
    summary="--data repro.csv: re-runs beside the published rows",
    paper_only=True,
    reruns=True,
)

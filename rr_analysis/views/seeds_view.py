"""The seeds view (`rr analyze seeds --data pilot.csv`): how much of each variant's result is its initial
weights' and how much its data order's, from runs that cross init seeds with data seeds.
"""

from __future__ import annotations

import pandas as pd

from rr_analysis.comparison import Comparison
from rr_analysis.numbers import NA, percent
from rr_analysis.stats.seeds import seed_components
from rr_analysis.tables.columns import Col, cell_of, missing, number
from rr_analysis.views.analysis_view import AnalysisView
from rr_core.variants import label


def _components(df: pd.DataFrame, *, comparison: Comparison) -> pd.DataFrame:
    return seed_components(df, comparison)


def _share(key: str):
    return lambda r: NA if missing(r[key]) else percent(r[key])


def _notes(t: pd.DataFrame) -> list[str]:
    """Each cell's note; one line where every cell has the same (a file that crosses no seeds)."""
    if len(t) > 1 and t["note"].nunique() == 1 and t["note"].iloc[0]:
        return [f"every size and variant: {t['note'].iloc[0]}"]
    return [f"{r['size']} {label(r['variant'])}: {r['note']}" for _, r in t.iterrows() if r["note"]]


VIEW = AnalysisView(
    name="seeds",
    title="Seed components: the variance of {metric} due to the init seed, the data seed and the rest",
    columns=(
        Col("size", cell_of("size", str), 0),
        Col("variant", cell_of("variant", label), 0),
        Col("runs", cell_of("n_runs", number("d")), 0),
        Col("init x\ndata", lambda r: f"{r['n_init']} x {r['n_data']}", 1),
        Col("mean", cell_of("mean", number(".4f")), 1),
        Col("init\nSD", cell_of("init_sd", number(".5f")), 0),
        Col("data\nSD", cell_of("data_sd", number(".5f")), 0),
        Col("resid\nSD", cell_of("resid_sd", number(".5f")), 0),
        Col("init\nshare", _share("init_share"), 1),
        Col("data\nshare", _share("data_share"), 1),
        Col(
            "df\n(i,d,e)",
            lambda r: (
                NA if missing(r["df_resid"]) else f"{r['df_init']:.0f},{r['df_data']:.0f},{r['df_resid']:.0f}"
            ),
            2,
        ),
    ),
    legend=(
        "{metric} = mu + a(init seed) + b(data seed) + e per size and variant, a and b random and crossed: "
        "exact REML of the balanced design (ANOVA mean squares; a component that would be negative is 0 and "
        "pools into the residual; lme4's answer). SD: the square root of each variance component; share: of "
        "their sum. Each component of a 2 x 2 pilot rests on one degree of freedom: an order of magnitude.",
        "Runs name their seeds with rr train --init-seed I --data-seed D; a run without them drew both from "
        "its seed, so a published sweep has no crossed cell.",
    ),
    notes=_notes,
    compute=_components,
    summary="--data pilot.csv: init seed vs data seed variance",
)

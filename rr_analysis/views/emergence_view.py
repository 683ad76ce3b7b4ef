"""The emergence view: does the reference's advantage grow with size? The size-level meta-regression (primary),
on size alone and on size and tokens per parameter together, the size-deviation model and the per-run model,
with a verdict per baseline.
"""

from __future__ import annotations

import pandas as pd

from rr_analysis.comparison import Comparison
from rr_analysis.stats.emergence import EMERGENCE_COLUMNS, emergence
from rr_analysis.stats.tokens import per_param
from rr_analysis.tables.columns import GAP, Col, cell_of, number, p_cell, row_notes
from rr_analysis.views.analysis_view import AnalysisView
from rr_core.variants import label


def _budgets(t: pd.DataFrame) -> list[str]:
    """Tokens per parameter by cell, once, and where the numbers come from."""
    for _, r in t.iterrows():
        if r["tokens_per_param"]:
            shown = ", ".join(f"{s} {per_param(v)}" for s, v in r["tokens_per_param"].items())
            return [f"tokens per parameter (D/N): {shown} ({r['tokens_source']})"]
    return []


def _emergence(df: pd.DataFrame, *, comparison: Comparison) -> pd.DataFrame:
    return emergence(df, comparison)


VIEW = AnalysisView(
    name="emergence",
    title="Does {ref}'s advantage grow with size? (gap per decade of parameters)",
    columns=(
        Col("baseline", cell_of("baseline", label), 0),
        Col("sizes", cell_of("n_sizes", str), 3),
        Col("(c) meta\nslope", cell_of("meta_slope", number(".4f")), 0),
        Col("(c)\nSE", cell_of("meta_se", number(".4f")), 2),
        Col("(c)\ndf", cell_of("meta_df", number(".0f")), 4),
        Col("(c)\np", cell_of("meta_p", p_cell), 0),
        Col("(c)\ntau2", cell_of("meta_tau2", number(".2e")), 5),
        Col("(c)\nQE", cell_of("meta_qe", number(".2f")), 6),
        Col("(c) QE\np", cell_of("meta_qe_p", p_cell), 4),
        Col("D/N\nr", cell_of("dn_r", number(".3f")), 1),
        Col("(c2) size\nslope", cell_of("meta2_size_slope", number(".4f")), 6),
        Col("(c2) size\np", cell_of("meta2_size_p", p_cell), 5),
        Col("(c2) D/N\nslope", cell_of("meta2_dn_slope", number(".4f")), 6),
        Col("(c2) D/N\np", cell_of("meta2_dn_p", p_cell), 5),
        Col("(b) dev\nslope", cell_of("dev_slope", number(".4f")), 3),
        Col("(b)\nSE", cell_of("dev_se", number(".4f")), 5),
        Col("(b)\ndf", cell_of("dev_df", number(".2f")), 5),
        Col("(b)\np", cell_of("dev_p", p_cell), 1),
        Col("(b) KR\ndf", cell_of("dev_kr_df", number(".2f")), 4),
        Col("(b) KR\np", cell_of("dev_kr_p", p_cell), 1),
        Col("(b) var\nseed", cell_of("dev_var_seed", number(".2e")), 6),
        Col("(b) var\nsize", cell_of("dev_var_size", number(".2e")), 6),
        Col("(b) var\nresid", cell_of("dev_var_resid", number(".2e")), 6),
        Col("(a) run\nslope", cell_of("run_slope", number(".4f")), 3),
        Col("(a)\nSE", cell_of("run_se", number(".4f")), 5),
        Col("(a)\ndf", cell_of("run_df", number(".2f")), 5),
        Col("(a)\np", cell_of("run_p", p_cell), 1),
        Col("(a) LRT\nchi2", cell_of("lrt_chi2", number(".2f")), 6),
        Col("(a) LRT\np", cell_of("lrt_p", p_cell), 4),
    ),
    legend=(
        GAP,
        "Slopes: change of the gap per decade of {ref}'s parameters; positive: the gap grows with size.",
        "(c) PRIMARY, the size-level question: per-size seed-paired gaps and SEs regressed on "
        "log10(params), REML tau2, Knapp-Hartung t on sizes - 2 df (metafor rma knha); QE: residual "
        "heterogeneity, chi-square on sizes - 2 df.",
        "D/N: tokens per parameter of each cell, its {ref}'s tokens over its parameter count; r: Pearson's "
        "correlation of log10(params) and log10(D/N) over the cells (c) uses; |r| >= 0.9, or fewer than two "
        "sizes with two budgets, and the data cannot tell a trend with size from one with D/N.",
        "(c2) the same per-cell gaps regressed on log10(params) and log10(D/N) together (metafor rma mods = ~ "
        "lN + lDN, REML tau2, Knapp-Hartung t on cells - 3 df, two-sided; each p its own, no family): size at "
        "fixed D/N, D/N at fixed size; fitted where 4 or more cells vary in both, read only where they are told "
        "apart.",
        "(b) each size's gap may leave the line: (a) + (0 + baseline | size), REML; Satterthwaite and "
        "Kenward-Roger (KR) df; variance components seed, size deviation (this baseline), residual.",
        "(a) per-run evidence, assumes the gap is exactly linear in log size: {response} ~ 0 + size + "
        "baseline + baseline:lxc + (1 | size:seed), REML, Satterthwaite df; LRT of all slopes (ML).",
    ),
    notes=lambda t: (
        [f"{label(r['baseline'])}: {r['verdict']}" for _, r in t.iterrows()]
        + row_notes("note")(t)
        + sorted(set(t["confound"].dropna()) - {""})
        + _budgets(t)
    ),
    machine=EMERGENCE_COLUMNS,
    compute=_emergence,
)

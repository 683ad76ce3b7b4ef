"""The fits view: L(N) = E + A N^-alpha per variant with bootstrap intervals, and where the fit is not
identified (descriptive).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from rr_analysis.comparison import Comparison
from rr_analysis.numbers import fixed
from rr_analysis.stats.scaling import scaling_fits
from rr_analysis.tables.columns import Col, cell_of, interval, missing, number
from rr_analysis.views.analysis_view import AnalysisView
from rr_core.variants import label


def _fits(df: pd.DataFrame, *, at: Sequence[str], ladder: str | None, comparison: Comparison) -> pd.DataFrame:
    return scaling_fits(df, at, ladder=ladder, comparison=comparison)


VIEW = AnalysisView(
    name="fits",
    title="Scaling fits per variant, L(N) = E + A N^-alpha to the per-size mean losses (descriptive)",
    columns=(
        Col("variant", cell_of("variant", label), 0),
        Col("sizes", cell_of("n_sizes", number("d")), 3),
        Col("E\n[95% boot]", lambda r: f"{number('.4f')(r['E'])} {interval('E_low', 'E_high', '.4f')(r)}", 0),
        Col(
            "alpha\n[95% boot]",
            lambda r: f"{number('.3f')(r['alpha'])} {interval('alpha_low', 'alpha_high', '.3f')(r)}",
            0,
        ),
        Col("A\n[95% boot]", lambda r: f"{number('.3g')(r['A'])} {interval('A_low', 'A_high', '.3g')(r)}", 2),
        Col("chi2\n(df)", lambda r: f"{number('.2f')(r['chi2'])} ({number('.0f')(r['resid_df'])})", 1),
        Col("identified", lambda r: "yes" if r["identified"] else "no", 0),
        Col("at", lambda r: r["at"] or "", 0),
        Col(
            "loss at\n[95% boot]",
            lambda r: f"{number('.4f')(r['loss_pred'])} {interval('loss_low', 'loss_high', '.4f')(r)}",
            0,
        ),
    ),
    legend=(
        "Weighted least squares (weights 1/SE^2 of each size's mean over its seeds), N the variant's "
        "parameter count; intervals: 2.5-97.5% quantiles of a parametric bootstrap over seeds (each size's "
        "seeds redrawn from the fitted mean and the observed seed SD, refitted). Descriptive: no test "
        "between variants, no crossover or emergence is read from these curves.",
        "Not identified: E < 0, alpha's interval spanning more than a decade, or alpha at a bound.",
    ),
    notes=lambda t: (
        [
            f"{r['variant']}: {fixed(r['boot_ok'], 0)} of {fixed(r['boot'], 0)} bootstrap refits"
            for _, r in t.drop_duplicates("variant").iterrows()
            if not missing(r["boot_ok"])
        ]
        + sorted(set(t["df_warning"]) - {""})
        + sorted(set(t["confound"]) - {""})
        + [
            f"{label(r['variant'])}: {r['note']}"
            for _, r in t.drop_duplicates("variant").iterrows()
            if r["note"]
        ]
    ),
    compute=_fits,
    summary="L = E + A N^-alpha per variant",
)

"""Analysis of the Review Residuals sweep: statistics, tables and figures. Torch-free.

Rooms: `comparison` (what every test shares: the comparison, sizes and baselines in order, `ALPHA`),
`stats/` (one function per analysis, each a tidy DataFrame), `claims/` (the paper's claims audited),
`tables/` and `figures/` (the renderers, independent of each other), `views/` (what `rr analyze` shows: one
object per view, `VIEWS` by name) and `report` (tables and figures in one file).
The sweep file itself is `rr_core.sweepfile`. The common names are exported here and imported on first use,
so `import rr_analysis` loads no pandas::

    from rr_analysis import load_sweep, gap_table, emergence_figure
"""

from rr_core.lazy import lazy_exports

_WHERE = {
    "load_sweep": "rr_core.sweepfile.dataset",
    "Comparison": "rr_analysis.comparison",
    "compare": "rr_analysis.comparison",
    "ALPHA": "rr_analysis.comparison",
    "gap_table": "rr_analysis.stats.gap_tests",
    "welch_table": "rr_analysis.stats.gap_tests",
    "paired_table": "rr_analysis.stats.gap_tests",
    "adjust_p": "rr_analysis.stats.gap_tests",
    "mixed_table": "rr_analysis.stats.mixed",
    "emergence": "rr_analysis.stats.emergence",
    "equivalence": "rr_analysis.stats.equivalence",
    "power_table": "rr_analysis.stats.power",
    "seed_plan": "rr_analysis.stats.power",
    "forecast": "rr_analysis.stats.forecast",
    "confirm_plan": "rr_analysis.stats.confirm",
    "confirm_design": "rr_analysis.stats.design",
    "cell_budgets": "rr_analysis.stats.tokens",
    "scaling_fits": "rr_analysis.stats.scaling",
    "recipe_notes": "rr_analysis.stats.notes",
    "pool_check": "rr_analysis.stats.pooling",
    "reproduction": "rr_analysis.stats.reproduction",
    "claims": "rr_analysis.claims.audit",
    "render": "rr_analysis.tables.render",
    "VIEWS": "rr_analysis.views.registry",
    "AnalysisView": "rr_analysis.views.analysis_view",
    "emergence_figure": "rr_analysis.figures.gaps",
    "forecast_figure": "rr_analysis.figures.forecast_gaps",
    "scaling_figure": "rr_analysis.figures.raw",
    "seeds_figure": "rr_analysis.figures.raw",
    "calibration_figure": "rr_analysis.figures.raw",
    "curves_figure": "rr_analysis.figures.curves",
    "save_figure": "rr_analysis.figures.output",
    "write_report": "rr_analysis.report",
}

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
__all__ = list(_WHERE)

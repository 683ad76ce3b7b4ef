"""The figures: each `*_figure` function takes the statistics it draws and returns a matplotlib Figure; each
`*_plot` function draws what an `rr plot` command draws from the data it reads (a sweep, metrics logs), the
statistics computed and the provenance footnote added, in one call; `output.write_figure` writes one and says
what it did. Independent of the tables; matplotlib and seaborn load with these modules.
"""

from rr_core.lazy import lazy_exports

_WHERE = {
    "PlotError": "rr_core.errors",
    "FORMATS": "rr_analysis.figures.output",
    "DEFAULT_DPI": "rr_analysis.figures.output",
    "output_format": "rr_analysis.figures.output",
    "check_writable": "rr_analysis.figures.output",
    "save_figure": "rr_analysis.figures.output",
    "Written": "rr_analysis.figures.output",
    "write_figure": "rr_analysis.figures.output",
    "write_atomic": "rr_analysis.figures.output",
    "emergence_figure": "rr_analysis.figures.gaps",
    "forecast_figure": "rr_analysis.figures.gaps",
    "emergence_plot": "rr_analysis.figures.gaps",
    "forecast_plot": "rr_analysis.figures.gaps",
    "scaling_figure": "rr_analysis.figures.raw",
    "seeds_figure": "rr_analysis.figures.raw",
    "calibration_figure": "rr_analysis.figures.raw",
    "curves_figure": "rr_analysis.figures.curves",
    "curves_plot": "rr_analysis.figures.curves",
    "gates_plot": "rr_analysis.figures.curves",
    "gap_plot": "rr_analysis.figures.gap_curves",
    "tuning_figure": "rr_analysis.figures.tuning_curves",
    "tuning_plot": "rr_analysis.figures.tuning_curves",
    "anatomy_plot": "rr_analysis.figures.gate_layers",
}

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
__all__ = list(_WHERE)

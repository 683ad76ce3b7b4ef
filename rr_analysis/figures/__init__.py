"""The figures: each `*_figure` function takes the statistics it draws and returns a matplotlib Figure;
`output.save_figure` writes one. Independent of the tables; matplotlib and seaborn load with these modules.
"""

from rr_core.lazy import lazy_exports

_WHERE = {
    "PlotError": "rr_core.errors",
    "FORMATS": "rr_analysis.figures.output",
    "DEFAULT_DPI": "rr_analysis.figures.output",
    "output_format": "rr_analysis.figures.output",
    "check_writable": "rr_analysis.figures.output",
    "save_figure": "rr_analysis.figures.output",
    "write_atomic": "rr_analysis.figures.output",
    "emergence_figure": "rr_analysis.figures.gaps",
    "forecast_figure": "rr_analysis.figures.gaps",
    "scaling_figure": "rr_analysis.figures.raw",
    "seeds_figure": "rr_analysis.figures.raw",
    "calibration_figure": "rr_analysis.figures.raw",
    "curves_figure": "rr_analysis.figures.curves",
    "tuning_figure": "rr_analysis.figures.tuning_curves",
}

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
__all__ = list(_WHERE)

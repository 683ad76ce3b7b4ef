"""The figures: each `*_figure` function draws a matplotlib Figure of the statistics it is given (the raw-data
figures, `scaling_figure`, `seeds_figure` and `calibration_figure`, of the sweep itself); each `rr plot` command
draws by one function here from the data it reads, statistics computed and provenance footnote added
(`emergence_plot`, `forecast_plot`, the raw-data figures, `curves_plot`, `gates_plot`, `gap_plot`,
`tuning_plot`, `anatomy_plot`), which a notebook calls the same way; `output.write_figure` writes a figure
and says what it did. Independent of the tables; matplotlib and seaborn load with these modules.
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
    "forecast_figure": "rr_analysis.figures.forecast_gaps",
    "emergence_plot": "rr_analysis.figures.gaps",
    "forecast_plot": "rr_analysis.figures.forecast_gaps",
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

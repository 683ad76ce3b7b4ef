"""Analysis of the Review Residuals sweep: validated loading, statistics, tables and figures.

Cheap to import: statsmodels and seaborn load only inside the functions that use them.
"""

from rr_analysis.dataset import DataError, append_rows, bundled_path, load_sweep, write_sweep

__all__ = ["DataError", "append_rows", "bundled_path", "load_sweep", "write_sweep"]

"""Analysis of the Review Residuals sweep: statistics, tables and figures. Torch-free.

The sweep file's format (schema, load, write, append, integrity) lives at rr_model's ground
(`rr_model.results.dataset`), where the trainer writes rows too; it is re-exported here for notebooks.
Imports point one way: cli -> rr_analysis -> rr_model. `cells` holds what every test shares; `stats`,
`mixed`, `effect`, `exact`, `equivalence`, `emergence` (with `meta`, `slopes`), `power`, `notes`, `claims`
and `summary` compute; `tables` and `plots` (with `estimates`) render, independently of each other, and
`report` puts both in one file. Cheap to import: statsmodels and seaborn load only inside the functions
that use them.
"""

from rr_model.results.dataset import DataError, append_rows, bundled_path, load_sweep, write_sweep

__all__ = ["DataError", "append_rows", "bundled_path", "load_sweep", "write_sweep"]

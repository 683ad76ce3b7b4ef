"""Analysis of the Review Residuals sweep: statistics, tables and figures. Torch-free.

The sweep file's format (schema, load, write, append, integrity) lives in rr_model's results room
(`rr_model.results.dataset`: `from rr_model.results.dataset import load_sweep`), where the trainer writes rows
too. Import each name from the module that defines it; this package exports nothing, so `import rr_analysis`
loads no pandas. Imports point one way: cli -> rr_analysis -> rr_model. `cells` holds what every test shares
(the sizes and baselines in order, `ALPHA`); `stats`, `mixed`, `effect`, `exact`, `equivalence`, `emergence`
(with `meta`, `slopes`), `power`, `notes`, `claims` and `summary` compute; `tables` and `plots` (with
`estimates`) render, independently of each other, and `report` puts both in one file. Cheap to import:
statsmodels and seaborn load only inside the functions that use them.
"""

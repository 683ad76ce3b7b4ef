"""Reference model, size ladder, the sweep file and the trainer for Review Residuals.

The ground of the house: rr_analysis and cli import from here, never the other way. Rooms, top floor first
(`.importlinter` holds the order): `sweep/` launches many runs (local, Slurm); the model and trainer sit at
this package's top (`model`, `config`, `train`, `runs`, `evaluate`, `checkpoint`, `numerics`, `tokens`,
`synthetic`, `progress`, `depth`, `gates`); `results/` is the sweep file (schema, dataset, integrity,
merge, provenance, the packaged published copy); `core/` is the shared vocabulary (errors, files,
variants, ladder). Importing this package is cheap; torch is imported only by the modules that run a model.
"""

"""Reference model, size ladder, the sweep file and the trainer for Review Residuals.

The ground of the house: rr_analysis and cli import from here, never the other way. Rooms, top floor first
(`.importlinter` holds the order): `sweep/` launches many runs (local, Slurm); the model and trainer sit at
this package's top (`model`, `config`, `train`, `runs`, `evaluate`, `checkpoint`, `numerics`, `tokens`,
`synthetic`, `progress`, `depth`, `gates`); `results/` is the sweep file (schema, dataset, integrity,
merge, provenance, the packaged published copy); `core/` is the shared vocabulary (errors, files,
variants, ladder). Importing this package is cheap; torch is imported only by the modules that run a model.

`rr_model.register_residual` (defined in `rr_model.plugins`) plugs a residual rule of your own in.
"""

from typing import Any

__all__ = ["register_residual"]


def __getattr__(name: str) -> Any:
    """`rr_model.register_residual`, imported on first use (PEP 562), so `import rr_model` stays cheap."""
    if name == "register_residual":
        from rr_model.plugins import register_residual

        return register_residual
    raise AttributeError(f"module 'rr_model' has no attribute {name!r}")

"""The reference model, its data pipeline and the trainer of Review Residuals.

Stands on `rr_core` (the sweep record, ladder, variants, shapes) and never on `rr_analysis`. At the top, what a
run is: `config` (`TrainConfig`, every training option's one home, torch-free), `model` (the GPT in reading
order, with the paper's residual rules), `ablations` and `streams` (Review's ablations and the field's rivals,
registered on the same seam), `generation` (the KV cache and `generate`, which `GPT` inherits) and `metrics`
(where a run's metrics go). Rooms, top floor first (`.importlinter` holds the order): `sweep/` (many runs,
here or on Slurm; tuning) and `uses/` (what a finished model is used for: inference, export, evaluation,
gates, the depth check) above `run/` (one training run, from a command's entry to its appended row), above
`parallel/` (sharding, memory, hardware) and `checkpoint/`, above `data/` (a corpus turned into token
streams). Importing this package is cheap; torch is imported only by the modules that run a model.

`rr_model.register_residual` plugs a residual rule of your own in (docs/extending.md).
"""

from rr_core.lazy import lazy_exports

_WHERE = {
    "register_residual": "rr_core.variants",
    "GPT": "rr_model.model",
    "TrainConfig": "rr_model.config",
    "train": "rr_model.run.trainer",
    "train_runs": "rr_model.run.trainer",
}

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
__all__ = list(_WHERE)

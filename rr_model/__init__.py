"""The reference model, its data pipeline and the trainer of Review Residuals.

Stands on `rr_core` (the sweep record, ladder, variants, shapes) and never on `rr_analysis`. Rooms, top floor
first (`.importlinter` holds the order): `sweep/` launches many runs (local, Slurm) and `downstream` scores
trained runs on lm-evaluation-harness's tasks; the trainer (`trainer`: one run from setup to its row;
`step`: the recipe's optimiser step), the model (`model`), its final validation (`validation`) and what a
trained run is used for (`inference`, `export` with the code it carries, `hf_code` and `remote_code/`,
`gates` and their `anatomy` on held-out text, `reproduce`, `depth`); `run_config` and `planning` say what to train and where its rows go,
torch-free; `data/` turns a corpus into token streams. Importing this package is cheap; torch is imported only by the
modules that run a model.

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

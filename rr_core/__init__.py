"""The torch-free ground of rr that the analysis and the model both stand on.

`errors` (rr's error classes), `files/` (atomic writes, locks, checksums: the one writer and the one lock),
`variants` (the variant registry) with what each registered rule is held to (`seam`, the stream seam's
contract; `rule_shapes`, its parameters; `kept_bytes`, what it keeps for the backward pass; `palette`, its
colour), `plugins` (residual rules from outside rr), `ladder` (sizes and recipe: the one source of truth),
`budget` (a run's steps, tokens and FLOPs), `shapes` (the model's shape and exact parameter count, by
arithmetic), `options` (command-line options declared as dataclass fields), `lr_choice` (how a tuning picks
each variant's rate: one rule for `rr tune` and `rr analyze tuning`), small checks and readers (`lines`,
`comma_lists`, `lazy`) and `sweepfile/`, the sweep record: its schema, loading, integrity, merging,
provenance, metrics logs and the packaged published copy. Importing it loads no torch; pandas loads
with the sweep file's modules only.
"""

from rr_core.lazy import lazy_exports

_WHERE = {
    "RRError": "rr_core.errors",
    "InputError": "rr_core.errors",
    "RecipeError": "rr_core.errors",
    "PlotError": "rr_core.errors",
    "DataError": "rr_core.sweepfile.csv_text",
    "load_sweep": "rr_core.sweepfile.dataset",
    "read_sweep_text": "rr_core.sweepfile.dataset",
    "write_sweep": "rr_core.sweepfile.dataset",
    "append_rows": "rr_core.sweepfile.dataset",
    "bundled_path": "rr_core.sweepfile.dataset",
    "check_integrity": "rr_core.sweepfile.integrity",
    "merge_sweeps": "rr_core.sweepfile.merge",
    "join_columns": "rr_core.sweepfile.merge",
    "LADDER": "rr_core.ladder",
    "RECIPE": "rr_core.ladder",
    "Recipe": "rr_core.ladder",
    "Size": "rr_core.ladder",
    "get_size": "rr_core.ladder",
    "load_ladder": "rr_core.ladder",
    "VARIANTS": "rr_core.variants",
    "REFERENCE": "rr_core.variants",
    "BASELINES": "rr_core.variants",
    "COMPARED": "rr_core.variants",
    "label": "rr_core.variants",
    "palette": "rr_core.palette",
    "GPTConfig": "rr_core.shapes",
    "model_config": "rr_core.shapes",
    "size_table": "rr_core.shapes",
    "register_residual": "rr_core.variants",
    "load_plugins": "rr_core.plugins",
}

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
__all__ = list(_WHERE)

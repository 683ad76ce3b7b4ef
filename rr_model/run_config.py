"""One training run's configuration, `TrainConfig`, whose defaults are the published run of a size, and how
a run departs from the published recipe (`recipe_differences`). Torch-free: the CLI, the planner and a
sweep's children build configs without loading the model.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rr_core.errors import InputError
from rr_core.ladder import LADDER, Recipe, Size, get_size
from rr_core.plugins import load_plugins
from rr_core.variants import REFERENCE, VARIANTS, unknown_variant
from rr_model.data.corpus import TINYSTORIES
from rr_model.metrics import BACKENDS, require_backends

__all__ = [
    "TrainConfig",
    "DEFAULT_OUT",
    "default_out",
    "PRECISIONS",
    "DEVICES",
    "result_config",
    "recipe_differences",
    "published_settings",
]


if TYPE_CHECKING:
    from rr_model.data.token_cache import Tokens

PRECISIONS = ("tf32", "bf16", "fp32")  # tf32 is the published setting (fp32 arithmetic off CUDA)
DEVICES = ("auto", "cuda", "mps", "cpu")
# Relative: the working directory's dataset, never the copy inside the installed package.
DEFAULT_OUT = Path("data") / "scaling_v8.csv"
PUBLISHED_DATA = {"data": TINYSTORIES, "tokenizer": "gpt2"}  # with the recipe's n_text stories


def published_settings(size: Size) -> dict[str, object]:
    """What the published recipe sets for a run of `size` beyond its shape and optimiser: its steps, the
    precision, the corpus and the tokenizer (`recipe_differences` and `rr reproduce`'s refusals read them)."""
    return {"steps": size.steps, "precision": PRECISIONS[0], **PUBLISHED_DATA}


@dataclass(frozen=True)
class TrainConfig:
    """One training run. Left at their defaults, the fields reproduce the published run of `size`.

    `steps` and `recipe` default (None) to the size's values from the ladder and are filled in at
    construction, so a config always states its whole recipe. Any value that differs from the size's
    published one makes the run off-recipe (see `recipe_differences`).
    """

    size: str
    variant: str = REFERENCE
    seed: int = 0
    data: str = (
        "tinystories"  # "tinystories", "synthetic", a local corpus (file, folder) / token cache, hf:NAME
    )
    text_field: str = "text"  # the text field of a .jsonl, .parquet or hub corpus
    tokenizer: str | None = None  # "gpt2" or "bytes"; None: the data's own (gpt2, bytes for synthetic)
    steps: int | None = None
    recipe: Recipe | None = None
    precision: str = PRECISIONS[0]
    compile: bool = False
    device: str = "auto"  # cuda, then mps, then cpu
    # optimiser steps between checkpoints; 0: none; None: a fifth of the steps, at most 1000 (tiny: 20)
    checkpoint_every: int | None = None
    # steps between loss readings, the loop's only host syncs; None: a tenth of the steps, at most 50
    log_every: int | None = None
    cache_dir: str | None = None  # token caches; default $RR_CACHE or ~/.cache/rr
    # a re-run of a published (size, variant, seed) into a reproduction file (`rr reproduce`): the recipe
    # guard applies to that file whatever it holds
    reproduce: bool = False
    ladder: str | None = None  # a ladder file (rr_core.ladder.load_ladder) holding `size`; None: rr's
    log: tuple[str, ...] = ()  # metrics backends besides the JSONL log: tensorboard, wandb (rr_model.metrics)
    # torch's deterministic algorithms for the run (rr_model.numerics); the provenance record's environment
    # says what was in force (deterministic_algorithms, cudnn_benchmark, cublas_workspace_config)
    deterministic: bool = False
    # the options of `rr train/sweep --config FILE` as run (TOML: flag over file over default), kept in
    # the provenance record with the rest of the config; None when no run config file was given
    run_config: str | None = None

    def __post_init__(self) -> None:
        size = get_size(self.size, self.ladder)
        object.__setattr__(self, "size", size.name)  # '150m' is 150M in checkpoints, sidecar and rows
        object.__setattr__(self, "log", tuple(self.log))
        steps = self.steps or size.steps
        defaults = {
            "steps": size.steps,
            "recipe": size.recipe,
            "checkpoint_every": min(1000, max(1, steps // 5)),
            "log_every": min(50, max(1, steps // 10)),
        }
        for name, value in defaults.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        if self.variant not in VARIANTS:
            load_plugins()  # a plugin's variant: RR_PLUGINS and the rr.residuals entry points
        if self.variant not in VARIANTS:
            raise InputError(unknown_variant(self.variant))
        checks = {
            "seed": (0 <= self.seed < 2**32, "must be in 0 .. 2**32 - 1 (numpy's RandomState seeds)"),
            "steps": (self.steps > 0, "must be > 0"),
            "tokenizer": (self.tokenizer in (None, "gpt2", "bytes"), "must be gpt2 or bytes"),
            "precision": (self.precision in PRECISIONS, f"must be one of {', '.join(PRECISIONS)}"),
            "device": (self.device in DEVICES, f"must be one of {', '.join(DEVICES)}"),
            "checkpoint_every": (self.checkpoint_every >= 0, "must be >= 0 (0: no checkpoints)"),
            "log_every": (self.log_every > 0, "must be > 0"),
            "log": (set(self.log) <= set(BACKENDS), f"must name only {' and '.join(BACKENDS)}"),
        }
        for name, (ok, rule) in checks.items():
            if not ok:
                raise InputError(f"{name} {getattr(self, name)!r} {rule}")
        require_backends(self.log)  # a missing extra stops the plan, not each run after its data loads

    @property
    def key(self) -> tuple[str, str, int]:
        """The run's (size, variant, seed): its key in the dataset."""
        return (self.size, self.variant, self.seed)


# Fields that decide a run's numbers: a checkpoint resumes only under a config that agrees on them.
_RESULT_FIELDS = ("size", "variant", "seed", "data", "tokenizer", "steps", "recipe", "precision")


def result_config(cfg: TrainConfig) -> dict[str, Any]:
    """The fields of `cfg` that decide its numbers, as stored in (and compared with) a checkpoint.

    A ladder file's size adds its file and shape: the file may be edited between a checkpoint and a resume.
    """
    found = {k: v for k, v in asdict(cfg).items() if k in _RESULT_FIELDS}
    if cfg.text_field != "text":  # stored only where it is not the default, as the ladder below
        found["text_field"] = cfg.text_field
    if cfg.ladder is not None:
        size = get_size(cfg.size, cfg.ladder)
        found["ladder"] = {
            "file": cfg.ladder,
            **{k: getattr(size, k) for k in ("d_model", "n_layer", "n_head")},
        }
    return found


def default_out(ladder: str | os.PathLike | None = None) -> Path:
    """Where rows go without --out: `DEFAULT_OUT`, or for a ladder file's sizes data/<its stem>.csv."""
    return DEFAULT_OUT if ladder is None else Path("data") / f"{Path(ladder).stem}.csv"


# ---------------------------------------------------------------------------------------- recipe guard


def recipe_differences(cfg: TrainConfig, tokens: Tokens) -> list[str]:
    """How a run departs from its size's published recipe, one readable phrase per difference ([]: none).

    A ladder file's size is compared with its own recipe, unless it carries the label of one of rr's sizes:
    then with rr's size, and its shape, from the file, is always a difference (its rows would be taken for
    rr's), so such rows never go beside the published ones.
    """
    size = get_size(cfg.size, cfg.ladder)
    found, published = {}, {}
    if cfg.ladder is not None and cfg.size in LADDER:
        shape = "d_model {}, n_layer {}, n_head {}"
        found["shape"] = (
            shape.format(size.d_model, size.n_layer, size.n_head) + f" from the ladder file {cfg.ladder}"
        )
        size = LADDER[cfg.size]
        published["shape"] = shape.format(size.d_model, size.n_layer, size.n_head)
    found |= {
        "steps": cfg.steps,
        "precision": cfg.precision,
        "data": tokens.source,
        "tokenizer": tokens.tokenizer,
    }
    published |= published_settings(size)
    for f in fields(Recipe):
        found[f.name], published[f.name] = getattr(cfg.recipe, f.name), getattr(size.recipe, f.name)
    found["n_text"] = tokens.n_text  # the stories actually used (a small corpus may have fewer)
    published.pop("vocab_size")  # follows from the tokenizer
    return [f"{k} {found[k]} (published: {v})" for k, v in published.items() if found[k] != v]

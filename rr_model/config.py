"""One training run's configuration, `TrainConfig`, whose defaults are the published run of a size, and how
a run departs from the published recipe (`recipe_differences`). Torch-free and light to import: the CLI
builds its training options from it, and the planner and a sweep's children build configs without loading
the model.

Every training option is declared here once, as a field of `TrainConfig`: its type (choices as a
``Literal``), its default, and in its metadata (`option`) its help text, the commands that offer it, its
lower bound and, where it differs from the field's name, its flag. `cli.run_options` makes the options of
`rr train`, `rr sweep` and `rr reproduce` from these declarations (`declared_options`), and TrainConfig
checks every value against the same declarations, so a command line, a run config file (`--config`) and a
notebook refuse the same values with the same words. To add a training option:

1. add the field, with its type, its default and ``metadata=option("Help text.")``
   (``commands=OFF_RECIPE`` where `rr reproduce`, which trains the published recipe, must not offer it;
   ``min=`` for a lower bound; ``flag=`` for a flag other than ``--field-name``);
2. read it where the run uses it (the trainer, the planner).

It then appears in the commands' help and in their run config files, reaches `rr sweep`'s child runs and
Slurm jobs (the whole config travels as JSON) and is kept in each run's provenance record: no other line.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Iterator
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, get_args, get_origin, get_type_hints

from rr_core.errors import InputError
from rr_core.ladder import LADDER, Recipe, Size, get_size
from rr_core.lr_choice import ROLES
from rr_core.variants import REFERENCE, VARIANTS
from rr_model.metrics import Backend, require_backends

__all__ = [
    "TrainConfig",
    "RunOption",
    "Declared",
    "option",
    "declared_options",
    "choices",
    "TRAINING",
    "OFF_RECIPE",
    "DEFAULT_OUT",
    "default_out",
    "Precision",
    "Device",
    "Tokenizer",
    "Shard",
    "PRECISIONS",
    "DEVICES",
    "result_config",
    "run_identity",
    "identity_changes",
    "recipe_differences",
    "published_settings",
    "SHARDINGS",
    "checkpoint_interval",
]


if TYPE_CHECKING:
    from rr_model.data.token_cache import Corpus, Tokens

Precision = Literal["tf32", "bf16", "fp32"]  # tf32 is the published setting (fp32 arithmetic off CUDA)
Device = Literal["auto", "cuda", "mps", "cpu"]  # auto: cuda, then mps, then cpu
Tokenizer = Literal["gpt2", "bytes"]  # gpt2 is the published tokenizer
# How a run lays its model over the processes (rr_model.parallel.sharding): "none" is data parallel, each process
# holding the whole model (as published); "fsdp" shards parameters, gradients and optimiser state (FSDP2).
Shard = Literal["none", "fsdp"]
PRECISIONS: tuple[str, ...] = get_args(Precision)
DEVICES: tuple[str, ...] = get_args(Device)
SHARDINGS: tuple[str, ...] = get_args(Shard)
# Relative: the working directory's dataset, never the copy inside the installed package.
DEFAULT_OUT = Path("data") / "scaling_v8.csv"

TRAINING: tuple[str, ...] = ("train", "sweep", "reproduce", "tune")  # the commands that train
OFF_RECIPE: tuple[str, ...] = ("train", "sweep", "tune")  # rr reproduce trains the published recipe only
MEMORY = "Memory (docs/training.md, Past one GPU)"  # the help panel of the options of how a run uses memory


@dataclass(frozen=True)
class RunOption:
    """How a command line sets a TrainConfig field (`option` makes one; see the module docstring)."""

    help: str  # the option's help text; its default and choices are the field's
    commands: tuple[str, ...] = TRAINING  # the commands that offer it
    min: int | None = None  # the smallest value allowed (an int field)
    flag: str | None = None  # its flag; None: --field-name
    renamed: tuple[str, str] | None = None  # (an old flag that still works, with a note; why it went)
    panel: str | None = None  # the help panel it is listed in; None: the training run's (cli.run_options)


def option(help: str, **how: Any) -> dict[str, RunOption]:
    """The metadata of a TrainConfig field that command lines set: ``field(metadata=option("Help."))``;
    `how` holds `RunOption`'s other fields (commands, min, flag, renamed, panel)."""
    return {"option": RunOption(help, **how)}


def published_settings(size: Size) -> dict[str, object]:
    """What the published recipe sets for a run of `size` beyond its shape and optimiser: its steps, the
    precision, the corpus and the tokenizer (`recipe_differences` and `rr reproduce`'s refusals read them)."""
    from rr_model.data.corpus import TINYSTORIES  # here: the corpus readers load numpy

    return {"steps": size.steps, "precision": PRECISIONS[0], "data": TINYSTORIES, "tokenizer": "gpt2"}


@dataclass(frozen=True)
class TrainConfig:
    """One training run. Left at their defaults, the fields reproduce the published run of `size`.

    `steps` and `recipe` default (None) to the size's values from the ladder and are filled in at
    construction, so a config always states its whole recipe. Any value that differs from the size's
    published one makes the run off-recipe (see `recipe_differences`). The fields with an `option` in
    their metadata are the training commands' options (`declared_options`).
    """

    size: str
    variant: str = REFERENCE
    seed: int = 0
    reference: str = field(
        default=REFERENCE,
        metadata=option(
            "The variant under study: the matched baselines (highway, standard) are widened to its parameter "
            "count, and without --variant a seed trains it and them. Default: review_neutral, the published "
            "design; any registered variant, a plugin's included (off the published recipe).",
            commands=OFF_RECIPE,
        ),
    )
    data: str = field(
        default="tinystories",
        metadata=option(
            "The training corpus: tinystories (published), synthetic (offline demo), a local "
            ".txt/.jsonl/.parquet file or a folder of them, a token cache folder, or hf:NAME[:SPLIT] (a "
            "Hugging Face dataset through `datasets`). rr reproduce takes tinystories or a local copy of it.",
            flag="--corpus",
            renamed=("--data", "--data names a sweep file on rr's other commands"),
        ),
    )
    text_field: str = field(
        default="text",
        metadata=option("The text field of a .jsonl, .parquet or hf: corpus.", commands=OFF_RECIPE),
    )
    tokenizer: Tokenizer | None = field(
        default=None,
        metadata=option(
            "gpt2 is the published one. Default: the corpus's own (bytes for synthetic).", commands=OFF_RECIPE
        ),
    )
    steps: int | None = field(
        default=None,
        metadata=option("Override the size's step count (off-recipe).", commands=OFF_RECIPE, min=1),
    )
    recipe: Recipe | None = None
    precision: Precision = field(
        default="tf32",
        metadata=option(
            "tf32 (published; fp32 arithmetic off CUDA), bf16 autocast or fp32.", commands=OFF_RECIPE
        ),
    )
    compile: bool = field(default=False, metadata=option("torch.compile the model."))
    device: Device = field(default="auto", metadata=option("auto: cuda, then mps, then cpu."))
    checkpoint_every: int | None = field(
        default=None,
        metadata=option(
            "Optimiser steps between checkpoints (0: none). Default: a fifth of the run, at most 1000 "
            "(tiny: 20).",
            min=0,
        ),
    )
    # steps between loss readings, the loop's only host syncs; None: a tenth of the steps, at most 50
    log_every: int | None = None
    cache_dir: str | None = None  # token caches; default $RR_CACHE or ~/.cache/rr
    # a re-run of a published (size, variant, seed) into a reproduction file (`rr reproduce`): the recipe
    # guard applies to that file whatever it holds
    reproduce: bool = field(
        default=False,
        metadata=option(
            "Train published runs again under the published recipe (rr reproduce, many at once) into a "
            "reproduction file: --out, default data/reproduction.csv. --seeds defaults to each size's "
            "published seeds.",
            commands=("sweep",),
        ),
    )
    ladder: str | None = field(
        default=None,
        metadata=option(
            "A TOML file of your own sizes (one table per size: d_model, n_layer, n_head, steps, seeds, and "
            "any recipe override such as batch_size, lr, warmup_steps, block_size), used instead of rr's "
            "ladder. Rows go to data/FILE-STEM.csv unless --out says otherwise.",
            commands=OFF_RECIPE,
        ),
    )  # a ladder file (rr_core.ladder.load_ladder) holding `size`; None: rr's
    log: tuple[Backend, ...] = field(
        default=(),
        metadata=option(
            "Also log metrics to tensorboard or wandb (repeatable; the 'logging' extra). Every run writes "
            "OUT.metrics/RUN.jsonl anyway. W&B runs offline unless WANDB_API_KEY or WANDB_MODE says "
            "otherwise.",
            commands=OFF_RECIPE,
        ),
    )  # metrics backends besides the JSONL log (rr_model.metrics)
    # the provenance record's environment says what was in force (deterministic_algorithms,
    # cudnn_benchmark, cublas_workspace_config)
    deterministic: bool = field(
        default=False,
        metadata=option(
            "Bitwise-repeatable runs on one GPU and software stack: torch's deterministic algorithms, cuDNN "
            "without autotuning and, on CUDA, a fixed cuBLAS workspace (docs/training.md). It costs speed on "
            "GPU (slower deterministic kernels for index and embedding backward and matmul reductions; an op "
            "with no deterministic kernel stops the run with an error); on CPU it changes nothing "
            "measurable. Recorded in the provenance record.",
        ),
    )  # torch's deterministic algorithms for the run (rr_model.run.numerics)
    # the options of `rr train/sweep --config FILE` as run (TOML: flag over file over default), kept in
    # the provenance record with the rest of the config; None when no run config file was given
    run_config: str | None = None
    # a tuning run (`rr tune`, rr_model.sweep.tuning_runs): picks a learning rate ("selection") or is compared at
    # the rate picked ("comparison"). Its row records its lr and role, and its lr is part of its key, so one
    # seed trained at several rates is several runs; None: a run of a sweep, keyed by (size, variant, seed)
    role: Literal["selection", "comparison"] | None = None
    # --- how the run uses memory: implementation details, not the recipe (docs/training.md, "Past one GPU"),
    # in a help panel of their own (MEMORY), whose narrow columns leave --activation-checkpointing room at 80
    shard: Shard = field(
        default="none",
        metadata=option(
            "none: data parallel, each process holds the whole model (as published). fsdp: parameters, "
            "gradients and optimiser state sharded over the processes (FSDP2); not off-recipe.",
            panel=MEMORY,
        ),
    )  # rr_model.parallel.sharding
    activation_checkpointing: str = field(
        default="none",
        metadata=option(
            "Recompute activations in the backward pass instead of keeping them: none, full (every block) or "
            "every:N (blocks 0, N, 2N, ...). Less memory, about a third more compute per such block, the same "
            "numbers.",
            panel=MEMORY,
        ),
    )  # checkpoint_interval reads it
    micro_batches: int = field(
        default=1,
        metadata=option(
            "Split each process's share of the batch into this many micro-batches (gradient accumulation: the "
            "same step up to float rounding). A sharded run that ran out of memory names the count to resume "
            "with.",
            panel=MEMORY,
        ),
    )  # checked below, not by a bound: the panel's type column stays narrow (--activation-checkpointing whole)
    gpu_memory: float | None = field(
        default=None,
        metadata=option(
            "GiB of memory per GPU that the memory plan checks runs against. Default: the GPU's own. A run the "
            "plan says cannot fit is refused before it starts.",
            panel=MEMORY,
        ),
    )  # unchecked off CUDA unless given (rr_model.parallel.memory.refuse_unfit)

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
        for name in ("reference", "variant"):
            if getattr(self, name) not in VARIANTS:  # a plugin's variant, or none: refused with the nearest
                from rr_core.plugins import require_variant

                try:
                    require_variant(getattr(self, name))
                except InputError as e:  # the variant's words are GPTConfig's; the reference is named
                    raise InputError(f"reference: {e}" if name == "reference" else str(e)) from None
        if not isinstance(self.recipe, Recipe):  # its numbers are checked by Recipe itself
            raise InputError(f"recipe {self.recipe!r} must be a rr_core.ladder.Recipe")
        for name in ("seed", "steps", "checkpoint_every", "log_every"):
            if not isinstance(getattr(self, name), int) or isinstance(getattr(self, name), bool):
                raise InputError(f"{name} {getattr(self, name)!r} must be an integer")
        checks = {
            "seed": (0 <= self.seed < 2**32, "must be in 0 .. 2**32 - 1 (numpy's RandomState seeds)"),
            "log_every": (self.log_every > 0, "must be > 0"),
            "activation_checkpointing": (
                checkpoint_interval(self.activation_checkpointing) is not None,
                "must be none, full or every:N with N >= 1",
            ),
            "micro_batches": (self.micro_batches >= 1, "must be >= 1"),
            "role": (self.role in (None, *ROLES), f"must be {' or '.join(ROLES)} (or None)"),
            "gpu_memory": (self.gpu_memory is None or self.gpu_memory > 0, "must be > 0 (GiB)"),
        }
        for name, (ok, rule) in checks.items():
            if not ok:
                raise InputError(f"{name} {getattr(self, name)!r} {rule}")
        for declared in declared_options():
            if (rule := declared.problem(getattr(self, declared.name))) is not None:
                raise InputError(f"{declared.name} {getattr(self, declared.name)!r} {rule}")
        if self.checkpoint_every > self.steps:  # each value in its range: the rule between them
            raise InputError(
                f"checkpoint_every {self.checkpoint_every} must be 0 (no checkpoints) or at most the run's "
                f"{self.steps} steps: a longer interval never checkpoints"
            )
        require_backends(self.log)  # a missing extra stops the plan, not each run after its data loads

    @property
    def key(self) -> tuple:
        """The run's (size, variant, seed): its key in the dataset; a tuning run's (`role`) adds its lr, as
        a file that records learning rates keys its rows (`rr_core.sweepfile.dataset.run_keys`)."""
        key = (self.size, self.variant, self.seed)
        return key if self.role is None else (*key, self.recipe.lr)

    @property
    def named(self) -> dict[str, Any]:
        """`key` by name: size, variant, seed (and lr for a tuning run), as run records and job entries hold
        it (`rr_core.sweepfile.schema.record_key` reads it back)."""
        return dict(zip(("size", "variant", "seed", "lr"), self.key, strict=False))


class Declared(NamedTuple):
    """A TrainConfig field that command lines set: its name, type, default and `RunOption`."""

    name: str
    type: Any
    default: Any
    option: RunOption

    @property
    def flag(self) -> str:
        """The option's flag: `RunOption.flag`, or --field-name."""
        return self.option.flag or "--" + self.name.replace("_", "-")

    def problem(self, value: Any) -> str | None:
        """Why `value` may not stand in this field (its choices, its bound), or None."""
        if isinstance(value, float) and not math.isfinite(value):  # a number a command line or file spelt inf
            return "must be a finite number"
        allowed, many = choices(self.type)
        if allowed and many and not set(value) <= set(allowed):
            return f"must name only {', '.join(allowed[:-1])} and {allowed[-1]}"
        if allowed and not many and value is not None and value not in allowed:
            return f"must be one of {', '.join(allowed)}"
        if self.option.min is not None and value is not None and value < self.option.min:
            return f"must be >= {self.option.min}"
        return None


def choices(kind: Any) -> tuple[tuple[Any, ...], bool]:
    """The values a field of type `kind` may take where it is (an optional, or a tuple of) a Literal, and
    whether it holds several; ((), False) for a type without choices."""
    many = get_origin(kind) is tuple
    args = [a for a in get_args(kind) if a is not type(None) and a is not Ellipsis]
    if get_origin(kind) is Literal:
        return get_args(kind), False
    literal = [a for a in args if get_origin(a) is Literal]
    return (get_args(literal[0]), many) if literal else ((), False)


@functools.cache
def declared_options(command: str | None = None) -> tuple[Declared, ...]:
    """The TrainConfig fields that `command` offers as options (None: every command's), in field order."""
    hints = get_type_hints(TrainConfig)
    return tuple(
        Declared(f.name, hints[f.name], None if f.default is MISSING else f.default, f.metadata["option"])
        for f in fields(TrainConfig)
        if "option" in f.metadata and (command is None or command in f.metadata["option"].commands)
    )


def checkpoint_interval(spec: str) -> int | None:
    """Every how many blocks activation checkpointing recomputes one: 0 for "none", 1 for "full", N for
    "every:N" (blocks 0, N, 2N, ...); None for anything else.

    Example
    -------
    >>> [checkpoint_interval(s) for s in ("none", "full", "every:2", "every:0", "half")]
    [0, 1, 2, None, None]
    """
    if spec in ("none", "full"):
        return ("none", "full").index(spec)
    every, _, n = spec.partition(":")
    return int(n) if every == "every" and n.isdigit() and int(n) >= 1 else None


# Fields that decide a run's numbers: a checkpoint resumes only under a config that agrees on them.
_RESULT_FIELDS = ("size", "variant", "seed", "data", "tokenizer", "steps", "recipe", "precision")
# `role` is not among them: a tuning run's number does not depend on why it was trained


def result_config(cfg: TrainConfig) -> dict[str, Any]:
    """The fields of `cfg` that decide its numbers, as stored in (and compared with) a checkpoint.

    A ladder file's size adds its file and shape: the file may be edited between a checkpoint and a resume.
    """
    found = {k: v for k, v in asdict(cfg).items() if k in _RESULT_FIELDS}
    if cfg.text_field != "text":  # stored only where it is not the default, as the ladder below
        found["text_field"] = cfg.text_field
    if cfg.reference != REFERENCE:  # the matched widths follow it
        found["reference"] = cfg.reference
    if cfg.ladder is not None:
        size = get_size(cfg.size, cfg.ladder)
        found["ladder"] = {
            "file": cfg.ladder,
            **{k: getattr(size, k) for k in ("d_model", "n_layer", "n_head")},
        }
    return found


def run_identity(cfg: TrainConfig, tokens: Tokens) -> dict[str, Any]:
    """Everything a run's numbers depend on, as a checkpoint stores it (`rr_model.checkpoint.state.Resumable`'s
    fields of these names) and a resume compares it (`identity_changes`).

    Returns
    -------
    {"config": `result_config` (size, variant, seed, corpus path, tokenizer, steps, the recipe, precision,
    and a ladder file's entry), "data": the tokens trained on (`Tokens.describe`: source, tokenizer,
    documents, lengths and the stream's sha256, `rr_model.data.token_cache`), "plugin": the module, file
    and sha256 of the code that built a plugin's rule (`rr_core.plugins.provenance`; None for rr's own)}.
    """
    from rr_core.plugins import provenance  # here: as for require_variant, only a run pays for it

    return {"config": result_config(cfg), "data": tokens.describe(), "plugin": provenance(cfg.variant)}


def identity_changes(saved: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What differs between a stored run identity and the present one, one phrase per value that differs
    (``config.recipe.lr 0.001 when saved, 0.002 now``); [] when they agree. Long values (a sha256) are cut
    to their first 12 characters."""
    return list(_differences(saved, now, ""))


def _differences(then: Any, now: Any, key: str) -> Iterator[str]:
    if isinstance(then, dict) and isinstance(now, dict):
        for part in sorted(then.keys() | now.keys()):
            yield from _differences(then.get(part), now.get(part), f"{key}.{part}" if key else part)
    elif then != now:
        yield f"{key} {_shown(then)} when saved, {_shown(now)} now"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:13] + "...'"


def default_out(ladder: str | os.PathLike | None = None) -> Path:
    """Where rows go without --out: `DEFAULT_OUT`, or for a ladder file's sizes data/<its stem>.csv."""
    return DEFAULT_OUT if ladder is None else Path("data") / f"{Path(ladder).stem}.csv"


# ---------------------------------------------------------------------------------------- recipe guard


def recipe_differences(cfg: TrainConfig, tokens: Tokens | Corpus) -> list[str]:
    """How a run departs from its size's published recipe, one readable phrase per difference ([]: none).

    A ladder file's size is compared with its own recipe, unless it carries the label of one of rr's sizes:
    then with rr's size, and its shape, from the file, is always a difference (its rows would be taken for
    rr's), so such rows never go beside the published ones. A matched baseline widened to another reference
    than Review (`--reference`) has another shape than the published one of its name.
    """
    size = get_size(cfg.size, cfg.ladder)
    found, published = {}, {}
    if VARIANTS[cfg.variant].matched:
        found["reference"], published["reference"] = cfg.reference, REFERENCE
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

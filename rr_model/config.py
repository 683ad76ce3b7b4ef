"""One training run's configuration, `TrainConfig`, whose defaults are the published run of a size (how a
run departs from the published recipe is `rr_model.run.identity.recipe_differences`). Torch-free and light
to import: the CLI builds its training options from it, and the planner and a sweep's children build
configs without loading the model.

Every training option is declared here once, as a field of `TrainConfig`: its type (choices as a
``Literal``), its default, and in its metadata (`option`) its help text, the commands that offer it, its
lower bound and, where it differs from the field's name, its flag (`rr_core.options`). `cli.fields` makes the
options of `rr train`, `rr sweep`, `rr tune` and `rr reproduce` from these declarations
(`rr_core.options.declared`), and TrainConfig
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

import math
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, NamedTuple, get_args

from rr_core import options
from rr_core.budget import budget_steps, reference_params, step_tokens
from rr_core.errors import InputError
from rr_core.ladder import BYTE_EOS, PUBLISHED_CORPUS, Recipe, Size, get_size
from rr_core.lr_choice import ROLES
from rr_core.options import Option
from rr_core.variants import REFERENCE, VARIANTS
from rr_model.metrics import Backend, require_backends

__all__ = [
    "TrainConfig",
    "option",
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
    "checkpoint_interval",
    "decay_start",
    "schedule_words",
    "Schedule",
    "DecayShape",
    "Seeds",
]


Precision = Literal["tf32", "bf16", "fp32"]  # tf32 is the published setting (fp32 arithmetic off CUDA)
Device = Literal["auto", "cuda", "mps", "cpu"]  # auto: cuda, then mps, then cpu
Tokenizer = Literal["gpt2", "bytes"]  # gpt2 is the published tokenizer
Schedule = Literal["cosine", "wsd"]  # cosine is the published schedule; wsd: warmup-stable-decay
DecayShape = Literal["linear", "1-sqrt"]  # a wsd cooldown's shape (Hägele et al. 2024, arXiv 2405.18392)
# How a run lays its model over the processes (rr_model.parallel.sharding): "none" is data parallel, each process
# holding the whole model (as published); "fsdp" shards parameters, gradients and optimiser state (FSDP2).
Shard = Literal["none", "fsdp"]
PRECISIONS: tuple[str, ...] = get_args(Precision)
DEVICES: tuple[str, ...] = get_args(Device)
# Relative: the working directory's dataset, never the copy inside the installed package.
DEFAULT_OUT = Path("data") / "scaling_v8.csv"

TRAINING: tuple[str, ...] = ("train", "sweep", "reproduce", "tune")  # the commands that train
OFF_RECIPE: tuple[str, ...] = ("train", "sweep", "tune")  # rr reproduce trains the published recipe only
MEMORY = "Memory (docs/training.md, Past one GPU)"  # the help panel of the options of how a run uses memory


class Seeds(NamedTuple):
    """The seeds a run draws from (`TrainConfig.seeds`): its initial weights' and its data order's."""

    init: int  # torch.manual_seed right before the model is built
    data: int  # numpy RandomState of the training batches, and of the final evaluation's windows after them


def option(help: str, **how: Any) -> dict[str, Option]:
    """The metadata of a TrainConfig field that command lines set: ``field(metadata=option("Help."))``, offered by
    every training command (`TRAINING`) unless `how` names its ``commands``; `how` holds `rr_core.options.Option`'s
    other fields (min, flag, renamed, comma, panel)."""
    return options.option(help, **{"commands": TRAINING, **how})


@dataclass(frozen=True)
class TrainConfig:
    """One training run. Left at their defaults, the fields reproduce the published run of `size`.

    `steps` and `recipe` default (None) to the size's values from the ladder and are filled in at
    construction, so a config always states its whole recipe. Any value that differs from the size's
    published one makes the run off-recipe (see `recipe_differences`). The fields with an `option` in
    their metadata are the training commands' options (`rr_core.options.declared`).
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
        default=PUBLISHED_CORPUS,
        metadata=option(
            f"The training corpus: {PUBLISHED_CORPUS} (published), synthetic (offline demo), a local "
            ".txt/.jsonl/.parquet file or a folder of them, a token cache folder, or hf:NAME[:SPLIT] (a "
            f"Hugging Face dataset through `datasets`). rr reproduce takes {PUBLISHED_CORPUS} or a local copy "
            "of it.",
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
    # --- the budget in tokens instead of steps (rr_core.budget; one of steps, tokens, tokens_per_param)
    tokens: int | None = field(
        default=None,
        metadata=option(
            "Train on this many tokens instead of the size's steps: steps = round(tokens / (batch x block)), "
            "at least 1 (off-recipe).",
            commands=OFF_RECIPE,
            min=1,
        ),
    )
    tokens_per_param: float | None = field(
        default=None,
        metadata=option(
            "Train on this many tokens per parameter of the reference (its exact count: the same steps for "
            "every arm), e.g. 20 (Chinchilla-optimal); steps = round(X N / (batch x block)) (off-recipe).",
            commands=OFF_RECIPE,
        ),
    )
    recipe: Recipe | None = None
    # --- the schedule: the published warmup-cosine, or warmup-stable-decay (rr_model.run.step.wsd_factor)
    schedule: Schedule = field(
        default="cosine",
        metadata=option(
            "cosine: the published warmup-cosine. wsd: the recipe's warmup, the peak held, then a cooldown to "
            "the recipe's floor over the last --decay-frac of the steps (off-recipe).",
            commands=OFF_RECIPE,
        ),
    )
    decay_frac: float = field(
        default=0.2,
        metadata=option("wsd: the share of the steps the cooldown takes, in (0, 1].", commands=OFF_RECIPE),
    )
    decay_shape: DecayShape = field(
        default="linear",
        metadata=option("wsd: the cooldown's shape (Hägele et al. 2024's two).", commands=OFF_RECIPE),
    )
    # --- cooldown branches: several budgets from one wsd run (rr_model.run.trainer, docs/training.md "Budgets")
    branch_at: tuple[int, ...] = field(
        default=(),
        metadata=option(
            "wsd: also train a cooldown branch ending at each of these steps (comma-separated, each below "
            "--steps), from the stable phase's state where its cooldown starts: each a row of its own, equal "
            "to a run of that many steps.",
            commands=("train",),
            comma=True,
        ),
    )
    # a cooldown branch of the run of this many steps (`branches`): it continues from the state that run saved
    # where the branch's cooldown starts; None for any other run
    branch_of: int | None = None
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
            "reproduction file: --out, default data/reproduction.csv. --seed defaults to each size's "
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
    # --- validation during training (docs/training.md): readings of a fixed set of held-out windows, logged
    # as the run trains (rr_model.run.trainer); they change none of the run's numbers, so they are not recipe
    eval_every: int = field(
        default=0,
        metadata=option(
            "Optimiser steps between validation readings (0: none), and one at the last step: the loss on a "
            "fixed set of held-out windows, the same for every variant, seed and size of a corpus, logged as an "
            "eval event in OUT.metrics/RUN.jsonl. The run trains the same bits with or without them; the final "
            "evaluation (the row's val_loss) is the published one either way.",
            min=0,
        ),
    )
    eval_windows: int = field(
        default=1024,
        metadata=option(
            "How many held-out windows (of the recipe's block size) each --eval-every reading scores.", min=1
        ),
    )
    # --- the seeds of the initial weights and of the data order (docs/training.md, "Seeds"): each is `seed`
    # where not given, as published. A run that names one records both (`seeds`) in its row and record.
    init_seed: int | None = field(
        default=None,
        metadata=option(
            "Seed of the initial weights (torch.manual_seed before the model is built). Default: --seed, as "
            "published. Naming it (or --data-seed) writes both seeds in the row: init_seed, data_seed.",
            commands=OFF_RECIPE,
            min=0,
        ),
    )
    data_seed: int | None = field(
        default=None,
        metadata=option(
            "Seed of the data order: the training batches, and the final evaluation's windows that follow "
            "them. Default: --seed, as published. The analysis pairs arms on it (the batches they shared).",
            commands=OFF_RECIPE,
            min=0,
        ),
    )
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
        for name in ("reference", "variant"):
            if getattr(self, name) not in VARIANTS:  # a plugin's variant, or none: refused with the nearest
                from rr_core.plugins import require_variant

                try:
                    require_variant(getattr(self, name))
                except InputError as e:  # the variant's words are GPTConfig's; the reference is named
                    raise InputError(f"reference: {e}" if name == "reference" else str(e)) from None
        if self.recipe is None:
            object.__setattr__(self, "recipe", size.recipe)
        if not isinstance(self.recipe, Recipe):  # its numbers are checked by Recipe itself
            raise InputError(f"recipe {self.recipe!r} must be a rr_core.ladder.Recipe")
        object.__setattr__(self, "steps", self._budget_steps(size))
        steps = self.steps
        defaults = {
            "checkpoint_every": min(1000, max(1, steps // 5)),
            "log_every": min(50, max(1, steps // 10)),
        }
        for name, value in defaults.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        for name in ("seed", "steps", "checkpoint_every", "log_every", "eval_every", "eval_windows"):
            if not isinstance(getattr(self, name), int) or isinstance(getattr(self, name), bool):
                raise InputError(f"{name} {getattr(self, name)!r} must be an integer")
        for name in ("init_seed", "data_seed"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise InputError(f"{name} {value!r} must be an integer")
        seed_rule = "must be in 0 .. 2**32 - 1 (numpy's RandomState seeds)"
        checks = {
            "seed": (0 <= self.seed < 2**32, seed_rule),
            "init_seed": (self.init_seed is None or 0 <= self.init_seed < 2**32, seed_rule),
            "data_seed": (self.data_seed is None or 0 <= self.data_seed < 2**32, seed_rule),
            "log_every": (self.log_every > 0, "must be > 0"),
            "activation_checkpointing": (
                checkpoint_interval(self.activation_checkpointing) is not None,
                "must be none, full or every:N with N >= 1",
            ),
            "micro_batches": (self.micro_batches >= 1, "must be >= 1"),
            "role": (self.role in (None, *ROLES), f"must be {' or '.join(ROLES)} (or None)"),
            "gpu_memory": (  # past 1 PiB a GiB count is a slip: the largest GPUs hold a few hundred
                self.gpu_memory is None or 0 < self.gpu_memory <= 2**20,
                "must be > 0 and at most 1048576 (GiB per GPU, 1 PiB)",
            ),
            "decay_frac": (
                isinstance(self.decay_frac, int | float) and 0 < self.decay_frac <= 1,
                "must be in (0, 1] (the share of the steps the cooldown takes)",
            ),
        }
        for name, (ok, rule) in checks.items():
            if not ok:
                raise InputError(f"{name} {getattr(self, name)!r} {rule}")
        if self.schedule == "cosine" and (self.decay_frac, self.decay_shape) != (0.2, "linear"):
            raise InputError(
                f"decay_frac {self.decay_frac:g} and decay_shape {self.decay_shape} shape a wsd cooldown: "
                "give --schedule wsd, or neither"
            )
        object.__setattr__(self, "branch_at", tuple(self.branch_at))
        self._check_branches()
        for declared in options.declared(TrainConfig):
            if (rule := declared.problem(getattr(self, declared.name))) is not None:
                raise InputError(f"{declared.name} {getattr(self, declared.name)!r} {rule}")
        if self.checkpoint_every > self.steps:  # each value in its range: the rule between them
            raise InputError(
                f"checkpoint_every {self.checkpoint_every} must be 0 (no checkpoints) or at most the run's "
                f"{self.steps} steps: a longer interval never checkpoints"
            )
        require_backends(self.log)  # a missing extra stops the plan, not each run after its data loads

    def _budget_steps(self, size: Size) -> int:
        """The run's steps: `steps`, else those its token budget (`tokens`, `tokens_per_param`) or its size's
        gives (`rr_core.budget.budget_steps`; tokens per parameter of the reference at `vocab_size`)."""
        if isinstance(self.steps, bool) or not isinstance(self.steps, int | None):
            raise InputError(f"steps {self.steps!r} must be an integer")
        if self.tokens_per_param is not None and not (
            isinstance(self.tokens_per_param, int | float) and 0 < self.tokens_per_param < math.inf
        ):
            raise InputError(f"tokens_per_param {self.tokens_per_param!r} must be a finite number > 0")
        in_params = self.tokens_per_param is not None or (
            self.tokens is None and size.budget[0] == "tokens_per_param"
        )
        params = (
            reference_params(self.size, self.vocab_size, self.ladder, self.reference, self.recipe.block_size)
            if in_params
            else None
        )
        return budget_steps(
            size,
            self.recipe,
            params,
            steps=self.steps,
            tokens=self.tokens,
            tokens_per_param=self.tokens_per_param,
        )

    @property
    def vocab_size(self) -> int:
        """The vocabulary the run's model will have, known before its data loads: the byte tokenizer's (257)
        for --tokenizer bytes or the synthetic corpus, else the recipe's (GPT-2's). A token cache of another
        tokenizer, given without --tokenizer, is found out by `rr_model.run.checks.check_run`."""
        bytes_ = self.tokenizer == "bytes" or (self.tokenizer is None and self.data == "synthetic")
        return BYTE_EOS + 1 if bytes_ else self.recipe.vocab_size  # the byte tokenizer: 256 bytes and EOS

    @property
    def token_budget(self) -> bool:
        """Whether the run's budget is stated in tokens (`tokens`, `tokens_per_param`, or its ladder size's):
        its row then records the tokens it trained on (the sweep file's `tokens` column)."""
        size = get_size(self.size, self.ladder)
        return self.tokens is not None or self.tokens_per_param is not None or size.budget[0] != "steps"

    @property
    def trained_tokens(self) -> int:
        """The tokens the run trains on: steps x batch x block."""
        return self.steps * step_tokens(self.recipe)

    @property
    def key(self) -> tuple:
        """The run's (size, variant, seed): its key in the dataset; a tuning run's (`role`) adds its lr, as
        a file that records learning rates keys its rows (`rr_core.sweepfile.dataset.run_keys`), and one of
        several budgets (`several_budgets`) its steps, as a file of several budgets keys them."""
        return tuple(self.stem.values())

    @property
    def stem(self) -> dict[str, Any]:
        """`key` by name: size, variant, seed, lr for a tuning run, steps for one of several budgets; the
        arguments of `rr_core.sweepfile.schema.run_stem`, which names the run's files."""
        stem = {"size": self.size, "variant": self.variant, "seed": self.seed}
        stem |= {"lr": self.recipe.lr} if self.role is not None else {}
        return stem | ({"steps": self.steps} if self.several_budgets else {})

    @property
    def seeds(self) -> Seeds:
        """The seeds the run draws from: `init_seed` and `data_seed`, each `seed` where not given (the
        published run, where one seed sets both)."""
        init, data = self.init_seed, self.data_seed
        return Seeds(self.seed if init is None else init, self.seed if data is None else data)

    @property
    def own_seeds(self) -> bool:
        """Whether the run names its initial weights' or data order's seed (`init_seed`, `data_seed`): its row
        and metrics log then carry both seeds."""
        return self.init_seed is not None or self.data_seed is not None

    @property
    def named(self) -> dict[str, Any]:
        """`stem`, as run records and job entries hold it, with the ``budget`` of one of several budgets
        ("main": the run whose stable phase its branches share; "branch": a cooldown branch of it), for
        `rr_core.sweepfile.schema.record_key` to read the key back."""
        budget = {"budget": "main" if self.branch_of is None else "branch"} if self.several_budgets else {}
        return self.stem | budget

    @property
    def family(self) -> tuple:
        """The run's key without its steps: what the budgets of one (size, variant, seed[, lr]) share."""
        return tuple(v for k, v in self.stem.items() if k != "steps")

    @property
    def several_budgets(self) -> bool:
        """Whether the run is one of several budgets of its (size, variant, seed): a run with cooldown
        branches (`branch_at`) or one of them (`branch_of`). Its key, its files and its row hold its steps
        and tokens."""
        return bool(self.branch_at) or self.branch_of is not None

    def branches(self) -> list[TrainConfig]:
        """The cooldown branches of this run (`branch_at`): each a wsd run of its steps, in order, training
        on from the state this run saves where the branch's cooldown starts (`branch_start`)."""
        keep = {"steps", "tokens", "tokens_per_param", "branch_at", "branch_of"}
        fields_ = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in keep}
        return [TrainConfig(**fields_, steps=b, branch_of=self.steps) for b in self.branch_at]

    def with_branches(self) -> list[TrainConfig]:
        """This run, then its cooldown branches (`branches`): the runs that train its budgets, in order."""
        return [self, *self.branches()]

    @property
    def branch_start(self) -> int:
        """The step where this run's cooldown starts (`decay_start`): where a branch of it leaves the stable
        phase of the run it branches from."""
        return decay_start(self.steps, self.decay_frac)

    def _check_branches(self) -> None:
        """Refuse branches a run cannot train: without the wsd schedule, or not below its steps, or of a
        branch; and a branch whose cooldown would start after its run's (their stable phases would differ)."""
        if not (self.branch_at or self.branch_of is not None):
            return
        what = (
            f"branch_at {','.join(map(str, self.branch_at))}"
            if self.branch_at
            else f"branch_of {self.branch_of}"
        )
        if self.schedule != "wsd":
            raise InputError(f"{what}: cooldown branches need the wsd schedule (--schedule wsd)")
        if self.branch_at and self.branch_of is not None:
            raise InputError(f"{what}: a branch has no branches of its own")
        if self.branch_at and (
            any(isinstance(b, bool) or not isinstance(b, int) for b in self.branch_at)
            or list(self.branch_at) != sorted(set(self.branch_at))
            or not 0 < self.branch_at[0] <= self.branch_at[-1] < self.steps
        ):
            raise InputError(f"{what}: give increasing steps, each > 0 and below the run's {self.steps}")
        branch, run = (
            (self.steps, self.branch_of) if self.branch_of is not None else (self.branch_at[-1], self.steps)
        )
        later = decay_start(branch, self.decay_frac) > decay_start(run, self.decay_frac)
        if isinstance(run, bool) or not isinstance(run, int) or not branch < run or later:
            raise InputError(f"{what}: each branch must be shorter than its run and start its cooldown first")


def decay_start(steps: int, decay_frac: float) -> int:
    """The first step of a wsd cooldown over the last `decay_frac` of `steps`: steps minus
    max(1, round(decay_frac x steps)), at least 0 (`rr_model.run.step.wsd_factor`).

    Example
    -------
    >>> decay_start(100, 0.2), decay_start(10, 0.2), decay_start(3, 0.2), decay_start(1, 0.5)
    (80, 8, 2, 0)
    """
    return max(0, steps - max(1, round(decay_frac * steps)))


def schedule_words(cfg: TrainConfig) -> str:
    """The run's schedule in words, for its start line and its departures from the recipe."""
    r = cfg.recipe
    if cfg.schedule == "cosine":
        return f"warmup {r.warmup_steps}, cosine to {r.lr * r.min_lr_frac:g}"
    start = decay_start(cfg.steps, cfg.decay_frac)
    return (
        f"wsd: warmup {r.warmup_steps}, constant, then a {cfg.decay_shape} cooldown to {r.lr * r.min_lr_frac:g} "
        f"over the last {cfg.steps - start} steps ({cfg.decay_frac:g} of {cfg.steps}, from step {start})"
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


def default_out(ladder: str | os.PathLike | None = None) -> Path:
    """Where rows go without --out: `DEFAULT_OUT`, or for a ladder file's sizes data/<its stem>.csv."""
    return DEFAULT_OUT if ladder is None else Path("data") / f"{Path(ladder).stem}.csv"

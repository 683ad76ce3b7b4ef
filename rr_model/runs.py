"""What runs to make, and whether they are the published experiment: the trainer's torch-free half.

`TrainConfig` (one run; its defaults are the published run of a size), the one reading of a run's output
file before training (`preflight`, whose `OutputPlan` answers every question asked of the file: present
runs, the published start, the recipe guard, whether a row fits), the plan behind `rr train`
(`plan_runs`), the time estimate of `rr train --dry-run`
(`describe_runs`) and the recipe's departures (`recipe_differences`). Nothing here imports torch, so
planning a sweep, or a dry run, starts at once; `rr_model.train` holds the loop.
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rr_model.config import model_config
from rr_model.core.errors import InputError, RecipeError
from rr_model.core.files import create_new
from rr_model.core.ladder import BYTE_EOS, LADDER, Recipe, Size, get_size
from rr_model.core.variants import COMPARED, REFERENCE, VARIANTS, unknown_variant
from rr_model.flops import assumed_rate, flops_per_token
from rr_model.metrics import BACKENDS, require_backends
from rr_model.plugins import load_plugins
from rr_model.results.dataset import DataError, bundled_path, check_append, load_sweep, refuse_reference
from rr_model.results.integrity import check_integrity
from rr_model.results.provenance import sidecar_path
from rr_model.tokens import TINYSTORIES

if TYPE_CHECKING:
    import pandas as pd

    from rr_model.tokens import Tokens

__all__ = [
    "TrainConfig",
    "DEFAULT_OUT",
    "default_out",
    "PRECISIONS",
    "DEVICES",
    "result_config",
    "OutputPlan",
    "preflight",
    "dataset_keys",
    "dataset_row",
    "plan_runs",
    "describe_runs",
    "recipe_differences",
    "published_settings",
]

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
    ladder: str | None = None  # a ladder file (rr_model.core.ladder.load_ladder) holding `size`; None: rr's
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


# ---------------------------------------------------------------------------------------------- planning


@dataclass(frozen=True)
class OutputPlan:
    """What a run's output file holds, and what may be written to it: `preflight`'s one reading of it.

    `rows` are the file's rows, or the published rows it will start as (`from_published`); None for a new
    file. Every question the trainer and the CLI ask of the file before training is answered from them:
    which runs are present (`keys`), whether it holds published rows (`guard`), whether a run's row would
    be accepted (`check_fits`).
    """

    out: Path
    rows: pd.DataFrame | None
    from_published: bool  # a missing default dataset, trained at a published size: `start` copies the rows
    reproduction: bool = False  # a reproduction file (`rr reproduce`): only the published recipe goes to it

    @functools.cached_property
    def keys(self) -> set[tuple[str, str, int]]:
        """The (size, variant, seed) of every row."""
        return set() if self.rows is None else _keys(self.rows)

    @functools.cached_property
    def published(self) -> bool:
        """Whether the file holds (or will start as) published rows, or is a reproduction file, so the recipe
        guard applies."""
        if self.reproduction:
            return True
        return self.rows is not None and (self.from_published or check_integrity(self.rows).present > 0)

    def start(self) -> None:
        """Create the default dataset as a copy of the published rows when it starts from them."""
        if not self.from_published:
            return
        self.out.parent.mkdir(parents=True, exist_ok=True)
        published = bundled_path().read_bytes()
        create_new(self.out, lambda f: f.write(published))  # whole or not at all; of several, one writes

    def guard(self, cfg: TrainConfig, tokens: Tokens) -> None:
        """Refuse an off-recipe run for a file that holds published rows, naming every difference."""
        if self.published and (diffs := recipe_differences(cfg, tokens)):
            what = "is a reproduction file" if self.reproduction else "holds published rows"
            raise RecipeError(
                f"{self.out} {what}, and this run is off the published recipe of {cfg.size}: "
                f"{'; '.join(diffs)}. Rows trained another way would be analysed as if they were comparable; "
                "write them to a separate file with --out other.csv."
            )

    def check_fits(self, cfg: TrainConfig, params: int) -> None:
        """Refuse before training, not after, a run whose row the file's schema would reject: a run already
        in the file, or steps or params_M unlike the file's other rows of the same (size, variant)."""
        if self.rows is None:
            return
        placeholder = {"params": params, "val_loss": 1.0, "ece": None, "minutes": None}  # any valid result
        try:
            check_append(self.rows, [dataset_row(cfg, placeholder)], self.out)
        except DataError as e:
            key = " ".join(map(str, cfg.key))
            raise InputError(
                f"not training {key}: its row would be refused (new row 1 below).\n{e}"
            ) from None


def preflight(
    out: str | os.PathLike,
    sizes: Iterable[str] = (),
    *,
    create: bool = False,
    reproduction: bool = False,
    ladder: str | os.PathLike | None = None,
) -> OutputPlan:
    """Read a run's output file once, refusing before any training a file that its rows cannot go to.

    Parameters
    ----------
    out
        The dataset the rows are appended to.
    sizes
        The sizes to be trained: a missing default dataset (`DEFAULT_OUT`) trained at a published size
        starts as the published sweep, so `rr train --size 150M` in a fresh directory adds seed 3, not a
        second seed 0. Any other new file (an explicit --out, or the tiny demo size) starts empty.
    create
        Make a missing folder for `out` (only when its parent exists, so a mistyped path is an error
        rather than a new tree of folders); a dry run creates nothing.
    reproduction
        `out` is a reproduction file (`rr_model.reproduce`): the recipe guard applies whatever it holds.
    ladder
        The ladder file `sizes` come from (None: rr's own); none of its sizes is a published one, so a
        missing file of them starts empty.

    Raises
    ------
    DataError
        `out` is the packaged reference copy (under any name), or not a valid sweep file.
    InputError
        `out` or its sidecar cannot be written.

    Example
    -------
    >>> import tempfile
    >>> plan = preflight(Path(tempfile.mkdtemp()) / "new.csv", ["tiny"])
    >>> plan.rows is None, plan.keys, plan.from_published
    (True, set(), False)
    """
    out = Path(out)
    refuse_reference(out)  # by device and inode: a hard link or symlink to the packaged copy is refused too
    from_published = (
        out == DEFAULT_OUT and not out.exists() and any(get_size(s, ladder).published for s in sizes)
    )
    source = bundled_path() if from_published else out
    rows = load_sweep(source) if source.exists() else None
    _check_writable(out, create)
    return OutputPlan(out, rows, from_published, reproduction)


def _check_writable(out: Path, create: bool) -> None:
    """Refuse a dataset `out` that it and its sidecar could not be written to."""
    folder = out.parent
    if out.exists() and not out.is_file():
        raise InputError(f"--out {out}: not a regular file")
    if not folder.is_dir():
        if folder.exists() or not folder.parent.is_dir():
            raise InputError(f"--out {out}: {folder} is not a folder, and its parent is none either")
        if not create:
            folder = folder.parent  # where the folder would be made
        else:
            folder.mkdir()
    for path in (out, sidecar_path(out)):
        target = path if path.exists() else folder
        if not os.access(target, os.W_OK | (os.X_OK if target.is_dir() else 0)):
            raise InputError(f"--out {out}: {target} is not writable here, so the run's result would be lost")


def _keys(df: pd.DataFrame) -> set[tuple[str, str, int]]:
    return set(zip(df["size"], df["variant"], df["seed"].astype(int), strict=True))


def dataset_keys(path: str | os.PathLike) -> set[tuple[str, str, int]]:
    """The (size, variant, seed) of every row in a sweep file (empty if there is no file yet), for reading
    a file no run is planned against here (a job's own part file, a sweep's status)."""
    path = Path(path)
    return _keys(load_sweep(path)) if path.exists() else set()


def dataset_row(cfg: TrainConfig, result: dict[str, Any]) -> dict[str, Any]:
    """The dataset row of `cfg` with these results (params, val_loss, ece, minutes)."""
    row = {"size": cfg.size, "variant": cfg.variant, "seed": cfg.seed, "params_M": result["params"] / 1e6}
    return {**row, "steps": cfg.steps, **{k: result[k] for k in ("val_loss", "ece", "minutes")}}


def plan_runs(
    out: str | os.PathLike,
    size: str,
    variants: tuple[str, ...] = COMPARED,
    seed: int | None = None,
    **options: Any,
) -> tuple[list[TrainConfig], list[TrainConfig]]:
    """The runs `rr train` makes: (to train, already in `out` and skipped).

    `out` is read once (`preflight`) and refused if no row could go to it. Without `seed`, the lowest seed
    for which some of `variants` has no row yet: the next complete, pairable block (or the rest of one a crash left incomplete). `options` are further TrainConfig fields.
    """
    done = preflight(out, [size], ladder=options.get("ladder")).keys
    if seed is None:
        seed = next(s for s in itertools.count() if any((size, v, s) not in done for v in variants))
    runs = [TrainConfig(size=size, variant=v, seed=seed, **options) for v in variants]
    return [r for r in runs if r.key not in done], [r for r in runs if r.key in done]


def describe_runs(runs: list[TrainConfig]) -> list[dict[str, Any]]:
    """What `runs` would be, without loading data, torch or training: one record per run.

    Returns
    -------
    Records with size, variant, seed, d_model, n_layer, n_head, params (exact), steps, tokens (trained
    on), est_minutes and assumed (the device and rate behind the estimate, see
    `rr_model.flops.assumed_rate`): training FLOPs (`flops_per_token` x tokens) at that rate.
    A rough figure: evaluation and start-up are not counted.
    """
    records = []
    for cfg in runs:
        bytes_ = cfg.tokenizer == "bytes" or (cfg.tokenizer is None and cfg.data == "synthetic")
        vocab = BYTE_EOS + 1 if bytes_ else cfg.recipe.vocab_size  # the byte tokenizer: 256 bytes and EOS
        mcfg = replace(
            model_config(cfg.size, cfg.variant, vocab, cfg.ladder), block_size=cfg.recipe.block_size
        )
        tokens = cfg.steps * cfg.recipe.batch_size * cfg.recipe.block_size
        rate, assumed = assumed_rate(cfg.device, cfg.precision)
        shape = {k: getattr(mcfg, k) for k in ("d_model", "n_layer", "n_head")}
        records.append(
            {
                **dict(zip(("size", "variant", "seed"), cfg.key, strict=True)),
                **shape,
                "params": mcfg.n_params,
                "steps": cfg.steps,
                "tokens": tokens,
                "est_minutes": flops_per_token(mcfg) * tokens / rate / 60,
                "assumed": assumed,
            }
        )
    return records


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

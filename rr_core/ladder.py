"""The size ladder and training recipe of the published sweep: the one source of truth.

Everything that needs a size's shape, step count or the optimiser settings (model, trainer, analysis,
CLI) reads them from here. A researcher's own ladder is a TOML file (`load_ladder`); every function that
takes a size takes `ladder=` (a file, None for rr's own), and a file's sizes say where they come from
(`Size.ladder`). This module imports nothing heavy so that `rr --help` and the analysis stay torch-free.
"""

from __future__ import annotations

import errno
import math
import os
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from rr_core.errors import InputError, did_you_mean, nearest
from rr_core.lines import line_problem

__all__ = [
    "Recipe",
    "Size",
    "RECIPE",
    "PUBLISHED_CORPUS",
    "CORPORA",
    "BYTE_EOS",
    "LADDER",
    "PUBLISHED_SIZES",
    "size_words",
    "get_size",
    "beyond_published",
    "load_ladder",
    "ladder_sizes",
    "LADDER_KEYS",
    "BUDGET_KEYS",
    "MAX_RUN_TOKENS",
    "MAX_SEEDS",
    "size_sort_key",
    "SIZE_LABEL",
    "canonical_size",
    "size_problem",
]


# The most tokens one run may read, in training (steps x batch x block) or in its final evaluation
# (eval_batches x batch x block): 10**15, about 30 times the largest published pretraining (36 trillion
# tokens, Qwen3: Yang et al. 2025, arXiv 2505.09388). Past it a number is a slip (a digit too many, --steps
# 1000000000000000), not a long run: refused in one line rather than planned for billions of days.
MAX_RUN_TOKENS = 10**15
# The most seeds a ladder's size may ask a sweep for: a thousand times the published 3-10. Each seed is a run
# per variant that the sweep's plan holds and prints (10,000 seeds of three variants: half a minute on two
# cores); a count past it is a slip, 10**10 was a MemoryError traceback.
MAX_SEEDS = 10_000


@dataclass(frozen=True)
class Recipe:
    """Optimisation and evaluation settings shared by every size (Kramer 2026, Section 4)."""

    block_size: int = 256
    batch_size: int = 64
    lr: float = 2e-4
    warmup_steps: int = 500
    min_lr_frac: float = 0.1  # cosine decays to 10% of the peak
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    eval_batches: int = 80
    ece_bins: int = 15
    n_text: int = 400_000  # first TinyStories training stories used
    val_frac: float = 0.03  # 97/3 train/validation split of the token stream
    vocab_size: int = 50257  # GPT-2 tokenizer

    def __post_init__(self) -> None:
        """Refuse a value outside its field's range (`RECIPE_RANGES`) before anything trains with it: NaN and
        infinity are outside every range, so an optimiser never sees them and a record never holds them; then
        values that are each in range but not together (`RECIPE_TOGETHER`)."""
        for name, (ok, rule) in RECIPE_RANGES.items():
            value = getattr(self, name)
            kind = int if isinstance(RECIPE_DEFAULTS[name], int) else float
            typed = isinstance(value, (int, float) if kind is float else int) and not isinstance(value, bool)
            if not typed or (kind is float and not math.isfinite(value)) or not ok(value):
                raise InputError(f"{name} = {value!r} must be {rule}")
        for ok, rule in RECIPE_TOGETHER:
            if not ok(self):
                predictions = self.eval_batches * self.batch_size * self.block_size
                raise InputError(rule.format(r=self, predictions=predictions))


# The range of each recipe field, as the rule a refusal states: checked by Recipe itself, so a ladder file, a
# run config, a config read back from JSON and a notebook's Recipe(...) are held to the same ranges.
RECIPE_RANGES: dict[str, tuple] = {
    "block_size": (lambda v: v > 0, "an integer > 0"),
    "batch_size": (lambda v: v > 0, "an integer > 0"),
    "lr": (
        lambda v: 0 < v <= 1,
        "a finite number in (0, 1] (AdamW moves each weight by about lr a step, and weights start near 0.02)",
    ),
    "warmup_steps": (lambda v: v >= 0, "an integer >= 0"),
    "min_lr_frac": (lambda v: 0 <= v <= 1, "a number in [0, 1] (the cosine's floor, a fraction of lr)"),
    "weight_decay": (lambda v: v >= 0, "a finite number >= 0"),
    "beta1": (lambda v: 0 <= v < 1, "a number in [0, 1) (AdamW's first-moment decay)"),
    "beta2": (lambda v: 0 <= v < 1, "a number in [0, 1) (AdamW's second-moment decay)"),
    "grad_clip": (lambda v: v > 0, "a finite number > 0 (the gradient norm it clips to)"),
    "eval_batches": (lambda v: v > 0, "an integer > 0"),
    "ece_bins": (lambda v: v > 0, "an integer > 0"),
    "n_text": (lambda v: v > 0, "an integer > 0"),
    "val_frac": (lambda v: 0 < v < 1, "a number in (0, 1) (the share of the tokens held out)"),
    "vocab_size": (lambda v: v > 0, "an integer > 0"),
}
RECIPE_DEFAULTS = {f.name: f.default for f in fields(Recipe)}
# Rules between recipe fields, each with the sentence a refusal states (formatted with the recipe `r`).
RECIPE_TOGETHER: tuple[tuple, ...] = (
    (
        lambda r: r.lr * r.weight_decay < 1,
        "lr = {r.lr!r} and weight_decay = {r.weight_decay!r} must multiply to less than 1: AdamW scales every "
        "weight by 1 - lr x weight_decay each step, which would zero or flip them",
    ),
    (
        lambda r: r.ece_bins <= r.eval_batches * r.batch_size * r.block_size,
        "ece_bins = {r.ece_bins!r} must be at most the predictions the evaluation scores (eval_batches x "
        "batch_size x block_size = {predictions}): more bins than predictions are bins left empty",
    ),
    (
        lambda r: r.eval_batches * r.batch_size * r.block_size <= MAX_RUN_TOKENS,
        "eval_batches = {r.eval_batches!r} has the final evaluation score {predictions:,} tokens (eval_batches x "
        f"batch_size x block_size), more than the {MAX_RUN_TOKENS:,} any run may read (rr_core.ladder."
        "MAX_RUN_TOKENS)",
    ),
)


RECIPE = Recipe()
# The three ways a size or a run states its training budget; exactly one holds (`Size.budget`).
BUDGET_KEYS: tuple[str, ...] = ("steps", "tokens", "tokens_per_param")
# The published runs' corpus, as --corpus names it: the first n_text training stories of roneneldan/TinyStories
# (`rr_model.data.corpus`). What a run's record says it trained on; the pool check reads it too.
PUBLISHED_CORPUS = "tinystories"
# The corpora a command that reads text takes, as its --corpus help says them (`rr eval`, `rr gates`).
CORPORA = f"synthetic, {PUBLISHED_CORPUS}, a .txt/.jsonl/.parquet file or a token cache"
BYTE_EOS = 256  # the byte tokenizer (the synthetic demo's): ids 0-255 are UTF-8 bytes, 256 ends a document


@dataclass(frozen=True)
class Size:
    """One rung of the ladder: the Review model's shape, its training budget and its recipe.

    The budget is stated one way of three: `steps`, or `tokens` (trained on), or `tokens_per_param` (tokens
    per parameter of the reference); the steps of the other two are derived by `rr_core.budget`, which
    needs the reference's exact parameter count (the vocabulary and the reference are a run's).
    """

    name: str
    d_model: int
    n_layer: int
    n_head: int
    steps: int | None
    published_seeds: int  # seeds per variant in the published sweep (0: not part of it)
    recipe: Recipe = RECIPE  # every published size trains with the one published recipe
    ladder: str | None = None  # the ladder file the size comes from; None: rr's own ladder
    seeds: int | None = None  # seeds a sweep trains by default; None: the published seeds
    tokens: int | None = None  # the budget in tokens instead of steps (a ladder file's)
    tokens_per_param: float | None = None  # the budget in tokens per reference parameter (a ladder file's)

    def __post_init__(self) -> None:
        """Refuse a size that states no budget or several, more seeds than `MAX_SEEDS`, and one whose schedule
        would end inside its warmup (the recipe's own fields are `Recipe`'s). A budget in tokens has steps only once `rr_core.budget`
        derives them, so this rule reads steps given as steps."""
        if sum(getattr(self, k) is not None for k in BUDGET_KEYS) != 1:
            stated = ", ".join(f"{k} = {getattr(self, k)!r}" for k in BUDGET_KEYS)
            raise InputError(f"size {self.name}: give one of {', '.join(BUDGET_KEYS)}, not {stated}")
        if self.seeds is not None and self.seeds > MAX_SEEDS:
            raise InputError(
                f"seeds = {self.seeds} must be at most {MAX_SEEDS:,} (rr_core.ladder.MAX_SEEDS): a sweep plans a "
                "run per seed and variant"
            )
        if self.steps is not None and self.recipe.warmup_steps >= self.steps:
            raise InputError(
                f"warmup_steps = {self.recipe.warmup_steps} must be below the size's steps ({self.steps}): the "
                "schedule would end inside its warmup, never reaching its peak lr"
            )

    @property
    def published(self) -> bool:
        return self.published_seeds > 0

    @property
    def budget(self) -> tuple[str, float]:
        """How the size states its budget: ("steps", 8000), ("tokens", 2e9) or ("tokens_per_param", 20.0)."""
        return next((k, getattr(self, k)) for k in BUDGET_KEYS if getattr(self, k) is not None)

    @property
    def sweep_seeds(self) -> int:
        """Seeds per variant `rr sweep` trains when none are given: the ladder file's, else the published."""
        return self.published_seeds if self.seeds is None else self.seeds


# Published ladder (paper Table 1). Baselines are widened from d_model in steps of n_head
# until they reach Review's parameter count ("parameter-matched up"); see rr_core.shapes.model_config.
LADDER: dict[str, Size] = {
    s.name: s
    for s in (
        Size("60M", 512, 8, 8, 8000, 3),
        Size("150M", 768, 12, 12, 8000, 3),
        Size("320M", 1024, 16, 16, 8000, 2),
        Size("590M", 1280, 20, 20, 7000, 3),
        Size("1B", 1536, 24, 16, 6000, 3),
        # Not published: an offline demo/test size whose three variants train on 2 CPU cores in under a
        # minute. The published batch (64 x 256 tokens) costs ~0.5 s a step there, so tiny takes 8
        # sequences a step (~0.12 s), and a higher peak lr with a short warmup so the loss falls visibly
        # (from 5.5 to about 2.2) in 100 steps.
        Size("tiny", 128, 4, 4, 100, 0, replace(RECIPE, batch_size=8, lr=1e-3, warmup_steps=15)),
    )
}

PUBLISHED_SIZES: tuple[str, ...] = tuple(name for name, s in LADDER.items() if s.published)


def size_words(names: Sequence[str]) -> str:
    """Sizes as a command's help says them (`rr train --size`, `rr reproduce --size`).

    Example
    -------
    >>> size_words(PUBLISHED_SIZES)
    '60M, 150M, 320M, 590M or 1B'
    """
    return f"{', '.join(names[:-1])} or {names[-1]}"


# A size label in a dataset: a ladder name or a "<number><K|M|B>" parameter count in its one spelling:
# ASCII digits, no leading zeros, no trailing zeros after a point, not zero ("60M", "1.5B", "0.5M").
SIZE_LABEL = re.compile(r"([1-9][0-9]*(?:\.[0-9]*[1-9])?|0\.[0-9]*[1-9])([KMB])", re.ASCII)
_SCALE = {"K": 1e3, "M": 1e6, "B": 1e9}
# What a user may have meant: digits of any script, any case, a redundant point or zero, spaces.
_LOOSE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMBkmb])\s*")


def canonical_size(label: str) -> str | None:
    """The one spelling of a parameter-count label ('60.0M', '060m', fullwidth '６０M' -> '60M').

    None if `label` does not read as a count greater than zero.
    """
    m = _LOOSE.fullmatch(unicodedata.normalize("NFKC", label))
    if m is None:
        return None
    number = Decimal(m.group(1))  # Decimal reads digits of any script, as int() does
    if number == 0:
        return None
    return f"{number.normalize():f}{m.group(2).upper()}"


def _by_case(name: str, sizes: Mapping[str, Size] = LADDER) -> Size | None:
    """The ladder size whose name equals `name` but for case ("TINY", "150m")."""
    return {n.lower(): size for n, size in sizes.items()}.get(name.lower())


def size_problem(label: str) -> str | None:
    """Why `label` is not a size label a dataset may hold, naming the spelling to use; None if it is one."""
    if label in LADDER or SIZE_LABEL.fullmatch(label):
        return None
    size = _by_case(label)
    canon = size.name if size is not None else canonical_size(label)
    if canon is not None:
        return f"is another spelling of the size {canon}; write it {canon} (the one spelling rr accepts)"
    return "must be a ladder size or a <number><K|M|B> label in ASCII digits, greater than zero (e.g. 590M)"


def get_size(name: str, ladder: str | os.PathLike | None = None) -> Size:
    """Look up a size by name in any case ('150m'); an unknown name is told the nearest valid one.

    `ladder`: a ladder file (`load_ladder`) whose sizes are looked up instead of rr's own.
    """
    sizes = ladder_sizes(ladder)
    if (size := _by_case(name, sizes)) is not None:
        return size
    guess = canonical_size(name)
    lower = {n.lower(): n for n in sizes}
    near = guess if guess in sizes else lower.get(nearest(name.lower(), lower))
    where = "the ladder" if ladder is None else f"the ladder file {ladder}"
    raise InputError(f"unknown size {name!r}{did_you_mean(near)}; {where} has {', '.join(sizes)}")


def beyond_published(name: str, ladder: str | os.PathLike | None) -> str:
    """A size past the published ladder (`rr sweep --at 3B`), as the ladder file names it.

    The size must come from a ladder file, which gives its shape, and must not be a published rung: a
    forecast size is never trained as if it were one. InputError otherwise, saying what to do.
    """
    if _by_case(name, LADDER) is not None and _by_case(name, LADDER).published:
        raise InputError(
            f"--at {name}: {name} is a published size; train more of its seeds with --size {name}"
        )
    if ladder is None:
        raise InputError(
            f"--at {name}: rr's ladder has no {name}; give its shape in a ladder file (--ladder FILE with a "
            f"[{canonical_size(name) or name}] table: {', '.join(LADDER_KEYS)})"
        )
    return get_size(name, ladder).name


def size_sort_key(label: str) -> float:
    """Nominal parameter count of a size label ("590M" -> 5.9e8), for ordering sizes.

    Ladder names that are not counts (e.g. "tiny") sort first.
    """
    m = SIZE_LABEL.fullmatch(label)
    return float(m.group(1)) * _SCALE[m.group(2)] if m else 0.0


# ------------------------------------------------------------------------------------------ ladder files

LADDER_KEYS: dict[str, type] = {"d_model": int, "n_layer": int, "n_head": int, "steps": int, "seeds": int}
# What may stand for steps in a ladder file's size: its budget in tokens, or in tokens per parameter.
_BUDGET_TYPES: dict[str, type] = {"tokens": int, "tokens_per_param": float}
# Recipe fields a ladder file may override per size; the vocabulary follows the tokenizer, not the size.
_OVERRIDES: dict[str, type] = {
    f.name: type(getattr(RECIPE, f.name)) for f in fields(Recipe) if f.name != "vocab_size"
}


def ladder_sizes(ladder: str | os.PathLike | None = None) -> dict[str, Size]:
    """The sizes of a ladder file (`load_ladder`), or rr's own `LADDER` when `ladder` is None."""
    return LADDER if ladder is None else load_ladder(ladder)


# Each ladder file as last parsed in this process, by its path as given: (its stamp, its sizes).
_PARSED: dict[str, tuple[tuple[int, ...], dict[str, Size]]] = {}


def load_ladder(path: str | os.PathLike) -> dict[str, Size]:
    """A researcher's own size ladder from a TOML file: one table per size, in the file's order.

    The file is parsed once per process however often a size is looked up in it (a run's config, its
    shape, its recipe guard and its checkpoint all ask): a later call only stats it, and parses it again
    when its device, inode, size or modification time differ, so a file edited between runs is seen.

    Parameters
    ----------
    path
        A TOML file. Each table is named by its size label, a ``<number><K|M|B>`` count as a sweep file
        holds it (``[2M]``, ``["0.5M"]``), and holds d_model, n_layer, n_head, steps and seeds (the seeds
        `rr sweep` trains by default), all integers > 0 with d_model a multiple of n_head. The budget may
        be given instead of steps as tokens (an integer > 0) or tokens_per_param (a number > 0: tokens per
        parameter of the reference, `rr_core.budget`), one of the three. Any field of `Recipe` but
        vocab_size (batch_size, lr, warmup_steps, block_size, ...) may follow; the rest of the recipe is the
        published one. warmup_steps must stay below the steps: a pilot shorter than the published warmup
        (500) gives its own.

    Returns
    -------
    {label: Size}, each with ``ladder`` set to `path` and no published seeds, so no size of a file is
    taken for a published one (a file's "60M" is refused beside the published rows; see
    `rr_model.run.identity.recipe_differences`).

    Raises
    ------
    InputError
        Naming the file, the table and the key: not TOML, no tables, a bad label, a missing, unknown or
        mistyped key.

    Example
    -------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "pilot.toml"
    >>> _ = path.write_text("[1M]\\nd_model = 64\\nn_layer = 2\\nn_head = 2\\nsteps = 50\\nseeds = 3\\nlr = 1e-3\\n"
    ...                     "warmup_steps = 5\\n")
    >>> size = load_ladder(path)["1M"]
    >>> size.d_model, size.sweep_seeds, size.recipe.lr, size.recipe.batch_size, size.published
    (64, 3, 0.001, 64, False)
    """
    from rr_core.files.reading import stamp  # here: as read_toml below

    if (now := stamp(path)) is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
    held = _PARSED.get(str(path))
    if held is None or held[0] != now:
        held = _PARSED[str(path)] = (now, _read_ladder(path))
    return dict(held[1])  # a copy: the cached sizes stay as read


def _read_ladder(path: str | os.PathLike) -> dict[str, Size]:
    """The sizes of the ladder file at `path`, read and checked (`load_ladder`)."""
    from rr_core.files.reading import (
        read_toml,  # here: the lock and atomic writers are not needed to look up a size
    )

    tables = read_toml(path, f"--ladder {path}")
    if not tables:
        raise InputError(
            f"--ladder {path}: no sizes; give one table per size, e.g. [2M] with {', '.join(LADDER_KEYS)}"
        )
    return {name: _ladder_size(Path(path), name, table) for name, table in tables.items()}


def _ladder_size(path: Path, name: str, table: Any) -> Size:
    """One table of a ladder file as a Size, or InputError naming the file, the table and what is wrong."""
    shown = name if line_problem(name) is None else repr(name)  # a line break stays visible, on one line
    where = f"--ladder {path}, [{shown}]"
    if not isinstance(table, dict):
        raise InputError(f"--ladder {path}: {name} = {table!r} is not a table; give one table per size")
    if not (name in LADDER or SIZE_LABEL.fullmatch(name)):
        raise InputError(
            f"{where}: a size label {size_problem(name) or 'is not valid'}, as a sweep file holds it"
        )
    allowed = {**LADDER_KEYS, **_BUDGET_TYPES, **_OVERRIDES}
    positive = {*LADDER_KEYS, *_BUDGET_TYPES}
    for key, value in table.items():
        if key not in allowed:
            hint = did_you_mean(nearest(key, allowed))
            raise InputError(f"{where}: unknown key {key!r}{hint}; a size has {', '.join(allowed)}")
        kind = allowed[key]
        ok = isinstance(value, (int, float) if kind is float else kind) and not isinstance(value, bool)
        if ok and key in _BUDGET_TYPES and kind is float:  # a recipe number's range is Recipe's to check
            ok = math.isfinite(value)
        if not ok or (key in positive and value <= 0):  # a recipe field's range: Recipe's own check
            rule = "an integer" if kind is int else "a finite number" if key in positive else "a number"
            raise InputError(f"{where}: {key} = {value!r} must be {rule}{' > 0' if key in positive else ''}")
    if len(budgets := [k for k in BUDGET_KEYS if k in table]) > 1:
        raise InputError(f"{where}: {' and '.join(budgets)}: give one budget, {' or '.join(BUDGET_KEYS)}")
    needed = [k for k in LADDER_KEYS if k != "steps" or not budgets]  # tokens may stand for steps
    if missing := [k for k in needed if k not in table]:
        raise InputError(
            f"{where}: missing {', '.join(missing)} (a size has {', '.join(LADDER_KEYS)}; tokens or "
            "tokens_per_param may stand for steps)"
        )
    if table["d_model"] % table["n_head"]:
        raise InputError(
            f"{where}: d_model ({table['d_model']}) must be a multiple of n_head ({table['n_head']})"
        )
    shape = {k: table[k] for k in ("d_model", "n_layer", "n_head")}
    budget = {k: table.get(k) for k in BUDGET_KEYS}
    if budget["tokens_per_param"] is not None:
        budget["tokens_per_param"] = float(budget["tokens_per_param"])
    try:
        recipe = replace(RECIPE, **{k: kind(table[k]) for k, kind in _OVERRIDES.items() if k in table})
        return Size(
            name, **shape, **budget, published_seeds=0, recipe=recipe, ladder=str(path), seeds=table["seeds"]
        )
    except InputError as e:
        raise InputError(f"{where}: {e}") from None

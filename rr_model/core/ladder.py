"""The size ladder and training recipe of the published sweep: the one source of truth.

Everything that needs a size's shape, step count or the optimiser settings (model, trainer, analysis,
CLI) reads them from here. This module imports nothing heavy so that `rr --help` and the analysis
stay torch-free.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass, replace
from decimal import Decimal

from rr_model.core.errors import InputError

__all__ = [
    "Recipe",
    "Size",
    "RECIPE",
    "LADDER",
    "PUBLISHED_SIZES",
    "get_size",
    "size_sort_key",
    "SIZE_LABEL",
    "canonical_size",
    "size_problem",
]


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


RECIPE = Recipe()


@dataclass(frozen=True)
class Size:
    """One rung of the ladder: the Review model's shape, its step budget and its recipe."""

    name: str
    d_model: int
    n_layer: int
    n_head: int
    steps: int
    published_seeds: int  # seeds per variant in the published sweep (0: not part of it)
    recipe: Recipe = RECIPE  # every published size trains with the one published recipe

    @property
    def published(self) -> bool:
        return self.published_seeds > 0


# Published ladder (paper Table 1). Baselines are widened from d_model in steps of n_head
# until they reach Review's parameter count ("parameter-matched up"); see rr_model.config.model_config.
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


def _by_case(name: str) -> Size | None:
    """The ladder size whose name equals `name` but for case ("TINY", "150m")."""
    return {n.lower(): size for n, size in LADDER.items()}.get(name.lower())


def size_problem(label: str) -> str | None:
    """Why `label` is not a size label a dataset may hold, naming the spelling to use; None if it is one."""
    if label in LADDER or SIZE_LABEL.fullmatch(label):
        return None
    size = _by_case(label)
    canon = size.name if size is not None else canonical_size(label)
    if canon is not None:
        return f"is another spelling of the size {canon}; write it {canon} (the one spelling rr accepts)"
    return "must be a ladder size or a <number><K|M|B> label in ASCII digits, greater than zero (e.g. 590M)"


def get_size(name: str) -> Size:
    """Look up a ladder size by name in any case ('150m'); an unknown name is told the nearest valid one."""
    if (size := _by_case(name)) is not None:
        return size
    guess = canonical_size(name)
    lower = {n.lower(): n for n in LADDER}
    near = (
        [guess]
        if guess in LADDER
        else [lower[n] for n in difflib.get_close_matches(name.lower(), lower, 1, 0.5)]
    )
    hint = f" (did you mean {near[0]}?)" if near else ""
    raise InputError(f"unknown size {name!r}{hint}; the ladder has {', '.join(LADDER)}")


def size_sort_key(label: str) -> float:
    """Nominal parameter count of a size label ("590M" -> 5.9e8), for ordering sizes.

    Ladder names that are not counts (e.g. "tiny") sort first.
    """
    m = SIZE_LABEL.fullmatch(label)
    return float(m.group(1)) * _SCALE[m.group(2)] if m else 0.0

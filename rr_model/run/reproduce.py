"""Re-running the published experiment: the runs of `rr reproduce` (and `rr sweep --reproduce`).

A reproduction trains a published (size, variant, seed) again, under the published recipe, into a file of
its own (`DEFAULT_REPRODUCTION`): its rows have the published keys by design, so they can never go to the
published dataset, and `rr analyze reproduction` sets each beside the published row of its key. The recipe
guard applies to a reproduction file whatever it holds (`TrainConfig.reproduce`, `preflight`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rr_core.errors import InputError
from rr_core.ladder import get_size
from rr_core.sweepfile.dataset import bundled_path, load_sweep
from rr_core.variants import COMPARED
from rr_model.config import DEFAULT_OUT, TrainConfig
from rr_model.run.identity import published_settings
from rr_model.run.output_file import preflight
from rr_model.run.planning import Runs

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DEFAULT_REPRODUCTION", "published_keys", "check_reproducible", "plan_reproduction"]

DEFAULT_REPRODUCTION = Path("data") / "reproduction.csv"


def published_keys(published: pd.DataFrame | None = None) -> set[tuple[str, str, int]]:
    """The (size, variant, seed) of the published rows (default: the packaged copy)."""
    df = load_sweep(bundled_path()) if published is None else published
    return set(zip(df["size"], df["variant"], df["seed"].astype(int), strict=True))


def check_reproducible(
    runs: Iterable[TrainConfig], out: str | os.PathLike, published: pd.DataFrame | None = None
) -> None:
    """Refuse runs that are not re-runs of a published key, and an output that is the published dataset.

    Example
    -------
    >>> check_reproducible([TrainConfig("60M", "standard", 7)], "repro.csv")
    Traceback (most recent call last):
    ...
    rr_core.errors.InputError: 60M standard seed 7 is not a published run, so there is nothing to reproduce: the published runs of 60M standard are seeds 0, 1, 2
    """
    out = Path(out)
    if out == DEFAULT_OUT or out.resolve() == bundled_path().resolve():
        raise InputError(
            f"--out {out}: a reproduction goes to a file of its own (default {DEFAULT_REPRODUCTION}), never "
            "to the published dataset: its rows have the published keys"
        )
    keys = published_keys(published)
    for cfg in runs:
        _check_published_recipe(cfg)
        if cfg.key in keys:
            continue
        seeds = sorted(s for size, v, s in keys if (size, v) == (cfg.size, cfg.variant))
        have = f"are seeds {', '.join(map(str, seeds))}" if seeds else "do not exist"
        raise InputError(
            f"{cfg.size} {cfg.variant} seed {cfg.seed} is not a published run, so there is nothing to "
            f"reproduce: the published runs of {cfg.size} {cfg.variant} {have}"
        )


def _check_published_recipe(cfg: TrainConfig) -> None:
    """Refuse what `rr reproduce` has no option for (`rr sweep --reproduce --steps 5`): a reproduction
    trains the published recipe, and its trainer would refuse each run after loading its data."""
    if cfg.ladder is not None:
        raise InputError(f"--ladder {cfg.ladder}: a reproduction trains the published ladder's sizes")
    published = published_settings(get_size(cfg.size))
    given = {
        "steps": cfg.steps,
        "precision": cfg.precision,
        "tokenizer": cfg.tokenizer or published["tokenizer"],
    }
    for key, value in given.items():
        if value != published[key]:
            raise InputError(
                f"--{key} {value}: a reproduction trains the published recipe (--{key} {published[key]} for "
                f"{cfg.size}); leave --{key} out"
            )


def plan_reproduction(
    out: str | os.PathLike,
    size: str,
    seed: int,
    variants: tuple[str, ...] | None = None,
    published: pd.DataFrame | None = None,
    **options: Any,
) -> Runs:
    """The runs `rr reproduce` makes: `rr_model.run.planning.Runs` (to train, already in `out` and skipped,
    the file's one reading).

    Parameters
    ----------
    out
        The reproduction file (refused if it is the published dataset).
    size, seed
        The published run to train again.
    variants
        Which of its variants; default every compared variant published at that size and seed.
    published
        The rows that count as published (default the packaged copy): the seam a test uses to reproduce a
        run of the tiny size, which has no published rows.
    options
        Further TrainConfig fields (device, compile, checkpoint_every, data: a local copy of the corpus).

    Example
    -------
    >>> todo, skipped, _ = plan_reproduction("repro.csv", "60M", 0, ("review_neutral",))
    >>> [(c.key, c.reproduce, c.steps) for c in todo]
    [(('60M', 'review_neutral', 0), True, 8000)]
    """
    size = get_size(size).name
    keys = published_keys(published)
    if variants is None:
        variants = tuple(v for v in COMPARED if (size, v, seed) in keys) or COMPARED
    runs = [TrainConfig(size, v, seed, reproduce=True, **options) for v in variants]
    check_reproducible(runs, out, published)
    return Runs.split(runs, preflight(out, reproduction=True))

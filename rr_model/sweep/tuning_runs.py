"""Tuning sweeps (`rr tune`): each variant at its own learning rate, picked on seeds kept apart from the test.

Two phases, each a plan of runs for the sweep's launchers (`rr_model.sweep.launch`), run in turn by `tune`,
the whole of `rr tune` in one call:

1. selection: every variant at every rate of the grid on the selection seeds (`selection_runs`);
2. comparison: each variant at the rate its selection runs picked (`rr_core.lr_choice.choose_rate`, the rule
   `rr analyze tuning` reports too) on the comparison seeds (`comparison_runs`).

Every run is a `TrainConfig` with a `role` (selection or comparison) and the size's recipe with the grid's
lr, so its row records both and its key holds its lr (one seed at four rates is four runs, each with its own
checkpoint, metrics log and claim). The two seed sets are disjoint: a seed that chose a rate never enters the
test of the gap at that rate (no winner's curse). Both phases read the output file through `preflight`, so a
second `rr tune` of one plan trains only what is not there yet, resuming interrupted runs, and a tuning that
stopped after its selection goes on to its comparison. What a tuning trains is one documented value,
`Tuning`, whose fields are `rr tune`'s options (`rr_core.options`). Torch-free (a run trains in a process of
its own) and light to import (the output file loads inside the calls), so the command line reads `Tuning`
at start-up.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from rr_core.comma_lists import items, seed_list
from rr_core.errors import InputError
from rr_core.ladder import get_size
from rr_core.lr_choice import RateChoice, choose_rate
from rr_core.options import option
from rr_model.config import TrainConfig
from rr_model.run.entry import DRY_RUN, VARIANTS

if TYPE_CHECKING:
    from rr_model.run.output_file import OutputPlan
    from rr_model.run.planning import Runs
    from rr_model.sweep.launch import Launch, Launched

__all__ = [
    "Tuning",
    "default_tune_out",
    "one_size",
    "rates",
    "check_grid",
    "selection_runs",
    "choices",
    "comparison_runs",
    "Watch",
    "Tuned",
    "tune",
]


@dataclass(frozen=True)
class Tuning:
    """What `rr tune` trains: the size, the grid of peak learning rates, the seeds that pick each variant's
    rate and those that then compare the variants, the variants, into which file, and whether it trains or
    shows the plan only (each field an option of `rr tune`, `rr_core.options`). `tune` runs it.

    The size, rates and seeds are kept as given (a command line's texts, ``lrs="1e-4,2e-4"``, or numbers), so
    a notebook and the command line are refused in the same words where `tune` reads them (`one_size`,
    `rates`, `rr_core.comma_lists.seed_list`, `check_grid`).
    """

    size: str | tuple[str, ...] = field(
        metadata=option(
            "The size to tune, e.g. 150M (a --ladder file's size with --ladder); one per tuning.",
            spelling="--sizes",
        )
    )
    lrs: str | tuple[float, ...] = field(
        metadata=option(
            "The grid of peak learning rates, comma-separated, e.g. 1e-4,2e-4,4e-4,8e-4 (the recipe's is "
            "2e-4).",
            flag="--lr",
        )
    )
    select_seeds: str | tuple[int, ...] = field(
        metadata=option("Seeds that pick each variant's rate (every rate of the grid), e.g. 0,1.")
    )
    seeds: str | tuple[int | str, ...] = field(
        metadata=option(
            "A seed that compares the variants, each at its chosen rate (repeatable, or comma-separated: "
            "--seed 2,3,4); none of --select-seeds.",
            flag="--seed",
            spelling="--seeds",
        )
    )
    variants: tuple[str, ...] = field(default=(), metadata=VARIANTS)  # (): the reference's compared block
    out: Path | None = field(
        default=None,
        metadata=option(
            "Dataset to append the rows to (each records its lr and role). Default: data/tune.csv "
            "(data/LADDER-STEM-tune.csv with --ladder)."
        ),
    )  # None: `default_tune_out`
    dry_run: bool = field(default=False, metadata=DRY_RUN)

    def file(self, ladder: str | os.PathLike | None = None) -> Path:
        """The file the tuning appends to: `out`, else `default_tune_out`."""
        return Path(self.out) if self.out is not None else default_tune_out(ladder)


def default_tune_out(ladder: str | os.PathLike | None = None) -> Path:
    """Where a tuning sweep's rows go without --out: data/tune.csv, or data/<ladder stem>-tune.csv. Never the
    published dataset: rows off its recipe (any other lr) are refused there."""
    return Path("data") / ("tune.csv" if ladder is None else f"{Path(ladder).stem}-tune.csv")


def one_size(sizes: str | Sequence[str]) -> str:
    """The one size a tuning tunes: several (`--size` given twice, or a comma list) are refused, naming them,
    rather than one tuned silently (each size needs its own rates)."""
    sizes = [sizes] if isinstance(sizes, str) else list(sizes)
    if len(set(sizes)) > 1:
        raise InputError(
            f"--size {', '.join(sizes)}: rr tune tunes one size at a time (each its own rates); run it once per size"
        )
    return sizes[0]


def rates(given: str | Iterable[float]) -> list[float]:
    """`--lr`'s grid: finite numbers > 0, given comma-separated or as numbers; an InputError names the first
    that is not one.

    Example
    -------
    >>> rates("1e-4, 2e-4"), rates([4e-4])
    ([0.0001, 0.0002], [0.0004])
    """
    text, found = given if isinstance(given, str) else ",".join(map(str, given)), []
    for item in items(text) or []:
        try:
            rate = float(item)
        except ValueError:
            rate = float("nan")
        if not 0 < rate < float("inf"):
            raise InputError(
                f"--lr {text!r}: {item!r} is not a learning rate (a finite number > 0, e.g. 4e-4)"
            )
        found.append(rate)
    return found


def check_grid(lrs: Sequence[float], select_seeds: Sequence[int], seeds: Sequence[int]) -> None:
    """Refuse a grid or seed sets a tuning cannot use: no rate, a rate twice, no seeds of a kind, or a seed in
    both sets (it would choose the rate and then test it)."""
    if not lrs:
        raise InputError("--lr: give at least one learning rate, e.g. --lr 1e-4,2e-4,4e-4,8e-4")
    if len(set(lrs)) < len(lrs):
        raise InputError(f"--lr {','.join(f'{lr:g}' for lr in lrs)}: a rate is given twice")
    if not select_seeds or not seeds:
        raise InputError("give both --select-seeds (to pick each rate) and --seed (to compare at it)")
    if both := sorted(set(select_seeds) & set(seeds)):
        raise InputError(
            f"seed(s) {', '.join(map(str, both))} are in both --select-seeds and --seed: a seed that picks a "
            "rate may not test the gap at it (its noise helped pick the rate); give disjoint sets"
        )


def _at(size: str, lr: float, ladder: str | None):
    """The size's recipe with this peak learning rate (every other setting the recipe's)."""
    return replace(get_size(size, ladder).recipe, lr=lr)


def selection_runs(
    out: str | os.PathLike,
    size: str,
    variants: Sequence[str],
    lrs: Sequence[float],
    seeds: Iterable[int],
    **options: Any,
) -> Runs:
    """Phase 1: every variant at every rate on the selection `seeds`, split into those to train and those in
    `out` (its one reading, `preflight`). `options`: further TrainConfig fields (corpus, steps, ladder, ...)."""
    from rr_model.run.output_file import preflight
    from rr_model.run.planning import Runs

    ladder = options.get("ladder")
    runs = [
        TrainConfig(size, v, s, recipe=_at(size, lr, ladder), role="selection", **options)
        for lr in sorted(lrs)
        for s in seeds
        for v in variants
    ]
    return Runs.split(runs, preflight(out))


def choices(
    output: OutputPlan, size: str, variants: Sequence[str], lrs: Sequence[float], seeds: Sequence[int]
) -> dict[str, RateChoice | None]:
    """Each variant's chosen rate from the selection rows `output` holds for these rates and seeds (val_loss,
    lower is better; `rr_core.lr_choice.choose_rate`); None for a variant with no rate every seed finished."""
    rows = output.rows
    found: dict[str, RateChoice | None] = {}
    for v in variants:
        losses: dict[float, list[float]] = {lr: [] for lr in lrs}
        if rows is not None and "role" in rows.columns:
            mine = rows[
                (rows["size"].astype(str) == size)
                & (rows["variant"] == v)
                & (rows["role"] == "selection")
                & rows["seed"].isin(list(seeds))
            ]
            for lr, loss in zip(mine["lr"], mine["val_loss"], strict=True):
                if lr in losses:
                    losses[lr].append(float(loss))
        found[v] = choose_rate(losses, seeds=len(seeds))
    return found


def comparison_runs(
    output: OutputPlan, size: str, chosen: dict[str, float], seeds: Iterable[int], **options: Any
) -> Runs:
    """Phase 2: each variant at its chosen rate (`chosen`: {variant: lr}) on the comparison `seeds`, split
    against `output` (the same reading as phase 1's, refreshed where another process wrote since)."""
    from rr_model.run.planning import Runs

    ladder = options.get("ladder")
    runs = [
        TrainConfig(size, v, s, recipe=_at(size, lr, ladder), role="comparison", **options)
        for s in seeds
        for v, lr in chosen.items()
    ]
    output.refresh()
    return Runs.split(runs, output)


class Watch:
    """What `tune` says as it goes, each when it happens (here nothing; `rr tune` prints each): a phase's
    plan before it trains (`starting`), what its launcher did (`launched`), each variant's chosen rate before
    the comparison is planned (`chosen`)."""

    def starting(self, phase: str, runs: Runs) -> None:
        """Phase `phase` ("selection" or "comparison") is about to train, submit or plan `runs`."""

    def launched(self, phase: str, done: Launched) -> None:
        """What the launcher did with the phase's runs (`rr_model.sweep.launch.launch`)."""

    def chosen(self, size: str, picked: dict[str, RateChoice | None]) -> None:
        """Each variant's choice from the selection rows (`choices`), before a variant without one stops."""


class Tuned(NamedTuple):
    """What `tune` did: the selection phase's launch, and where the selection rows are all in, each
    variant's choice and the comparison phase's launch."""

    selection: Launched
    waiting: str | None = None  # why the comparison is not planned yet, in words (None: it was planned)
    picked: dict[str, RateChoice] | None = None  # each variant's chosen rate
    comparison: Launched | None = None

    @property
    def crashed(self) -> bool:
        """Whether a selection run crashed here (the same command again finishes it)."""
        return any(r["status"] == "crashed" for r in self.selection.summary or [])


def tune(tuning: Tuning, how: Launch | None = None, *, watch: Watch | None = None, **options: Any) -> Tuned:
    """`rr tune` in one call: the selection phase (`selection_runs`) launched where `how` says, then, once
    every selection row is in `tuning`'s file (`Tuning.file`), each variant's rate (`choices`) and the
    comparison phase (`comparison_runs`) launched the same way. Under `Tuning.dry_run` nothing trains: the
    selection's plan, and the comparison's where the selection rows are in already.

    The comparison waits (`Tuned.waiting`) while selection runs are to come: after a dry run, or while Slurm
    jobs train them (the same command again plans it then). A crashed selection run stops the tuning
    (`Tuned.crashed`). The size is one (`one_size`); the rates and seeds may be given as the command line
    gives them, comma-separated (`rates`, `rr_core.comma_lists.seed_list`). The variants default to the
    reference's compared block; `options` are further TrainConfig fields. `watch` hears each step as it
    happens (`Watch`).

    Raises InputError for several sizes, a grid or seed sets `check_grid` refuses, and for a variant no rate
    of which finished on every selection seed.
    """
    from rr_core.variants import REFERENCE, compared
    from rr_model.sweep.launch import Launch, launch

    out, dry_run = tuning.file(options.get("ladder")), tuning.dry_run
    size, lrs = one_size(tuning.size), rates(tuning.lrs)
    select_seeds = seed_list(tuning.select_seeds, "--select-seeds") or []
    seeds = seed_list(tuning.seeds, "--seed") or []
    how, watch = how or Launch(), watch or Watch()
    variants = tuple(tuning.variants or compared(options.get("reference", REFERENCE)))
    check_grid(lrs, select_seeds, seeds)
    first = selection_runs(out, size, variants, lrs, select_seeds, **options)
    size = (first.todo or first.skipped)[0].size  # as the ladder spells it
    watch.starting("selection", first)
    selected = launch(first, Path(out), how, dry_run)
    watch.launched("selection", selected)
    if first.todo and (selected.summary is None or dry_run):
        return Tuned(
            selected,
            waiting=f"the comparison runs ({len(seeds)} seed(s) x {len(variants)} variant(s), each at its "
            "chosen rate) are planned once every selection row is in: run the same command again then",
        )
    if (stopped := Tuned(selected)).crashed:
        return stopped
    first.output.refresh()
    picked = choices(first.output, size, variants, lrs, select_seeds)
    watch.chosen(size, picked)
    if unpicked := [v for v, c in picked.items() if c is None]:
        raise InputError(
            f"no rate of {', '.join(unpicked)} finished on every selection seed (each diverged or failed): "
            "try lower rates with --lr"
        )
    second = comparison_runs(first.output, size, {v: c.lr for v, c in picked.items()}, seeds, **options)
    watch.starting("comparison", second)
    compared_here = launch(second, Path(out), how, dry_run)
    watch.launched("comparison", compared_here)
    return Tuned(selected, picked=picked, comparison=compared_here)

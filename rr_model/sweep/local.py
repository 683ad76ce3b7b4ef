"""Sweeps: a whole plan of runs, biggest size first, each in its own process, resumable.

A run is one (size, variant, seed) trained by the library in a child process (`rr_model.sweep.child`,
under torchrun when `nproc` > 1), so a hard crash (a segfault, an out-of-memory kill) loses that run only;
the sweep records it and goes on.
Running the same sweep again skips the rows already written and resumes interrupted runs from their
checkpoints. Two sweeps of one plan into one file (two terminals, a job submitted twice) share the work:
each run is claimed by the process that trains it (`rr_model.checkpoint.paths.claim_path`), a sweep that finds a
run claimed goes on to the next and comes back to it when its holder has finished (its row is then there,
or the run is trained here if the holder failed), so no run is trained twice and each sweep ends with
every row in place. Replaces the published orchestrator script and notebook.

What a sweep trains is one documented value, `Sweep`, whose fields are `rr sweep`'s options
(`rr_core.options`); `sweep_runs` plans it. Light to import (the output file and the child process load
inside the calls), so the command line reads these declarations at start-up.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rr_core.budget import budget_steps, reference_params
from rr_core.comma_lists import items, seed_list
from rr_core.errors import InputError, InterruptSaid
from rr_core.files.locks import locked
from rr_core.ladder import (
    BUDGET_KEYS,
    PUBLISHED_SIZES,
    beyond_published,
    get_size,
    ladder_sizes,
    size_sort_key,
)
from rr_core.options import option
from rr_core.variants import COMPARED, REFERENCE, compared
from rr_model.config import TrainConfig, default_out
from rr_model.run.entry import DRY_RUN, OUT, VARIANTS
from rr_model.sweep.jobs import SLURM

if TYPE_CHECKING:
    from rr_model.run.planning import Runs

__all__ = [
    "Sweep",
    "default_sweep_out",
    "sweep_runs",
    "plan_sweep",
    "budget_multiples",
    "budget_options",
    "train_command",
    "run_sweep",
]


@dataclass(frozen=True)
class Sweep:
    """What `rr sweep` trains: its sizes (or sizes past the published ladder), seeds, budgets and variants,
    into which file; and whether it trains them, shows their plan only, or follows the Slurm jobs of an
    earlier sweep (each field an option of `rr sweep`, `rr_core.options`). `sweep_runs` plans it.

    Sizes, seeds and budgets are kept as given (a command line's texts, ``seeds="3,4"``, or numbers), so
    a notebook and the command line are refused in the same words where `sweep_runs` reads them.
    """

    sizes: tuple[str, ...] = field(
        default=(),
        metadata=option(
            "A size to train (repeatable, or comma-separated: --size 590M,1B). Default: the published sizes "
            "(every size of --ladder).",
            flag="--size",
            spelling="--sizes",
        ),
    )
    at: str | None = field(
        default=None,
        metadata=option(
            "Comma-separated sizes past the published ladder, e.g. 3B (rr analyze confirm plans their "
            "seeds); their shapes come from --ladder."
        ),
    )
    seeds: str | tuple[int | str, ...] = field(
        default=(),
        metadata=option(
            "A seed to train (repeatable, or comma-separated: --seed 3,4). Default: each size's published "
            "seeds (--ladder's seeds).",
            flag="--seed",
            spelling="--seeds",
        ),
    )
    budgets: str | tuple[float, ...] | None = field(
        default=None,
        metadata=option(
            "Comma-separated multiples of each size's budget, e.g. 1,2,4 (with --schedule wsd): each run "
            "trains the largest, with a cooldown branch ending at each other one, a row each "
            "(docs/training.md, Budgets)."
        ),
    )
    variants: tuple[str, ...] = field(default=(), metadata=VARIANTS)  # (): the reference's compared block
    out: Path | None = field(default=None, metadata=OUT)  # None: `default_sweep_out`
    dry_run: bool = field(default=False, metadata=DRY_RUN)
    status: bool = field(
        default=False,
        metadata=option("List the sweep's jobs: id, run, state, step reached, log.", panel=SLURM),
    )
    cancel: bool = field(default=False, metadata=option("Cancel the sweep's unfinished jobs.", panel=SLURM))

    def file(self, reproduce: bool = False, ladder: str | os.PathLike | None = None) -> Path:
        """The file the sweep appends to: `out`, else `default_sweep_out`."""
        return Path(self.out) if self.out is not None else default_sweep_out(reproduce, ladder)


def default_sweep_out(reproduce: bool = False, ladder: str | os.PathLike | None = None) -> Path:
    """The file a sweep writes without --out: the reproduction file (`rr sweep --reproduce`), else the
    ladder file's or the published dataset (`rr_model.config.default_out`)."""
    from rr_model.run.reproduce import DEFAULT_REPRODUCTION

    return DEFAULT_REPRODUCTION if reproduce else default_out(ladder)


def sweep_runs(
    sweep: Sweep,
    *,
    effect_seeds: Callable[[Sequence[str] | None, tuple[str, ...]], Mapping[str, Iterable[int]]]
    | None = None,
    **options: Any,
) -> Runs:
    """`rr sweep`'s plan (`plan_sweep`) from `sweep` as its options give it, a reproduction checked to be one.

    Parameters
    ----------
    sweep
        What to train (`Sweep`): `sizes` (`--size`), or `at`, sizes past the published ladder,
        comma-separated (`--at 3B`: their shapes from the ``ladder`` option's file,
        `rr_core.ladder.beyond_published`), not both; `seeds` for every size (`--seed 3,4`:
        `rr_core.comma_lists.seed_list`), default each size's published seeds; `variants`, default the
        reference's compared block (`rr_core.variants.compared`); `budgets`, multiples of each size's budget
        (`--budgets 1,2,4`: `budget_multiples`); into `Sweep.file`.
    effect_seeds
        Instead of `seeds` (`--effect`): a function of the sizes and variants that returns the new seeds of
        each size (`rr_analysis.stats.power.seeds_for_effect`, which this package may not import: the
        command line passes it in).
    options
        Further TrainConfig fields; with ``reproduce`` the runs must be published ones
        (`rr_model.run.reproduce.check_reproducible`).
    """
    from rr_model.run.reproduce import check_reproducible

    out = sweep.file(options.get("reproduce", False), options.get("ladder"))
    variants = tuple(sweep.variants or compared(options.get("reference", REFERENCE)))
    if sweep.at and sweep.sizes:
        raise InputError("--at names sizes past the published ladder, --size any size: give one, not both")
    ladder = options.get("ladder")
    sizes = [beyond_published(a, ladder) for a in items(sweep.at)] if sweep.at else list(sweep.sizes) or None
    if effect_seeds is None:
        per_size = seed_list(sweep.seeds, "--seed")
    elif sweep.seeds:
        raise InputError("--effect plans the seeds itself: give --effect or --seed, not both")
    else:
        per_size = effect_seeds(sizes, variants)
    runs = plan_sweep(out, sizes, per_size, variants, budget_multiples(sweep.budgets), **options)
    if options.get("reproduce"):
        check_reproducible(runs.todo + runs.skipped, out)
    return runs


def plan_sweep(
    out: str | os.PathLike,
    sizes: Iterable[str] | None = None,
    seeds: Iterable[int] | Mapping[str, Iterable[int]] | None = None,
    variants: tuple[str, ...] = COMPARED,
    budgets: Sequence[float] | None = None,
    **options: Any,
) -> Runs:
    """The runs of a sweep: `rr_model.run.planning.Runs` (to train, already in `out`, the file's one
    reading), biggest size first, then by seed and variant.

    Parameters
    ----------
    sizes
        Ladder sizes; default the published ones (with a ``ladder`` option, every size of that file).
    seeds
        Seeds for every size, or per size ({size: seeds}, as `rr_core.sweepfile.dataset.next_seeds` gives); default each size's
        published seeds (0 .. published_seeds - 1), so the default plan is the published sweep, or a
        ladder file's seeds.
    budgets
        Multiples of each size's budget (`rr sweep --budgets 1,2,4`): each run trains the largest, with a
        cooldown branch ending at each other one (`budget_options`; the wsd schedule); its branches follow it.
    options
        Further TrainConfig fields (data, precision, steps, ladder, ...), the same for every run.
    """
    from rr_model.run.output_file import preflight
    from rr_model.run.planning import Runs

    ladder = options.get("ladder")
    default = PUBLISHED_SIZES if ladder is None else tuple(ladder_sizes(ladder))
    sizes = sorted(sizes or default, key=size_sort_key, reverse=True)
    runs = []
    for size in sizes:
        if isinstance(seeds, Mapping):
            size_seeds = list(seeds.get(size, ()))  # a size may need no new seed
        elif seeds is not None:
            size_seeds = list(seeds)
        elif not (size_seeds := list(range(get_size(size, ladder).sweep_seeds))):
            raise InputError(f"{size} has no published seeds; give the seeds to train")
        given = options if budgets is None else budget_options(size, budgets, options)
        runs += [
            c for s in size_seeds for v in variants for c in TrainConfig(size, v, s, **given).with_branches()
        ]
    return Runs.split(runs, preflight(out))  # a new default file extends the published


def budget_multiples(given: str | Sequence[float] | None) -> list[float] | None:
    """`--budgets`' multiples of each size's budget: numbers > 0, comma-separated or as numbers; None when
    not given.

    Example
    -------
    >>> budget_multiples("1, 2,4"), budget_multiples([1, 2]), budget_multiples(None)
    ([1.0, 2.0, 4.0], [1.0, 2.0], None)
    """
    text = given if isinstance(given, str) or given is None else ",".join(map(str, given))
    try:
        found = [float(item) for item in items(text) or []]
    except ValueError:
        found = []
    if text and not (found and all(0 < k < float("inf") for k in found)):
        raise InputError(f"--budgets {text!r}: expected comma-separated multiples > 0, e.g. 1,2,4")
    return found or None


def budget_options(size: str, multiples: Sequence[float], options: Mapping[str, Any]) -> dict[str, Any]:
    """`options` for runs of `size` that train several multiples of its budget: the steps of the largest,
    and a cooldown branch ending at each other one (`TrainConfig.branch_at`).

    A multiple scales the budget as stated (the options' steps, tokens or tokens per parameter, else the
    size's own, `rr_core.ladder.Size.budget`) before its steps are rounded (`rr_core.budget.budget_steps`).

    Raises
    ------
    InputError
        Without the wsd schedule (a cosine run serves one budget), or multiples that are not distinct and
        > 0, or two that round to the same steps.
    """
    listed = ",".join(f"{k:g}" for k in multiples)
    if options.get("schedule") != "wsd":
        raise InputError(
            f"--budgets {listed}: --budgets trains cooldown branches: give --schedule wsd (a cosine run serves "
            "one budget: run a sweep per budget with --steps, --tokens or --tokens-per-param)"
        )
    if len(set(multiples)) < len(multiples) or not all(k > 0 for k in multiples):
        raise InputError(f"--budgets {listed}: give distinct multiples of each size's budget > 0, e.g. 1,2,4")
    base = TrainConfig(size, **options)
    stated = get_size(size, base.ladder)
    kind, value = next(((k, options[k]) for k in BUDGET_KEYS if options.get(k) is not None), stated.budget)
    params = reference_params(base.size, base.vocab_size, base.ladder, base.reference, base.recipe.block_size)
    scaled = [{kind: max(1, round(k * value)) if kind == "steps" else k * value} for k in multiples]
    steps = sorted(budget_steps(stated, base.recipe, params, **given) for given in scaled)
    if len(set(steps)) < len(steps):
        raise InputError(f"--budgets {listed}: two budgets of {size} train the same steps ({steps})")
    return {
        **options,
        "steps": steps[-1],
        "tokens": None,
        "tokens_per_param": None,
        "branch_at": tuple(steps[:-1]),
    }


def train_command(cfg: TrainConfig, out: str | os.PathLike, nproc: int = 1) -> list[str]:
    """The command line that trains `cfg` into `out` in a child process (`rr_model.sweep.child`), resuming
    from a checkpoint; under torchrun when `nproc` > 1."""
    from rr_model.sweep.child import config_json

    launcher = [sys.executable]
    if nproc > 1:
        launcher += ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"]
    return [*launcher, "-m", "rr_model.sweep.child", str(out), config_json(cfg)]


def run_sweep(runs: list[TrainConfig], out: str | os.PathLike, nproc: int = 1) -> list[dict[str, Any]]:
    """Train `runs` in order, one child process each; one summary record per run.

    A run another process holds (child exit `HELD`) is set aside and taken up again after the others, once
    its holder has finished: this sweep waits for the run's claim, saying so, then runs its child again,
    which finds the row in place or trains the run. The cooldown branches of a run set aside wait with it
    (its holder saves the state they start from).

    Returns
    -------
    Records with size, variant, seed, status ("ok", "in file": the row was already there, written by
    another process; "failed": diverged or refused, "crashed": the process died without a record),
    val_loss, ece and minutes (None unless ok) and exit (the child's exit code).
    """
    from rr_core.sweepfile.schema import record_key
    from rr_model.checkpoint.state import claim_path
    from rr_model.sweep.child import HELD

    summary, held = [], []
    for cfg in runs:
        if cfg.branch_of is not None and cfg.family in {h.family for h in held}:
            held.append(cfg)  # a branch of a run another process trains: that process saves its start
        elif (done := _run_child(cfg, out, nproc)) is None:
            held.append(cfg)
        else:
            summary.append(done)
    for cfg in held:
        path = claim_path(out, **cfg.stem)
        print(
            f"rr sweep: waiting for {' '.join(map(str, cfg.key))}, which another process trains", flush=True
        )
        with locked(path):  # returns once the holder has let the claim go (finished, failed or killed)
            pass
        summary.append(_run_child(cfg, out, nproc) or _summary(cfg, "crashed", {}, HELD))
    order = {cfg.key: i for i, cfg in enumerate(runs)}
    return sorted(summary, key=lambda r: order[record_key(r)])


def _run_child(cfg: TrainConfig, out: str | os.PathLike, nproc: int) -> dict[str, Any] | None:
    """Train one run in its child process: its summary record, or None when another process holds it."""
    from rr_core.sweepfile.provenance import read_records, sidecar_path
    from rr_core.sweepfile.schema import record_key
    from rr_model.sweep.child import HELD, INTERRUPTED

    sidecar = sidecar_path(out)
    before = len(read_records(sidecar))
    with subprocess.Popen(train_command(cfg, out, nproc)) as child:
        try:
            exit_code = child.wait()
        except KeyboardInterrupt:  # the terminal interrupts the child too: it says what it keeps, then stops
            if child.wait() == INTERRUPTED:
                raise InterruptSaid from None
            raise
    if exit_code == HELD:
        return None
    new = [r for r in read_records(sidecar)[before:] if record_key(r) == cfg.key]
    if new:
        status, result = new[-1]["status"], new[-1]["result"] or {}
    else:  # no record: the row was there already (exit 0), or the process died
        status, result = ("in file" if exit_code == 0 else "crashed"), {}
    return _summary(cfg, status, result, exit_code)


def _summary(cfg: TrainConfig, status: str, result: dict[str, Any], exit_code: int) -> dict[str, Any]:
    return {
        **cfg.named,
        "status": status,
        **{k: result.get(k) for k in ("val_loss", "ece", "minutes")},
        "exit": exit_code,
    }

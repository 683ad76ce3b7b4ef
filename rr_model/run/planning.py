"""Which runs a command makes: the plan behind `rr train` (`plan_runs`, its `Runs` checked together before
the first trains, `Runs.check`), the time estimate, budget and memory plan of `--dry-run` (`describe_runs`,
`budget_plan`, `memory_plans`), and how a job groups cooldown branches with their run (`families`).
Torch-free, so planning and dry runs start at once. The output file's one reading is
`rr_model.run.output_file`'s; a run's checks, `rr_model.run.checks`'.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any, NamedTuple

from rr_core.budget import budget, budget_table, passes
from rr_core.errors import InputError
from rr_core.ladder import BYTE_EOS, RECIPE, get_size
from rr_core.shapes import GPTConfig, model_config
from rr_core.variants import COMPARED, REFERENCE
from rr_model.config import TrainConfig
from rr_model.data.token_cache import Corpus, check_data, known_train_tokens
from rr_model.parallel.flops import assumed_rate, flops_per_token
from rr_model.parallel.hardware import datasheet_memory, gpu_memory, gpu_name
from rr_model.parallel.memory import SETTINGS, Setting, memory_plan
from rr_model.run.checks import check_run, say_within_warmup
from rr_model.run.output_file import OutputPlan, preflight

__all__ = [
    "Runs",
    "plan_runs",
    "describe_runs",
    "memory_plans",
    "planned_model",
    "budget_plan",
    "size_budgets",
    "branch_note",
    "families",
    "DryRun",
    "dry_run_plan",
]


# ---------------------------------------------------------------------------------------------- planning


class Runs(NamedTuple):
    """A command's plan: the runs to train, those already in the output file (skipped), and the file's
    one reading (`preflight`), which the trainer takes over (`rr_model.run.trainer.train_runs`'s `plan`)."""

    todo: list[TrainConfig]
    skipped: list[TrainConfig]
    output: OutputPlan

    @classmethod
    def split(cls, runs: list[TrainConfig], output: OutputPlan) -> Runs:
        """`runs` split into those `output` lacks (to train) and those it holds (`OutputPlan.holds`)."""
        held = [output.holds(r) for r in runs]
        return cls(
            [r for r, h in zip(runs, held, strict=True) if not h],
            [r for r, h in zip(runs, held, strict=True) if h],
            output,
        )

    def check(self, world: int, resume: bool = False, gpu_here: bool = True) -> None:
        """Every check each run to do makes before its first step (`check_run`), on what is known before
        any data is tokenized (`check_data`): the dry run's checks, and the real run's before the first of
        its runs trains, so neither plans nor starts what a later run would refuse. `world`: the processes
        of each run; `resume`: checkpoints are continued (`check_run`). `gpu_here`: check the memory plan against this machine's GPU where --gpu-memory is
        not given (not for jobs that run on other machines)."""
        corpora: dict[tuple, Corpus] = {}
        for cfg in self.todo:
            where = (cfg.data, cfg.tokenizer, cfg.recipe.n_text)
            corpus = corpora.get(where) or corpora.setdefault(where, check_data(*where))
            gib = _gpu_memory(cfg)[0] if gpu_here else cfg.gpu_memory
            check_run(cfg, self.output, corpus, world, gib, resume, here=gpu_here)


def plan_runs(
    out: str | os.PathLike,
    size: str | Sequence[str],
    variants: tuple[str, ...] = COMPARED,
    seed: int | None = None,
    **options: Any,
) -> Runs:
    """The runs `rr train` makes: `Runs` (to train, already in `out` and skipped, the file's reading).

    `out` is read once (`preflight`) and refused if no row could go to it. `size` is one size or several
    (each trained, in the order given; one named twice, once). Without `seed`, for each size the lowest seed
    for which some of `variants` has no row yet: the next complete, pairable block (or the rest of one a
    crash left incomplete). `options` are further TrainConfig fields; a run with cooldown branches
    (`TrainConfig.branch_at`) is followed by its branches, each a run of its own.
    """
    output = preflight(out)
    ladder = options.get("ladder")
    sizes = [size] if isinstance(size, str) else size
    sizes = list(dict.fromkeys(get_size(s, ladder).name for s in sizes))

    def block(size: str, s: int) -> list[TrainConfig]:  # every run of seed s: each variant, its branches
        return [
            c for v in variants for c in TrainConfig(size=size, variant=v, seed=s, **options).with_branches()
        ]

    runs = []
    for one in sizes:
        first = seed
        if first is None:
            first = next(s for s in itertools.count() if not all(map(output.holds, block(one, s))))
        runs += block(one, first)
    return Runs.split(runs, output)


def planned_model(cfg: TrainConfig) -> GPTConfig:
    """The model `cfg` trains, without loading its data: the vocabulary follows the tokenizer it will use
    (`TrainConfig.vocab_size`)."""
    mcfg = model_config(cfg.size, cfg.variant, cfg.vocab_size, cfg.ladder, cfg.reference)
    return replace(mcfg, block_size=cfg.recipe.block_size)


def budget_plan(runs: list[TrainConfig]) -> list[dict[str, Any]]:
    """The training budget of each size and step count among `runs` (`rr_core.budget.budget`: the reference's
    exact parameters, steps, tokens, tokens per parameter, training FLOPs), and the passes over the corpus
    where its size is known without tokenizing (`known_train_tokens`; None otherwise). Torch-free: every dry
    run shows it.

    Returns
    -------
    One record per (size, steps), in the order of `runs`: size, params, steps, tokens, tokens_per_param,
    flops, passes.
    """
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for cfg in runs:
        if (cfg.size, cfg.steps) in rows:
            continue
        found = budget(
            cfg.size,
            vocab_size=cfg.vocab_size,
            ladder=cfg.ladder,
            reference=cfg.reference,
            recipe=cfg.recipe,
            steps=cfg.steps,
        )
        r = cfg.recipe
        train = known_train_tokens(
            cfg.data, cfg.tokenizer, r.n_text, cfg.cache_dir, cfg.text_field, r.val_frac
        )
        rows[cfg.size, cfg.steps] = {
            **asdict(found),
            "passes": None if train is None else passes(found.tokens, train),
        }
    return list(rows.values())


def size_budgets(
    vocab_size: int = RECIPE.vocab_size,
    ladder: str | os.PathLike | None = None,
    reference: str = REFERENCE,
    corpus: str | None = None,
    **given: float | None,
) -> list[dict[str, Any]]:
    """`rr sizes --budget`: every ladder size's budget (`rr_core.budget.budget_table`) at its own or the one
    `given` (steps, tokens or tokens_per_param; None: not given), with the passes over `corpus` where it is
    tokenized already (`known_train_tokens`, in the byte tokenizer for the byte vocabulary, else GPT-2's).

    Raises InputError for a `corpus` not tokenized yet: its size is unknown.
    """
    train = None
    if corpus is not None:
        train = known_train_tokens(corpus, "bytes" if vocab_size == BYTE_EOS + 1 else "gpt2")
        if train is None:
            raise InputError(
                f"--corpus {corpus}: not tokenized yet, so its size is unknown (a run tokenizes it)"
            )
    stated = {k: v for k, v in given.items() if v is not None}
    return budget_table(vocab_size, ladder, reference, train, **stated)


def describe_runs(runs: list[TrainConfig]) -> list[dict[str, Any]]:
    """What `runs` would be, without loading data, torch or training: one record per run.

    Returns
    -------
    Records with size, variant, seed, d_model, n_layer, n_head, params (exact), steps, tokens (trained
    on), est_minutes and assumed (the device and rate behind the estimate, see
    `rr_model.parallel.flops.assumed_rate`): training FLOPs (`flops_per_token` x tokens) at that rate; a
    cooldown branch's, of the steps it trains past its run's stable phase (`branch_note`). A rough figure:
    evaluation and start-up are not counted.
    """
    records = []
    for cfg in runs:
        say_within_warmup(cfg)
        mcfg = planned_model(cfg)
        tokens = cfg.steps * cfg.recipe.batch_size * cfg.recipe.block_size
        own = tokens - _branched(cfg) * cfg.recipe.batch_size * cfg.recipe.block_size  # what it trains itself
        rate, assumed = assumed_rate(cfg.device, cfg.precision)
        shape = {k: getattr(mcfg, k) for k in ("d_model", "n_layer", "n_head")}
        records.append(
            {
                **cfg.named,
                **shape,
                "params": mcfg.n_params,
                "steps": cfg.steps,
                "tokens": tokens,
                "est_minutes": flops_per_token(mcfg) * own / rate / 60,
                "assumed": assumed,
            }
        )
    return records


def families(runs: list[TrainConfig]) -> list[list[TrainConfig]]:
    """`runs` as a job trains them: a run with cooldown branches, then its branches among `runs` (in their
    order: the run saves the state each starts from); every other run alone."""
    groups: list[list[TrainConfig]] = []
    leads: dict[tuple, list[TrainConfig]] = {}
    for cfg in runs:
        if (group := leads.get((cfg.family, cfg.branch_of))) is not None:
            group.append(cfg)
            continue
        groups.append([cfg])
        if cfg.branch_at:
            leads[cfg.family, cfg.steps] = groups[-1]
    return groups


def _branched(cfg: TrainConfig) -> int:
    """The steps of a cooldown branch that its run trains for it (its stable phase); 0 for any other run."""
    return 0 if cfg.branch_of is None else cfg.branch_start


def branch_note(runs: list[TrainConfig]) -> str | None:
    """What the cooldown branches among `runs` train themselves, in words; None without a branch."""
    branches = [c for c in runs if c.branch_of is not None]
    if not branches:
        return None
    steps, shared = sum(c.steps for c in branches), sum(map(_branched, branches))
    return (
        f"{len(branches)} cooldown branch(es) continue from the state their run saves where their cooldown "
        f"starts: they train {steps - shared:,} of their {steps:,} steps (est_minutes counts those)."
    )


def _gpu_memory(cfg: TrainConfig) -> tuple[float | None, str]:
    """The GPU memory (GiB) a plan checks runs against, and where it comes from: --gpu-memory, else this
    machine's first GPU (nvidia-smi's total, or its datasheet's by name), else unknown (None)."""
    if cfg.gpu_memory is not None:
        return cfg.gpu_memory, f"{cfg.gpu_memory:g} GiB (--gpu-memory)"
    name = gpu_name() if cfg.device in ("auto", "cuda") else None
    if name is None:
        return None, "no GPU here: give --gpu-memory GiB to check that the runs fit"
    found = gpu_memory() or datasheet_memory(name)
    return (
        found,
        f"{found:g} GiB, {name} here" if found else f"{name} here, its memory unknown: give --gpu-memory GiB",
    )


def memory_plans(runs: list[TrainConfig], world: int) -> tuple[list[dict[str, Any]], str]:
    """The memory plan (`rr_model.parallel.memory.memory_plan`) of the largest model of each size among `runs`, on
    `world` processes, without torch; and the GPU memory it was checked against, in words.

    Returns
    -------
    One record per size and setting: size, variant, setting (the runs' own marked "*"), then the plan's
    columns (bytes per process, the micro-batches each setting needs, fits).
    """
    if not runs:
        return [], ""
    gpu_gib, source = _gpu_memory(runs[0])
    largest: dict[str, tuple[TrainConfig, GPTConfig]] = {}
    for cfg in runs:
        mcfg = planned_model(cfg)
        if cfg.size not in largest or mcfg.n_params > largest[cfg.size][1].n_params:
            largest[cfg.size] = (cfg, mcfg)
    records = []
    for cfg, mcfg in largest.values():
        own = Setting(cfg.shard, cfg.activation_checkpointing)
        settings = SETTINGS if own in SETTINGS else (*SETTINGS, own)
        for setting, row in zip(
            settings,
            memory_plan(mcfg, cfg.recipe, world, cfg.precision, gpu_gib, cfg.micro_batches, settings),
            strict=True,
        ):
            mark = " *" if setting == own else ""
            records.append(
                {"size": cfg.size, "variant": cfg.variant, **row, "setting": row["setting"] + mark}
            )
    return records, source


class DryRun(NamedTuple):
    """What a dry run shows of the runs it plans (`dry_run_plan`)."""

    runs: list[dict[str, Any]] | None  # each run (`describe_runs`); None where jobs are shown instead
    branch_note: str | None  # what cooldown branches train themselves (`branch_note`)
    budget: list[dict[str, Any]]  # each size and step count's budget (`budget_plan`)
    memory: list[dict[str, Any]]  # the memory plan (`memory_plans`)
    gpu: str  # the GPU memory the memory plan was checked against, in words
    world: int  # the processes of each run


def dry_run_plan(todo: list[TrainConfig], world: int, describe: bool = True) -> DryRun:
    """Everything a dry run shows of the runs `todo`, each on `world` processes, without torch or data:
    each run (unless not `describe`: a Slurm plan shows its jobs), the budget and the memory plan."""
    runs = describe_runs(todo) if describe else None
    return DryRun(runs, branch_note(todo), budget_plan(todo), *memory_plans(todo, world), world)

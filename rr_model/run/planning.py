"""Which runs to make and where their rows go: the one reading of a run's output file before training
(`preflight`, whose `OutputPlan` answers every question asked of the file: present runs, the published
start, the recipe guard, whether a row fits), a run's checks before its first step (`check_run`: the
trainer's and `--dry-run`'s alike), the plan behind `rr train` (`plan_runs`) and the time estimate of
`--dry-run` (`describe_runs`). Torch-free, so planning and dry runs start at once.

A command reads its output file once, whatever the number of runs: its plan (`Runs`) carries the
`OutputPlan` to the trainer (`rr_model.run.trainer.train_runs`), which takes in each row it appends
(`OutputPlan.extend`) instead of reading the file again; only `append_rows` reads it once more per row,
under the row's lock and through that lock's opening, to check the file as it is at that moment. Each run
is checked once (`check_run`); once claimed, only what another process may have changed is asked again
(`check_claimed`)."""

from __future__ import annotations

import errno
import functools
import itertools
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from rr_core.budget import budget, passes
from rr_core.errors import InputError, RecipeError
from rr_core.files.reading import stamp
from rr_core.files.replacing import create_new, probe
from rr_core.shapes import GPTConfig, model_config
from rr_core.sweepfile.csv_text import DataError
from rr_core.sweepfile.dataset import (
    bundled_path,
    check_append,
    load_sweep,
    refuse_reference,
    run_keys,
)
from rr_core.sweepfile.integrity import check_integrity
from rr_core.sweepfile.provenance import sidecar_path
from rr_core.sweepfile.schema import key_columns, several_budgets
from rr_core.variants import COMPARED
from rr_model.checkpoint.paths import final_path, found_checkpoints
from rr_model.config import DEFAULT_OUT, TrainConfig, recipe_differences
from rr_model.data.token_cache import Corpus, check_data, known_train_tokens
from rr_model.parallel.flops import assumed_rate, flops_per_token
from rr_model.parallel.hardware import datasheet_memory, gpu_memory, gpu_name, host_memory
from rr_model.parallel.memory import SETTINGS, Setting, memory_plan, refuse_unbuildable, refuse_unfit

if TYPE_CHECKING:
    import pandas as pd

    from rr_model.data.token_cache import Tokens

__all__ = [
    "OutputPlan",
    "Runs",
    "preflight",
    "check_run",
    "check_claimed",
    "check_windows",
    "dataset_keys",
    "read_output",
    "dataset_row",
    "plan_runs",
    "describe_runs",
    "memory_plans",
    "planned_model",
    "budget_plan",
    "branch_note",
    "families",
]


# ---------------------------------------------------------------------------------------------- planning


@dataclass
class OutputPlan:
    """What a run's output file holds, and what may be written to it: `preflight`'s one reading of it.

    `rows` are the file's rows, or the published rows it will start as (`from_published`); None for a new
    file. Every question the trainer and the CLI ask of the file before training is answered from them:
    which runs are present (`keys`), whether it holds published rows (`guard`), whether a run's row would
    be accepted (`check_fits`). `stamp` is the file's `rr_core.files.reading.stamp` when `rows` were last known to
    be all it held, so that `refresh` reads it again only where another process has written to it.
    """

    out: Path
    rows: pd.DataFrame | None
    from_published: bool  # a missing default dataset, trained at a published size: `start` copies the rows
    reproduction: bool = False  # a reproduction file (`rr reproduce`): only the published recipe goes to it
    stamp: tuple[int, ...] | None = None
    # the runs `check_run` passed against this reading, by (run, processes, resume), with their model: the
    # trainer checks a run again only where it was not checked so (`rr_model.run.trainer`)
    checked: dict[tuple[TrainConfig, int, bool], GPTConfig] = field(default_factory=dict, repr=False)

    @functools.cached_property
    def keys(self) -> set[tuple[str, str, int]]:
        """The (size, variant, seed) of every row."""
        return set() if self.rows is None else run_keys(self.rows)

    @functools.cached_property
    def budget_keys(self) -> set[tuple]:
        """Every row's key with its steps, as a file of several budgets keys its rows (`several_budgets`)."""
        if self.rows is None or several_budgets(self.rows):
            return self.keys
        names = key_columns(self.rows.columns)
        rows = zip(self.rows[names].itertuples(index=False, name=None), self.rows["steps"], strict=True)
        return {(*key, int(steps)) for key, steps in rows}

    def holds(self, cfg: TrainConfig) -> bool:
        """Whether the file holds the row of `cfg`: a row of its key, at its steps where the run is one of
        several budgets or the file holds several (a budget of a run is not another budget of it)."""
        if self.rows is None:
            return False
        if cfg.several_budgets or several_budgets(self.rows):
            return (*cfg.family, cfg.steps) in self.budget_keys
        return cfg.key in self.keys

    @functools.cached_property
    def published(self) -> bool:
        """Whether the file holds (or will start as) published rows, or is a reproduction file, so the recipe
        guard applies."""
        if self.reproduction:
            return True
        return self.rows is not None and (self.from_published or check_integrity(self.rows).present > 0)

    def start(self) -> None:
        """Before the first run trains: make `out`'s folder if missing (`preflight` checked that its parent
        is one), and create the default dataset as a copy of the published rows when it starts from them."""
        Path(os.path.realpath(self.out)).parent.mkdir(exist_ok=True)  # through a symbolic link, its target's
        if not self.from_published:
            return
        published = bundled_path().read_bytes()
        if create_new(self.out, lambda f: f.write(published)):  # whole or not at all; of several, one writes
            self.stamp = stamp(self.out)  # ours: it holds `rows`, unless a row was appended since

    def refresh(self) -> bool:
        """Read the file again if it changed since `rows` were all it held (one stat when it did not): a run
        claimed now (`rr_model.run.trainer`) sees a row that its previous holder wrote after this reading.
        Whether it was read again."""
        now = stamp(self.out)
        if now is None or now == self.stamp:
            return False
        self.rows, self.stamp = load_sweep(self.out), now  # stat first: a later append is seen next time
        for derived in ("keys", "budget_keys", "published"):
            self.__dict__.pop(derived, None)
        return True

    def extend(self, added: pd.DataFrame, after: tuple[int, ...] | None = None) -> None:
        """Take in the rows a run has just appended (`append_rows` returns them), so that the next run's
        questions see them without the file being read again. `after`: the file's stamp once they were in
        (taken under the append's lock); it becomes `stamp` only where the file held no rows but `rows` and
        `added`, so a row another process appended meanwhile is read by the next `refresh`."""
        import pandas as pd

        held = len(added.attrs.get("lines") or ())  # the rows the file held, as the append parsed it
        if after is not None and held == len(added) + (0 if self.rows is None else len(self.rows)):
            self.stamp = after
        if self.rows is None:
            self.rows = added.reset_index(drop=True)
        else:
            lines = tuple(self.rows.attrs.get("lines") or range(2, len(self.rows) + 2))
            first = max(lines, default=1) + 1  # the added rows' lines, as `append_rows` wrote them
            rows = pd.concat([self.rows, added], ignore_index=True)
            rows.attrs = {"path": str(self.out), "lines": (*lines, *range(first, first + len(added)))}
            self.rows = rows
        for derived in ("keys", "budget_keys"):  # recomputed from the new rows when next asked
            self.__dict__.pop(derived, None)

    def guard(self, cfg: TrainConfig, tokens: Tokens | Corpus) -> None:
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


def preflight(out: str | os.PathLike, *, reproduction: bool = False) -> OutputPlan:
    """Read a run's output file once, refusing before any training a file that its rows cannot go to.

    A missing default dataset (`DEFAULT_OUT`) starts as the published sweep whatever the size, as ``--out``'s
    help says: `rr train --size 150M` in a fresh directory adds seed 3, not a second seed 0, and an
    off-recipe run (the tiny demo on the synthetic corpus) is refused there as it is beside the published
    file, pointing to --out. Any other new file starts empty.

    Parameters
    ----------
    out
        The dataset the rows are appended to.
    reproduction
        `out` is a reproduction file (`rr_model.run.reproduce`): the recipe guard applies whatever it holds.

    Raises
    ------
    DataError
        `out` is the packaged reference copy (under any name), or not a valid sweep file.
    InputError
        A path the run writes cannot be written (`_check_writable`: the row, its record, metrics log,
        checkpoints and final weights, through symbolic links): a missing folder for `out` is made by
        `OutputPlan.start` when its parent exists; a dry run creates nothing (its probe files are removed).

    Example
    -------
    >>> import tempfile
    >>> plan = preflight(Path(tempfile.mkdtemp()) / "new.csv")
    >>> plan.rows is None, plan.keys, plan.from_published
    (True, set(), False)
    """
    out = Path(out)
    refuse_reference(out)  # by device and inode: a hard link or symlink to the packaged copy is refused too
    from_published = out == DEFAULT_OUT and not out.exists()  # as --out's help says, whatever the size
    source = bundled_path() if from_published else out
    known = None if from_published else stamp(out)  # before the reading: an append meanwhile is seen later
    rows = load_sweep(source) if source.exists() else None
    _check_writable(out)
    return OutputPlan(out, rows, from_published, reproduction, known)


def check_run(
    cfg: TrainConfig,
    output: OutputPlan,
    corpus: Corpus,
    world: int,
    gpu_gib: float | None,
    resume: bool = False,
    *,
    here: bool = True,
) -> GPTConfig:
    """Refuse a run that may not go ahead, before it creates anything; the model it trains otherwise.

    The one list of a run's checks before its first step, made once per run: by `Runs.check` (`--dry-run`,
    and a command's runs before the first trains), or by the trainer (`rr_model.run.trainer`) for a run not
    checked so against `output` (`OutputPlan.checked`), always with `check_data`'s `Corpus`, before the run is
    claimed; so a dry run refuses what the run would refuse, and a refused run leaves no file behind. Once
    claimed, the trainer asks only what may have changed since (`check_claimed`) and what only the loaded
    tokens tell (`check_windows`). Its batch splits over
    `world` processes and `--micro-batches`; the recipe guard (`OutputPlan.guard`); its row fits the
    file (`OutputPlan.check_fits`); its memory plan fits `gpu_gib` per process (None: not checked) and,
    where it trains `here` (not a job planned for other machines), this machine's memory holds it
    (`refuse_unbuildable`); a checkpoint of it, or its final weights (kept when its row could not be
    written), is there only where `resume` continues it (`_check_left`; what the checkpoint holds is checked
    when the trainer reads it). The numbers of the run
    alone are checked where they are made (`rr_core.ladder.Recipe`, `rr_core.ladder.Size`, `TrainConfig`).
    """
    r = cfg.recipe
    if r.batch_size % world:
        raise InputError(f"the batch of {r.batch_size} sequences does not split over {world} processes")
    if (r.batch_size // world) % cfg.micro_batches:
        raise InputError(
            f"--micro-batches {cfg.micro_batches} does not split each process's {r.batch_size // world} "
            "sequences evenly"
        )
    output.guard(cfg, corpus)
    if cfg.tokens_per_param is not None and corpus.vocab_size != cfg.vocab_size:
        raise InputError(
            f"--tokens-per-param counts the reference's parameters at a vocabulary of {cfg.vocab_size}, but "
            f"{corpus.source} has {corpus.vocab_size}: give --tokenizer {corpus.tokenizer}"
        )
    mcfg = replace(
        model_config(cfg.size, cfg.variant, corpus.vocab_size, cfg.ladder, cfg.reference),
        block_size=r.block_size,
    )
    output.check_fits(cfg, mcfg.n_params)
    refuse_unfit(cfg, mcfg, world, gpu_gib)
    refuse_unbuildable(cfg, mcfg, world, host_memory() if here else None, on_host=gpu_gib is None)
    _check_left(cfg, output, resume)
    output.checked[cfg, world, resume] = mcfg
    return mcfg


def check_claimed(cfg: TrainConfig, output: OutputPlan, params: int, resume: bool) -> None:
    """What another process may have changed between a run's checks (`check_run`) and its claim, asked again
    once the run is claimed (`rr_model.run.trainer`): a row of it (the file is read again only where it
    changed, `OutputPlan.refresh`), or a checkpoint or final weights it left (`_check_left`)."""
    if output.refresh():
        output.check_fits(cfg, params)
    _check_left(cfg, output, resume)


def _check_left(cfg: TrainConfig, output: OutputPlan, resume: bool) -> None:
    """Refuse a run that left a checkpoint, or final weights (kept when its row could not be written),
    unless `resume` continues it."""
    if not resume and (found := found_checkpoints(output.out, **cfg.stem)):
        raise InputError(f"{found[-1]} holds a checkpoint of this run: pass --resume to continue it")
    if not resume and (final := final_path(output.out, *cfg.key)).exists():  # its row could not be written
        raise InputError(
            f"{final} holds the final weights of this run, whose row is not in {output.out}: pass --resume to "
            "write its row from them without training, or delete the file to train the run again"
        )


def check_windows(cfg: TrainConfig, tokens: Tokens) -> None:
    """Refuse tokens too few for the run's windows: each training batch and each of the evaluation's
    `eval_batches` draws windows of `block_size` + 1 tokens from a stream of at least `block_size` + 2
    (`rr_model.data.windows.sample_batch`), so a short corpus is refused now, not after training."""
    r = cfg.recipe
    for part, stream in (("training", tokens.train), ("validation", tokens.val)):
        if len(stream) < r.block_size + 2:
            n = len(tokens.train) + len(tokens.val)
            raise InputError(
                f"--corpus {cfg.data}: its {n:,} tokens ({tokens.n_text:,} documents) leave {len(stream):,} "
                f"for {part} (val_frac {r.val_frac}), fewer than one window of block_size {r.block_size} needs "
                f"({r.block_size + 2}); give a longer corpus, or a smaller block_size in a ladder file"
            )


def _check_writable(out: Path) -> None:
    """Prove, before anything trains, that every path a run of `out` writes can be written, following
    symbolic links: the row (`out`), the record (its sidecar), the metrics logs (``OUT.metrics/``), the
    checkpoints, final weights and claims (``OUT.checkpoints/``). An existing file is asked whether this
    user may write it (`os.access`: the kernel's answer, without opening it, so the row's file is opened once
    to plan); a missing one needs its folder, in which a probe file is created and removed
    (`rr_core.files.replacing.probe`). The row's folder may be missing where its parent is a folder
    (`OutputPlan.start` makes it), so a mistyped path is an error rather than a new tree of folders. What
    cannot be proved here (a disk that fills up meanwhile) fails after training with the final weights
    kept (`rr_model.run.trainer`).
    """
    if out.exists() and not out.is_file():
        raise InputError(f"--out {out}: not a regular file")
    row = Path(os.path.realpath(out))
    via = f" (a symbolic link to {row})" if out.is_symlink() else ""
    made = row.parent  # `OutputPlan.start` makes it when missing
    if not made.is_dir() and (made.exists() or not made.parent.is_dir()):
        raise InputError(f"--out {out}{via}: {made} is not a folder, and its parent is none either")
    paths = {  # each path, what it holds, and whether it is a folder
        out: ("the run's row", False),
        sidecar_path(out): ("its record", False),
        out.parent / f"{out.stem}.metrics": ("its metrics log", True),
        out.parent / f"{out.stem}.checkpoints": ("its checkpoints and final weights", True),
    }
    for path, (what, folder) in paths.items():
        real = Path(os.path.realpath(path))
        try:
            if real.is_dir():
                probe(real)
            elif real.exists() and folder:
                raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(real))
            elif real.exists() and not os.access(real, os.W_OK, effective_ids=_EFFECTIVE):
                # asked, not opened: the plan's reading is the file's one opening before the runs append
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(real))
            elif real.parent.is_dir():
                probe(real.parent)
            elif real.parent == made:
                probe(made.parent)  # where `OutputPlan.start` makes the folder
            else:
                raise FileNotFoundError(errno.ENOENT, "no such folder", str(real.parent))
        except OSError as e:
            raise InputError(
                f"--out {out}{via}: {what} cannot be written to {e.filename or real} ({e.strerror}), so the "
                "run's result would be lost; nothing was trained"
            ) from None


_EFFECTIVE = os.access in os.supports_effective_ids  # the user the open would be made as, not the real one


def dataset_keys(path: str | os.PathLike) -> set[tuple[str, str, int]]:
    """The (size, variant, seed) of every row in a sweep file (empty if there is no file yet), for reading
    a file no run is planned against here (a job's own part file, a sweep's status)."""
    return read_output(path).keys


def read_output(path: str | os.PathLike) -> OutputPlan:
    """A sweep file no run is planned against here (a job's own part file, a sweep's status), as an
    `OutputPlan` to ask which runs it holds (`keys`, `budget_keys`); no rows where there is no file yet."""
    path = Path(path)
    return OutputPlan(path, load_sweep(path) if path.exists() else None, from_published=False)


def dataset_row(cfg: TrainConfig, result: dict[str, Any]) -> dict[str, Any]:
    """The dataset row of `cfg` with these results (params, val_loss, ece, minutes); a run that names its
    seeds (`TrainConfig.own_seeds`) adds its init_seed and data_seed, a tuning run its lr and role, and a run
    whose budget is stated in tokens (`TrainConfig.token_budget`) or one of several budgets
    (`TrainConfig.several_budgets`) the tokens it trains on (the `tokens` column): a run of steps writes the
    row it always wrote."""
    row = {"size": cfg.size, "variant": cfg.variant, "seed": cfg.seed, "params_M": result["params"] / 1e6}
    row |= {"steps": cfg.steps, **{k: result[k] for k in ("val_loss", "ece", "minutes")}}
    if (
        cfg.own_seeds
    ):  # a run that names its seeds writes both (a file of such runs has the columns from its first)
        row |= {"init_seed": cfg.seeds.init, "data_seed": cfg.seeds.data}
    if cfg.role is not None:
        row |= {"lr": cfg.recipe.lr, "role": cfg.role}
    return row | ({"tokens": cfg.trained_tokens} if cfg.token_budget or cfg.several_budgets else {})


def plan_runs(
    out: str | os.PathLike,
    size: str,
    variants: tuple[str, ...] = COMPARED,
    seed: int | None = None,
    **options: Any,
) -> Runs:
    """The runs `rr train` makes: `Runs` (to train, already in `out` and skipped, the file's reading).

    `out` is read once (`preflight`) and refused if no row could go to it. Without `seed`, the lowest seed
    for which some of `variants` has no row yet: the next complete, pairable block (or the rest of one a
    crash left incomplete). `options` are further TrainConfig fields; a run with cooldown branches
    (`TrainConfig.branch_at`) is followed by its branches, each a run of its own.
    """
    output = preflight(out)

    def block(s: int) -> list[TrainConfig]:  # every run of seed s: each variant, and its cooldown branches
        return [
            c for v in variants for c in TrainConfig(size=size, variant=v, seed=s, **options).with_branches()
        ]

    if seed is None:
        seed = next(s for s in itertools.count() if not all(map(output.holds, block(s))))
    return Runs.split(block(seed), output)


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
        found = budget(cfg.size, vocab_size=cfg.vocab_size, ladder=cfg.ladder, reference=cfg.reference,
                       recipe=cfg.recipe, steps=cfg.steps)  # fmt: skip
        r = cfg.recipe
        train = known_train_tokens(
            cfg.data, cfg.tokenizer, r.n_text, cfg.cache_dir, cfg.text_field, r.val_frac
        )
        rows[cfg.size, cfg.steps] = {
            **asdict(found),
            "passes": None if train is None else passes(found.tokens, train),
        }
    return list(rows.values())


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

"""A run's output file before training: its one reading (`preflight`), whose `OutputPlan` answers every
question asked of the file (the runs present, the published start, the recipe guard, whether a row fits),
the proof that every path a run writes can be written, and the row a run appends (`dataset_row`). Torch-free.

A command reads its output file once, whatever the number of runs: its plan
(`rr_model.run.planning.Runs`) carries the `OutputPlan` to the trainer
(`rr_model.run.trainer.train_runs`), which takes in each row it appends (`OutputPlan.extend`) instead of
reading the file again; only `append_rows` reads it once more per row, under the row's lock and through
that lock's opening, to check the file as it is at that moment.
"""

from __future__ import annotations

import errno
import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rr_core.errors import InputError, RecipeError
from rr_core.files.reading import stamp
from rr_core.files.replacing import create_new, probe
from rr_core.shapes import GPTConfig
from rr_core.sweepfile.csv_text import DataError
from rr_core.sweepfile.dataset import bundled_path, check_append, load_sweep, refuse_reference, run_keys
from rr_core.sweepfile.integrity import check_integrity
from rr_core.sweepfile.provenance import sidecar_path
from rr_core.sweepfile.schema import key_columns, several_budgets
from rr_model.config import DEFAULT_OUT, TrainConfig
from rr_model.data.token_cache import Corpus
from rr_model.run.identity import recipe_differences

if TYPE_CHECKING:
    import pandas as pd

    from rr_model.data.token_cache import Tokens

__all__ = ["OutputPlan", "preflight", "dataset_keys", "read_output", "dataset_row"]


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

"""What `rr eval` scores, as one documented value (`Scoring`), and the one call that scores it (`score`).

`Scoring`'s fields are `rr eval`'s options (`rr_core.options`: each field's type, default and help are
the option), so a notebook states a scoring as the command line does. Held-out loss and bits per byte on a
corpus (`rr_model.uses.inference.heldout`) or lm-evaluation-harness's tasks
(`rr_model.uses.downstream.task_scores`), joined onto a sweep file when asked.

Standard library at import (the command line reads the fields at start-up); torch and lm-eval load when
`score` runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rr_core.errors import InputError
from rr_core.ladder import CORPORA
from rr_core.options import option

__all__ = ["Scoring", "Scored", "score"]


@dataclass(frozen=True)
class Scoring:
    """Trained runs scored on the same text: held-out loss on `corpus`, or lm-evaluation-harness's `tasks`."""

    checkpoint: tuple[Path, ...] = field(
        metadata=option(
            "A run's weights (RUN.final.pt, a checkpoint, or a folder of one run), or with --tasks a folder "
            "`rr export` wrote; repeat to compare runs on the same text."
        )
    )
    corpus: str | None = field(
        default=None,
        metadata=option(
            f"Held-out loss on a corpus: {CORPORA}.",
            renamed=("--data", "--data names a sweep file on rr's other commands"),
        ),
    )
    tasks: str | None = field(
        default=None,
        metadata=option(
            "lm-evaluation-harness tasks instead, comma-separated (e.g. hellaswag,arc_easy): needs the 'eval' "
            "extra."
        ),
    )
    include_path: Path | None = field(
        default=None, metadata=option("With --tasks: a folder of task YAML files of your own.")
    )
    limit: int | None = field(
        default=None, metadata=option("With --tasks: the first N documents of each task.", min=1)
    )
    join: Path | None = field(
        default=None,
        metadata=option(
            "With --tasks: a sweep file whose rows get a column per task metric (TASK_METRIC), matched by "
            "size, variant and seed, written to --out."
        ),
    )
    out: Path | None = field(
        default=None, metadata=option("With --join: the new sweep file (must not exist).")
    )
    device: str | None = field(
        default=None,
        metadata=option("With --tasks: the torch device. Default: cuda if available, else cpu."),
    )
    windows: int = field(default=64, metadata=option("Windows of block_size + 1 tokens to score.", min=1))
    seed: int | None = field(
        default=None, metadata=option("Seed of the window starts. Default: each run's own seed.", min=0)
    )
    batch: int = field(default=16, metadata=option("Windows (or task requests) per forward pass.", min=1))

    @property
    def task_names(self) -> list[str]:
        """The names `tasks` lists (empty without --tasks)."""
        return [t.strip() for t in (self.tasks or "").split(",") if t.strip()]

    def check(self) -> None:
        """Refuse options that do not go together (InputError): one of corpus and tasks, the task options
        only with tasks, join with out."""
        if (self.corpus is None) == (self.tasks is None):
            raise InputError(
                "rr eval scores either held-out loss (--corpus CORPUS) or tasks (--tasks NAMES): give one"
            )
        task_only = (self.include_path, self.limit, self.join, self.out, self.device)
        if self.tasks is None and any(v is not None for v in task_only):
            raise InputError("--include-path, --limit, --join, --out and --device go with --tasks")
        if (self.join is None) != (self.out is None):
            raise InputError(
                "--join SWEEP and --out NEW go together: the sweep's rows with the scores go to --out"
            )


@dataclass(frozen=True)
class Scored:
    """What `score` found: a row per run (held-out) or per run and task metric (tasks), and for a join its
    summary (`rr_core.sweepfile.merge.join_columns`: columns, joined, rows), else None."""

    rows: list[dict[str, Any]]
    joined: dict[str, Any] | None = None


def score(scoring: Scoring) -> Scored:
    """Score every run of `scoring` on the same text (`Scoring.check` first).

    Held-out (`corpus`): a row per run with its title under "run" and `rr_model.uses.inference.heldout`'s
    columns. Tasks: a row per run and task metric (run, task, metric, value, stderr), the scores joined onto
    `join`'s rows into `out` when given (`rr_model.uses.downstream.measured_columns`).
    """
    scoring.check()
    if scoring.tasks is None:
        from rr_model.uses.inference import heldout, load_trained

        rows = []
        for path in scoring.checkpoint:
            trained = load_trained(path)
            found = heldout(
                trained, scoring.corpus, windows=scoring.windows, seed=scoring.seed, batch=scoring.batch
            )
            rows.append({"run": trained.title, **found})
        return Scored(rows)
    from rr_model.uses.downstream import measured_columns, task_scores

    scores = task_scores(
        scoring.checkpoint,
        scoring.task_names,
        include_path=scoring.include_path,
        limit=scoring.limit,
        batch=scoring.batch,
        device=scoring.device,
    )
    joined = None
    if scoring.join is not None:
        from rr_core.sweepfile.merge import join_columns  # pandas: not before an offline refusal

        joined = join_columns(scoring.join, measured_columns(scores), scoring.out)
    return Scored([{"run": s.title, **r} for s in scores for r in s.scores], joined)

"""`rr eval`: trained runs scored on the same text: held-out loss and bits per byte on windows of a corpus,
or lm-evaluation-harness's tasks on the same examples, joined onto a sweep file when asked."""

from __future__ import annotations

from pathlib import Path

import typer

from cli.errors import fail, known_errors
from cli.fields import either, renamed
from cli.options import CORPORA
from cli.records import FORMAT_HELP, Format, echo_records
from rr_analysis.numbers import fixed

# The options of --tasks (lm-evaluation-harness), declared here to keep `evaluate` readable.
TASKS = typer.Option(
    None,
    "--tasks",
    help="lm-evaluation-harness tasks instead, comma-separated (e.g. hellaswag,arc_easy): needs the 'eval' extra.",
    show_default=False,
)
INCLUDE_PATH = typer.Option(
    None, "--include-path", help="With --tasks: a folder of task YAML files of your own.", show_default=False
)
LIMIT = typer.Option(
    None, "--limit", min=1, help="With --tasks: the first N documents of each task.", show_default=False
)
JOIN = typer.Option(
    None,
    "--join",
    help="With --tasks: a sweep file whose rows get a column per task metric (TASK_METRIC), matched by "
    "size, variant and seed, written to --out.",
    show_default=False,
)
OUT = typer.Option(
    None, "--out", help="With --join: the new sweep file (must not exist).", show_default=False
)
DEVICE = typer.Option(
    None,
    "--device",
    help="With --tasks: the torch device. Default: cuda if available, else cpu.",
    show_default=False,
)


def evaluate(
    checkpoint: list[Path] = typer.Option(
        ...,
        "--checkpoint",
        help="A run's weights (RUN.final.pt, a checkpoint, or a folder of one run), or with --tasks a folder "
        "`rr export` wrote; repeat to compare runs on the same text.",
        show_default=False,
    ),
    corpus: str | None = typer.Option(
        None,
        "--corpus",
        help=f"Held-out loss on a corpus: {CORPORA}.",
        show_default=False,
    ),
    tasks: str | None = TASKS,
    include_path: Path | None = INCLUDE_PATH,
    limit: int | None = LIMIT,
    join: Path | None = JOIN,
    out: Path | None = OUT,
    device: str | None = DEVICE,
    windows: int = typer.Option(64, "--windows", min=1, help="Windows of block_size + 1 tokens to score."),
    seed: int | None = typer.Option(
        None,
        "--seed",
        min=0,
        help="Seed of the window starts. Default: each run's own seed.",
        show_default=False,
    ),
    batch: int = typer.Option(16, "--batch", min=1, help="Windows (or task requests) per forward pass."),
    fmt: Format = typer.Option(Format.text, "--format", help=FORMAT_HELP),
    data: str | None = renamed("--corpus", "--data", "--data names a sweep file on rr's other commands"),
) -> None:
    """Score runs on the same text: held-out loss and bits per byte (--corpus), or downstream tasks (--tasks).

    --corpus: mean loss (nats per token) and bits per byte on the validation part (last 3%) of a corpus.
    Window starts come from a seeded stream independent of the model, so every run of a seed, whatever
    its variant, is scored on the same text; bits per byte divide by the text's UTF-8 bytes, so runs with
    different tokenizers compare too.

    --tasks: lm-evaluation-harness on each run as transformers loads its export (a checkpoint is exported
    to a temporary folder), every run on the same documents; a table of task, metric, value and standard
    error per run. --join runs.csv --out evals.csv writes the sweep's rows with the scores as columns, for
    `rr analyze --data evals.csv --metric TASK_acc --higher-is-better`.
    """
    corpus = either("--corpus", "--data", corpus, data, corpus is not None)
    if (corpus is None) == (tasks is None):
        raise fail("rr eval scores either held-out loss (--corpus CORPUS) or tasks (--tasks NAMES): give one")
    if tasks is None and any(v is not None for v in (include_path, limit, join, out, device)):
        raise fail("--include-path, --limit, --join, --out and --device go with --tasks")
    if (join is None) != (out is None):
        raise fail("--join SWEEP and --out NEW go together: the sweep's rows with the scores go to --out")
    if tasks is not None:
        names = [t.strip() for t in tasks.split(",") if t.strip()]
        _tasks(checkpoint, names, include_path, limit, batch, device, join, out, fmt)
    else:
        _heldout(checkpoint, corpus, windows, seed, batch, fmt)


def _heldout(checkpoint, corpus, windows, seed, batch, fmt) -> None:
    """--corpus: held-out loss and bits per byte of each run."""
    from rr_model.uses.inference import heldout, load_trained

    with known_errors():
        rows = []
        for path in checkpoint:
            trained = load_trained(path)
            result = heldout(trained, corpus, windows=windows, seed=seed, batch=batch)
            rows.append({"run": trained.title, **result})
    echo_records(
        rows,
        fmt,
        title=f"Held-out loss on {corpus}: {windows} windows",
        formats={k: lambda v: fixed(v, 4) for k in ("loss", "bpb", "tokens_per_byte")},
    )


def _tasks(checkpoint, names, include_path, limit, batch, device, join, out, fmt) -> None:
    """--tasks: score, print the table, join the scores onto a sweep file when asked."""
    from rr_model.uses.downstream import measured_columns, task_scores

    with known_errors():
        scores = task_scores(
            checkpoint, names, include_path=include_path, limit=limit, batch=batch, device=device
        )
        done = None
        if join is not None:
            from rr_core.sweepfile.merge import join_columns  # pandas: not before an offline refusal

            done = join_columns(join, measured_columns(scores), out)
    rows = [{"run": s.title, **r} for s in scores for r in s.scores]
    shown = f", the first {limit} documents of each" if limit else ""
    echo_records(
        rows,
        fmt,
        title=f"lm-evaluation-harness: {', '.join(names)}{shown}",
        formats={k: lambda v: fixed(v, 4) for k in ("value", "stderr")},
    )
    if done is not None:
        typer.echo(
            f"rr eval: {', '.join(done['columns'])} joined onto {done['joined']} of {done['rows']} rows "
            f"of {join}: {out}",
            err=True,
        )


def register(app: typer.Typer) -> None:
    app.command(name="eval")(evaluate)

"""`rr eval`: trained runs scored on the same text: held-out loss and bits per byte on windows of a corpus,
or lm-evaluation-harness's tasks on the same examples, joined onto a sweep file when asked. Its options are
`rr_model.uses.scoring.Scoring`'s fields; `rr_model.uses.scoring.score` scores them."""

from __future__ import annotations

import typer

from cli.errors import known_errors
from cli.fields import dataclass_options
from cli.records import FORMAT_HELP, Format, echo_records
from rr_analysis.numbers import fixed
from rr_model.uses.scoring import Scoring


@dataclass_options(Scoring, into="scoring")
def evaluate(scoring: Scoring, fmt: Format = typer.Option(Format.text, "--format", help=FORMAT_HELP)) -> None:
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
    from rr_model.uses.scoring import score

    with known_errors():
        scored = score(scoring)
    if scoring.tasks is None:
        title = f"Held-out loss on {scoring.corpus}: {scoring.windows} windows"
        formats = {k: lambda v: fixed(v, 4) for k in ("loss", "bpb", "tokens_per_byte")}
    else:
        shown = f", the first {scoring.limit} documents of each" if scoring.limit else ""
        title = f"lm-evaluation-harness: {', '.join(scoring.task_names)}{shown}"
        formats = {k: lambda v: fixed(v, 4) for k in ("value", "stderr")}
    echo_records(scored.rows, fmt, title=title, formats=formats)
    if (done := scored.joined) is not None:
        typer.echo(
            f"rr eval: {', '.join(done['columns'])} joined onto {done['joined']} of {done['rows']} rows "
            f"of {scoring.join}: {scoring.out}",
            err=True,
        )


def register(app: typer.Typer) -> None:
    app.command(name="eval")(evaluate)

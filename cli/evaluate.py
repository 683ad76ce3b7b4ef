"""`rr eval`: loss and bits per byte of trained runs on the same windows of a held-out corpus."""

from __future__ import annotations

from pathlib import Path

import typer

from cli.errors import fail, known_errors
from cli.records import FORMAT_HELP, Format, echo_records
from cli.run_options import either, renamed
from rr_analysis.numbers import fixed


def evaluate(
    checkpoint: list[Path] = typer.Option(
        ...,
        "--checkpoint",
        help="A run's weights (RUN.final.pt, a checkpoint, or a folder of one run); repeat to compare runs "
        "on the same windows.",
        show_default=False,
    ),
    corpus: str | None = typer.Option(
        None,
        "--corpus",
        help="The corpus (required): synthetic, tinystories, a .txt/.jsonl/.parquet file or a token cache.",
        show_default=False,
    ),
    windows: int = typer.Option(64, "--windows", min=1, help="Windows of block_size + 1 tokens to score."),
    seed: int | None = typer.Option(
        None,
        "--seed",
        min=0,
        help="Seed of the window starts. Default: each run's own seed.",
        show_default=False,
    ),
    batch: int = typer.Option(16, "--batch", min=1, help="Windows per forward pass (memory only)."),
    fmt: Format = typer.Option(Format.text, "--format", help=FORMAT_HELP),
    data: str | None = renamed("--corpus", "--data", "--data names a sweep file on rr's other commands"),
) -> None:
    """Mean loss (nats per token) and bits per byte on the validation part (last 3%) of a corpus.

    Window starts come from a seeded stream independent of the model, so every run of a seed, whatever
    its variant, is scored on the same text; bits per byte divide by the text's UTF-8 bytes, so runs with
    different tokenizers compare too.
    """
    from rr_model.inference import heldout, load_trained

    if (corpus := either("--corpus", "--data", corpus, data, corpus is not None)) is None:
        raise fail("rr eval needs --corpus: the corpus to score the runs on")
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


def register(app: typer.Typer) -> None:
    app.command(name="eval")(evaluate)

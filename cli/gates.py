"""`rr gates`: what each gate of a run does on held-out text of its corpus (the gate anatomy), or how open
each residual gate of a fresh model (or, with --stories, of a byte-level run) is on a batch of the synthetic
stories."""

from __future__ import annotations

from pathlib import Path

import typer

from cli import options
from cli.errors import fail, known_errors
from cli.records import FORMAT_HELP, Format, echo_records
from rr_analysis.numbers import fixed, significant


def gates(
    ctx: typer.Context,
    size: str = typer.Option("tiny", "--size", help="Ladder size of a fresh model."),
    variant: str = typer.Option(
        "review_neutral", "--variant", help="A variant whose residual rule has a gate (Review, Highway)."
    ),
    checkpoint: Path | None = typer.Option(
        None,
        "--checkpoint",
        help="A run's weights: OUT.checkpoints/RUN.final.pt (kept when a run finishes), a checkpoint, or the "
        "folder OUT.checkpoints/ of one run, of any vocabulary: its gate anatomy on held-out windows of its "
        "corpus (or --corpus).",
        show_default=False,
    ),
    batch: int = typer.Option(
        8,
        "--batch",
        min=1,
        help="Sequences in the batch, each one block long; for a run's anatomy, windows per forward pass.",
    ),
    seed: int = typer.Option(
        0,
        "--seed",
        min=0,
        help="Seed of the batch (and of a fresh model's weights); for a run's anatomy, of the windows' starts.",
    ),
    anatomy: bool = typer.Option(
        False,
        "--anatomy",
        help="What --checkpoint reads anyway, and said so: the gate anatomy on held-out windows of the run's "
        "corpus: mean r, token_share (the share of r's variance that depends on the token), freeze_delta (the "
        "loss change when r is frozen at its per-channel mean), and for Review the shares of the gate logit's "
        "variance from the stream half of W, the update half and their covariance (docs/extending.md, "
        "Against the field).",
    ),
    stories: bool = typer.Option(
        False,
        "--stories",
        help="With --checkpoint: r on a batch of the synthetic stories, as a fresh model is read, instead of the "
        "anatomy (a byte-level run only).",
    ),
    corpus: str | None = options.RUN_CORPUS,
    windows: int = options.WINDOWS,
    fmt: Format = typer.Option(Format.text, "--format", help=FORMAT_HELP),
) -> None:
    """The gate anatomy of a run (--checkpoint) on held-out text of its own corpus; for a fresh model (or a
    byte-level run with --stories), the mean and spread of each gated sublayer's r on a batch of the synthetic
    stories (no download).

    r near 1 lets the update through, near 0 holds it back; Review's gates start at exactly 0.5.
    """
    given = {name for name in ("corpus", "windows") if ctx.get_parameter_source(name).name != "DEFAULT"}
    if checkpoint is None and (anatomy or given):
        said = "--anatomy reads" if anatomy else "--corpus and --windows choose the held-out text of"
        raise fail(f"{said} a run's gate anatomy: give --checkpoint")
    if stories and (anatomy or given):
        raise fail(
            "--stories reads r on a batch of the synthetic stories; --anatomy, --corpus and --windows read the "
            "anatomy on held-out text: give one or the other"
        )
    if checkpoint is not None and not stories:
        _anatomy(checkpoint, corpus, windows, seed, batch, fmt)
        return
    from rr_model.uses.gates import gates as read

    with known_errors():
        df = read(size, variant, checkpoint_path=checkpoint, batch=batch, seed=seed)
    where = str(checkpoint) if checkpoint else f"{variant} at {size}, fresh (seed {seed})"
    echo_records(
        df.to_dict("records"),
        fmt,
        title=f"Gate r per sublayer: {where}; {batch} sequences of synthetic stories",
        formats={k: lambda v: fixed(v, 4) for k in ("mean", "std", "frac_open", "frac_closed")},
    )


def _anatomy(checkpoint: Path, corpus: str | None, windows: int, seed: int, batch: int, fmt: Format) -> None:
    from rr_model.uses.anatomy import anatomy

    with known_errors():
        found = anatomy(checkpoint, corpus=corpus, windows=windows, seed=seed, batch=batch)
    shares = ("token_share", "state_share", "update_share", "cov_share")
    echo_records(
        found.table.astype(object).where(found.table.notna(), None).to_dict("records"),
        fmt,
        title=f"Gate anatomy per sublayer: {found.path}; {windows} held-out windows of {found.corpus} "
        f"({found.tokens:,} tokens, {found.tokenizer}, seed {seed}), loss {found.loss:.4f}",
        formats={
            **{k: lambda v: fixed(v, 4) for k in ("mean", "std")},
            **{k: lambda v: fixed(v, 3) for k in shares},
            "freeze_delta": lambda v: fixed(v, 5, sign=True),
            "logit_var": lambda v: significant(v, 4),
        },
    )


def register(app: typer.Typer) -> None:
    app.command()(gates)

"""`rr gates`: what each gate of a run does on held-out text of its corpus (the gate anatomy), or how open
each residual gate of a fresh model (or, with --stories, of a byte-level run) is on a batch of the synthetic
stories. Its options are `rr_model.uses.gate_reading.GateReading`'s fields; `read` reads them."""

from __future__ import annotations

import typer

from cli.errors import fail, known_errors
from cli.fields import dataclass_options
from cli.records import FORMAT_HELP, Format, echo_records
from rr_analysis.numbers import fixed, significant
from rr_model.uses.gate_reading import GateReading


@dataclass_options(GateReading, into="reading")
def gates(
    ctx: typer.Context,
    reading: GateReading,
    fmt: Format = typer.Option(Format.text, "--format", help=FORMAT_HELP),
) -> None:
    """The gate anatomy of a run (--checkpoint) on held-out text of its own corpus; for a fresh model (or a
    byte-level run with --stories), the mean and spread of each gated sublayer's r on a batch of the synthetic
    stories (no download).

    r near 1 lets the update through, near 0 holds it back; Review's gates start at exactly 0.5.
    """
    given = {name for name in ("corpus", "windows") if ctx.get_parameter_source(name).name != "DEFAULT"}
    if reading.checkpoint is None and (reading.anatomy or given):
        said = "--anatomy reads" if reading.anatomy else "--corpus and --windows choose the held-out text of"
        raise fail(f"{said} a run's gate anatomy: give --checkpoint")
    if reading.stories and (reading.anatomy or given):
        raise fail(
            "--stories reads r on a batch of the synthetic stories; --anatomy, --corpus and --windows read the "
            "anatomy on held-out text: give one or the other"
        )
    from rr_model.uses.gate_reading import read

    with known_errors():
        found = read(reading)
    if reading.reads_anatomy:
        return _anatomy(found, reading, fmt)
    where = (
        str(reading.checkpoint)
        if reading.checkpoint
        else f"{reading.variant} at {reading.size}, fresh (seed {reading.seed})"
    )
    echo_records(
        found.to_dict("records"),
        fmt,
        title=f"Gate r per sublayer: {where}; {reading.batch} sequences of synthetic stories",
        formats={k: lambda v: fixed(v, 4) for k in ("mean", "std", "frac_open", "frac_closed")},
    )


def _anatomy(found, reading: GateReading, fmt: Format) -> None:
    """Print a run's gate anatomy (`rr_model.uses.anatomy.Anatomy`)."""
    shares = ("token_share", "state_share", "update_share", "cov_share")
    echo_records(
        found.table.astype(object).where(found.table.notna(), None).to_dict("records"),
        fmt,
        title=f"Gate anatomy per sublayer: {found.path}; {reading.windows} held-out windows of {found.corpus} "
        f"({found.tokens:,} tokens, {found.tokenizer}, seed {reading.seed}), loss {found.loss:.4f}",
        formats={
            **{k: lambda v: fixed(v, 4) for k in ("mean", "std")},
            **{k: lambda v: fixed(v, 3) for k in shares},
            "freeze_delta": lambda v: fixed(v, 5, sign=True),
            "logit_var": lambda v: significant(v, 4),
        },
    )


def register(app: typer.Typer) -> None:
    app.command()(gates)

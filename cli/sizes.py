"""`rr sizes`: the shape and exact parameter count of every ladder size and variant."""

from __future__ import annotations

import typer

from cli.records import FORMAT_HELP, Format, echo_records


def sizes(
    fmt: Format = typer.Option(Format.text, "--format", help=FORMAT_HELP),
    vocab: int | None = typer.Option(
        50257, "--vocab", min=1, help="Vocabulary size (GPT-2: 50257; byte-level: 257)."
    ),
) -> None:
    """List d_model, n_layer, n_head, head_dim and the exact parameter count of every size x variant.

    Baselines are widened in steps of n_head to Review's count at the same depth, so their width depends
    on --vocab. Counted by arithmetic: instant, no model is built.
    """
    from rr_model.config import size_table
    from rr_model.core.ladder import RECIPE

    vocab = vocab or RECIPE.vocab_size
    echo_records(
        size_table(vocab),
        fmt,
        title=f"Ladder x variant, vocabulary {vocab:,}",
        formats={"params": "{:,}".format, "params_M": "{:.2f}".format},
    )


def register(app: typer.Typer) -> None:
    app.command()(sizes)

"""`rr sizes`: the shape and exact parameter count of every ladder size and variant."""

from __future__ import annotations

from pathlib import Path

import typer

from cli.errors import known_errors
from cli.fields import field_option, field_type
from cli.records import FORMAT_HELP, Format, echo_records
from cli.run_options import MEMORY_FORMATS, echo_budget
from rr_analysis.numbers import fixed, significant
from rr_core.ladder import RECIPE
from rr_model.config import TrainConfig

Precision = field_type(
    TrainConfig, "precision"
)  # TrainConfig's choices, parsed as its training options parse them
BUDGET = "Budget (--budget)"  # the help panel of the options of the budget view
BUDGET_VIEW = typer.Option(
    False,
    "--budget",
    help="Instead: each size's training budget: steps, tokens, tokens per parameter of the reference, "
    "training FLOPs (6 N' D plus attention) and, with --corpus, passes over the corpus.",
    rich_help_panel=BUDGET,
)
CORPUS = typer.Option(
    None,
    "--corpus",
    help="--budget: the passes over this corpus, where it is tokenized already (a token cache, or a corpus a "
    "run has tokenized).",
    rich_help_panel=BUDGET,
)


def sizes(
    fmt: Format = typer.Option(Format.text, "--format", help=FORMAT_HELP),
    vocab: int | None = typer.Option(
        RECIPE.vocab_size,
        "--vocab",
        min=1,
        help=f"Vocabulary size (GPT-2: {RECIPE.vocab_size}; byte-level: 257).",
    ),
    ladder: Path | None = field_option(TrainConfig, "ladder"),
    variant: list[str] = typer.Option(
        None,
        "--variant",
        help="Only this variant (repeatable; a plugin's too). Default: every registered variant.",
        show_default=False,
    ),
    reference: str = field_option(TrainConfig, "reference"),
    memory: bool = typer.Option(
        False,
        "--memory",
        help="Instead: the memory plan of each size per GPU (state exact; gathered parameters, activations "
        "and evaluation estimated) for data parallel and fsdp, with and without activation checkpointing.",
    ),
    gpus: int = typer.Option(1, "--gpus", min=1, help="--memory: the GPUs a run spans."),
    gpu_memory: float | None = field_option(TrainConfig, "gpu_memory"),
    precision: Precision = field_option(TrainConfig, "precision"),
    budget: bool = BUDGET_VIEW,
    steps: int | None = field_option(TrainConfig, "steps", BUDGET),
    tokens: int | None = field_option(TrainConfig, "tokens", BUDGET),
    tokens_per_param: float | None = field_option(TrainConfig, "tokens_per_param", BUDGET),
    corpus: str | None = CORPUS,
) -> None:
    """List d_model, n_layer, n_head, head_dim and the exact parameter count of every size x variant.

    Baselines are matched in steps of n_head to the reference's count (Review's, or --reference's) at the
    same depth, so their width depends on --vocab. Counted by arithmetic: instant, no model is built. `--memory` plans each size's memory
    per GPU instead (docs/training.md, "Past one GPU"); `--budget` shows each size's training budget (steps,
    tokens, tokens per parameter, FLOPs; docs/training.md, "Budgets"), at --steps, --tokens or
    --tokens-per-param where given.
    """
    from rr_core.ladder import BYTE_EOS, RECIPE
    from rr_core.shapes import demo_counts, size_table

    vocab = vocab or RECIPE.vocab_size
    given = {"steps": steps, "tokens": tokens, "tokens_per_param": tokens_per_param}
    if budget or corpus or any(v is not None for v in given.values()):
        return _budget(fmt, vocab, ladder, reference, corpus, given)
    if memory:
        return _memory(fmt, vocab, ladder, gpus, gpu_memory, getattr(precision, "value", precision))
    with known_errors():
        table = size_table(vocab, ladder, variant or None, reference)
    which = "Ladder" if ladder is None else f"Ladder file {ladder} (your sizes, not the published ladder)"
    byte_vocab = BYTE_EOS + 1
    # whose vocabulary the counts assume: widths and counts follow it (baselines widen to Review's count)
    whose = {
        RECIPE.vocab_size: f"GPT-2's tokenizer, as the published runs; the synthetic demo's bytes: --vocab {byte_vocab}",
        byte_vocab: f"bytes, as the synthetic demo; the published runs: --vocab {RECIPE.vocab_size}",
    }.get(vocab, "as given by --vocab")
    echo_records(
        table,
        fmt,
        title=f"{which} x variant, vocabulary {fixed(vocab, 0, grouped=True)} ({whose})",
        formats={"params": lambda v: fixed(v, 0, grouped=True), "params_M": lambda v: fixed(v, 2)},
    )
    if fmt is Format.text and (said := demo_counts(vocab, ladder, variant, reference)):
        typer.echo(said)


def _memory(fmt: Format, vocab: int, ladder, gpus: int, gpu_memory: float | None, precision: str) -> None:
    """`rr sizes --memory`: the memory plan of every size, in GiB per GPU (raw bytes in csv and json)."""
    from rr_model.parallel.memory import size_plans

    with known_errors():
        rows, left_out = size_plans(vocab, ladder, gpus, precision, gpu_memory)
    against = (
        f"against {significant(gpu_memory)} GiB" if gpu_memory else "give --gpu-memory GiB to see which fit"
    )
    title = f"Memory per GPU (GiB) of each size's largest compared variant on {gpus} GPU(s), {precision}, {against}"
    echo_records(rows, fmt, title=title, formats=MEMORY_FORMATS)
    if left_out and fmt is Format.text:
        typer.echo(f"left out: {', '.join(left_out)} (the batch does not split over {gpus} GPUs)")


def _budget(fmt: Format, vocab: int, ladder, reference: str, corpus: str | None, given: dict) -> None:
    """`rr sizes --budget`: every size's budget, at its own or the given one (`rr_model.run.planning.size_budgets`)."""
    from rr_model.run.planning import size_budgets

    with known_errors():
        rows = size_budgets(vocab, ladder, reference, corpus, **given)
    stated = ", ".join(f"{k.replace('_', ' ')} {significant(v)}" for k, v in given.items() if v is not None)
    title = (
        f"Budget per size, vocabulary {fixed(vocab, 0, grouped=True)}: {stated or 'as the ladder states it'}"
    )
    echo_budget(rows, title, fmt)


def register(app: typer.Typer) -> None:
    app.command()(sizes)

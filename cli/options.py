"""The options that choose a comparison, for `rr analyze`, `rr plot` and `rr report`, and the text a gate
anatomy reads, for `rr gates --anatomy` and `rr plot gates --checkpoint`.

`--reference`, `--baselines`, `--metric`, `--higher-is-better` and `--sizes` are the fields of
`rr_analysis.comparison.Comparison`, whose defaults (the published comparison), help and metavars are
declared there once and read here; `comparison` makes the value every analysis function takes. That module
loads no numpy or pandas at import, so `rr --help` stays light.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import typer

from rr_analysis.comparison import Comparison

__all__ = [
    "REFERENCE",
    "BASELINES",
    "METRIC",
    "HIGHER_IS_BETTER",
    "SIZES",
    "comparison",
    "RUN_CORPUS",
    "WINDOWS",
]


def _listed(what: str, example: str):
    """A callback reading 'a, b' as ['a', 'b'] (None stays None: the field's default), naming `what` and an
    `example` when a name is empty."""

    def names(value: str | None) -> list[str] | None:
        if value is None:
            return None
        names = [n.strip() for n in value.split(",")]
        if not all(names):
            raise typer.BadParameter(
                f"{value!r} has an empty name; give {what} separated by commas, e.g. {example}"
            )
        return names

    return names


def _option(name: str, **how: Any) -> Any:
    """`Comparison`'s field `name` as a typer option: its default, help and metavar from the field."""
    (field,) = (f for f in fields(Comparison) if f.name == name)
    flag = "--" + name.replace("_", "-")
    shown = field.default is not None  # no default to show: the help says what None means
    meta = field.metadata
    return typer.Option(
        field.default, flag, metavar=meta["metavar"], help=meta["help"], show_default=shown, **how
    )


REFERENCE = _option("reference")
BASELINES = _option("baselines", callback=_listed("variant names", "highway,standard"))  # comma-separated
METRIC = _option("metric")
HIGHER_IS_BETTER = _option("higher_is_better")
SIZES = _option("sizes", callback=_listed("size names", "60M,150M"))


def comparison(
    reference: str,
    baselines: list[str] | None,
    metric: str,
    higher_is_better: bool,
    sizes: list[str] | None = None,
) -> Comparison:
    """The comparison the options choose: the one value the analysis functions take."""
    return Comparison(reference, baselines, metric, higher_is_better, sizes)


# The held-out text of a gate anatomy (`rr_model.uses.anatomy.anatomy`).
RUN_CORPUS = typer.Option(
    None,
    "--corpus",
    help="The corpus whose validation part the gate anatomy reads, tokenized with the run's tokenizer "
    "(synthetic, tinystories, a .txt/.jsonl/.parquet file or a token cache). Default: the run's own, split as "
    "it was split for the run.",
    show_default=False,
)
WINDOWS = typer.Option(
    64, "--windows", min=1, help="Held-out windows of block_size + 1 tokens the gate anatomy reads."
)

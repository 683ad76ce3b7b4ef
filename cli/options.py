"""The text a gate anatomy reads, for `rr gates --anatomy` and `rr plot gates --checkpoint`.

(The options that choose a comparison are `rr_analysis.comparison.Comparison`'s fields, given to `rr analyze`,
`rr plot` and `rr report` by `cli.fields.dataclass_options`.)
"""

from __future__ import annotations

import typer

from rr_core.ladder import PUBLISHED_CORPUS

__all__ = ["CORPORA", "RUN_CORPUS", "WINDOWS"]

# The corpora a scoring command reads, as its help says them.
CORPORA = f"synthetic, {PUBLISHED_CORPUS}, a .txt/.jsonl/.parquet file or a token cache"

# The held-out text of a gate anatomy (`rr_model.uses.anatomy.anatomy`).
RUN_CORPUS = typer.Option(
    None,
    "--corpus",
    help="The corpus whose validation part the gate anatomy reads, tokenized with the run's tokenizer "
    f"({CORPORA}). Default: the run's own, split as "
    "it was split for the run.",
    show_default=False,
)
WINDOWS = typer.Option(
    64, "--windows", min=1, help="Held-out windows of block_size + 1 tokens the gate anatomy reads."
)

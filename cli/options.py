"""The options that choose a comparison, declared once for `rr analyze`, `rr plot` and `rr report`.

`--reference`, `--baselines`, `--metric` and `--higher-is-better` become the keyword arguments every analysis
function takes (`rr_analysis.comparison.compare`). Their defaults are the published comparison, spelled here rather
than imported so that `rr --help` loads no more than typer (tests/test_cli_model.py checks they agree with
`rr_core.variants.REFERENCE` and `rr_analysis.comparison.METRIC`).
"""

from __future__ import annotations

import typer

__all__ = ["REFERENCE", "BASELINES", "METRIC", "HIGHER_IS_BETTER", "comparison"]


def _names(value: str | None) -> list[str] | None:
    """'highway, standard' -> ['highway', 'standard']; None stays None (every other variant present)."""
    if value is None:
        return None
    names = [n.strip() for n in value.split(",")]
    if not all(names):
        raise typer.BadParameter(
            f"{value!r} has an empty name; give variant names separated by commas, e.g. highway,standard"
        )
    return names


REFERENCE = typer.Option(
    "review_neutral",
    "--reference",
    metavar="NAME",
    help="The variant every gap is measured against (positive gap: the reference is better).",
)
BASELINES = typer.Option(
    None,
    "--baselines",
    metavar="A,B,...",
    callback=_names,
    help="The variants compared with the reference, comma-separated, in this order. Default: every other "
    "variant present (the published sweep: highway, standard).",
    show_default=False,
)
METRIC = typer.Option(
    "val_loss",
    "--metric",
    metavar="COLUMN",
    help="The numeric column compared: val_loss, ece (where measured) or any extra numeric column of the "
    "file. Lower is better unless --higher-is-better.",
)
HIGHER_IS_BETTER = typer.Option(
    False,
    "--higher-is-better",
    help="The metric is better when higher (an accuracy): gaps become reference - baseline, so a positive gap "
    "still favours the reference.",
)


def comparison(reference: str, baselines: list[str] | None, metric: str, higher_is_better: bool) -> dict:
    """The options as the keyword arguments of the analysis functions."""
    return {
        "reference": reference,
        "baselines": baselines,
        "metric": metric,
        "higher_is_better": higher_is_better,
    }

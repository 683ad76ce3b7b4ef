"""`rr analyze`: the statistics of a sweep, one view at a time, rendered in one of several formats.

The views are `rr_analysis.views.registry.VIEWS`: the command parses the options, looks the view up by name
and prints its output; what a view computes, which options it reads and how it reads is the view's own.
"""

from __future__ import annotations

from pathlib import Path

import typer

from cli.choices import Adjust, Format
from cli.errors import fail, known_errors
from cli.fields import dataclass_options, field_help
from cli.help import RrCommand
from rr_analysis.comparison import Comparison
from rr_analysis.views.view_options import ViewOptions  # light: no numpy or pandas at import

DEFAULT_VIEW = "table"
_ALIAS = "Same as the view `{}`."

DATA = typer.Option(
    None,
    "--data",
    help="Sweep CSV to analyse. Default: the published dataset bundled with rr.",
    show_default=False,
)
POOL_CHECK = typer.Option(False, "--pool-check", help="Same as the view `pool-check`: can new rows pool?")


def _view(value: str | None) -> str | None:
    """The view named in any case; a misspelt one is told the nearest, as `rr plot` does for kinds."""
    if value is None:
        return None
    from rr_analysis.views.registry import VIEWS
    from rr_core.errors import did_you_mean, nearest

    names = list(VIEWS)
    if value.lower() in names:
        return value.lower()
    hint = did_you_mean(nearest(value.lower(), names))
    raise typer.BadParameter(f"'{value}' is not a view{hint}; the views are {', '.join(names)}.")


class ViewsCommand(RrCommand):
    """`rr analyze`: its help lists the views of `rr_analysis.views.registry` with their summaries and states
    the library's default margin (`rr_analysis.stats.equivalence.DEFAULT_MARGIN`, its one home), read when the
    help is shown, so that building the command (as every `rr --help` does) loads no pandas."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.plain_help = self.help

    def format_help(self, ctx, formatter) -> None:
        from rr_analysis.stats.equivalence import DEFAULT_MARGIN
        from rr_analysis.views.registry import VIEWS

        views = [f"{v.name} ({v.summary})" if v.summary else v.name for v in VIEWS.values()]
        self.help = f"{self.plain_help}\n\nViews: {', '.join(views)}. {_OLD_FLAGS}"
        names = [f"{n} (default)" if n == DEFAULT_VIEW else n for n in VIEWS]
        for param in self.params:
            if param.name == "view":
                param.help = f"What to show: {', '.join(names[:-1])} or {names[-1]}."
            if param.name == "margin":
                param.help = field_help(ViewOptions, "margin").format(margin=DEFAULT_MARGIN)
        super().format_help(ctx, formatter)


_OLD_FLAGS = "The old flags (--table, --emergence, ...) still work. Exit 0 on success, 2 for a bad --data file or option."


@dataclass_options(ViewOptions, into="options")
@dataclass_options(Comparison, into="comparison")
def analyze(
    view: str = typer.Argument(
        None,
        metavar="VIEW",
        help="What to show: one of the views below (table by default).",
        show_default=False,
        callback=_view,
    ),
    table: bool = typer.Option(False, "--table", help=_ALIAS.format("table"), hidden=True),
    emergence: bool = typer.Option(False, "--emergence", help=_ALIAS.format("emergence"), hidden=True),
    power: bool = typer.Option(False, "--power", help=_ALIAS.format("power"), hidden=True),
    notes: bool = typer.Option(False, "--notes", help=_ALIAS.format("notes"), hidden=True),
    equivalence: bool = typer.Option(False, "--equivalence", help=_ALIAS.format("equivalence"), hidden=True),
    claims: bool = typer.Option(False, "--claims", help=_ALIAS.format("claims"), hidden=True),
    pool_check: bool = POOL_CHECK,
    card: bool = typer.Option(False, "--card", help=_ALIAS.format("card"), hidden=True),
    data: Path = DATA,
    fmt: Format = typer.Option(Format.text, "--format", help="Output format."),
    adjust: Adjust = typer.Option(
        Adjust.holm, "--adjust", help="Multiple-testing adjustment of each family."
    ),
    options: ViewOptions = ViewOptions(),
    comparison: Comparison = Comparison(),
) -> None:
    """Statistics of a sweep: gap = mean(baseline) - mean(review_neutral), positive favours Review.

    Any comparison: --reference, --baselines, --metric and --higher-is-better choose it (claims and
    reproduction are the paper's own); every format states it.
    """
    flags = {
        "table": table,
        "emergence": emergence,
        "power": power,
        "notes": notes,
        "equivalence": equivalence,
        "claims": claims,
        "card": card,
        "pool-check": pool_check,
    }
    name = _one_view(view, flags)
    given = options.given(comparison, adjust.value, data)
    with known_errors():
        from cli.dataload import load_checked
        from rr_analysis.views.registry import VIEWS

        chosen = VIEWS[name].chosen(given)
        df = load_checked(data, warn=not chosen.reruns)
        width = options.width(fmt is Format.text)
        typer.echo(chosen.output(df, given, fmt.value, width, options.names), nl=False)


def _one_view(view: str | None, flags: dict[str, bool]) -> str:
    """The one view chosen by the argument or an old flag (the table when none is)."""
    chosen = {name for name, on in flags.items() if on} | ({view} if view else set())
    if len(chosen) > 1:
        raise fail(f"choose one view, not {' and '.join(sorted(chosen))}")
    return chosen.pop() if chosen else DEFAULT_VIEW


def register(app: typer.Typer) -> None:
    app.command(cls=ViewsCommand)(analyze)

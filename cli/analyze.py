"""`rr analyze`: the statistics of a sweep, one view at a time, rendered in one of several formats.

The views are `rr_analysis.views.registry.VIEWS`: the command parses the options, looks the view up by name
and prints its output; what a view computes, which options it reads and how it reads is the view's own.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import typer

from cli.choices import Adjust, Format
from cli.errors import fail, known_errors
from cli.fields import dataclass_options
from cli.help import RrCommand
from rr_analysis.comparison import POWER, Comparison

DEFAULT_VIEW = "table"
_ALIAS = "Same as the view `{}`."

COLUMNS = typer.Option(
    None,
    "--columns",
    metavar="A,B,...",
    help="These columns, comma-separated, in this order (e.g. size,gap,hedges_g). Text, markdown, latex: a "
    "header in lower case, its words joined by _ (paired_95_ci); csv, json: their own header's names. A wrong "
    "name lists the view's.",
    show_default=False,
)
DATA = typer.Option(
    None,
    "--data",
    help="Sweep CSV to analyse. Default: the published dataset bundled with rr.",
    show_default=False,
)
MARGIN = typer.Option(
    None,
    "--margin",
    help="Equivalence margin in nats for equivalence and claims (default {margin}) and for reproduction's TOST of "
    "the mean offset (default: a tenth of the published between-seed SD).",
    show_default=False,
)
EFFECT = typer.Option(
    None,
    "--effect",
    help="power: plan seeds to detect this gap (nats) on the primary test, e.g. 0.003.",
    show_default=False,
)
NOISE = typer.Option(
    None,
    "--noise",
    help="reproduction: the SD of the difference between two runs of one seed. Default: assumed, a tenth of "
    "the published between-seed SD.",
    show_default=False,
)
AGAINST = typer.Option(
    None,
    "--against",
    help="reproduction: the rows re-run. Default: the published ones; another re-run measures the same-seed noise.",
    show_default=False,
)
POOL_CHECK = typer.Option(False, "--pool-check", help="Same as the view `pool-check`: can new rows pool?")
CLAIMS_FILE = typer.Option(
    None,
    "--claims-file",
    help="claims: the claims to audit (TOML records). Default: the paper's, bundled with rr.",
    show_default=False,
)
AT = typer.Option(
    None,
    "--at",
    help="forecast: a size to forecast, a ladder name or a count such as 3B; repeat for more.",
    show_default=False,
)
TARGET_POWER = typer.Option(POWER, "--target-power", help="confirm: the power to plan for (0 to 1).")
LADDER = typer.Option(
    None,
    "--ladder",
    help="forecast, confirm, fits: a ladder file (TOML, as rr sweep --ladder reads) giving forecast sizes their "
    "exact parameter counts and steps; tuning: whose recipe lr is its sizes' shared rate.",
    show_default=False,
)
STEPS = typer.Option(
    None, "--steps", help="confirm: steps of the new runs. Default: the ladder's, else the largest size's."
)
TOKENS_PER_PARAM = typer.Option(
    None,
    "--tokens-per-param",
    help="forecast: the gap at this many training tokens per parameter (only a sweep that tells size from "
    "tokens per parameter can say); confirm: plan the design that can tell them apart, two sizes at this "
    "budget and at the sweep's own path (e.g. 20, about compute-optimal).",
    show_default=False,
)


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


CARD_FILE = typer.Option(
    None,
    "--card-file",
    help="The dataset card that the card view rewrites. Default: the published sweep's card, shipped in the "
    "package (with the published data only).",
    show_default=False,
)


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
                param.help = MARGIN.help.format(margin=DEFAULT_MARGIN)
        super().format_help(ctx, formatter)


_OLD_FLAGS = "The old flags (--table, --emergence, ...) still work. Exit 0 on success, 2 for a bad --data file or option."


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
    margin: float = MARGIN,
    effect: float = EFFECT,
    at: list[str] = AT,
    target_power: float = TARGET_POWER,
    steps: int = STEPS,
    tokens_per_param: float = TOKENS_PER_PARAM,
    ladder: Path = LADDER,
    wide: bool = typer.Option(False, "--wide", help="Text: every column, whatever the terminal's width."),
    columns: str | None = COLUMNS,
    claims_file: Path = CLAIMS_FILE,
    noise: float = NOISE,
    against: Path = AGAINST,
    card_file: Path | None = CARD_FILE,
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
    width = None if wide or fmt is not Format.text else shutil.get_terminal_size().columns
    options = dict(comparison=comparison, adjust=adjust.value)
    options |= dict(
        margin=margin,
        effect=effect,
        at=at or [],
        target_power=target_power,
        steps=steps,
        tokens_per_param=tokens_per_param,
        ladder=ladder and str(ladder),
        claims_file=claims_file,
        noise=noise,
        against=against,
        data=data,
        card_file=card_file,
    )
    names = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    with known_errors():
        from cli.dataload import load_checked
        from rr_analysis.views.registry import VIEWS

        chosen = VIEWS[name].chosen(options)
        df = load_checked(data, warn=not chosen.reruns)
        typer.echo(chosen.output(df, options, fmt.value, width, names), nl=False)


def _one_view(view: str | None, flags: dict[str, bool]) -> str:
    """The one view chosen by the argument or an old flag (the table when none is)."""
    chosen = {name for name, on in flags.items() if on} | ({view} if view else set())
    if len(chosen) > 1:
        raise fail(f"choose one view, not {' and '.join(sorted(chosen))}")
    return chosen.pop() if chosen else DEFAULT_VIEW


def register(app: typer.Typer) -> None:
    app.command(cls=ViewsCommand)(analyze)

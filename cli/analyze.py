"""`rr analyze`: the statistics of a sweep, one view at a time, rendered in one of several formats."""

from __future__ import annotations

import shutil
from enum import Enum
from pathlib import Path

import typer

from cli.choices import Adjust, Format
from cli.errors import fail, known_errors
from cli.options import BASELINES, HIGHER_IS_BETTER, METRIC, REFERENCE, comparison
from rr_analysis.comparison import POWER
from rr_core.errors import InputError


class View(str, Enum):
    table = "table"
    emergence = "emergence"
    power = "power"
    notes = "notes"
    equivalence = "equivalence"
    claims = "claims"
    reproduction = "reproduction"
    pool_check = "pool-check"
    forecast = "forecast"
    confirm = "confirm"
    fits = "fits"
    card = "card"


_ALIAS = "Same as the view `{}`."

COLUMNS = typer.Option(
    None,
    "--columns",
    metavar="A,B,...",
    help="These columns, comma-separated, in this order (e.g. size,gap,hedges_g). Text, markdown, latex: a "
    "header in lower case, its words joined by _ (95_ci_of_gap); csv, json: their own header's names. A wrong "
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
    help="Equivalence margin in nats for equivalence and claims (default 0.005) and for reproduction's TOST of the "
    "mean offset (default: a tenth of the published between-seed SD).",
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
    "exact parameter counts and steps.",
    show_default=False,
)
STEPS = typer.Option(
    None, "--steps", help="confirm: steps of the new runs. Default: the ladder's, else the largest size's."
)


def _view(value: str | None) -> View | None:
    """The view named in any case; a misspelt one is told the nearest, as `rr plot` does for kinds."""
    if value is None:
        return None
    names = [v.value for v in View]
    if value.lower() in names:
        return View(value.lower())
    from rr_core.errors import did_you_mean, nearest

    hint = did_you_mean(nearest(value.lower(), names))
    raise typer.BadParameter(f"'{value}' is not a view{hint}; the views are {', '.join(names)}.")


CARD_FILE = typer.Option(
    None,
    "--card-file",
    help="The dataset card that the card view rewrites. Default: the published sweep's card, shipped in the "
    "package (with the published data only).",
    show_default=False,
)


def analyze(
    view: str = typer.Argument(
        None,
        metavar="VIEW",
        help="What to show: table (default), emergence, power, notes, equivalence, claims, reproduction, "
        "pool-check, forecast, confirm, fits or card.",
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
    ladder: Path = LADDER,
    wide: bool = typer.Option(False, "--wide", help="Text: every column, whatever the terminal's width."),
    columns: str | None = COLUMNS,
    claims_file: Path = CLAIMS_FILE,
    noise: float = NOISE,
    against: Path = AGAINST,
    card_file: Path | None = CARD_FILE,
    reference: str = REFERENCE,
    baselines: str | None = BASELINES,
    metric: str = METRIC,
    higher_is_better: bool = HIGHER_IS_BETTER,
) -> None:
    """Statistics of a sweep: gap = mean(baseline) - mean(review_neutral), positive favours Review.

    Any comparison: --reference, --baselines, --metric and --higher-is-better choose it (claims and
    reproduction are the paper's own); every format states it.

    Views: table (per size: paired* primary, sign-flip, mixed, Welch), emergence, power (with --effect: a seed
    plan), notes, equivalence (--margin), claims (the paper's, audited), reproduction (--data repro.csv:
    re-runs beside the published rows), pool-check (can new rows pool?), forecast (--at 3B: the gap the
    primary size-level line predicts there), confirm (--at 3B: seeds and GPU time to settle it), fits (L = E + A N^-alpha per variant), card. The
    old flags (--table, --emergence, ...) still work. Exit 0 on success, 2 for a bad --data file or option.
    """
    flags = {"table": table, "emergence": emergence, "power": power, "notes": notes,
             "equivalence": equivalence, "claims": claims, "card": card, "pool-check": pool_check}  # fmt: skip
    chosen_view = _one_view(view, flags)
    width = None if wide or fmt is not Format.text else shutil.get_terminal_size().columns
    asked = comparison(reference, baselines, metric, higher_is_better)
    _check_comparison(chosen_view, asked)
    with known_errors():
        from cli.dataload import load_checked
        from rr_analysis.tables.render import render

        df = load_checked(data, warn=chosen_view is not View.reproduction)  # a re-run differs on purpose
        if chosen_view is View.card:
            _write_card(card_file, data, df, asked)
            return
        options = dict(adjust=adjust.value, margin=margin, effect=effect, at=at or [], comparison=asked)
        options |= dict(claims_file=claims_file, noise=noise, against=against, power=target_power, steps=steps,
                        ladder=ladder and str(ladder))  # fmt: skip
        names = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
        typer.echo(render(*_compute(chosen_view, df, options), fmt.value, width, names), nl=False)


def _one_view(view: View | None, flags: dict[str, bool]) -> View:
    """The one view chosen by the argument or an old flag (table when none is)."""
    chosen = {View(name) for name, on in flags.items() if on} | ({view} if view else set())
    if len(chosen) > 1:
        raise fail(f"choose one view, not {' and '.join(sorted(v.value for v in chosen))}")
    return chosen.pop() if chosen else View.table


def _check_comparison(view: View, asked) -> None:
    """The views that read one comparison only refuse others: the paper's claims and a re-run of the paper
    (reproduction) are about the published comparison."""
    if view in (View.claims, View.reproduction) and not asked.published:
        raise fail(
            f"the {view.value} view is about the paper's own comparison (review_neutral against highway and "
            "standard, val_loss); --reference, --baselines, --metric and --higher-is-better do not apply to it: "
            "use the table, emergence or equivalence view for another comparison"
        )


def _compute(view: View, df, options: dict) -> tuple:
    """The view's frame, from its library function with the options it reads (``comparison``: the
    `rr_analysis.comparison.Comparison`), and the name `rr_analysis.tables.render` knows it by."""
    adjust, margin, effect, kw = (
        options["adjust"],
        options["margin"],
        options["effect"],
        options["comparison"],
    )
    if view is View.forecast:
        from rr_analysis.stats.forecast import forecast

        return forecast(df, options["at"], ladder=options["ladder"], comparison=kw), "forecast"
    if view is View.confirm:
        from rr_analysis.stats.confirm import confirm_plan

        plan = {k: options[k] for k in ("power", "steps", "ladder")}
        frame = confirm_plan(df, options["at"], **plan, comparison=kw)
        return frame, "confirm"
    if view is View.fits:
        from rr_analysis.stats.scaling import scaling_fits

        return scaling_fits(df, options["at"], ladder=options["ladder"], comparison=kw), "fits"
    if view is View.table:
        from rr_analysis.stats.gap_tests import gap_table

        return gap_table(df, adjust, kw), "table"
    if view is View.emergence:
        from rr_analysis.stats.emergence import emergence

        return emergence(df, kw), "emergence"
    if view is View.power:
        from rr_analysis.stats.power import power_table, seed_plan

        frame = power_table(df, comparison=kw) if effect is None else seed_plan(df, effect, comparison=kw)
        return frame, "power" if effect is None else "plan"
    if view is View.notes:
        from rr_analysis.stats.notes import recipe_notes

        return recipe_notes(df, kw), "notes"
    if view is View.pool_check:
        from rr_analysis.stats.pooling import pool_check

        pool = pool_check(df, comparison=kw)
        return pool, "pool"
    if view is View.reproduction:
        from rr_analysis.stats.reproduction import reproduction
        from rr_core.sweepfile.dataset import load_sweep

        against = load_sweep(options["against"]) if options["against"] else None
        return reproduction(df, against, options["noise"], margin), "reproduction"
    from rr_analysis.stats.equivalence import DEFAULT_MARGIN, equivalence

    margin = DEFAULT_MARGIN if margin is None else margin
    if view is View.equivalence:
        return equivalence(df, margin, kw), "equivalence"
    from rr_analysis.claims.audit import claims

    return claims(df, margin, adjust, records=options["claims_file"]), "claims"


def _write_card(path: Path | None, data: Path | None, df, asked) -> None:
    from rr_analysis.stats.gap_tests import gap_table
    from rr_analysis.tables.card import write_card
    from rr_core.sweepfile.dataset import card_path

    if path is None and data is not None:
        raise InputError(
            f"the packaged card describes the published sweep, not {data}: give --card-file for {data}'s card"
        )
    if path is None and not asked.published:
        raise InputError(
            "the packaged card shows the paper's comparison (review_neutral against highway and standard, "
            "val_loss): give --card-file for a card of another comparison"
        )
    path = path or card_path()
    updated = write_card(path, gap_table(df, comparison=asked))
    typer.echo(f"{path}: headline table {'updated' if updated else 'already up to date'}")


def register(app: typer.Typer) -> None:
    app.command()(analyze)

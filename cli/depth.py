"""`rr depth-check`: the depth-stability finding, the convex Review form's vanishing gradient."""

from __future__ import annotations

import typer

from cli.errors import known_errors
from cli.fields import either, renamed
from cli.records import FORMAT_HELP, Format, echo_records
from rr_analysis.numbers import significant

DEFAULT = ("review_convex", "review_neutral")


def depth_check(
    ctx: typer.Context,
    layers: int = typer.Option(24, "--layers", min=1, help="Blocks (each = 2 residual sublayers)."),
    d_model: int = typer.Option(64, "--d-model", min=1, help="Residual width; the effect fades with width."),
    n_head: int = typer.Option(4, "--n-head", min=1, help="Attention heads; must divide --d-model."),
    variant: list[str] = typer.Option(
        None,
        "--variant",
        help=f"A variant to compare (repeatable). Default: {' and '.join(DEFAULT)}.",
        show_default=False,
    ),
    variants: str | None = renamed(
        "--variant", "--variants", "one --variant per variant, as rr train, rr sweep and rr sizes take them"
    ),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the initialisation and the random tokens."),
    fmt: Format = typer.Option(Format.text, "--format", help=FORMAT_HELP),
) -> None:
    """Gradient norm reaching the first block relative to the last, at init, on random tokens.

    ratio ~1 means the gradient is preserved through depth; orders of magnitude below 1 means it
    vanishes, as it does for review_convex in deep narrow models.
    """
    from rr_model.uses.depth import depth_check as run

    old = variants and [v.strip() for v in variants.split(",") if v.strip()]  # --variants a,b: one value
    given = ctx.get_parameter_source("variant").name == "COMMANDLINE"
    names = tuple(either("--variant", "--variants", variant, old, given) or DEFAULT)
    with known_errors():
        df = run(names, n_layer=layers, d_model=d_model, n_head=n_head, seed=seed)
    echo_records(
        df.to_dict("records"),
        fmt,
        title=f"dL/dx at block 0 vs block {layers - 1} ({2 * layers} sublayers, d_model {d_model}, seed {seed})",
        formats={k: lambda v: significant(v, 3) for k in ("grad_first", "grad_last", "ratio")},
    )


def register(app: typer.Typer) -> None:
    app.command("depth-check")(depth_check)

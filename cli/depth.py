"""`rr depth-check`: the depth-stability finding, the convex Review form's vanishing gradient. Its options are
`rr_model.uses.depth.DepthCheck`'s fields; `depth_check` runs them."""

from __future__ import annotations

import typer

from cli.errors import known_errors
from cli.fields import dataclass_options
from cli.records import FORMAT_HELP, Format, echo_records
from rr_analysis.numbers import significant
from rr_model.uses.depth import DepthCheck


@dataclass_options(DepthCheck, into="check")
def depth_check(
    check: DepthCheck = DepthCheck(),
    fmt: Format = typer.Option(Format.text, "--format", help=FORMAT_HELP),
) -> None:
    """Gradient norm reaching the first block relative to the last, at init, on random tokens.

    ratio ~1 means the gradient is preserved through depth; orders of magnitude below 1 means it
    vanishes, as it does for review_convex in deep narrow models.
    """
    from rr_model.uses.depth import depth_check as run

    with known_errors():
        df = run(check)
    layers, d_model, seed = check.n_layer, check.d_model, check.seed
    echo_records(
        df.to_dict("records"),
        fmt,
        title=f"dL/dx at block 0 vs block {layers - 1} ({2 * layers} sublayers, d_model {d_model}, seed {seed})",
        formats={k: lambda v: significant(v, 3) for k in ("grad_first", "grad_last", "ratio")},
    )


def register(app: typer.Typer) -> None:
    app.command("depth-check")(depth_check)

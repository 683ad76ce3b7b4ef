"""Render the analysis frames as text (rich), Markdown, LaTeX (booktabs), CSV or JSON, and keep the dataset
card's generated table in step with the data. Nothing here computes a statistic.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from rr_analysis.emergence import EMERGENCE_COLUMNS
from rr_analysis.stats import TABLE_COLUMNS
from rr_model.dataset import plain
from rr_model.errors import InputError
from rr_model.variants import REFERENCE, label

__all__ = [
    "FORMATS",
    "VIEWS",
    "render",
    "card_block",
    "update_card",
    "card_mismatch",
    "CARD_BEGIN",
    "CARD_END",
]

FORMATS: tuple[str, ...] = ("text", "markdown", "latex", "csv", "json")
CARD_BEGIN = "<!-- BEGIN GENERATED: rr analyze --card; do not edit by hand -->"
CARD_END = "<!-- END GENERATED -->"


def _missing(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _num(spec: str) -> Callable:
    return lambda v: "n/a" if _missing(v) else format(v, spec)


def _p(v) -> str:
    return "n/a" if _missing(v) else ("<0.0001" if v < 1e-4 else f"{v:.4f}")


@dataclass(frozen=True)
class Col:
    header: str  # "\n" splits a two-line header in text output
    cell: Callable[[pd.Series], str]


def _get(key: str, fmt: Callable) -> Callable[[pd.Series], str]:
    return lambda r: fmt(r[key])


@dataclass(frozen=True)
class View:
    title: str
    columns: tuple[Col, ...]
    legend: tuple[str, ...]  # which test each column is
    notes: Callable[[pd.DataFrame], list[str]]


def _ci(r) -> str:
    return "n/a" if _missing(r["ci_low"]) else f"[{r['ci_low']:.4f}, {r['ci_high']:.4f}]"


def _table_notes(t: pd.DataFrame) -> list[str]:
    out = []
    for _, r in t.iterrows():
        for view in ("welch", "paired", "mixed"):
            if r[f"{view}_note"]:
                out.append(f"{r['size']} {label(r['baseline'])}, {view}: {r[f'{view}_note']}")
    methods = sorted(set(t["mixed_method"]) - {""})
    out.append("mixed model fitted by: " + "; ".join(methods) if methods else "mixed model: not fitted")
    return out


def _row_notes(key: str) -> Callable[[pd.DataFrame], list[str]]:
    def notes(t: pd.DataFrame) -> list[str]:
        where = (
            (lambda r: f"{r['size']} {label(r['baseline'])}")
            if "size" in t
            else (lambda r: label(r["baseline"]))
        )
        return [f"{where(r)}: {r[key]}" for _, r in t.iterrows() if r[key]]

    return notes


_GAP = f"gap = mean(baseline) - mean({label(REFERENCE)}); positive favours {label(REFERENCE)} (lower loss)."

VIEWS: dict[str, View] = {
    "table": View(
        title=f"{label(REFERENCE)} vs each baseline, val_loss",
        columns=(
            Col("size", _get("size", str)),
            Col("baseline", _get("baseline", label)),
            Col("params\n(M)", _get("params_M", _num(".2f"))),
            Col("n\nR/B", lambda r: f"{r['n_review']}/{r['n_baseline']}"),
            Col(f"{label(REFERENCE)}\nmean", _get("review_mean", _num(".4f"))),
            Col("baseline\nmean", _get("baseline_mean", _num(".4f"))),
            Col("gap", _get("gap", _num(".4f"))),
            Col("Welch\nt", _get("welch_t", _num(".2f"))),
            Col("Welch\ndf", _get("welch_df", _num(".2f"))),
            Col("Welch\np", _get("welch_p", _p)),
            Col("Welch\np Holm", _get("p_holm_welch", _p)),
            Col("95% CI\nof gap", _ci),
            Col("Hedges\ng", _get("hedges_g", _num(".2f"))),
            Col("paired\nt", _get("paired_t", _num(".2f"))),
            Col("paired\ndf", _get("paired_df", _num(".0f"))),
            Col("paired\np", _get("paired_p", _p)),
            Col("paired\np Holm", _get("p_holm_paired", _p)),
            Col("mixed\ncoef", _get("mixed_coef", _num(".4f"))),
            Col("mixed\nSE", _get("mixed_se", _num(".5f"))),
            Col("mixed\ndf", _get("mixed_df", _num(".2f"))),
            Col("mixed\np", _get("mixed_p", _p)),
            Col("mixed\np Holm", _get("p_holm_mixed", _p)),
        ),
        legend=(
            _GAP,
            "Welch: two-sample t-test, unequal variances, Welch-Satterthwaite df, two-sided; 95% CI of the gap "
            "from it. Hedges' g: gap / pooled SD, small-sample corrected.",
            "paired: t-test of the seed-matched differences (same seed = same data order), df = pairs - 1, "
            "two-sided.",
            "mixed: val_loss ~ variant + (1 | seed) per size, REML, Review as reference; coef = baseline - "
            "Review, t-test with Satterthwaite df, two-sided.",
            "p Holm: Holm step-down over the size x baseline family, separately for each test.",
        ),
        notes=_table_notes,
    ),
    "emergence": View(
        title=f"Does {label(REFERENCE)}'s advantage grow with size? (gap per decade of parameters)",
        columns=(
            Col("baseline", _get("baseline", label)),
            Col("sizes", _get("n_sizes", str)),
            Col("(c) meta\nslope", _get("meta_slope", _num(".4f"))),
            Col("(c)\nSE", _get("meta_se", _num(".4f"))),
            Col("(c)\ndf", _get("meta_df", _num(".0f"))),
            Col("(c)\np", _get("meta_p", _p)),
            Col("(c)\ntau2", _get("meta_tau2", _num(".2e"))),
            Col("(c)\nQE", _get("meta_qe", _num(".2f"))),
            Col("(c) QE\np", _get("meta_qe_p", _p)),
            Col("(b) dev\nslope", _get("dev_slope", _num(".4f"))),
            Col("(b)\nSE", _get("dev_se", _num(".4f"))),
            Col("(b)\ndf", _get("dev_df", _num(".2f"))),
            Col("(b)\np", _get("dev_p", _p)),
            Col("(b) KR\ndf", _get("dev_kr_df", _num(".2f"))),
            Col("(b) KR\np", _get("dev_kr_p", _p)),
            Col("(b) var\nseed", _get("dev_var_seed", _num(".2e"))),
            Col("(b) var\nsize", _get("dev_var_size", _num(".2e"))),
            Col("(b) var\nresid", _get("dev_var_resid", _num(".2e"))),
            Col("(a) run\nslope", _get("run_slope", _num(".4f"))),
            Col("(a)\nSE", _get("run_se", _num(".4f"))),
            Col("(a)\ndf", _get("run_df", _num(".2f"))),
            Col("(a)\np", _get("run_p", _p)),
            Col("(a) LRT\nchi2", _get("lrt_chi2", _num(".2f"))),
            Col("(a) LRT\np", _get("lrt_p", _p)),
        ),
        legend=(
            _GAP,
            "Slopes: change of the gap per decade of Review's parameters; positive: the gap grows with size.",
            "(c) PRIMARY, the size-level question: per-size seed-paired gaps and SEs regressed on "
            "log10(params), REML tau2, Knapp-Hartung t on sizes - 2 df (metafor rma knha); QE: residual "
            "heterogeneity, chi-square on sizes - 2 df.",
            "(b) each size's gap may leave the line: (a) + (0 + baseline | size), REML; Satterthwaite and "
            "Kenward-Roger (KR) df; variance components seed, size deviation (this baseline), residual.",
            "(a) per-run evidence, assumes the gap is exactly linear in log size: val_loss ~ 0 + size + "
            "baseline + baseline:lxc + (1 | size:seed), REML, Satterthwaite df; LRT of all slopes (ML).",
        ),
        notes=lambda t: [f"{label(r['baseline'])}: {r['verdict']}" for _, r in t.iterrows()]
        + _row_notes("note")(t)
        + sorted(set(t["confound"].dropna()) - {""}),
    ),
    "power": View(
        title="Seeds needed for 80% power at alpha 0.05 (two-sided), and the smallest gap detectable now",
        columns=(
            Col("size", _get("size", str)),
            Col("baseline", _get("baseline", label)),
            Col("n\nR/B", lambda r: f"{r['n_review']}/{r['n_baseline']}"),
            Col("pairs", _get("n_pairs", str)),
            Col("gap", _get("gap", _num(".4f"))),
            Col("Cohen\nd", _get("cohens_d", _num(".2f"))),
            Col("seeds/arm\nunpaired", _get("seeds_unpaired", _num("d"))),
            Col("detectable\ngap now", _get("mde_unpaired", _num(".4f"))),
            Col("paired\ndz", _get("dz", _num(".2f"))),
            Col("seeds\npaired", _get("seeds_paired", _num("d"))),
            Col("detectable\ngap paired", _get("mde_paired", _num(".4f"))),
        ),
        legend=(
            _GAP,
            "unpaired: two-sample t-test, pooled SD, equal arms (statsmodels TTestIndPower's noncentral t); "
            "paired: t-test of seed-matched differences (TTestPower). Effects are the observed ones, from 2-3 "
            "seeds: rough planning figures.",
        ),
        notes=_row_notes("note"),
    ),
    "notes": View(
        title="Recipe notes",
        columns=(
            Col("kind", _get("kind", str)),
            Col("size", _get("size", str)),
            Col("note", _get("message", str)),
        ),
        legend=(),
        notes=lambda t: [],
    ),
}


def _machine_columns(view: str, frame: pd.DataFrame) -> list[str]:

    keys = {"table": TABLE_COLUMNS, "emergence": EMERGENCE_COLUMNS}.get(view)
    return list(keys) if keys else list(frame.columns)


def _text(view: View, frame: pd.DataFrame) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(title=view.title, box=box.SIMPLE_HEAD, title_justify="left")
    for i, c in enumerate(view.columns):
        table.add_column(c.header, justify="left" if i < 2 or view is VIEWS["notes"] else "right")
    for _, r in frame.iterrows():
        table.add_row(*(c.cell(r) for c in view.columns))
    buf = io.StringIO()
    Console(file=buf, width=400, no_color=True, highlight=False).print(table)
    lines = [line.rstrip() for line in buf.getvalue().splitlines()]
    lines += [*view.legend, *(f"note: {n}" for n in view.notes(frame))]
    return "\n".join(lines) + "\n"


def _markdown(view: View, frame: pd.DataFrame) -> str:
    def cell(s: str) -> str:
        return s.replace("\n", " ").replace("|", "\\|")

    lines = ["| " + " | ".join(cell(c.header) for c in view.columns) + " |"]
    lines.append("|" + "|".join("---" if i < 2 else "---:" for i in range(len(view.columns))) + "|")
    lines += ["| " + " | ".join(cell(c.cell(r)) for c in view.columns) + " |" for _, r in frame.iterrows()]
    extra = [*view.legend, *view.notes(frame)]
    return "\n".join(lines + ([""] + [f"- {e}" for e in extra] if extra else [])) + "\n"


def _latex_escape(s: str) -> str:
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#"),
                 ("<", r"$<$"), ("^", r"\^{}")):  # fmt: skip
        s = s.replace(a, b)
    return s


def _latex(view: View, frame: pd.DataFrame) -> str:
    spec = "ll" + "r" * (len(view.columns) - 2)
    head = " & ".join(_latex_escape(c.header.replace("\n", " ")) for c in view.columns)
    rows = [" & ".join(_latex_escape(c.cell(r)) for c in view.columns) + r" \\" for _, r in frame.iterrows()]
    legend = [f"% {line}" for line in [*view.legend, *view.notes(frame)]]
    body = [f"\\begin{{tabular}}{{{spec}}}", r"\toprule", head + r" \\", r"\midrule", *rows, r"\bottomrule"]
    return "\n".join([*legend, *body, r"\end{tabular}"]) + "\n"


def render(frame: pd.DataFrame, view: str, fmt: str) -> str:
    """One analysis frame (`gap_table`, `emergence`, `power_table`, `recipe_notes`) as text.

    Parameters
    ----------
    frame
        The frame returned by the library function behind `view`.
    view
        "table", "emergence", "power" or "notes".
    fmt
        One of `FORMATS`. csv and json hold the view's stable machine columns (`stats.TABLE_COLUMNS`,
        `mixed.EMERGENCE_COLUMNS`, or every column for power and notes), missing values empty/null; the
        others hold the display columns, a legend of which test each column is, and the n/a reasons.
    """
    v = VIEWS[view]
    if fmt == "json":
        keys = _machine_columns(view, frame)
        records = [{k: None if _missing(r[k]) else plain(r[k]) for k in keys} for _, r in frame.iterrows()]
        return json.dumps(records, indent=2, allow_nan=False) + "\n"
    if fmt == "csv":
        return frame[_machine_columns(view, frame)].to_csv(index=False, lineterminator="\n")
    renderers = {"text": _text, "markdown": _markdown, "latex": _latex}
    if fmt not in renderers:
        raise InputError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return renderers[fmt](v, frame)


def card_block(table: pd.DataFrame) -> str:
    """The dataset card's generated block (markers included) for a `gap_table` frame."""
    view = VIEWS["table"]
    keep = ("size", "baseline", "n\nR/B", f"{label(REFERENCE)}\nmean", "baseline\nmean", "gap", "Welch\nt",
            "Welch\np", "paired\np", "mixed\np", "mixed\np Holm")  # fmt: skip
    short = View(view.title, tuple(c for c in view.columns if c.header in keep), view.legend, view.notes)
    return f"{CARD_BEGIN}\n{_markdown(short, table)}{CARD_END}"


def _split(text: str) -> tuple[str, str, str]:
    start, end = text.find(CARD_BEGIN), text.find(CARD_END)
    if start < 0 or end < start:
        raise InputError(
            f"the card has no generated block: expected the lines {CARD_BEGIN!r} ... {CARD_END!r}"
        )
    return text[:start], text[start : end + len(CARD_END)], text[end + len(CARD_END) :]


def update_card(text: str, table: pd.DataFrame) -> str:
    """The card text with its generated block replaced by `card_block(table)`."""
    head, _, tail = _split(text)
    return head + card_block(table) + tail


def card_mismatch(text: str, table: pd.DataFrame) -> str | None:
    """None when the card's generated block matches the data; otherwise what differs, as a short message."""
    current, expected = _split(text)[1].splitlines(), card_block(table).splitlines()
    if current == expected:
        return None
    diff = [
        f"line {i + 1}: card {a!r} != data {b!r}"
        for i, (a, b) in enumerate(zip(current, expected, strict=False))
        if a != b
    ]
    if len(current) != len(expected):
        diff.append(f"the card's block has {len(current)} lines, the data gives {len(expected)}")
    return "the card's headline table does not match the data (run `rr analyze --card`): " + "; ".join(
        diff[:3]
    )

"""Render the analysis frames as text, Markdown, LaTeX (booktabs), CSV or JSON, and keep the dataset card's
generated table in step with the data. Nothing here computes a statistic.

Text output fits the terminal: when a table is wider than `width`, prose columns wrap (`rr_analysis.grid.wrap_columns`),
then the columns of least consequence go first (each column has a rank; the primary test's columns, the gap and
its CI and Hedges g stay), and a line below the table says what was left out. `columns` chooses the columns of any
format instead. Markdown, LaTeX, CSV and JSON are never wrapped, and JSON and CSV always hold every number any
format shows.
"""

from __future__ import annotations

import json
import math
import os
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from rr_analysis.cells import METRIC, STAMP
from rr_analysis.emergence import EMERGENCE_COLUMNS
from rr_analysis.grid import csv_text, latex_lines, markdown_lines, text_lines, widths, wrap_columns
from rr_analysis.numbers import fixed, p_value
from rr_analysis.stats import TABLE_COLUMNS
from rr_model.core.errors import InputError
from rr_model.core.files import atomic_write, read_regular
from rr_model.core.variants import REFERENCE, label
from rr_model.results.dataset import plain

__all__ = [
    "FORMATS",
    "VIEWS",
    "render",
    "column_names",
    "card_block",
    "update_card",
    "write_card",
    "card_mismatch",
    "CARD_BEGIN",
    "CARD_END",
]

FORMATS: tuple[str, ...] = ("text", "markdown", "latex", "csv", "json")
CARD_BEGIN = "<!-- BEGIN GENERATED: rr analyze --card; do not edit by hand -->"
CARD_END = "<!-- END GENERATED -->"


def _missing(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _format(v, spec: str) -> str:
    """`v` in a format spec; fixed decimals ("+.4f") through `rr_analysis.numbers.fixed`, like every view."""
    decimals = re.fullmatch(r"(\+?)\.(\d+)f", spec)
    if decimals:
        return fixed(v, int(decimals[2]), sign=bool(decimals[1]))
    return format(v, spec)


def _num(spec: str) -> Callable:
    return lambda v: "n/a" if _missing(v) else _format(v, spec)


def _p(v) -> str:
    return "n/a" if _missing(v) else p_value(v)


@dataclass(frozen=True)
class Col:
    header: str  # "\n" splits a two-line header in text output
    cell: Callable[[pd.Series], str]
    rank: int = 1  # narrow text drops the highest rank first (rightmost first); 0 is never dropped
    wrap: bool = (
        False  # prose: narrow text wraps it (`rr_analysis.grid.wrap_columns`) before dropping columns
    )


def _get(key: str, fmt: Callable) -> Callable[[pd.Series], str]:
    return lambda r: fmt(r[key])


@dataclass(frozen=True)
class View:
    title: str
    columns: tuple[Col, ...]
    legend: tuple[str, ...]  # which test each column is
    notes: Callable[[pd.DataFrame], list[str]]
    stacked: bool = False  # text: one block of labelled lines per row instead of a table (long prose cells)


def _ci(low: str, high: str, spec: str) -> Callable[[pd.Series], str]:
    return lambda r: "n/a" if _missing(r[low]) else f"[{_format(r[low], spec)}, {_format(r[high], spec)}]"


def _flip(r) -> str:
    return "n/a" if _missing(r["signflip_p"]) else f"{r['signflip_p']:.3g} ({r['signflip_floor']:.3g})"


def _families(t: pd.DataFrame) -> str:
    """The multiple-testing families in words: method, which is primary, and each family's m."""
    method = t["adjust"].iloc[0] if len(t) else "holm"
    sizes = ", ".join(f"{test}{' (primary)' if test == t['primary'].iloc[0] else ''} m = {t[f'family_m_{test}'].iloc[0]}"
                      for test in ("paired", "mixed", "welch"))  # fmt: skip
    how = "no adjustment" if method == "none" else f"{method} adjustment"
    return (f"p adj: {how}, separately for each test over its family of size x baseline cells where it "
            f"ran: {sizes}; n/a cells (below) are not counted")  # fmt: skip


def _table_notes(t: pd.DataFrame) -> list[str]:
    out = [_families(t)] if len(t) else []
    for _, r in t.iterrows():
        for view in ("welch", "paired", "mixed"):
            if r[f"{view}_note"]:
                out.append(f"{r['size']} {label(r['baseline'])}, {view}: {r[f'{view}_note']}")
    methods = sorted(set(t["mixed_method"]) - {""})
    out.append("mixed model fitted by: " + "; ".join(methods) if methods else "mixed model: not fitted")
    return out


def _row_notes(key: str) -> Callable[[pd.DataFrame], list[str]]:
    def notes(t: pd.DataFrame) -> list[str]:
        def where(r: pd.Series) -> str:
            return " ".join(
                [*([r["size"]] if "size" in t else []), *([label(r["baseline"])] if "baseline" in t else [])]
            )

        return [f"{where(r)}: {r[key]}" for _, r in t.iterrows() if r[key]]

    return notes


def _claim_cell(r: pd.Series) -> str:
    cell = " ".join(x for x in (r["size"], label(r["variant"]) if r["variant"] else "") if x)
    return f"{r['claim']} [{cell}]" if cell else r["claim"]


def _reported_cell(r: pd.Series) -> str:
    return f"{r['reported']} ({', '.join(x for x in (r['test'], r['sided']) if x)})" if r["reported"] else ""


def _primary_cell(r: pd.Series) -> str:
    return (
        r["primary"]
        if _missing(r["primary_p_adj"])
        else f"{r['primary']} (p adj {fixed(r['primary_p_adj'], 4)})"
    )


def _reproduction_notes(t: pd.DataFrame) -> list[str]:
    """The test over all re-runs, and where its noise and margin come from, in words."""
    if not len(t):
        return []
    r = t.iloc[0]
    test = (f"paired t = {fixed(r['t'], 2)} on {fixed(r['df'], 0)} df, p {_p(r['p'])} (two-sided)" if not _missing(r['t'])
            else f"no t-test: {r['test_note']}")  # fmt: skip
    tost = f"p {_p(r['tost_p'])}" if not _missing(r["tost_p"]) else "n/a"
    sd = "n/a" if _missing(r["offset_sd"]) else f"{fixed(r['offset_sd'], 5)}"
    return [
        f"over {r['n']} re-run(s): mean offset {fixed(r['mean_offset'], 5, sign=True)} (SD {sd}, RMS {fixed(r['rms_offset'], 5)}); {test}",
        f"TOST of |mean offset| < {fixed(r['margin'], 5)} ({r['margin_source']}): {tost}; pooling is {r['pooling']}",
        f"same-seed noise: {r['noise_source']}",
        *([f"{r['not_rerun']} published row(s) have no re-run in this file"] if r["not_rerun"] else []),
    ]


_GAP = "{gap}"  # the sign convention in words, for the frame's comparison (`_context`)


def _context(frame: pd.DataFrame) -> dict[str, str]:
    """What a view's texts say about the comparison, read from the frame's `STAMP` columns (the paper's when
    it has none): the reference's label, the metric, the response the tests ran on, and the gap in words.

    The published comparison reads as it always has ("Review", "val_loss", "(lower loss)"); any other states
    its metric and direction in the title and the gap line.
    """
    ref, metric, higher = REFERENCE, METRIC, False
    if len(frame) and set(STAMP) <= set(frame.columns):
        ref, metric, higher = (
            frame["reference"].iloc[0],
            frame["metric"].iloc[0],
            bool(frame["higher_is_better"].iloc[0]),
        )
    name = label(ref)
    if higher:
        gap = (f"gap = mean({name}) - mean(baseline) of {metric}; positive favours {name} (higher {metric} is "
               f"better; the tests run on -{metric}).")  # fmt: skip
    else:
        of = "" if metric == METRIC else f" of {metric}"
        gap = f"gap = mean(baseline) - mean({name}){of}; positive favours {name} (lower {'loss' if metric == METRIC else metric})."
    shown = f"{metric}, higher is better" if higher else metric
    return {"ref": name, "metric": shown, "response": f"-{metric}" if higher else metric, "gap": gap}


def _filled(view: View, frame: pd.DataFrame) -> View:
    """`view` with its title, headers and legend stating the frame's comparison (`_context`).

    A title that does not name the reference gets the comparison appended when it is not the paper's, so
    every text view of another comparison says which it is in its first line.
    """
    ctx = _context(frame)
    columns = tuple(replace(c, header=c.header.format(**ctx)) for c in view.columns)
    title = view.title
    if "{ref}" not in title and (ctx["ref"], ctx["metric"]) != (label(REFERENCE), METRIC):
        title += ": {ref} against each baseline, {metric}"
    return replace(
        view,
        title=title.format(**ctx),
        columns=columns,
        legend=tuple(t.format(**ctx) for t in view.legend),
    )


VIEWS: dict[str, View] = {
    "table": View(
        title="{ref} vs each baseline, {metric} (primary test: paired*, seed-matched)",
        columns=(
            Col("size", _get("size", str), 0),
            Col("baseline", _get("baseline", label), 0),
            Col("params\n(M)", _get("params_M", _num(".2f")), 6),
            Col("n\nR/B", lambda r: f"{r['n_review']}/{r['n_baseline']}", 5),
            Col("{ref}\nmean", _get("review_mean", _num(".4f")), 6),
            Col("baseline\nmean", _get("baseline_mean", _num(".4f")), 6),
            Col("gap", _get("gap", _num(".4f")), 0),
            Col("95% CI\nof gap", _ci("ci_low", "ci_high", ".4f"), 1),
            Col("Hedges\ng", _get("hedges_g", _num(".2f")), 1),
            Col("95% CI\nof g", _ci("g_ci_low", "g_ci_high", ".2f"), 6),
            Col("Welch\nt", _get("welch_t", _num(".2f")), 4),
            Col("Welch\ndf", _get("welch_df", _num(".2f")), 5),
            Col("Welch\np", _get("welch_p", _p), 2),
            Col("Welch\np adj", _get("p_adj_welch", _p), 3),
            Col("paired*\nt", _get("paired_t", _num(".2f")), 4),
            Col("paired*\ndf", _get("paired_df", _num(".0f")), 3),
            Col("paired*\np", _get("paired_p", _p), 1),
            Col("paired*\np adj", _get("p_adj_paired", _p), 0),
            Col("sign-flip\np (floor)", _flip, 2),
            Col("mixed\ncoef", _get("mixed_coef", _num(".4f")), 6),
            Col("mixed\nSE", _get("mixed_se", _num(".5f")), 6),
            Col("mixed\ndf", _get("mixed_df", _num(".2f")), 5),
            Col("mixed\np", _get("mixed_p", _p), 3),
            Col("mixed\np adj", _get("p_adj_mixed", _p), 2),
        ),
        legend=(
            _GAP,
            "paired* (PRIMARY): t-test of the seed-matched differences (same seed = same data order), "
            "df = pairs - 1, two-sided. The design blocks by seed; this is the test that uses the blocks with "
            "the fewest assumptions.",
            "sign-flip: exact permutation test of the same differences; it cannot go below its floor 2/2^pairs "
            "(0.25 with 3 seeds), whatever the gap.",
            "mixed: the primary test's twin, {response} ~ variant + (1 | seed) per size, REML, {ref} as "
            "reference; coef = baseline - {ref}, t-test with Satterthwaite df, two-sided.",
            "Welch: the paper's Table 2, two-sample t-test, unequal variances, Welch-Satterthwaite df, "
            "two-sided; 95% CI of the gap from it. Hedges' g: gap / pooled SD times the exact J; its 95% CI "
            "inverts the noncentral t.",
        ),
        notes=_table_notes,
    ),
    "emergence": View(
        title="Does {ref}'s advantage grow with size? (gap per decade of parameters)",
        columns=(
            Col("baseline", _get("baseline", label), 0),
            Col("sizes", _get("n_sizes", str), 3),
            Col("(c) meta\nslope", _get("meta_slope", _num(".4f")), 0),
            Col("(c)\nSE", _get("meta_se", _num(".4f")), 2),
            Col("(c)\ndf", _get("meta_df", _num(".0f")), 4),
            Col("(c)\np", _get("meta_p", _p), 0),
            Col("(c)\ntau2", _get("meta_tau2", _num(".2e")), 5),
            Col("(c)\nQE", _get("meta_qe", _num(".2f")), 6),
            Col("(c) QE\np", _get("meta_qe_p", _p), 4),
            Col("(b) dev\nslope", _get("dev_slope", _num(".4f")), 3),
            Col("(b)\nSE", _get("dev_se", _num(".4f")), 5),
            Col("(b)\ndf", _get("dev_df", _num(".2f")), 5),
            Col("(b)\np", _get("dev_p", _p), 1),
            Col("(b) KR\ndf", _get("dev_kr_df", _num(".2f")), 4),
            Col("(b) KR\np", _get("dev_kr_p", _p), 1),
            Col("(b) var\nseed", _get("dev_var_seed", _num(".2e")), 6),
            Col("(b) var\nsize", _get("dev_var_size", _num(".2e")), 6),
            Col("(b) var\nresid", _get("dev_var_resid", _num(".2e")), 6),
            Col("(a) run\nslope", _get("run_slope", _num(".4f")), 3),
            Col("(a)\nSE", _get("run_se", _num(".4f")), 5),
            Col("(a)\ndf", _get("run_df", _num(".2f")), 5),
            Col("(a)\np", _get("run_p", _p), 1),
            Col("(a) LRT\nchi2", _get("lrt_chi2", _num(".2f")), 6),
            Col("(a) LRT\np", _get("lrt_p", _p), 4),
        ),
        legend=(
            _GAP,
            "Slopes: change of the gap per decade of {ref}'s parameters; positive: the gap grows with size.",
            "(c) PRIMARY, the size-level question: per-size seed-paired gaps and SEs regressed on "
            "log10(params), REML tau2, Knapp-Hartung t on sizes - 2 df (metafor rma knha); QE: residual "
            "heterogeneity, chi-square on sizes - 2 df.",
            "(b) each size's gap may leave the line: (a) + (0 + baseline | size), REML; Satterthwaite and "
            "Kenward-Roger (KR) df; variance components seed, size deviation (this baseline), residual.",
            "(a) per-run evidence, assumes the gap is exactly linear in log size: {response} ~ 0 + size + "
            "baseline + baseline:lxc + (1 | size:seed), REML, Satterthwaite df; LRT of all slopes (ML).",
        ),
        notes=lambda t: (
            [f"{label(r['baseline'])}: {r['verdict']}" for _, r in t.iterrows()]
            + _row_notes("note")(t)
            + sorted(set(t["confound"].dropna()) - {""})
        ),
    ),
    "power": View(
        title="Seeds needed for 80% power at alpha 0.05 (two-sided), and the smallest gap detectable now",
        columns=(
            Col("size", _get("size", str)),
            Col("baseline", _get("baseline", label)),
            Col("n\nR/B", lambda r: f"{r['n_review']}/{r['n_baseline']}"),
            Col("pairs", _get("n_pairs", str)),
            Col("gap", _get("gap", _num(".4f"))),
            Col("Cohen\nd", _get("cohens_d", _num(".2f")), 3),
            Col("seeds/arm\nunpaired", _get("seeds_unpaired", _num("d")), 2),
            Col("detectable\ngap now", _get("mde_unpaired", _num(".4f")), 2),
            Col("paired*\ndz", _get("dz", _num(".2f"))),
            Col("seeds\npaired*", _get("seeds_paired", _num("d")), 0),
            Col("detectable\ngap paired*", _get("mde_paired", _num(".4f"))),
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
            Col("note", _get("message", str), wrap=True),
        ),
        legend=(),
        notes=lambda t: [],
    ),
    "plan": View(
        title="Seeds per size for 80% power on the primary (seed-paired) test, from a target effect",
        columns=(
            Col("size", _get("size", str), 0),
            Col("target\neffect", _get("effect", _num(".4f"))),
            Col("resid\nSD", _get("resid_sd", _num(".5f"))),
            Col("dz", _get("dz", _num(".2f"))),
            Col("seeds\nnow", _get("seeds_present", _num("d")), 0),
            Col("power\nnow", _get("power_now", _num(".2f"))),
            Col("seeds\nneeded", _get("seeds_needed", _num("d")), 0),
            Col("seeds\nto add", _get("seeds_to_add", _num("d")), 0),
            Col("GPU\nminutes", _get("gpu_minutes", _num(".0f")), 0),
        ),
        legend=(
            "resid SD: within-seed residual SD pooled across sizes, one REML fit of {response} ~ 0 + size:variant "
            "+ (1 | size:seed); dz = effect / (sqrt(2) resid SD), the SD of a seed-matched difference.",
            "power: two-sided paired t-test at alpha 0.05 per test (noncentral t, statsmodels TTestPower's "
            "formula); each seed runs every variant; GPU minutes = seeds to add x the summed mean minutes of "
            "the size's variants, as recorded in the data (the published runs: B200).",
        ),
        notes=_row_notes("note"),
    ),
    "equivalence": View(
        title="Equivalence: is |gap| below the margin? Two one-sided tests (TOST), alpha 0.05",
        columns=(
            Col("size", _get("size", str), 0),
            Col("baseline", _get("baseline", label), 0),
            Col("margin", _get("margin", _num("g")), 3),
            Col("gap", _get("gap", _num(".4f")), 0),
            Col("paired* 90% CI", _ci("paired_ci90_low", "paired_ci90_high", ".4f"), 2),
            Col("paired*\nTOST p", _get("paired_tost_p", _p), 0),
            Col("paired* verdict", _get("paired_verdict", str), 0),
            Col("Welch 90% CI", _ci("welch_ci90_low", "welch_ci90_high", ".4f"), 3),
            Col("Welch\nTOST p", _get("welch_tost_p", _p), 2),
            Col("Welch verdict", _get("welch_verdict", str), 3),
        ),
        legend=(
            _GAP,
            "TOST: H0 |gap| >= margin, rejected when both one-sided t-tests reject at 5%, i.e. when the 90% CI "
            "lies inside (-margin, margin); paired* (PRIMARY, statsmodels ttost_paired) and Welch (ttost_ind, "
            "unequal variances). Verdict: equivalent, different (t-test p < 0.05), or not shown either way.",
            "A claim of equivalence in several cells at once needs every cell to pass (intersection-union: no "
            "multiplicity adjustment).",
        ),
        notes=lambda t: _row_notes("paired_note")(t) + _row_notes("welch_note")(t),
    ),
    "forecast": View(
        title="Forecast: the gap at sizes the sweep has not run, from the primary size-level line",
        columns=(
            Col("at", _get("at", str), 0),
            Col("params", lambda r: f"{r['params']:.4g} ({r['params_source']})", 2),
            Col("baseline", _get("baseline", label), 0),
            Col("decades\npast data", _get("decades_beyond", _num(".2f")), 1),
            Col("(c) gap*\npredicted", _get("pred", _num(".4f")), 0),
            Col("(c)\nSE", _get("pred_se", _num(".4f")), 2),
            Col("(c) 95% CI\nmean gap", _ci("ci_low", "ci_high", ".4f"), 0),
            Col("(c) 95% PI\nnew size", _ci("pi_low", "pi_high", ".4f"), 0),
            Col("(b) dev\ngap", _get("dev_pred", _num(".4f")), 3),
            Col("(b) KR\ndf", _get("dev_df", _num(".2f")), 5),
            Col("(b) 95% PI", _ci("dev_pi_low", "dev_pi_high", ".4f"), 4),
            Col("(a) run\ngap", _get("run_pred", _num(".4f")), 3),
            Col("(a) 95% CI", _ci("run_ci_low", "run_ci_high", ".4f"), 4),
        ),
        legend=(
            _GAP,
            "(c) PRIMARY: the emergence meta-regression (per-size seed-paired gaps on log10(params), REML tau2, "
            "Knapp-Hartung t on sizes - 2 df; metafor predict.rma): CI of the mean gap at that size; PI of the "
            "gap a new size there would show (tau2 included).",
            "(b) size-deviation and (a) per-run models lean on stronger assumptions: (b) pools seed and "
            "residual variances over every size (Kenward-Roger df; its PI adds the size-deviation variance), "
            "(a) puts every size exactly on the line (its PI is its CI).",
            "params: (ladder) the exact count of the ladder's shape; (label) the label's number. Every "
            "interval assumes the line stays straight in log10(params) out to that size.",
        ),
        notes=lambda t: (
            [f"{r['at']}: {r['extrapolation']}" for _, r in t.drop_duplicates("at").iterrows()]
            + _row_notes("note")(t.drop_duplicates("baseline"))
        ),
    ),
    "confirm": View(
        title="Planning the confirming run: seeds per arm for the primary (seed-paired) test, and GPU time",
        columns=(
            Col("at", _get("at", str), 0),
            Col("baseline", _get("baseline", label), 0),
            Col(
                "forecast gap\n(PI low, pred, high)",
                lambda r: (
                    "n/a"
                    if _missing(r["pred"])
                    else f"{fixed(r['pi_low'], 4)}, {fixed(r['pred'], 4)}, {fixed(r['pi_high'], 4)}"
                ),
                0,
            ),  # fmt: skip
            Col("resid\nSD", _get("resid_sd", _num(".5f")), 3),
            Col(
                "seeds/arm at\nPI low, pred, high",
                lambda r: ", ".join(_num("d")(r[f"seeds_at_{k}"]) for k in ("pi_low", "pred", "pi_high")),
                0,
            ),  # fmt: skip
            Col("steps", lambda r: f"{fixed(r['steps'], 0)} ({r['steps_source']})", 2),
            Col(
                "min/run\n(95% PI)",
                lambda r: (
                    "n/a"
                    if _missing(r["minutes_per_run"])
                    else f"{fixed(r['minutes_per_run'], 1)} ({fixed(r['minutes_pi_low'], 1)}-{fixed(r['minutes_pi_high'], 1)})"
                ),
                1,
            ),  # fmt: skip
            Col(
                "GPU min at pred\n(95% CI)",
                lambda r: (
                    "n/a"
                    if _missing(r["gpu_minutes"])
                    else f"{fixed(r['gpu_minutes'], 0)} ({fixed(r['gpu_minutes_low'], 0)}-{fixed(r['gpu_minutes_high'], 0)})"
                ),
                0,
            ),  # fmt: skip
        ),
        legend=(
            _GAP,
            "forecast gap: the primary size-level line's prediction and its 95% prediction interval (rr "
            "analyze forecast). seeds/arm: smallest n >= 2 giving the target power to the two-sided paired "
            "t-test (noncentral t) if the true gap were the PI's low end, the prediction, the PI's high end; "
            "resid SD: the within-seed residual SD of the mixed model pooled over sizes; d_z = gap / (sqrt(2) "
            "resid SD).",
            "min/run: each size x variant cell's mean log(minutes) regressed on log(params x steps) (OLS), "
            "extrapolated; PI: one new run. GPU min: seeds at pred x variants per seed x min/run, CI from the "
            "fitted median; a seed runs every variant, so one size's total is its largest row. Minutes are the "
            "data's hardware's (published: B200).",
        ),
        notes=lambda t: (
            [
                f"{r['at']}: power {r['power']:g} at alpha {r['alpha']:g}; {r['variants_per_seed']} "
                f"variants per seed; time fit over {r['minutes_cells']} cells, minutes ~ work^"
                f"{fixed(r['minutes_slope'], 3)}"
                for _, r in t.drop_duplicates("at").iterrows()
            ]
            + _row_notes("note")(t)
        ),  # fmt: skip
    ),
    "fits": View(
        title="Scaling fits per variant, L(N) = E + A N^-alpha to the per-size mean losses (descriptive)",
        columns=(
            Col("variant", _get("variant", label), 0),
            Col("sizes", _get("n_sizes", _num("d")), 3),
            Col("E\n[95% boot]", lambda r: f"{_num('.4f')(r['E'])} {_ci('E_low', 'E_high', '.4f')(r)}", 0),
            Col(
                "alpha\n[95% boot]",
                lambda r: f"{_num('.3f')(r['alpha'])} {_ci('alpha_low', 'alpha_high', '.3f')(r)}",
                0,
            ),
            Col("A\n[95% boot]", lambda r: f"{_num('.3g')(r['A'])} {_ci('A_low', 'A_high', '.3g')(r)}", 2),
            Col("chi2\n(df)", lambda r: f"{_num('.2f')(r['chi2'])} ({_num('.0f')(r['resid_df'])})", 1),
            Col("identified", lambda r: "yes" if r["identified"] else "no", 0),
            Col("at", lambda r: r["at"] or "", 0),
            Col(
                "loss at\n[95% boot]",
                lambda r: f"{_num('.4f')(r['loss_pred'])} {_ci('loss_low', 'loss_high', '.4f')(r)}",
                0,
            ),
        ),
        legend=(
            "Weighted least squares (weights 1/SE^2 of each size's mean over its seeds), N the variant's "
            "parameter count; intervals: 2.5-97.5% quantiles of a parametric bootstrap over seeds (each size's "
            "seeds redrawn from the fitted mean and the observed seed SD, refitted). Descriptive: no test "
            "between variants, no crossover or emergence is read from these curves.",
            "Not identified: E < 0, alpha's interval spanning more than a decade, or alpha at a bound.",
        ),
        notes=lambda t: (
            [
                f"{r['variant']}: {fixed(r['boot_ok'], 0)} of {fixed(r['boot'], 0)} bootstrap refits"
                for _, r in t.drop_duplicates("variant").iterrows()
                if not _missing(r["boot_ok"])
            ]
            + sorted(set(t["df_warning"]) - {""})
            + sorted(set(t["confound"]) - {""})
            + [
                f"{label(r['variant'])}: {r['note']}"
                for _, r in t.drop_duplicates("variant").iterrows()
                if r["note"]
            ]
        ),  # fmt: skip
    ),
    "claims": View(
        title="The paper's claims audited: each reported number recomputed (statcheck-style)",
        columns=(
            Col("claim", _claim_cell, 0),
            Col("reported", _reported_cell, 0),
            Col("test", lambda r: "" if r["reported"] else r["test"], 0),  # a number's test is in "reported"
            Col("what the data say", _get("evidence", str), 0),
            Col("verdict", _get("verdict", str), 0),
            Col("primary analysis", _primary_cell, 0),
        ),
        legend=(
            _GAP,
            "A number written with d decimals stands for the interval its rounding allows (t = 3.3: [3.25, 3.35)). "
            "Verdict: consistent (the recomputed value lies in it); consistent only by rounding (only within the "
            "rows' own 4-decimal rounding); decision error (outside, and significance at 0.05 flips); value error "
            "(outside, the decision stands). GRIM: whether a mean of n 4-decimal runs can round to the reported mean.",
            "Primary analysis: the seed-paired t-test per size, adjusted over its family; Welch is the paper's test.",
        ),
        notes=lambda t: [],
        stacked=True,
    ),
    "pool": View(
        title="Can the new rows be pooled with the published ones? (rows flagged, and a source term)",
        columns=(
            Col("term", _get("term", str), 0),
            Col("estimate", _get("estimate", _num("+.5f")), 0),
            Col("SE", _get("se", _num(".5f")), 1),
            Col("z", _get("z", _num(".2f")), 2),
            Col("p", _get("p", _p), 0),
            Col("rows\npub/new", lambda r: f"{r['n_published']}/{r['n_new']}", 1),
            Col("flagged", _get("n_flagged", str), 0),
        ),
        legend=(
            "source term: the mean shift of the new rows (not published rows unchanged) in the primary test's "
            "twin pooled over sizes, val_loss ~ 0 + size:variant + new + (1 | size:seed), REML, Wald z, "
            "two-sided (statsmodels MixedLM).",
        ),
        notes=lambda t: [
            *(f"verdict: {v}" for v in t["verdict"]),
            *(n for n in t["note"] if n),
            *(
                f"{r['size']} {label(r['variant'])} seed {r['seed']}: {'; '.join(r['flags'])}"
                for rows in t["rows"]
                for r in rows
                if r["flags"]
            ),
        ],  # fmt: skip
    ),
    "reproduction": View(
        title="Does it reproduce? Each re-run beside the published row of its key",
        columns=(
            Col("size", _get("size", str), 0),
            Col("variant", _get("variant", label), 0),
            Col("seed", _get("seed", str), 0),
            Col("published", _get("published", _num(".4f")), 2),
            Col("re-run", _get("reproduced", _num(".4f")), 2),
            Col("diff", _get("diff", _num("+.5f")), 0),
            Col("seed SD", _get("seed_sd", _num(".5f")), 3),
            Col("diff /\nseed SD", _get("diff_in_sd", _num("+.2f")), 1),
            Col("noise", _get("noise", _num(".5f")), 3),
            Col("verdict", _get("verdict", str), 0),
        ),
        legend=(
            "diff = re-run - published. Verdict: reproduced within rounding (|diff| <= 0.00005, the published "
            "value's 4th decimal), within same-seed noise (|diff| <= 2 x noise, the SD of the difference between "
            "two runs of one seed), or outside it. seed SD: the published between-seed SD at that size and variant.",
        ),
        notes=_reproduction_notes,
    ),
}


def _machine_columns(view: str, frame: pd.DataFrame) -> list[str]:

    keys = {"table": TABLE_COLUMNS, "emergence": EMERGENCE_COLUMNS}.get(view)
    return list(keys) if keys else list(frame.columns)


def _fit(columns: list[Col], cells: list[list[str]], width: int) -> list[int]:
    """Indices of the columns to show so that the table is at most `width` wide (rank 0 always stays), prose
    columns counted as narrow as they wrap."""
    header = cells[0]
    drawn = widths(header, wrap_columns(header, cells[1:], [c.wrap for c in columns], width))
    keep = list(range(len(columns)))
    while sum(drawn[i] for i in keep) + 2 * (len(keep) - 1) > width:
        droppable = [i for i in keep if columns[i].rank > 0]
        if not droppable:
            break
        keep.remove(max(droppable, key=lambda i: (columns[i].rank, i)))
    return keep


def column_names(view: str, fmt: str, frame: pd.DataFrame) -> list[str]:
    """The names `render`'s `columns` takes for `view` in `fmt`: for csv and json the machine columns; for
    the others each display column's header in lower case, its words joined by "_" (``95% CI of gap``:
    ``95_ci_of_gap``; ``paired* p adj``: ``paired_p_adj``), as the frame's comparison fills it.

    Examples
    --------
    >>> from rr_analysis.stats import gap_table
    >>> from rr_model.results.dataset import load_sweep
    >>> column_names("table", "text", gap_table(load_sweep()))[5:9]
    ['baseline_mean', 'gap', '95_ci_of_gap', 'hedges_g']
    """
    if fmt in ("csv", "json"):
        return _machine_columns(view, frame)
    return ["_".join(re.findall(r"[a-z0-9]+", c.header.lower())) for c in _filled(VIEWS[view], frame).columns]


def _chosen(view: str, fmt: str, frame: pd.DataFrame, names: list[str]) -> list[int]:
    """The indices, among `column_names`, of the columns named, in the order named; a name not there is an
    `InputError` listing the view's names."""
    known = column_names(view, fmt, frame)
    unknown = [n for n in names if n.lower() not in known]
    if unknown:
        raise InputError(
            f"--columns: no column {', '.join(map(repr, unknown))} in the {view} view's {fmt}; its columns: "
            + ", ".join(known)
        )
    return [known.index(n.lower()) for n in names]


def _stacked(view: View, frame: pd.DataFrame, width: int | None) -> str:
    """One block per row, "header: value" lines wrapped to `width`: for views whose cells are sentences."""
    wrap = (
        (lambda p: textwrap.wrap(p, width, subsequent_indent="    ", break_on_hyphens=False))
        if width
        else (lambda p: [p])
    )
    lines = [view.title]
    for _, r in frame.iterrows():
        cells = [(c.header.replace(chr(10), " "), c.cell(r)) for c in view.columns]
        lines += [""] + [w for head, text in cells if text for w in wrap(f"{head}: {text}")]
    lines += [""] + [w for p in [*view.legend, *(f"note: {n}" for n in view.notes(frame))] for w in wrap(p)]
    return "\n".join(lines) + "\n"


def _hidden(names: list[str], width: int) -> str:
    """The line below a narrowed table: what it leaves out, by name where one line holds them."""
    named = f"not shown at width {width}: {', '.join(names)} (--wide shows all, --columns chooses)"
    return (
        named
        if len(named) <= width
        else f"not shown at width {width}: {len(names)} columns (--wide shows all, --columns chooses)"
    )


def _text(view: View, frame: pd.DataFrame, width: int | None = None) -> str:
    """Plain aligned text; with `width`, prose columns wrap and columns are dropped by rank to fit."""
    if view.stacked:
        return _stacked(view, frame, width)
    cols = list(view.columns)
    cells = [[c.header for c in cols]] + [[c.cell(r) for c in cols] for _, r in frame.iterrows()]
    keep = _fit(cols, cells, width) if width else list(range(len(cols)))
    left = {i for i in keep if any(c[i] != "n/a" and any(ch.isalpha() for ch in c[i]) for c in cells[1:])}
    header, rows = [cols[i].header for i in keep], [[row[i] for i in keep] for row in cells[1:]]
    if width:
        rows = wrap_columns(header, rows, [cols[i].wrap for i in keep], width)
    grid = text_lines(header, rows, [i not in left for i in keep])
    hidden = [cols[i].header.replace("\n", " ") for i in range(len(cols)) if i not in keep]
    prose = [*view.legend, *(f"note: {n}" for n in view.notes(frame))]
    wrap = (
        (lambda p: textwrap.wrap(p, width, subsequent_indent="  ", break_on_hyphens=False))
        if width
        else (lambda p: [p])
    )
    below = wrap(_hidden(hidden, width)) if hidden else []
    return "\n".join(wrap(view.title) + grid + below + [w for p in prose for w in wrap(p)]) + "\n"


def _grid(view: View, frame: pd.DataFrame) -> tuple[list[str], list[list[str]], list[bool]]:
    """Header, rows and right-alignment of the view's display columns (the first two, the labels, left)."""
    rows = [[c.cell(r) for c in view.columns] for _, r in frame.iterrows()]
    return [c.header for c in view.columns], rows, [i >= 2 for i in range(len(view.columns))]


def _markdown(view: View, frame: pd.DataFrame) -> str:
    extra = [*view.legend, *view.notes(frame)]
    return (
        "\n".join(markdown_lines(*_grid(view, frame)) + ([""] + [f"- {e}" for e in extra] if extra else []))
        + "\n"
    )


def _latex(view: View, frame: pd.DataFrame) -> str:
    legend = [f"% {line}" for line in [*view.legend, *view.notes(frame)]]
    return "\n".join([*legend, *latex_lines(*_grid(view, frame))]) + "\n"


def _csv(out: pd.DataFrame) -> str:
    """The machine columns as CSV: raw values, missing empty; a column holding mappings or lists as JSON."""
    nested = {c for c in out.columns if out[c].map(lambda v: isinstance(v, dict | list)).any()}

    def value(c: str, v):
        return json.dumps(v) if c in nested else None if _missing(v) else plain(v)

    return csv_text(list(out.columns), [{c: value(c, r[c]) for c in out.columns} for _, r in out.iterrows()])


def render(
    frame: pd.DataFrame, view: str, fmt: str, width: int | None = None, columns: list[str] | None = None
) -> str:
    """One analysis frame as text.

    Parameters
    ----------
    frame
        The frame returned by the library function behind `view`: `gap_table` ("table"), `emergence`,
        `power_table` ("power"), `seed_plan` ("plan"), `recipe_notes` ("notes"), `equivalence`, `claims`.
    view
        A key of `VIEWS`.
    fmt
        One of `FORMATS`. csv and json hold the view's stable machine columns (`stats.TABLE_COLUMNS`,
        `emergence.EMERGENCE_COLUMNS`, or every column of the frame for the other views), missing values
        empty/null; the others hold the display columns, a legend of which test each column is, and the n/a
        reasons.
    width
        For text only: the widest line allowed (a terminal's width); prose columns (a note) wrap, then columns
        are dropped by rank to fit and a line below the table says which. None shows every column, unwrapped.
    columns
        These columns, in this order, by the names `column_names` gives (text, markdown, latex: e.g.
        ``["size", "baseline", "gap", "95_ci_of_gap"]``; csv, json: the machine columns); in text none is dropped
        to fit. None: the view's own.
    """
    v = _filled(VIEWS[view], frame)
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    keys = _machine_columns(view, frame)
    chosen = _chosen(view, fmt, frame, columns) if columns else None
    if chosen and fmt in ("csv", "json"):
        keys = [keys[i] for i in chosen]
    elif chosen:
        v = replace(v, columns=tuple(replace(v.columns[i], rank=0) for i in chosen))
    if fmt == "json":
        records = [{k: None if _missing(r[k]) else plain(r[k]) for k in keys} for _, r in frame.iterrows()]
        return json.dumps(records, indent=2, allow_nan=False) + "\n"
    if fmt == "csv":
        return _csv(frame[keys])
    if fmt == "text":
        return _text(v, frame, width)
    return {"markdown": _markdown, "latex": _latex}[fmt](v, frame)


def card_block(table: pd.DataFrame) -> str:
    """The dataset card's generated block (markers included) for a `gap_table` frame."""
    view = VIEWS["table"]
    keep = ("size", "baseline", "n\nR/B", "{ref}\nmean", "baseline\nmean", "gap", "Welch\nt",
            "Welch\np", "paired*\np", "paired*\np adj", "sign-flip\np (floor)", "mixed\np", "mixed\np adj")  # fmt: skip
    short = _filled(
        View(view.title, tuple(c for c in view.columns if c.header in keep), view.legend, view.notes), table
    )
    return f"{CARD_BEGIN}\n{_markdown(short, table)}{CARD_END}"


def _split(text: str) -> tuple[str, str, str]:
    start, end = text.find(CARD_BEGIN), text.find(CARD_END)
    if start < 0 or end < start:
        raise InputError(
            f"the card has no generated block: expected the lines {CARD_BEGIN!r} ... {CARD_END!r}"
        )
    return text[:start], text[start : end + len(CARD_END)], text[end + len(CARD_END) :]


def write_card(path: str | os.PathLike, table: pd.DataFrame) -> bool:
    """Rewrite the generated block of the dataset card file `path` for `table`; False if already up to date.

    The card is replaced whole (`rr_model.core.files.atomic_write`), and only if it still holds what was
    read: an edit saved while the block was being rendered is kept and `rr_model.core.files.Foreign` raised.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such dataset card (set --card-file)")
    before = read_regular(path)
    text = before.decode("utf-8")
    new = update_card(text, table)
    if new != text:
        atomic_write(path, lambda f: f.write(new.encode("utf-8")), expect=before)
    return new != text


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

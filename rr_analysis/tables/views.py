"""What each analysis view shows: its title, its display columns (header, cell, rank for narrow
terminals), its legend of which test each column is, and its notes. `rr_analysis.tables.render` draws
them in every format; nothing here computes a statistic.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from rr_analysis.numbers import NA, fixed, significant
from rr_analysis.stats.emergence import EMERGENCE_COLUMNS
from rr_analysis.stats.gap_tests import TABLE_COLUMNS
from rr_analysis.tables.columns import GAP, Col, View, cell_of, formatted, missing, number, p_cell
from rr_core.variants import label

__all__ = [
    "VIEWS",
]


def _ci(low: str, high: str, spec: str) -> Callable[[pd.Series], str]:
    return lambda r: NA if missing(r[low]) else f"[{formatted(r[low], spec)}, {formatted(r[high], spec)}]"


def _flip(r) -> str:
    return (
        NA
        if missing(r["signflip_p"])
        else f"{significant(r['signflip_p'], 3)} ({significant(r['signflip_floor'], 3)})"
    )


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
        if missing(r["primary_p_adj"])
        else f"{r['primary']} (p adj {fixed(r['primary_p_adj'], 4)})"
    )


def _reproduction_notes(t: pd.DataFrame) -> list[str]:
    """The test over all re-runs, and where its noise and margin come from, in words."""
    if not len(t):
        return []
    r = t.iloc[0]
    test = (f"paired t = {fixed(r['t'], 2)} on {fixed(r['df'], 0)} df, p {p_cell(r['p'])} (two-sided)" if not missing(r['t'])
            else f"no t-test: {r['test_note']}")  # fmt: skip
    tost = f"p {p_cell(r['tost_p'])}" if not missing(r["tost_p"]) else NA
    sd = NA if missing(r["offset_sd"]) else f"{fixed(r['offset_sd'], 5)}"
    return [
        f"over {r['n']} re-run(s): mean offset {fixed(r['mean_offset'], 5, sign=True)} (SD {sd}, RMS {fixed(r['rms_offset'], 5)}); {test}",
        f"TOST of |mean offset| < {fixed(r['margin'], 5)} ({r['margin_source']}): {tost}; pooling is {r['pooling']}",
        f"same-seed noise: {r['noise_source']}",
        *([f"{r['not_rerun']} published row(s) have no re-run in this file"] if r["not_rerun"] else []),
    ]


VIEWS: dict[str, View] = {
    "table": View(
        title="{ref} vs each baseline, {metric} (primary test: paired*, seed-matched)",
        columns=(
            Col("size", cell_of("size", str), 0),
            Col("baseline", cell_of("baseline", label), 0),
            Col("params\n(M)", cell_of("params_M", number(".2f")), 6),
            Col("n\nR/B", lambda r: f"{r['n_review']}/{r['n_baseline']}", 5),
            Col("{ref}\nmean", cell_of("review_mean", number(".4f")), 6),
            Col("baseline\nmean", cell_of("baseline_mean", number(".4f")), 6),
            Col("gap", cell_of("gap", number(".4f")), 0),
            Col("95% CI\nof gap", _ci("ci_low", "ci_high", ".4f"), 1),
            Col("Hedges\ng", cell_of("hedges_g", number(".2f")), 1),
            Col("95% CI\nof g", _ci("g_ci_low", "g_ci_high", ".2f"), 6),
            Col("Welch\nt", cell_of("welch_t", number(".2f")), 4),
            Col("Welch\ndf", cell_of("welch_df", number(".2f")), 5),
            Col("Welch\np", cell_of("welch_p", p_cell), 2),
            Col("Welch\np adj", cell_of("p_adj_welch", p_cell), 3),
            Col("paired*\nt", cell_of("paired_t", number(".2f")), 4),
            Col("paired*\ndf", cell_of("paired_df", number(".0f")), 3),
            Col("paired*\np", cell_of("paired_p", p_cell), 1),
            Col("paired*\np adj", cell_of("p_adj_paired", p_cell), 0),
            Col("sign-flip\np (floor)", _flip, 2),
            Col("mixed\ncoef", cell_of("mixed_coef", number(".4f")), 6),
            Col("mixed\nSE", cell_of("mixed_se", number(".5f")), 6),
            Col("mixed\ndf", cell_of("mixed_df", number(".2f")), 5),
            Col("mixed\np", cell_of("mixed_p", p_cell), 3),
            Col("mixed\np adj", cell_of("p_adj_mixed", p_cell), 2),
        ),
        legend=(
            GAP,
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
            Col("baseline", cell_of("baseline", label), 0),
            Col("sizes", cell_of("n_sizes", str), 3),
            Col("(c) meta\nslope", cell_of("meta_slope", number(".4f")), 0),
            Col("(c)\nSE", cell_of("meta_se", number(".4f")), 2),
            Col("(c)\ndf", cell_of("meta_df", number(".0f")), 4),
            Col("(c)\np", cell_of("meta_p", p_cell), 0),
            Col("(c)\ntau2", cell_of("meta_tau2", number(".2e")), 5),
            Col("(c)\nQE", cell_of("meta_qe", number(".2f")), 6),
            Col("(c) QE\np", cell_of("meta_qe_p", p_cell), 4),
            Col("(b) dev\nslope", cell_of("dev_slope", number(".4f")), 3),
            Col("(b)\nSE", cell_of("dev_se", number(".4f")), 5),
            Col("(b)\ndf", cell_of("dev_df", number(".2f")), 5),
            Col("(b)\np", cell_of("dev_p", p_cell), 1),
            Col("(b) KR\ndf", cell_of("dev_kr_df", number(".2f")), 4),
            Col("(b) KR\np", cell_of("dev_kr_p", p_cell), 1),
            Col("(b) var\nseed", cell_of("dev_var_seed", number(".2e")), 6),
            Col("(b) var\nsize", cell_of("dev_var_size", number(".2e")), 6),
            Col("(b) var\nresid", cell_of("dev_var_resid", number(".2e")), 6),
            Col("(a) run\nslope", cell_of("run_slope", number(".4f")), 3),
            Col("(a)\nSE", cell_of("run_se", number(".4f")), 5),
            Col("(a)\ndf", cell_of("run_df", number(".2f")), 5),
            Col("(a)\np", cell_of("run_p", p_cell), 1),
            Col("(a) LRT\nchi2", cell_of("lrt_chi2", number(".2f")), 6),
            Col("(a) LRT\np", cell_of("lrt_p", p_cell), 4),
        ),
        legend=(
            GAP,
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
        title="Seeds needed for {power} power at alpha {alpha} (two-sided), and the smallest gap detectable now",
        columns=(
            Col("size", cell_of("size", str)),
            Col("baseline", cell_of("baseline", label)),
            Col("n\nR/B", lambda r: f"{r['n_review']}/{r['n_baseline']}"),
            Col("pairs", cell_of("n_pairs", str)),
            Col("gap", cell_of("gap", number(".4f"))),
            Col("Cohen\nd", cell_of("cohens_d", number(".2f")), 3),
            Col("seeds/arm\nunpaired", cell_of("seeds_unpaired", number("d")), 2),
            Col("detectable\ngap now", cell_of("mde_unpaired", number(".4f")), 2),
            Col("paired*\ndz", cell_of("dz", number(".2f"))),
            Col("seeds\npaired*", cell_of("seeds_paired", number("d")), 0),
            Col("detectable\ngap paired*", cell_of("mde_paired", number(".4f"))),
        ),
        legend=(
            GAP,
            "unpaired: two-sample t-test, pooled SD, equal arms (statsmodels TTestIndPower's noncentral t); "
            "paired: t-test of seed-matched differences (TTestPower). Effects are the observed ones, from 2-3 "
            "seeds: rough planning figures.",
        ),
        notes=_row_notes("note"),
    ),
    "notes": View(
        title="Recipe notes",
        columns=(
            Col("kind", cell_of("kind", str)),
            Col("size", cell_of("size", str)),
            Col("note", cell_of("message", str), wrap=True),
        ),
        legend=(),
        notes=lambda t: [],
    ),
    "plan": View(
        title="Seeds per size for {power} power on the primary (seed-paired) test, from a target effect",
        columns=(
            Col("size", cell_of("size", str), 0),
            Col("target\neffect", cell_of("effect", number(".4f"))),
            Col("resid\nSD", cell_of("resid_sd", number(".5f"))),
            Col("dz", cell_of("dz", number(".2f"))),
            Col("seeds\nnow", cell_of("seeds_present", number("d")), 0),
            Col("power\nnow", cell_of("power_now", number(".2f"))),
            Col("seeds\nneeded", cell_of("seeds_needed", number("d")), 0),
            Col("seeds\nto add", cell_of("seeds_to_add", number("d")), 0),
            Col("GPU\nminutes", cell_of("gpu_minutes", number(".0f")), 0),
        ),
        legend=(
            "resid SD: within-seed residual SD pooled across sizes, one REML fit of {response} ~ 0 + size:variant "
            "+ (1 | size:seed); dz = effect / (sqrt(2) resid SD), the SD of a seed-matched difference.",
            "power: two-sided paired t-test at alpha {alpha} per test (noncentral t, statsmodels TTestPower's "
            "formula); each seed runs every variant; GPU minutes = seeds to add x the summed mean minutes of "
            "the size's variants, as recorded in the data (the published runs: B200).",
        ),
        notes=_row_notes("note"),
    ),
    "equivalence": View(
        title="Equivalence: is |gap| below the margin? Two one-sided tests (TOST), alpha {alpha}",
        columns=(
            Col("size", cell_of("size", str), 0),
            Col("baseline", cell_of("baseline", label), 0),
            Col("margin", cell_of("margin", number("g")), 3),
            Col("gap", cell_of("gap", number(".4f")), 0),
            Col("paired* 90% CI", _ci("paired_ci90_low", "paired_ci90_high", ".4f"), 2),
            Col("paired*\nTOST p", cell_of("paired_tost_p", p_cell), 0),
            Col("paired* verdict", cell_of("paired_verdict", str), 0),
            Col("Welch 90% CI", _ci("welch_ci90_low", "welch_ci90_high", ".4f"), 3),
            Col("Welch\nTOST p", cell_of("welch_tost_p", p_cell), 2),
            Col("Welch verdict", cell_of("welch_verdict", str), 3),
        ),
        legend=(
            GAP,
            "TOST: H0 |gap| >= margin, rejected when both one-sided t-tests reject at 5%, i.e. when the 90% CI "
            "lies inside (-margin, margin); paired* (PRIMARY, statsmodels ttost_paired) and Welch (ttost_ind, "
            "unequal variances). Verdict: equivalent, different (t-test p < {alpha}), or not shown either way.",
            "A claim of equivalence in several cells at once needs every cell to pass (intersection-union: no "
            "multiplicity adjustment).",
        ),
        notes=lambda t: _row_notes("paired_note")(t) + _row_notes("welch_note")(t),
    ),
    "forecast": View(
        title="Forecast: the gap at sizes the sweep has not run, from the primary size-level line",
        columns=(
            Col("at", cell_of("at", str), 0),
            Col("params", lambda r: f"{significant(r['params'], 4)} ({r['params_source']})", 2),
            Col("baseline", cell_of("baseline", label), 0),
            Col("decades\npast data", cell_of("decades_beyond", number(".2f")), 1),
            Col("(c) gap*\npredicted", cell_of("pred", number(".4f")), 0),
            Col("(c)\nSE", cell_of("pred_se", number(".4f")), 2),
            Col("(c) 95% CI\nmean gap", _ci("ci_low", "ci_high", ".4f"), 0),
            Col("(c) 95% PI\nnew size", _ci("pi_low", "pi_high", ".4f"), 0),
            Col("(b) dev\ngap", cell_of("dev_pred", number(".4f")), 3),
            Col("(b) KR\ndf", cell_of("dev_df", number(".2f")), 5),
            Col("(b) 95% PI", _ci("dev_pi_low", "dev_pi_high", ".4f"), 4),
            Col("(a) run\ngap", cell_of("run_pred", number(".4f")), 3),
            Col("(a) 95% CI", _ci("run_ci_low", "run_ci_high", ".4f"), 4),
        ),
        legend=(
            GAP,
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
            Col("at", cell_of("at", str), 0),
            Col("baseline", cell_of("baseline", label), 0),
            Col(
                "forecast gap\n(PI low, pred, high)",
                lambda r: (
                    NA
                    if missing(r["pred"])
                    else f"{fixed(r['pi_low'], 4)}, {fixed(r['pred'], 4)}, {fixed(r['pi_high'], 4)}"
                ),
                0,
            ),  # fmt: skip
            Col("resid\nSD", cell_of("resid_sd", number(".5f")), 3),
            Col(
                "seeds/arm at\nPI low, pred, high",
                lambda r: ", ".join(number("d")(r[f"seeds_at_{k}"]) for k in ("pi_low", "pred", "pi_high")),
                0,
            ),  # fmt: skip
            Col("steps", lambda r: f"{fixed(r['steps'], 0)} ({r['steps_source']})", 2),
            Col(
                "min/run\n(95% PI)",
                lambda r: (
                    NA
                    if missing(r["minutes_per_run"])
                    else f"{fixed(r['minutes_per_run'], 1)} ({fixed(r['minutes_pi_low'], 1)}-{fixed(r['minutes_pi_high'], 1)})"
                ),
                1,
            ),  # fmt: skip
            Col(
                "GPU min at pred\n(95% CI)",
                lambda r: (
                    NA
                    if missing(r["gpu_minutes"])
                    else f"{fixed(r['gpu_minutes'], 0)} ({fixed(r['gpu_minutes_low'], 0)}-{fixed(r['gpu_minutes_high'], 0)})"
                ),
                0,
            ),  # fmt: skip
        ),
        legend=(
            GAP,
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
                f"{r['at']}: power {significant(r['power'])} at alpha {significant(r['alpha'])}; {r['variants_per_seed']} "
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
            Col("variant", cell_of("variant", label), 0),
            Col("sizes", cell_of("n_sizes", number("d")), 3),
            Col("E\n[95% boot]", lambda r: f"{number('.4f')(r['E'])} {_ci('E_low', 'E_high', '.4f')(r)}", 0),
            Col(
                "alpha\n[95% boot]",
                lambda r: f"{number('.3f')(r['alpha'])} {_ci('alpha_low', 'alpha_high', '.3f')(r)}",
                0,
            ),
            Col("A\n[95% boot]", lambda r: f"{number('.3g')(r['A'])} {_ci('A_low', 'A_high', '.3g')(r)}", 2),
            Col("chi2\n(df)", lambda r: f"{number('.2f')(r['chi2'])} ({number('.0f')(r['resid_df'])})", 1),
            Col("identified", lambda r: "yes" if r["identified"] else "no", 0),
            Col("at", lambda r: r["at"] or "", 0),
            Col(
                "loss at\n[95% boot]",
                lambda r: f"{number('.4f')(r['loss_pred'])} {_ci('loss_low', 'loss_high', '.4f')(r)}",
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
                if not missing(r["boot_ok"])
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
            Col("what the data say", cell_of("evidence", str), 0),
            Col("verdict", cell_of("verdict", str), 0),
            Col("primary analysis", _primary_cell, 0),
        ),
        legend=(
            GAP,
            "A number written with d decimals stands for the interval its rounding allows (t = 3.3: [3.25, 3.35)). "
            "Verdict: consistent (the recomputed value lies in it); consistent only by rounding (only within the "
            "rows' own 4-decimal rounding); decision error (outside, and significance at {alpha} flips); value error "
            "(outside, the decision stands). GRIM: whether a mean of n 4-decimal runs can round to the reported mean.",
            "Primary analysis: the seed-paired t-test per size, adjusted over its family; Welch is the paper's test.",
        ),
        notes=lambda t: [],
        stacked=True,
    ),
    "pool": View(
        title="Can the new rows be pooled with the published ones? (rows flagged, and a source term)",
        columns=(
            Col("term", cell_of("term", str), 0),
            Col("estimate", cell_of("estimate", number("+.5f")), 0),
            Col("SE", cell_of("se", number(".5f")), 1),
            Col("z", cell_of("z", number(".2f")), 2),
            Col("p", cell_of("p", p_cell), 0),
            Col("rows\npub/new", lambda r: f"{r['n_published']}/{r['n_new']}", 1),
            Col("flagged", cell_of("n_flagged", str), 0),
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
            *(
                f"{r['size']} {label(r['variant'])} seed {r['seed']} was trained {', '.join(r['details'])}: "
                "implementation details, not off the recipe (the same steps up to float rounding), so not flagged"
                for rows in t["rows"]
                for r in rows
                if r.get("details")
            ),
        ],  # fmt: skip
    ),
    "reproduction": View(
        title="Does it reproduce? Each re-run beside the published row of its key",
        columns=(
            Col("size", cell_of("size", str), 0),
            Col("variant", cell_of("variant", label), 0),
            Col("seed", cell_of("seed", str), 0),
            Col("published", cell_of("published", number(".4f")), 2),
            Col("re-run", cell_of("reproduced", number(".4f")), 2),
            Col("diff", cell_of("diff", number("+.5f")), 0),
            Col("seed SD", cell_of("seed_sd", number(".5f")), 3),
            Col("diff /\nseed SD", cell_of("diff_in_sd", number("+.2f")), 1),
            Col("noise", cell_of("noise", number(".5f")), 3),
            Col("verdict", cell_of("verdict", str), 0),
        ),
        legend=(
            "diff = re-run - published. Verdict: reproduced within rounding (|diff| <= 0.00005, the published "
            "value's 4th decimal), within same-seed noise (|diff| <= 2 x noise, the SD of the difference between "
            "two runs of one seed), or outside it. seed SD: the published between-seed SD at that size and variant.",
        ),
        notes=_reproduction_notes,
    ),
}


def machine_columns(view: str, frame: pd.DataFrame) -> list[str]:

    keys = {"table": TABLE_COLUMNS, "emergence": EMERGENCE_COLUMNS}.get(view)
    return list(keys) if keys else list(frame.columns)

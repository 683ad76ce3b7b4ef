"""Planning the run that would settle a forecast: seeds per arm for the primary per-size test at the low end,
centre and high end of the forecast's prediction interval, and the GPU time those runs would take
(`minutes_fit`). The design that can tell a gap growing with size from one growing as tokens per parameter
fall is `rr_analysis.stats.design.confirm_design`, on the same time model.

The forecast is `rr_analysis.stats.forecast.forecast` (the primary size-level line); the power is the primary
per-size test's (`rr_analysis.stats.power`: the seed-paired t-test, noncentral t) with the within-seed residual SD
of the mixed model; the time per run is extrapolated from the sweep's `minutes` column.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rr_analysis.comparison import ALPHA, POWER, STAMP, Comparison, compare
from rr_analysis.numbers import fixed
from rr_analysis.stats.forecast import LEVEL, forecast
from rr_analysis.stats.power import pooled_resid_sd, seeds_needed
from rr_analysis.stats.targets import PATH_FACTOR, path_words
from rr_analysis.stats.tokens import cell_budgets, per_param
from rr_core.budget import budget
from rr_core.errors import InputError
from rr_core.ladder import RECIPE, ladder_sizes

__all__ = ["confirm_plan", "minutes_fit", "tokens_per_step", "CONFIRM_COLUMNS"]

# The columns of `confirm_plan`, in order: what `rr analyze confirm --format json/csv` emits.
CONFIRM_COLUMNS: tuple[str, ...] = (
    "at",
    "params",
    "params_source",
    "steps",
    "steps_source",
    "tokens",
    "tokens_per_param",
    "path_tokens_per_param",
    "baseline",
    "pi_low",
    "pred",
    "pi_high",
    "resid_sd",
    "power",
    "alpha",
    "seeds_at_pi_low",
    "seeds_at_pred",
    "seeds_at_pi_high",
    "variants_per_seed",
    "minutes_per_run",
    "minutes_ci_low",
    "minutes_ci_high",
    "minutes_pi_low",
    "minutes_pi_high",
    "minutes_slope",
    "minutes_cells",
    "gpu_minutes",
    "gpu_minutes_low",
    "gpu_minutes_high",
    "note",
    *STAMP,
)


def minutes_fit(df: pd.DataFrame, work: np.ndarray, level: float = LEVEL) -> dict:
    """Minutes per run at new amounts of work (params x steps), from a log-log fit to the sweep's runs.

    Parameters
    ----------
    df
        A validated sweep; the runs with a recorded ``minutes`` are used.
    work
        Parameter count x steps of each new run.
    level
        Coverage of the intervals.

    Returns
    -------
    dict with arrays ``minutes`` (exp of the fitted log minutes: the median run), ``ci_low, ci_high`` (the
    fitted median's interval), ``pi_low, pi_high`` (one new run's interval), and ``slope`` (minutes grow as
    work^slope), ``cells`` (size x variant x steps cells fitted); all NaN with fewer than 3 cells or one amount of work.

    Notes
    -----
    OLS (statsmodels) of each (size, variant, steps) cell's mean log(minutes) on log(params_M 1e6 x steps), t
    on cells - 2 df: a cell's seeds run the same work and take nearly the same time, so they are one point, not
    several. The intervals are the fit's for the mean and for a new cell, exponentiated, and assume the
    log-log line holds out there. Minutes are those the data recorded, on the hardware they ran on (the
    published runs: B200).

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> m = minutes_fit(load_sweep(), np.array([3e9 * 6000]))
    >>> round(float(m["minutes"][0])), m["cells"]
    (78, 15)
    """
    import statsmodels.api as sm

    timed = df[df["minutes"].notna() & (df["minutes"] > 0)]
    cells = timed.assign(work=timed["params_M"] * 1e6 * timed["steps"], log_min=np.log(timed["minutes"]))
    by = ["size", "variant", "steps"]  # steps: each budget of a size is a cell of its own work
    cells = cells.groupby(by, sort=False, observed=True)[["work", "log_min"]].mean()
    x = np.log(cells["work"].to_numpy(float))
    nan = np.full(len(work), np.nan)
    if len(cells) < 3 or np.ptp(x) == 0:
        return {
            "minutes": nan,
            "ci_low": nan,
            "ci_high": nan,
            "pi_low": nan,
            "pi_high": nan,
            "slope": np.nan,
            "cells": len(cells),
        }
    fit = sm.OLS(cells["log_min"].to_numpy(float), sm.add_constant(x)).fit()
    frame = fit.get_prediction(sm.add_constant(np.log(work), has_constant="add")).summary_frame(1 - level)
    e = {
        k: np.exp(frame[c].to_numpy())
        for k, c in (
            ("minutes", "mean"),
            ("ci_low", "mean_ci_lower"),
            ("ci_high", "mean_ci_upper"),
            ("pi_low", "obs_ci_lower"),
            ("pi_high", "obs_ci_upper"),
        )
    }
    return {**e, "slope": float(fit.params[1]), "cells": len(cells)}


def _steps(
    df: pd.DataFrame, name: str, source: str, steps: int | None, reference: str, ladder
) -> tuple[float, str]:
    """A forecast size's step budget and where it comes from: given, the ladder's, or the largest size's."""
    if steps is not None:
        return float(steps), "given"
    if source == "ladder":
        return float(budget(name, ladder=ladder, reference=reference).steps), "ladder"  # steps or tokens
    ref = df[df["variant"] == reference]
    largest = ref.groupby("size", observed=True)["params_M"].mean().idxmax()
    return float(
        ref.loc[ref["size"] == largest, "steps"].median()
    ), f"assumed: the largest size's ({largest})"


def tokens_per_step(name: str, ladder) -> float:
    """Tokens a step of a size trains on: its recipe's batch x block (a ladder size's own; the published
    recipe's for a label no ladder holds)."""
    sizes = ladder_sizes(ladder)
    recipe = sizes[name].recipe if name in sizes else RECIPE
    return float(recipe.batch_size * recipe.block_size)


def _on_path(plan: pd.DataFrame, rows: pd.DataFrame, reference: str) -> None:
    """InputError where the planned runs train at tokens per parameter off the sweep's path (beyond a factor
    `PATH_FACTOR`): the forecast gap is the path's, so the plan would carry it to another budget silently."""
    off = plan[
        np.abs(np.log10(plan["tokens_per_param"] / plan["path_tokens_per_param"])) > np.log10(PATH_FACTOR)
    ]
    if off.empty:
        return
    r = off.iloc[0]
    raise InputError(
        f"runs of {fixed(r['steps'], 0)} steps at {r['at']} train {per_param(r['tokens_per_param'])} tokens per "
        f"parameter, but the forecast gap is the sweep's path's, where {path_words(cell_budgets(rows, reference))} "
        f"(about {per_param(r['path_tokens_per_param'])} at {r['at']}); the sweep cannot say what the gap is at "
        f"another budget. Plan at the path's budget (leave out --steps), or plan runs that tell size from tokens "
        f"per parameter: rr analyze confirm --at {r['at']} --tokens-per-param {per_param(r['tokens_per_param'])}"
    )


def _seeds(gap: float, sd: float, alpha: float, power: float) -> float:
    """Seeds per arm for the paired test at this true gap; NaN when the gap is not above 0 or no SD."""
    if not (np.isfinite(gap) and gap > 0 and np.isfinite(sd) and sd > 0):
        return np.nan
    return seeds_needed(gap / (np.sqrt(2) * sd), True, alpha, power)


def confirm_plan(
    df: pd.DataFrame,
    at: Sequence[str],
    *,
    power: float = POWER,
    alpha: float = ALPHA,
    steps: int | None = None,
    ladder: str | None = None,
    comparison: Comparison | None = None,
) -> pd.DataFrame:
    """Seeds per arm and GPU time for a confirming run at each forecast size, across the forecast's spread.

    Parameters
    ----------
    df
        A validated sweep (`load_sweep`).
    at
        Forecast sizes (`rr_analysis.stats.targets.forecast_size`).
    power, alpha
        Target power and two-sided level of the per-size paired t-test.
    steps
        The step budget of the new runs; None: the ladder's for a ladder size, else the largest size's.
    ladder, comparison
        The ladder file and the comparison, as for `forecast`.

    Returns
    -------
    DataFrame, one row per (forecast size, baseline), columns `CONFIRM_COLUMNS`: ``at, params,
    params_source`` (as `forecast`), ``steps, steps_source`` ("given", "ladder" or the size assumed),
    ``tokens, tokens_per_param`` (of the planned runs: steps x the recipe's batch x block, over params),
    ``path_tokens_per_param`` (the D/N the forecast line assumes there: the sweep's path), ``baseline``; the forecast ``pi_low, pred, pi_high`` (`forecast`); ``resid_sd``
    (`power.pooled_resid_sd`), ``power, alpha``; ``seeds_at_pi_low, seeds_at_pred, seeds_at_pi_high``
    (seeds per arm if the true gap is the PI's low end, the prediction, the PI's high end; nullable
    integers, n/a where that gap is not above 0); ``variants_per_seed`` (Review and every baseline);
    ``minutes_per_run`` with ``minutes_ci_*`` (the fitted median) and ``minutes_pi_*`` (one run),
    ``minutes_slope, minutes_cells`` (`minutes_fit`); ``gpu_minutes`` (seeds_at_pred x variants_per_seed x
    minutes_per_run) with ``gpu_minutes_low, gpu_minutes_high`` (the same from minutes_ci_*); ``note``; and
    `rr_analysis.comparison.STAMP`.

    Notes
    -----
    Under the mixed model a seed-matched difference has SD sqrt(2) sigma, so d_z = gap / (sqrt(2) sigma)
    and the requirement is the smallest n >= 2 whose two-sided paired t-test power (noncentral t,
    `power.t_test_power`) reaches `power` (`power.seeds_needed`), as `power.seed_plan` plans. sigma is pooled
    over the sweep's sizes; its per-size values differ 50-fold on the published data, and nothing says what
    it is at a new size. The three seed counts span the forecast's uncertainty, not the noise's. Time: the
    runs' log(minutes) on log(params x steps), extrapolated (`minutes_fit`). The forecast is the sweep's path's
    (tokens per parameter falling with size as they did): runs planned off it by more than a factor
    `PATH_FACTOR` (a --steps or a ladder's steps far from the path's) are refused with InputError, which
    names `rr_analysis.stats.design.confirm_design`, the plan that can tell size from tokens per parameter.

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> p = confirm_plan(load_sweep(), ["3B"])
    >>> p[["seeds_at_pi_low", "seeds_at_pred", "seeds_at_pi_high"]].values.tolist()
    [[7, 3, 2], [3, 3, 2]]
    """
    if not 0 < power < 1 or not 0 < alpha < 1:
        raise InputError(f"power and alpha must lie between 0 and 1, got power {power!r}, alpha {alpha!r}")
    if steps is not None and steps < 1:
        raise InputError(f"steps must be a positive number of optimiser steps, got {steps!r}")
    rows, cmp = compare(df, comparison)
    f = forecast(df, at, ladder=ladder, comparison=cmp)
    sd, why = pooled_resid_sd(df, cmp)
    chosen = list(cmp.baselines)
    budget = {
        a: _steps(df, a, s, steps, cmp.reference, ladder)
        for a, s in zip(f["at"], f["params_source"], strict=True)
    }
    out = f[["at", "params", "params_source", "baseline", "pi_low", "pred", "pi_high"]].copy()
    out.insert(3, "steps", out["at"].map(lambda a: budget[a][0]))
    out.insert(4, "steps_source", out["at"].map(lambda a: budget[a][1]))
    per_step = out["at"].map(lambda a: tokens_per_step(a, ladder)).to_numpy(float)
    out.insert(5, "tokens", out["steps"].to_numpy(float) * per_step)
    out.insert(6, "tokens_per_param", out["tokens"] / out["params"])
    out.insert(7, "path_tokens_per_param", f["tokens_per_param"].to_numpy(float))
    _on_path(out, rows, cmp.reference)
    out["resid_sd"], out["power"], out["alpha"] = sd, power, alpha
    for c in ("pi_low", "pred", "pi_high"):
        need = [_seeds(g, sd, alpha, power) for g in out[c]]
        out[f"seeds_at_{c}"] = pd.array([None if np.isnan(n) else int(n) for n in need], dtype="Int64")
    out["variants_per_seed"] = 1 + len(chosen)
    m = minutes_fit(df, out["params"].to_numpy(float) * out["steps"].to_numpy(float))
    for k in ("ci_low", "ci_high", "pi_low", "pi_high"):
        out[f"minutes_{k}"] = m[k]
    out.insert(out.columns.get_loc("minutes_ci_low"), "minutes_per_run", m["minutes"])
    out["minutes_slope"], out["minutes_cells"] = m["slope"], m["cells"]
    runs = out["seeds_at_pred"].astype("float").to_numpy() * out["variants_per_seed"].to_numpy()
    for k, c in (
        ("gpu_minutes", "minutes_per_run"),
        ("gpu_minutes_low", "minutes_ci_low"),
        ("gpu_minutes_high", "minutes_ci_high"),
    ):
        out[k] = runs * out[c].to_numpy(float)
    out["note"] = [_note(r, why, f.loc[i, "note"]) for i, r in out.iterrows()]
    return cmp.stamp(out)[list(CONFIRM_COLUMNS)]


def _note(r: pd.Series, why: str, forecast_note: str) -> str:
    """Why a seed count or a time is n/a, in words."""
    notes = [why]
    if not np.isfinite(r["pred"]):
        notes.append(f"no forecast ({forecast_note})")
    elif not r["pi_low"] > 0:
        notes.append(
            f"the prediction interval reaches {fixed(r['pi_low'], 4)}: if the true gap is at its low end, "
            "no number of seeds shows a gap > 0"
        )
    if not np.isfinite(r["minutes_per_run"]):
        notes.append("fewer than 3 cells with recorded minutes, or one amount of work: no time extrapolated")
    return "; ".join(n for n in notes if n)

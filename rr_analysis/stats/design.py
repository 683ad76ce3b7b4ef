"""The design that can tell a gap growing with size from one growing as tokens per parameter fall
(`rr analyze confirm --tokens-per-param X`): two sizes at each of two budgets, one the sweep's own path, with
the seeds each cell needs for the primary per-size test and the GPU minutes they take (the time model of
`rr_analysis.stats.confirm.minutes_fit`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rr_analysis.comparison import ALPHA, POWER, STAMP, Comparison, compare
from rr_analysis.numbers import significant
from rr_analysis.stats.confirm import minutes_fit, tokens_per_step
from rr_analysis.stats.power import pooled_resid_sd, seeds_needed
from rr_analysis.stats.targets import PATH_FACTOR
from rr_analysis.stats.tokens import cell_budgets
from rr_core.errors import InputError
from rr_core.ladder import RECIPE

__all__ = ["confirm_design", "DESIGN_COLUMNS"]

# The columns of `confirm_design`, in order: what `rr analyze confirm --tokens-per-param X --format json/csv` emits.
DESIGN_COLUMNS: tuple[str, ...] = (
    "at", "size", "params", "budget", "tokens_per_param", "tokens", "steps", "seeds_in_sweep", "seeds",
    "seeds_to_run", "variants_per_seed", "runs", "minutes_per_run", "minutes_pi_low", "minutes_pi_high",
    "gpu_minutes", "gpu_minutes_total", "effect", "effect_baseline", "decades", "resid_sd", "power", "alpha",
    "note", *STAMP,
)  # fmt: skip


def _size_effects(e: pd.DataFrame, decades: float) -> pd.Series:
    """Each baseline's gap difference between two sizes `decades` apart, if the growth the sweep's size-only
    line (c) reports were all size: its slope per decade x decades."""
    return (e.set_index("baseline")["meta_slope"] * decades).abs()


def confirm_design(
    df: pd.DataFrame,
    at: Sequence[str],
    tokens_per_param: float,
    *,
    power: float = POWER,
    alpha: float = ALPHA,
    ladder: str | None = None,
    comparison: Comparison | None = None,
) -> pd.DataFrame:
    """A design that can tell a gap growing with size from one growing as tokens per parameter fall: two sizes
    at each of two budgets, one the sweep's own path, with seeds per cell and GPU minutes.

    Parameters
    ----------
    df
        A validated sweep (`load_sweep`).
    at
        The target sizes (`rr_analysis.stats.targets.forecast_size`), each planned with the sweep's largest
        size (with the next largest when the target is the largest).
    tokens_per_param
        The second budget, D/N at both sizes (20 is about compute-optimal, Hoffmann et al. 2022).
    power, alpha
        Target power and two-sided level of the test of the size effect at fixed D/N.
    ladder, comparison
        As for `confirm_plan`.

    Returns
    -------
    DataFrame, one row per (target, cell) of the design, columns `DESIGN_COLUMNS`: ``at`` (the target), ``size,
    params`` (the cell's size and its reference's parameter count), ``budget`` ("path": the sweep's tokens per
    parameter carried to that size, `rr_analysis.stats.tokens.path_tokens_per_param`, the largest size's own
    where it ran on it; or "X tokens per parameter"), ``tokens_per_param, tokens, steps`` (tokens = D/N x
    params, steps = tokens / (batch x block) of the size's recipe, rounded), ``seeds_in_sweep`` (seeds every
    compared variant already has in that cell), ``seeds`` (per cell, for the target power), ``seeds_to_run``,
    ``variants_per_seed``, ``runs`` (seeds to run x variants), ``minutes_per_run, minutes_pi_low,
    minutes_pi_high`` (`minutes_fit` at the size's path budget, scaled by tokens), ``gpu_minutes`` (runs x
    minutes per run) and ``gpu_minutes_total`` (the target's design, every cell), ``effect,
    effect_baseline`` (the size effect planned for, the smallest of the baselines'), ``decades`` (log10 of the
    two sizes' ratio), ``resid_sd, power, alpha``, ``note``; then `STAMP`.

    Notes
    -----
    Cells: (L, path), (A, path), (L, X), (A, X) for the largest size L and the target A. The size effect at fixed
    D/N is gap(A, X) - gap(L, X); the D/N effect at fixed size is gap(L, X) - gap(L, path), and (A, X) -
    (A, path). With the sweep's cells, `emergence` then fits size and D/N apart (``meta2_*``). Effect planned for:
    each baseline's size-only slope (c) x the decades between L and A, the growth the sweep reports if it were
    all size, the smallest over the baselines. Each seed gives a seed-paired difference of SD sqrt(2) sigma
    (sigma: `power.pooled_resid_sd`), so the size effect is a two-sample t-test of two cells' differences,
    d = effect / (sqrt(2) sigma), and seeds per cell is the smallest n >= 2 whose two-sided power reaches
    `power` (`power.seeds_needed`, noncentral t). Minutes: `minutes_fit` at the size's path budget (the work
    the sweep's runs did), times the cell's tokens over the path's (a step costs the same at any budget): far
    past the data at a compute-optimal budget, so a rough figure (its interval is the fit's, scaled).

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> d = confirm_design(load_sweep(), ["3B"], 20)
    >>> d[["size", "budget", "steps", "seeds"]].values.tolist()
    [['1B', 'path', 6000, 6], ['1B', '20 tokens per parameter', 1201219, 6], ['3B', 'path', 5881, 6], ['3B', '20 tokens per parameter', 3662109, 6]]
    """
    from rr_analysis.stats.emergence import emergence
    from rr_analysis.stats.targets import forecast_size

    if not 0 < power < 1 or not 0 < alpha < 1:
        raise InputError(f"power and alpha must lie between 0 and 1, got power {power!r}, alpha {alpha!r}")
    if not (np.isfinite(tokens_per_param) and tokens_per_param > 0):
        raise InputError(f"--tokens-per-param must be a number above 0, got {tokens_per_param!r}")
    if not at:
        raise InputError("no target size: name one with --at, such as 3B")
    rows, cmp = compare(df, comparison)
    budgets = cell_budgets(rows, cmp.reference)
    sd, why = pooled_resid_sd(df, cmp)
    e = emergence(df, cmp)
    variants = [cmp.reference, *cmp.baselines]
    out = []
    for name, n, source in dict.fromkeys(forecast_size(a, cmp.reference, ladder) for a in at):
        names = budgets.drop_duplicates("size_name", keep="last")
        other = names[names["size_name"] != name].iloc[-1]  # the sweep's largest size but the target
        decades = abs(np.log10(n / float(other["params"])))
        effects = _size_effects(e, decades)
        chosen = effects.idxmin() if effects.notna().any() else ""
        effect = float(effects.min()) if chosen else np.nan
        need = _seeds_two(effect, sd, alpha, power)
        for size, params, src in ((other["size_name"], float(other["params"]), None), (name, n, source)):
            for cell in _cells(df, rows, budgets, (size, params, src), tokens_per_param, variants, ladder):
                out.append(
                    {
                        "at": name,
                        **cell,
                        "seeds": need,
                        "effect": effect,
                        "effect_baseline": chosen,
                        "seeds_to_run": np.nan if np.isnan(need) else max(need - cell["seeds_in_sweep"], 0),
                        "decades": decades,
                        "note": _design_note(cell, why, effect),
                    }
                )
    frame = pd.DataFrame(out)
    frame["runs"] = frame["seeds_to_run"] * frame["variants_per_seed"]
    frame["gpu_minutes"] = frame["runs"] * frame["minutes_per_run"]
    frame["gpu_minutes_total"] = frame.groupby("at", sort=False, observed=True)["gpu_minutes"].transform(
        lambda g: g.sum(min_count=len(g))
    )
    frame["resid_sd"], frame["power"], frame["alpha"] = sd, power, alpha
    for col in ("seeds", "seeds_to_run", "runs", "tokens"):
        frame[col] = pd.array(
            [None if np.isnan(v) else int(v) for v in frame[col].astype(float)], dtype="Int64"
        )
    return cmp.stamp(frame)[list(DESIGN_COLUMNS)]


def _cells(
    df, rows, budgets, size: tuple, tokens_per_param: float, variants: list[str], ladder
) -> list[dict]:
    """One size's two cells of the design, at the sweep's path and at `tokens_per_param`: budget, steps, seeds
    the sweep holds, and minutes per run (`minutes_fit` at the path's budget, scaled by tokens)."""
    from rr_analysis.stats.tokens import path_tokens_per_param

    name, params, source = size
    per_step = (
        tokens_per_step(name, ladder) if source != "label" else float(RECIPE.batch_size * RECIPE.block_size)
    )
    own = budgets[budgets["size_name"] == name]
    path = float(path_tokens_per_param(budgets, [params])[0])
    on = own[np.abs(np.log10(own["tokens_per_param"] / path)) <= np.log10(PATH_FACTOR)]  # it ran on the path
    path_dn = float(on["tokens_per_param"].iloc[0]) if len(on) else path
    base = minutes_fit(df, np.array([params * path_dn * params / per_step]))
    out = []
    for named, dn in (
        ("path", path_dn),
        (f"{significant(tokens_per_param, 3)} tokens per parameter", tokens_per_param),
    ):
        steps = max(round(dn * params / per_step), 1)
        scale = steps * per_step / (path_dn * params)
        out.append(
            {
                "size": name,
                "params": params,
                "budget": named,
                "tokens_per_param": float(dn),
                "tokens": steps * per_step,
                "steps": steps,
                "seeds_in_sweep": _seeds_in(rows, on["size"].iloc[0], variants)
                if named == "path" and len(on)
                else 0,
                "variants_per_seed": len(variants),
                "minutes_per_run": base["minutes"][0] * scale,
                "minutes_pi_low": base["pi_low"][0] * scale,
                "minutes_pi_high": base["pi_high"][0] * scale,
            }
        )
    return out


def _seeds_two(effect: float, sd: float, alpha: float, power: float) -> float:
    """Seeds per cell for the two-sample t-test of two cells' seed-paired differences (SD sqrt(2) sd each)."""
    if not (np.isfinite(effect) and effect > 0 and np.isfinite(sd) and sd > 0):
        return np.nan
    return seeds_needed(effect / (np.sqrt(2) * sd), False, alpha, power)


def _seeds_in(rows: pd.DataFrame, cell: str, variants: list[str]) -> int:
    """Seeds every variant of the design already has at `cell`."""
    at = rows[rows["size"] == cell]
    sets = [set(at.loc[at["variant"] == v, "seed"]) for v in variants]
    return len(set.intersection(*sets)) if sets else 0


def _design_note(cell: dict, why: str, effect: float) -> str:
    """Why a cell's numbers are n/a, and what they rest on, in words."""
    notes, budget, minutes = [why], cell["budget"], cell["minutes_per_run"]
    if cell["seeds_in_sweep"]:
        notes.append(f"{cell['seeds_in_sweep']} seeds of every variant are in the sweep already")
    if not np.isfinite(effect):
        notes.append("no size-only slope to plan for (rr analyze emergence says why): no seed count")
    if not np.isfinite(minutes):
        notes.append("fewer than 3 cells with recorded minutes, or one amount of work: no time extrapolated")
    elif budget != "path":
        notes.append(
            "minutes: the fitted time at the size's path budget scaled by tokens, far past any timed run"
        )
    return "; ".join(n for n in notes if n)

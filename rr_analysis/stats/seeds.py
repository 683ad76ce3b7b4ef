"""How much of a run's result is its initial weights' and how much its data order's: the variance components of
the init seed and the data seed, from runs that cross them (`rr train --init-seed --data-seed`).

The published design gives each run one seed for both, so its seed variance is theirs together; a pilot that
crosses them (every init seed with every data seed, PolyPythias' design: van der Wal et al. 2025, arXiv
2503.09543) tells them apart. `seed_components` estimates, per (size, variant), the crossed random-effects
model y = mu + a_init + b_data + e by exact REML for the balanced design: the ANOVA mean squares, with a
component that would be negative held at 0 and its sum of squares pooled into the residual's, which is where
the REML likelihood of a balanced crossed design peaks (lme4's answer; tests/test_r_oracle.py checks it).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rr_analysis.comparison import Comparison, compare, sizes_in_order

__all__ = ["seed_components", "crossed_reml", "SEED_COLUMNS", "FACTORS"]

FACTORS: tuple[str, ...] = ("init", "data")  # the two seeds, as the columns init_seed and data_seed name them
METHOD = "exact REML, balanced crossed design (ANOVA mean squares; a component at 0 pools into the residual)"
# The columns of `seed_components`, in order, then rr_analysis.comparison.STAMP.
SEED_COLUMNS: tuple[str, ...] = (
    "size", "variant", "n_runs", "n_init", "n_data", "replicates", "mean",
    "init_var", "data_var", "resid_var", "init_sd", "data_sd", "resid_sd", "init_share", "data_share",
    "df_init", "df_data", "df_resid", "method", "note",
)  # fmt: skip


def crossed_reml(y: np.ndarray) -> dict[str, float]:
    """REML variance components of a balanced crossed design without interaction, from its array of runs.

    Parameters
    ----------
    y
        Shape (I, J, r): the response of every run, by init seed i, data seed j and replicate (r >= 1 runs
        of each pair), I, J >= 1 and I J r - I - J + 1 >= 1 (a residual degree of freedom).

    Returns
    -------
    dict with mean (the grand mean), init_var, data_var, resid_var (NaN for a factor with one level) and
    df_init, df_data, df_resid (the mean squares' degrees of freedom).

    Notes
    -----
    y_ijk = mu + a_i + b_j + e_ijk, a ~ N(0, s_a^2), b ~ N(0, s_b^2), e ~ N(0, s^2). With the grand mean m
    and the margins' means: SS_a = J r sum_i (ybar_i - m)^2 on I - 1 df, SS_b = I r sum_j (ybar_j - m)^2 on
    J - 1 df, SS_e = sum (y_ijk - ybar_i - ybar_j + m)^2 on I J r - I - J + 1 df. In a balanced design the
    REML likelihood is that of three independent scaled chi-squares, SS_a ~ (s^2 + J r s_a^2) chi2,
    SS_b ~ (s^2 + I r s_b^2) chi2 and SS_e ~ s^2 chi2, so with MS = SS / df it peaks at s^2 = MS_e,
    s_a^2 = (MS_a - MS_e) / (J r), s_b^2 = (MS_b - MS_e) / (I r) where both are >= 0. Where one would be
    negative, its constraint binds: it is 0 and s^2 = (SS_e + SS_a) / (df_e + df_a), repeated while another
    mean square falls below the pooled s^2 (Searle, Casella and McCulloch 1992, ch. 4).

    Example
    -------
    >>> y = np.array([[[1.0], [3.0]], [[2.0], [6.0]]])  # 2 init seeds x 2 data seeds, one run each
    >>> {k: round(v, 3) for k, v in crossed_reml(y).items() if k.endswith("var")}
    {'init_var': 1.5, 'data_var': 4.0, 'resid_var': 1.0}
    """
    n_i, n_j, r = y.shape
    grand = y.mean()
    rows, cols = y.mean(axis=(1, 2)), y.mean(axis=(0, 2))
    ss = {
        "init": n_j * r * float(((rows - grand) ** 2).sum()),
        "data": n_i * r * float(((cols - grand) ** 2).sum()),
    }
    df = {"init": n_i - 1, "data": n_j - 1}
    ss_e = float(((y - rows[:, None, None] - cols[None, :, None] + grand) ** 2).sum())
    df_e = n_i * n_j * r - n_i - n_j + 1
    per = {"init": n_j * r, "data": n_i * r}  # runs per level: s^2 + per s_k^2 is the factor's expected MS
    zero, pooled = set(), ss_e / df_e
    while more := [k for k in FACTORS if df[k] and k not in zero and ss[k] / df[k] < pooled]:
        zero |= set(more)
        pooled = (ss_e + sum(ss[k] for k in zero)) / (df_e + sum(df[k] for k in zero))
    out = {"mean": float(grand)}
    for k in FACTORS:
        out[f"{k}_var"] = np.nan if not df[k] else 0.0 if k in zero else (ss[k] / df[k] - pooled) / per[k]
    out["resid_var"] = pooled
    return out | {"df_init": df["init"], "df_data": df["data"], "df_resid": df_e}


def _cell(g: pd.DataFrame, metric: str) -> dict:
    """The components of one (size, variant)'s runs of `metric`, or a note saying why there are none."""
    init, data = (g[f"{k}_seed"] for k in FACTORS)
    counts = pd.crosstab(init, data)
    n_i, n_j = counts.shape
    found = {"n_runs": len(g), "n_init": n_i, "n_data": n_j, "mean": float(g[metric].mean()), "method": ""}
    reps = set(counts.to_numpy().ravel().tolist())
    if len(reps) != 1:
        why = "each run's one seed set both, as published" if (init == data).all() else "uneven runs per pair"
        return found | {
            "note": f"init and data seeds not crossed evenly ({why}): give every init seed every "
            "data seed, as often (rr train --init-seed I --data-seed D)"
        }
    (r,) = reps
    if n_i * n_j * r - n_i - n_j + 1 < 1:
        return found | {"replicates": r, "note": "no residual degree of freedom (one init and one data seed)"}
    y = np.empty((n_i, n_j, r))
    for (i, j), runs in g.groupby(["init_seed", "data_seed"], observed=True)[metric]:
        y[counts.index.get_loc(i), counts.columns.get_loc(j)] = runs.to_numpy(float)
    fit = crossed_reml(y)
    total = sum(v for k, v in fit.items() if k.endswith("_var") and np.isfinite(v))
    sd = {f"{k}_sd": np.sqrt(fit[f"{k}_var"]) for k in (*FACTORS, "resid")}
    shares = {f"{k}_share": fit[f"{k}_var"] / total if total > 0 else np.nan for k in FACTORS}
    one = [f"one {k} seed: its component is not estimated" for k in FACTORS if not fit[f"df_{k}"]]
    return found | {"replicates": r, **fit, **sd, **shares, "method": METHOD, "note": "; ".join(one)}


def seed_components(
    df: pd.DataFrame,
    comparison: Comparison | None = None,
) -> pd.DataFrame:
    """The variance of a variant's result due to its init seed, its data seed and the rest, per size.

    Parameters
    ----------
    df
        A validated sweep (`load_sweep`). Its init_seed and data_seed columns say each run's seeds; a run
        without them (or an empty cell) drew both from its seed.
    comparison
        The comparison (`rr_analysis.comparison.Comparison`): its metric is the
        response, and its variants (the reference and the baselines named; all present by default) are the
        ones described, each on its own.

    Returns
    -------
    DataFrame, one row per (size, variant), with `SEED_COLUMNS`: ``n_runs``, ``n_init`` and ``n_data`` (the
    distinct seeds), ``replicates`` (runs of each (init, data) pair), ``mean`` (mean of the metric),
    ``init_var, data_var, resid_var`` (REML variance components, in the metric's squared units),
    ``init_sd, data_sd, resid_sd`` (their square roots), ``init_share, data_share`` (of the three's sum),
    ``df_init, df_data, df_resid`` (the mean squares' degrees of freedom: with 2 x 2 runs, one each),
    ``method`` and ``note`` (why a cell has no estimate, or a factor with one seed), then
    `rr_analysis.comparison.STAMP`. A cell that does not cross its seeds evenly has its counts and mean only.

    Notes
    -----
    y = mu + a_init + b_data + e per (size, variant), the seeds' effects random and crossed, no interaction
    (with one run per pair it is the residual): `crossed_reml`, exact REML of the balanced design. Each
    component of a 2 x 2 pilot rests on one degree of freedom: an order of magnitude, not a measurement.

    Example
    -------
    >>> rows = [(i, d, 1.0 + 0.01 * i + 0.03 * d + 0.002 * (i == d)) for i in (0, 1) for d in (0, 1)]
    >>> df = pd.DataFrame(rows, columns=["init_seed", "data_seed", "val_loss"])
    >>> df = df.assign(size="tiny", variant="standard", seed=range(4), params_M=1.0, steps=100)
    >>> seed_components(df)[["init_var", "data_var", "resid_var"]].round(7).values.tolist()
    [[4.8e-05, 0.000448, 4e-06]]
    """
    rows, c = compare(df, comparison, require_reference=False)
    rows = rows.assign(**{f"{k}_seed": _seed(rows, f"{k}_seed") for k in FACTORS})
    found = []
    for size in sizes_in_order(rows):
        at = rows[rows["size"] == size]
        for variant, g in at.groupby("variant", sort=False, observed=True):
            found.append({"size": size, "variant": variant, **_cell(g, c.metric)})
    return c.stamp(pd.DataFrame(found).reindex(columns=list(SEED_COLUMNS)))


def _seed(rows: pd.DataFrame, column: str) -> pd.Series:
    """A run's seed of one kind: its column where the file has it and the cell is not empty, else its seed."""
    if column not in rows.columns:
        return rows["seed"]
    return rows[column].fillna(rows["seed"]).astype("int64")

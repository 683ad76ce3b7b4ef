"""Tokens trained and tokens per parameter: each run's budget and each cell's, and whether a sweep can tell a
trend with size from one with tokens per parameter.

A run's tokens are the sweep file's ``tokens`` where the trainer recorded them, else steps x the recipe's batch x
block (`rr_core.ladder`: 64 x 256 for the published sizes). A cell's tokens per parameter D/N divide its
reference's tokens by the reference's exact parameter count (`rr_core.shapes.model_config`), the same for every
arm of the cell. In the published sweep D/N falls with N (2.20 at 60M to 0.10 at 1B), so log10 N and log10 D/N
move together and a gap that grows with size grows as tokens per parameter fall just as well (Kaddour et al.
2023, "No train no gain"; Hoffmann et al. 2022 put the compute-optimal budget near 20 tokens per parameter).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rr_analysis.cells import SIZE_NAME
from rr_analysis.comparison import sizes_in_order
from rr_core.errors import InputError
from rr_core.ladder import LADDER, RECIPE
from rr_core.shapes import model_config

__all__ = [
    "run_tokens",
    "cell_budgets",
    "size_and_tokens",
    "confound_words",
    "per_param",
    "path_tokens_per_param",
    "tokens_source",
    "BUDGET_COLUMNS",
    "CONFOUNDED_R",
]

# |r| of log10 N and log10 D/N over the cells at or above which the two cannot be told apart
CONFOUNDED_R = 0.9
# The columns of `cell_budgets`, in order.
BUDGET_COLUMNS: tuple[str, ...] = (
    "size", "size_name", "params", "params_source", "steps", "batch", "block", "tokens", "tokens_source",
    "tokens_per_param", "log_params", "log_tokens_per_param",
)  # fmt: skip


def _names(df: pd.DataFrame) -> pd.Series:
    """Each row's size label as the file holds it (a cell's `SIZE_NAME` where the file holds several budgets)."""
    return (df[SIZE_NAME] if SIZE_NAME in df.columns else df["size"]).astype(str)


def _recipe(name: str):
    """The recipe a size trained with: rr's ladder's for its sizes, the published recipe for any other label."""
    return LADDER[name].recipe if name in LADDER else RECIPE


def run_tokens(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each run's tokens trained, and where the number comes from.

    Parameters
    ----------
    df
        A sweep frame (`load_sweep`, or the rows `rr_analysis.comparison.compare` returns).

    Returns
    -------
    (tokens, source): float arrays of tokens, and ``"file"`` where the file's ``tokens`` column holds the
    run's, ``"recipe"`` where it is steps x batch x block of the size's recipe (`rr_core.ladder`: a ladder
    size's own, the published 64 x 256 for any other label).

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> tokens, source = run_tokens(load_sweep())
    >>> int(tokens[0]), str(source[0])
    (131072000, 'recipe')
    """
    names = _names(df).to_numpy()
    per_step = np.array([_recipe(n).batch_size * _recipe(n).block_size for n in names], dtype=float)
    derived = df["steps"].to_numpy(float) * per_step
    given = df["tokens"].to_numpy(float) if "tokens" in df.columns else np.full(len(df), np.nan)
    recorded = np.isfinite(given)
    return np.where(recorded, given, derived), np.where(recorded, "file", "recipe")


def _reference_params(name: str, reference: str, params_m: float) -> tuple[float, str]:
    """The reference's parameter count at a size: the exact count of its shape (`rr_core.shapes`) where the
    size is a ladder size whose count rounds to the file's params_M, else the file's params_M x 1e6."""
    if name in LADDER:
        try:
            n = model_config(name, reference, reference=reference).n_params
        except InputError:  # a variant not registered here: the file's count is all there is
            n = None
        if n is not None and round(n / 1e6, 2) == round(params_m, 2):
            return float(n), "shape"
    return params_m * 1e6, "file"


def cell_budgets(rows: pd.DataFrame, reference: str) -> pd.DataFrame:
    """Each cell's budget: its reference's tokens and parameter count, and tokens per parameter.

    Parameters
    ----------
    rows
        A sweep frame, or `compare`'s rows (a file of several budgets is then read per (size, budget) cell:
        `rr_analysis.cells.budget_cells`).
    reference
        The variant whose parameter count and tokens stand for the cell's (every arm of a cell is compared at
        the reference's D/N).

    Returns
    -------
    DataFrame with `BUDGET_COLUMNS`, one row per cell (size) with reference runs, smallest first: ``size``
    (the cell), ``size_name`` (its size's label), ``params`` (the reference's parameter count) and
    ``params_source`` ("shape": the exact count of the ladder's shape, `rr_core.shapes.model_config`; "file":
    params_M x 1e6, for a label rr's ladder does not hold or a file whose params_M is not that shape's),
    ``steps`` (the reference's median steps), ``batch, block`` (the size's recipe), ``tokens`` (the
    reference's median tokens, `run_tokens`) and ``tokens_source`` ("file", "recipe", or "file and recipe"
    where its runs differ), ``tokens_per_param`` (tokens / params), ``log_params, log_tokens_per_param``
    (log10 N and log10 D/N, the emergence view's moderators).

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> b = cell_budgets(load_sweep(), "review_neutral")
    >>> b["tokens_per_param"].round(2).tolist()
    [2.2, 0.86, 0.41, 0.19, 0.1]
    """
    tokens, source = run_tokens(rows)
    ref = rows.assign(_tokens=tokens, _source=source, _name=_names(rows).to_numpy())
    ref = ref[ref["variant"] == reference]
    out = []
    for size in sizes_in_order(ref):
        g = ref[ref["size"] == size]
        name = str(g["_name"].iloc[0])
        params, params_source = _reference_params(name, reference, float(g["params_M"].mean()))
        kinds = sorted(set(g["_source"]))
        recipe = _recipe(name)
        out.append(
            {
                "size": size,
                "size_name": name,
                "params": params,
                "params_source": params_source,
                "steps": float(g["steps"].median()),
                "batch": recipe.batch_size,
                "block": recipe.block_size,
                "tokens": float(g["_tokens"].median()),
                "tokens_source": " and ".join(kinds),
            }
        )
    out = pd.DataFrame(out, columns=[c for c in BUDGET_COLUMNS if "per_param" not in c and "log" not in c])
    out["tokens_per_param"] = out["tokens"] / out["params"]
    out["log_params"] = np.log10(out["params"].astype(float))
    out["log_tokens_per_param"] = np.log10(out["tokens_per_param"].astype(float))
    return out[list(BUDGET_COLUMNS)]


def size_and_tokens(budgets: pd.DataFrame) -> dict:
    """Can these cells tell a trend with size from one with tokens per parameter?

    Parameters
    ----------
    budgets
        `cell_budgets` of the cells in question (those a fit uses).

    Returns
    -------
    dict with ``r`` (Pearson's correlation of log10 N and log10 D/N over the cells; NaN where either is
    constant or there are fewer than 3 cells), ``varies`` (both vary over the cells), ``sizes_with_budgets``
    (sizes holding two or more budgets), ``separable``: they vary in both, |r| < `CONFOUNDED_R`, and two or
    more sizes hold two or more budgets each, and ``reading``, what a size-level fit over the cells can
    attribute: "constant" (D/N, or N, the same in every cell: a size-only line reads size alone), "separable"
    (both moderators fitted apart) or "confounded" (they move together). Where not separable, a trend along
    the cells is as much one with tokens per parameter as with size.

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> s = size_and_tokens(cell_budgets(load_sweep(), "review_neutral"))
    >>> round(s["r"], 3), s["separable"], s["reading"]
    (-0.998, False, 'confounded')
    """
    x, z = budgets["log_params"].to_numpy(float), budgets["log_tokens_per_param"].to_numpy(float)
    varies = len(x) > 1 and np.ptp(x) > 0 and np.ptp(z) > 0
    r = float(np.corrcoef(x, z)[0, 1]) if varies and len(x) >= 3 else np.nan
    several = int((budgets.groupby("size_name", observed=True)["size"].nunique() >= 2).sum())
    separable = bool(varies and np.isfinite(r) and abs(r) < CONFOUNDED_R and several >= 2)
    reading = "separable" if separable else "confounded" if varies else "constant"
    return {
        "r": r,
        "varies": bool(varies),
        "sizes_with_budgets": several,
        "separable": separable,
        "reading": reading,
    }


def confound_words(sizes: list[str], steps: list[int], budgets: pd.DataFrame) -> str:
    """Steps, and tokens per parameter, that change with size along a sweep where the cells cannot tell them
    apart from size, in words ("" where they can, or where neither changes): what every slope on size is also
    a slope on. `steps` are the reference's at each of `sizes`; `budgets` are `cell_budgets`."""
    cells = budgets[budgets["size"].isin(sizes)]
    reading = size_and_tokens(cells)
    if reading["separable"]:
        return ""
    first, last = (cells.iloc[i] for i in (0, -1))
    dn = (
        f"tokens per parameter (from {per_param(first['tokens_per_param'])} at {first['size']} to "
        f"{per_param(last['tokens_per_param'])} at {last['size']})"
    )
    if len(set(steps)) < 2:
        if not reading["varies"]:
            return ""
        return (
            f"steps are the same at every size, so {dn} fall as 1/N: every slope is per decade of "
            "parameters and of tokens per parameter at once; scale and training budget are confounded"
        )
    way = "fall" if all(a >= b for a, b in zip(steps, steps[1:], strict=False)) else "differ"
    listed = ", ".join(f"{s} {n}" for s, n in zip(sizes, steps, strict=True))
    return (
        f"steps {way} with size ({listed}), and {dn} with them: every slope is per decade of parameters "
        "and a different training length; scale and token budget are confounded"
    )


def per_param(v: float) -> str:
    """Tokens per parameter in words: three significant digits from 1 up (2.20, 20.0), two below (0.86, 0.10,
    0.032), trailing zeros kept.

    Example
    -------
    >>> [per_param(v) for v in (2.2039, 20, 0.0999, 0.0321, 100)]
    ['2.20', '20.0', '0.10', '0.032', '100']
    """
    return format(v, "#.3g" if v >= 1 else "#.2g").rstrip(".")


def path_tokens_per_param(budgets: pd.DataFrame, params: np.ndarray) -> np.ndarray:
    """The tokens per parameter the sweep's path reaches at new parameter counts: log10 D/N fitted on log10 N
    over the cells by least squares and carried there (the budget a size-only line assumes); the cells' own
    D/N where it does not vary, NaN with fewer than 2 cells.

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> round(float(path_tokens_per_param(cell_budgets(load_sweep(), "review_neutral"), [3e9])[0]), 3)
    0.032
    """
    x, z = budgets["log_params"].to_numpy(float), budgets["log_tokens_per_param"].to_numpy(float)
    at = np.log10(np.asarray(params, dtype=float))
    if len(x) < 2:
        return np.full(len(at), np.nan)
    if np.ptp(x) == 0 or np.ptp(z) == 0:
        return np.full(len(at), 10 ** z.mean())
    slope, intercept = np.polyfit(x, z, 1)
    return 10 ** (intercept + slope * at)


def tokens_source(budgets: pd.DataFrame) -> str:
    """Where the cells' tokens and parameter counts come from, in words.

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> tokens_source(cell_budgets(load_sweep(), "review_neutral"))
    "tokens = steps x 64 x 256, batch x block from the recipe; parameters: the reference's exact count"
    """
    kinds = set(" and ".join(budgets["tokens_source"]).split(" and "))
    recipes = sorted(
        {f"{int(b)} x {int(k)}" for b, k in zip(budgets["batch"], budgets["block"], strict=True)}
    )
    said = {
        "file": "tokens from the sweep file's tokens column",
        "recipe": f"tokens = steps x {' or '.join(recipes)}, batch x block from the recipe",
    }
    counts = {"shape": "the reference's exact count", "file": "the reference's params_M"}
    sources = [counts[k] for k in ("shape", "file") if k in set(budgets["params_source"])]
    return f"{' or '.join(said[k] for k in ('file', 'recipe') if k in kinds)}; parameters: {' or '.join(sources)}"

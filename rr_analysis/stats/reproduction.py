"""Does it reproduce? Each re-run of a published run beside the published row of its key, and a test over
all of them of whether the re-runs are offset from the published values (so that pooling is a tested claim).

A reproduction file (`rr reproduce`) holds rows with the published keys. Each row is judged against three
yardsticks, smallest first: the published value's rounding (the file has 4 decimals), the noise between two
runs of the same seed (hardware, kernels, non-deterministic reductions), and the spread between seeds.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rr_analysis.comparison import ALPHA
from rr_analysis.numbers import fixed, significant
from rr_core.errors import InputError
from rr_core.sweepfile.dataset import bundled_path, load_sweep
from rr_core.sweepfile.provenance import read_records, sidecar_path
from rr_core.sweepfile.schema import record_key

__all__ = ["reproduction", "REPRODUCTION_COLUMNS", "ROUNDING", "NOISE_FRACTION", "MARGIN_FRACTION", "KEY"]

KEY = ["size", "variant", "seed"]
ROUNDING = 0.5e-4  # half a unit of the published files' 4th decimal: 1.7016 stands for [1.70155, 1.70165]
NOISE_FRACTION = 0.1  # default same-seed noise: a tenth of the published between-seed SD (not measured)
MARGIN_FRACTION = 0.1  # default TOST margin: a tenth of the published between-seed SD
NOISE_K = 2.0  # a re-run within NOISE_K x the same-seed noise of its published row is "within noise"
ITSELF = "the published row itself: same value, no run record beside it"
REPRODUCTION_COLUMNS: tuple[str, ...] = (
    "size",
    "variant",
    "seed",
    "published",
    "reproduced",
    "diff",
    "rounding_low",
    "rounding_high",
    "seed_sd",
    "diff_in_sd",
    "noise",
    "verdict",
    "n",
    "mean_offset",
    "offset_sd",
    "rms_offset",
    "t",
    "df",
    "p",
    "margin",
    "tost_p",
    "pooling",
    "test_note",
    "noise_source",
    "margin_source",
    "not_rerun",
)


def _pairs(repro: pd.DataFrame, published: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Each re-run row joined to the published row of its key; InputError for a row that has none."""
    pub = published[KEY + [metric]].rename(columns={metric: "published"})
    rows = repro[KEY + [metric]].rename(columns={metric: "reproduced"}).reset_index(drop=True)
    joined = rows.merge(pub, on=KEY, how="left", validate="one_to_one")
    stray = joined[joined["published"].isna()]
    if len(stray):
        where = repro.attrs.get("path", "the reproduction file")
        shown = "; ".join(f"{r.size} {r.variant} seed {r.seed}" for r in stray.head(3).itertuples())
        raise InputError(
            f"{where}: {len(stray)} row(s) are not re-runs of a published run (no published row has their "
            f"key): {shown}. A reproduction file holds re-runs of published keys only (rr reproduce); "
            "analyse new seeds with rr analyze --data, or check a merge with --pool-check"
        )
    return joined


def _published_itself(repro: pd.DataFrame, pairs: pd.DataFrame) -> np.ndarray:
    """Which rows are the published rows themselves rather than re-runs of them.

    A re-run made by rr has a run record in its file's sidecar (`rr_core.sweepfile.provenance`); a row
    read from a file (``attrs["path"]``) with no "ok" record of its key and the published value to the
    file's 4 decimals is the published row copied, which says nothing about reproduction. A frame built in
    code (no path) is taken as re-runs, as its caller says.
    """
    path = repro.attrs.get("path")
    if path is None:
        return np.zeros(len(pairs), dtype=bool)
    recorded = {record_key(r) for r in read_records(sidecar_path(path)) if r.get("status") == "ok"}
    no_record = np.array(
        [
            (s, v, int(k)) not in recorded
            for s, v, k in zip(pairs["size"], pairs["variant"], pairs["seed"], strict=True)
        ],
        dtype=bool,
    )
    same = (pairs["reproduced"].round(4) == pairs["published"].round(4)).to_numpy()
    return no_record & same


def _verdict(diff: float, noise: float) -> str:
    if abs(diff) <= ROUNDING * (1 + 1e-9):
        return "reproduced within rounding"
    if math.isnan(noise):
        return "not judged: no same-seed noise (one published seed, and no --noise)"
    return "within same-seed noise" if abs(diff) <= NOISE_K * noise else "outside same-seed noise"


def _offset_test(d: np.ndarray, a: np.ndarray, b: np.ndarray, margin: float) -> dict:
    """Paired t-test of the mean offset and TOST of |offset| < margin (statsmodels), or why they do not run."""
    from scipy import stats
    from statsmodels.stats.weightstats import ttost_paired

    n = len(d)
    if n == 0:
        return {
            "n": 0,
            "mean_offset": math.nan,
            "offset_sd": math.nan,
            "rms_offset": math.nan,
            "t": math.nan,
            "df": math.nan,
            "p": math.nan,
            "tost_p": math.nan,
            "test_note": "no re-runs to test",
            "pooling": "",
        }
    out = {
        "n": n,
        "mean_offset": float(d.mean()),
        "offset_sd": float(d.std(ddof=1)) if n > 1 else math.nan,
        "rms_offset": float(np.sqrt(np.mean(d**2))),
        "t": math.nan,
        "df": math.nan,
        "p": math.nan,
        "tost_p": math.nan,
        "test_note": "",
    }
    if n < 2:
        out["test_note"] = "fewer than 2 re-runs: the offset cannot be tested"
    elif not out["offset_sd"] > 0:
        out["test_note"] = (
            "every re-run differs from its published row by the same amount: no spread to test with"
        )
    else:
        res = stats.ttest_rel(a, b)
        out |= {"t": float(res.statistic), "df": float(res.df), "p": float(res.pvalue)}
        out["tost_p"] = float(ttost_paired(a, b, -margin, margin)[0])
    if n and not out["offset_sd"] > 0 and abs(out["mean_offset"]) <= ROUNDING:
        out["pooling"] = "safe: every re-run equals its published row"
    elif out["tost_p"] < ALPHA:
        out["pooling"] = (
            f"safe: the mean offset is within ±{significant(margin, 2)} (TOST p < {significant(ALPHA)})"
        )
    else:
        out["pooling"] = f"not shown: the mean offset is not shown to be within ±{significant(margin, 2)}"
    return out


def reproduction(
    repro: pd.DataFrame,
    published: pd.DataFrame | None = None,
    noise: float | None = None,
    margin: float | None = None,
    metric: str = "val_loss",
) -> pd.DataFrame:
    """Each re-run beside its published row, and whether the re-runs as a whole are offset from them.

    Parameters
    ----------
    repro
        A reproduction file (`load_sweep`): re-runs of published keys (`rr reproduce`).
    published
        The rows they re-run; default the published sweep. Another reproduction file here compares two
        re-runs of the same seeds: their ``rms_offset`` measures the same-seed noise.
    noise
        The SD of the difference between two runs of one seed; default `NOISE_FRACTION` x the published
        between-seed SD of each size and variant (an assumption, said in ``noise_source``).
    margin
        TOST margin for the mean offset; default `MARGIN_FRACTION` x the pooled published between-seed SD
        of the cells re-run.
    metric
        The column compared (val_loss or ece).

    Returns
    -------
    DataFrame with `REPRODUCTION_COLUMNS`, one row per re-run: ``size, variant, seed``, ``published,
    reproduced, diff`` (reproduced - published), ``rounding_low, rounding_high`` (the published value's
    rounding interval), ``seed_sd`` (published between-seed SD at that size and variant), ``diff_in_sd``,
    ``noise``, ``verdict`` ("reproduced within rounding", "within same-seed noise": |diff| <= 2 noise, or
    "outside same-seed noise"; `ITSELF` for a row read from a file that is the published row itself: the
    published value and no run record beside it, left out of the test below); then, the same on every row, the test over all re-runs: ``n, mean_offset,
    offset_sd, rms_offset``, ``t, df, p`` (paired t-test, two-sided), ``margin, tost_p, pooling`` (TOST of
    |mean offset| < margin and what it says of pooling), ``test_note`` (why a test did not run),
    ``noise_source, margin_source`` (where those numbers come from) and ``not_rerun`` (published rows
    without a re-run).

    Notes
    -----
    With d_i = reproduced_i - published_i over n re-runs: t = mean(d) / (sd(d)/sqrt(n)), df = n - 1
    (scipy's `ttest_rel`); TOST: H0 |mean(d)| >= M, p = max of the two one-sided t-tests on the same df
    (statsmodels' `ttost_paired`). Pooling is safe at 5% when TOST rejects. Two runs of one seed differ by
    d with SD "noise"; 2 noise covers about 95% of such differences.

    Example
    -------
    >>> pub = load_sweep()
    >>> far = pub.assign(val_loss=pub["val_loss"].where(pub.index != 0, pub["val_loss"] + 0.05))
    >>> far.attrs = {}  # built in code: every row is taken as a re-run
    >>> r = reproduction(far)
    >>> r["verdict"].value_counts().to_dict()
    {'reproduced within rounding': 41, 'outside same-seed noise': 1}
    >>> reproduction(pub)["verdict"].value_counts().to_dict()  # the packaged file: its rows are no re-runs
    {'the published row itself: same value, no run record beside it': 42}
    """
    published = load_sweep(bundled_path()) if published is None else published
    pairs = _pairs(repro, published, metric)
    sd = published.groupby(["size", "variant"], observed=True)[metric].std(ddof=1)
    pairs["seed_sd"] = [
        sd.get((s, v), math.nan) for s, v in zip(pairs["size"], pairs["variant"], strict=True)
    ]
    if noise is not None and not (math.isfinite(noise) and noise >= 0):
        raise InputError(f"--noise must be a number >= 0 of {metric} units, got {noise!r}")
    if margin is not None and not (math.isfinite(margin) and margin > 0):
        raise InputError(f"--margin must be a positive number of {metric} units, got {margin!r}")
    pairs["diff"] = pairs["reproduced"] - pairs["published"]
    pairs["rounding_low"], pairs["rounding_high"] = (
        pairs["published"] - ROUNDING,
        pairs["published"] + ROUNDING,
    )
    pairs["diff_in_sd"] = pairs["diff"] / pairs["seed_sd"]
    pairs["noise"] = NOISE_FRACTION * pairs["seed_sd"] if noise is None else noise
    itself = _published_itself(repro, pairs)
    pairs["verdict"] = [
        ITSELF if own else _verdict(d, n)
        for d, n, own in zip(pairs["diff"], pairs["noise"], itself, strict=True)
    ]
    pooled = float(np.sqrt(np.nanmean(pairs.drop_duplicates(["size", "variant"])["seed_sd"] ** 2)))
    margin_used = MARGIN_FRACTION * pooled if margin is None else margin
    reruns = pairs[~itself]
    test = _offset_test(
        reruns["diff"].to_numpy(float),
        reruns["reproduced"].to_numpy(float),
        reruns["published"].to_numpy(float),
        margin_used,
    )
    if itself.any():
        note = f"{int(itself.sum())} row(s) are the published rows themselves (same value, no run record), not re-runs"
        test["test_note"] = "; ".join(filter(None, [note, test["test_note"]]))
    if not len(reruns):
        test["pooling"] = "not judged: the file holds the published rows themselves, not re-runs of them"
    test["margin"] = margin_used
    test["noise_source"] = (
        f"--noise {significant(noise)}"
        if noise is not None
        else f"assumed, not measured: "
        f"{significant(NOISE_FRACTION)} x the published between-seed SD of each size and variant; "
        "measure it with two re-runs of one seed (docs/statistics.md)"
    )
    test["margin_source"] = (
        f"--margin {significant(margin)}"
        if margin is not None
        else f"{significant(MARGIN_FRACTION)} x the "
        f"pooled published between-seed SD of the cells re-run ({fixed(pooled, 5)})"
    )
    test["not_rerun"] = len(published) - len(pairs)
    return pairs.assign(**test)[list(REPRODUCTION_COLUMNS)]

"""Analysis at scale: validate, the gap table, the emergence fit and a figure on 10^3..10^6-row sweeps.

Each row count runs in its own fresh process, so its peak memory (`ru_maxrss`) is its own; the sweep is
written by this (parent) process, so generating it does not count. A synthetic sweep of 20 sizes x the 5
registered non-convex variants x as many seeds as the row count needs is written to a CSV with ~5% of runs
missing (incomplete seed blocks, so the mixed models take the numerical REML path) and empty ece/minutes
cells; then, after a warm-up on a small sweep (lazy imports, font cache), each step is timed once:

    validate   rr_core.sweepfile.dataset.load_sweep(csv): parse, type, pandera schema
    table      rr_analysis.stats.gap_tests.gap_table: Welch, paired, mixed model per size, Holm
    emergence  rr_analysis.stats.emergence.emergence: REML slope per baseline, ML likelihood-ratio test
    plot       rr_analysis.figures.gaps.emergence_figure + save_figure (PNG)

Growth between row counts is the exponent k of time ~ rows^k; n log n allows k = 1 + log(log n2 / log n1)
/ log(n2 / n1) (about 1.1 here) and the last column says whether every step stayed within it (+0.1 for
timing noise; steps under 50 ms are all overhead and not judged). Targets (issue 12.6): at the largest
row count, validate + table under 30 s and the peak RSS of the whole process under 1 GiB.

    python bench/analysis_scale.py [--rows 1000 10000 100000 1000000] [--steps validate table]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
STEPS = ("validate", "table", "emergence", "plot")
VARIANTS = ["review_neutral", "highway", "standard", "layerscale", "rezero"]
TARGET_S, TARGET_GIB = 30.0, 1.0
JUDGED = ("validate", "table")  # the steps the time target covers


def synthetic(rows: int, sizes: int = 20, missing: float = 0.05, seed: int = 0) -> pd.DataFrame:
    """Exactly `rows` runs of `sizes` sizes x 5 variants, a seed effect, a gap growing with size, gaps."""
    rng = np.random.default_rng(seed)
    seeds = math.ceil(rows / (sizes * len(VARIANTS) * (1 - missing)))
    params = np.round(10 * 1.4 ** np.arange(sizes))
    labels = [f"{p:.0f}M" for p in params]
    idx = pd.MultiIndex.from_product([range(sizes), range(len(VARIANTS)), range(seeds)])
    grid = idx.to_frame(index=False, name=["s", "v", "seed"])
    grid = grid.iloc[np.sort(rng.choice(len(grid), size=rows, replace=False))].reset_index(drop=True)
    s, v = grid["s"].to_numpy(), grid["v"].to_numpy()
    seed_effect = rng.normal(0, 0.01, (sizes, seeds))[s, grid["seed"].to_numpy()]
    gap = (v > 0) * (0.002 + 0.001 * np.log10(params[s] / params[0]))
    loss = 3.0 - 0.3 * np.log10(params[s]) + seed_effect + gap + rng.normal(0, 0.003, rows)
    ece = np.where(rng.random(rows) < 0.3, np.nan, rng.uniform(0.01, 0.05, rows))
    minutes = np.where(rng.random(rows) < 0.1, np.nan, params[s] / 10)
    return pd.DataFrame(
        {
            "size": np.array(labels)[s],
            "variant": np.array(VARIANTS)[v],
            "seed": grid["seed"],
            "params_M": params[s] * (1 + 0.01 * v),
            "steps": 1000,
            "val_loss": loss.round(4),
            "ece": ece.round(4),
            "minutes": minutes.round(1),
        }
    )


def maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def child(csv: Path, warm: Path, steps: list[str]) -> dict:
    """Time `steps` (in STEPS order) on the sweep `csv` in this process; peak RSS after each step."""
    from rr_analysis.figures.gaps import emergence_figure
    from rr_analysis.figures.output import save_figure
    from rr_analysis.stats.emergence import emergence
    from rr_analysis.stats.gap_tests import gap_table
    from rr_core.sweepfile.dataset import load_sweep

    def run(path: Path, out: dict | None = None) -> None:
        stamp = time.perf_counter()

        def done(step: str) -> None:
            nonlocal stamp
            now = time.perf_counter()
            if out is not None:
                out[step] = {"s": now - stamp, "maxrss_mib": maxrss_mib()}
            stamp = now

        df = load_sweep(path)
        done("validate")
        table = gap_table(df) if {"table", "plot"} & set(steps) else None
        done("table")
        if "emergence" in steps:
            emergence(df)
        done("emergence")
        if "plot" in steps:
            save_figure(emergence_figure(table), path.with_suffix(".png"))
        done("plot")

    run(warm)  # warm-up: lazy imports, font cache
    out = {"baseline_mib": maxrss_mib()}
    run(csv, out)
    return {step: out[step] for step in steps} | {"baseline_mib": out["baseline_mib"]}


def exponent(t1: float, t2: float, n1: int, n2: int) -> float:
    return math.log(t2 / t1) / math.log(n2 / n1)


def measure(rows: list[int], steps: list[str]) -> dict[int, dict]:
    """One fresh child process per row count, on a sweep this process writes first."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp, "warm.csv")
        synthetic(500).to_csv(warm, index=False)
        for n in sorted(rows):
            csv = Path(tmp, f"sweep{n}.csv")
            synthetic(n).to_csv(csv, index=False)
            cmd = [sys.executable, __file__, "--child", str(csv), str(warm), "--steps", *steps]
            out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
            res[n] = json.loads(out)
            csv.unlink()
    return res


def report(res: dict[int, dict], steps: list[str]) -> None:
    """The table, the growth exponents between row counts, and the verdict on the targets."""
    print(f"Analysis at scale, one fresh process per row count ({os.cpu_count()} cores)")
    head = "".join(f"{s:>11}" for s in steps)
    print(f"{'rows':>9}{head}{'total':>9}{'peak RSS':>10}{'(+above warm)':>15}")
    for n, r in res.items():
        total, peak = sum(r[s]["s"] for s in steps), max(r[s]["maxrss_mib"] for s in steps)
        cells = "".join(f"{r[s]['s']:>10.3f}s" for s in steps)
        print(f"{n:>9,}{cells}{total:>8.2f}s{peak:>7.0f} MiB{peak - r['baseline_mib']:>+11.0f} MiB")
    ns = list(res)
    for n1, n2 in zip(ns, ns[1:], strict=False):
        allowed = 1 + math.log(math.log(n2) / math.log(n1)) / math.log(n2 / n1)
        ks = {s: exponent(res[n1][s]["s"], res[n2][s]["s"], n1, n2) for s in steps}
        ok = all(ks[s] <= allowed + 0.1 for s in steps if res[n2][s]["s"] >= 0.05)
        growth = ", ".join(f"{s} k={ks[s]:.2f}" for s in steps)
        print(
            f"growth {n1:,} -> {n2:,} rows: {growth}; n log n allows k <= {allowed:.2f}: {'within' if ok else 'WORSE'}"
        )
    big, judged = res[ns[-1]], [s for s in JUDGED if s in steps]
    seconds = sum(big[s]["s"] for s in judged)
    peak = max(big[s]["maxrss_mib"] for s in steps) / 1024
    verdict = "met" if seconds < TARGET_S and peak < TARGET_GIB else "MISSED"
    if judged != list(JUDGED):
        verdict = f"not judged: time {' and '.join(JUDGED)} (--steps)"
    print(
        f"{ns[-1]:,} rows: {' + '.join(judged)} {seconds:.1f} s, {peak:.2f} GiB peak; target < {TARGET_S:g} s "
        f"and < {TARGET_GIB:g} GiB: {verdict}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--rows", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000], help="row counts"
    )
    ap.add_argument("--steps", nargs="+", choices=STEPS, default=list(STEPS), help="steps to time")
    ap.add_argument("--child", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    steps = [s for s in STEPS if s in args.steps]
    if args.child:
        print(json.dumps(child(*args.child, steps)))
        return
    report(measure(args.rows, steps), steps)


if __name__ == "__main__":
    main()

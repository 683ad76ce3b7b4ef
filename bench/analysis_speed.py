"""How fast is `rr analyze --table`? End to end on the bundled data, and the table on a 100,000-row sweep.

    python bench/analysis_speed.py [--runs 7] [--seeds 1000]

Prints the median wall time of cold processes for: bare `python -c pass`, the import floor (the loader,
scipy.special and rich, which the table needs), and `python -m cli.main analyze --table`; then the
library's `gap_table` (Welch, paired, mixed model, Holm) and `emergence` on a synthetic sweep of 20 sizes x
5 variants x N seeds (complete seed blocks).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
COLD = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import floor": [
        sys.executable,
        "-c",
        "import rr_analysis.dataset, scipy.special, rich.console, cli.main",
    ],
    "rr analyze --table": [sys.executable, "-m", "cli.main", "analyze", "--table"],
}


def cold(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def synthetic(seeds: int, sizes: int = 20) -> pd.DataFrame:
    """20 sizes x the 5 registered non-convex variants x `seeds` seeds, with a seed effect and a small gap."""
    rng = np.random.default_rng(0)
    variants = ["review_neutral", "highway", "standard", "layerscale", "rezero"]
    labels = [f"{10 * (i + 1)}M" for i in range(sizes)]
    idx = pd.MultiIndex.from_product([labels, variants, range(seeds)], names=["size", "variant", "seed"])
    df = idx.to_frame(index=False)
    df["size"], df["variant"] = df["size"].astype(str), df["variant"].astype(str)
    df["params_M"] = df["size"].str[:-1].astype(float)
    df["steps"] = 1000
    seed_effect = rng.normal(0, 0.01, (sizes, seeds))
    size_i = df["size"].map({s: i for i, s in enumerate(labels)}).to_numpy()
    gap = (df["variant"] != "review_neutral") * 0.002
    df["val_loss"] = (
        2.0 - 0.01 * size_i + seed_effect[size_i, df["seed"]] + gap + rng.normal(0, 0.003, len(df))
    )
    return df.assign(ece=np.nan, minutes=np.nan)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="cold runs per command (median reported)")
    ap.add_argument("--seeds", type=int, default=1000, help="seeds per cell of the synthetic sweep")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from rr_analysis.mixed import emergence
    from rr_analysis.stats import gap_table

    for name, cmd in COLD.items():
        print(f"{name:<24} {cold(cmd, args.runs):6.3f} s  (median of {args.runs} cold runs)")
    df = synthetic(args.seeds)
    for name, fn in (("gap_table", gap_table), ("emergence", emergence)):
        fn(synthetic(3, sizes=3))  # warm: lazy imports are not part of the figure
        t0 = time.perf_counter()
        out = fn(df)
        print(
            f"{name + ' on ' + format(len(df), ',') + ' rows':<24} {time.perf_counter() - t0:6.3f} s  ({len(out)} rows)"
        )


if __name__ == "__main__":
    main()

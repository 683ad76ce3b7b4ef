"""CLI latency: median cold wall time of each `rr` command beside its own import floor.

The floor of a command is a fresh interpreter importing just the libraries that command truly needs; the
ratio command / floor shows what rr itself adds on top. Every figure comes from the same run.

    python bench/cli_latency.py [--repeat 9]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# command -> the imports it cannot avoid (its floor)
COMMANDS: dict[str, tuple[list[str], str]] = {
    "--help": (["--help"], "import typer"),
    "sizes": (["sizes"], "import typer, rich.table"),
    "validate": (["validate"], "import typer, pandas, pandera.pandas"),
    "analyze --table": (["analyze", "--table"], "import typer, rich.table, pandas, pandera.pandas, scipy.stats"),
    "plot emergence": (
        ["plot", "emergence", "--out", "{tmp}/e.png"],
        "import typer, pandas, pandera.pandas, scipy.stats, matplotlib; matplotlib.use('Agg'); "
        "import matplotlib.pyplot, seaborn",
    ),
}
TARGETS = {"--help": 0.3, "analyze --table": 1.5}


def wall(cmd: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True)
        times.append(time.perf_counter() - t)
        if out.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr}")
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=9, help="cold runs per figure (median reported)")
    args = ap.parse_args()
    rr = shutil.which("rr") or sys.exit("rr is not on PATH: pip install -e . first")
    py = sys.executable
    env_note = f"python {sys.version.split()[0]}, {os.cpu_count()} cores"
    with tempfile.TemporaryDirectory() as tmp:
        bare = wall([py, "-c", "pass"], args.repeat)
        print(f"CLI latency, median of {args.repeat} cold runs ({env_note})")
        print(f"{'command':<18}{'rr (s)':>9}{'floor (s)':>11}{'ratio':>8}{'target':>9}")
        print(f"{'python -c pass':<18}{bare:>9.3f}")
        for name, (argv, floor_imports) in COMMANDS.items():
            floor = wall([py, "-c", floor_imports], args.repeat)
            t = wall([rr, *(a.format(tmp=tmp) for a in argv)], args.repeat)
            target = f"<{TARGETS[name]}s" if name in TARGETS else ""
            print(f"rr {name:<15}{t:>9.3f}{floor:>11.3f}{t / floor:>8.2f}{target:>9}")


if __name__ == "__main__":
    main()

"""CLI latency: median cold wall time of each `rr` command beside its own import floor, run in pairs.

The floor of a command is a fresh interpreter importing just the libraries that command truly needs,
including what those libraries load lazily on first use (typer's pydantic coercion of option values,
pandera's validation backend, rich's help renderer); the ratio command / floor shows what rr itself adds
on top, less what its exit saves (the "same exit" column below). `--audit` checks each floor against the
modules the command loads (`sys.modules` at its exit, timed by `python -X importtime`): it lists the
third-party modules the command imports that its floor lacks, and the ones the floor imports that the
command never needs, so a floor cannot quietly flatter (or punish) a command. Every figure comes from the
same run: each command and its floors run alternately, and the ratio is the median of the rounds' ratios.
The target is judged on the floor as issue 19.8 defines it (a plain import); a second column divides by the
same floor ended as rr's console script ends (no shutdown collection, `cli.heap`), the like-for-like figure.

The `rr` timed is the console script next to this interpreter, not a pyenv shim on PATH (the shim runs a
bash script and `pyenv exec` first, ~80 ms that are not rr's); the shim's figure is printed once for
reference when there is one.

    python bench/cli_latency.py [--repeat 9] [--audit] [--only "plot seeds"]
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
from pathlib import Path

# What several floors share: typer parsing options (its pydantic coercion loads pydantic's plugin loader on
# first use); reading and validating a sweep CSV (pandas' pyarrow reader, pandera's schema and the pandas
# backend it registers on first validation); writing a PNG (matplotlib's Agg canvas, PIL's image plugins,
# which PIL loads on the first save).
TYPER = "import typer, typer._adapters, pydantic.plugin._loader"
READ = "import pandas, pyarrow.csv, pandera.pandas, pandera.backends.pandas.builtin_checks, pandera.backends.pandas.register"
PNG = (
    "import matplotlib; matplotlib.use('Agg'); import matplotlib.figure, matplotlib.backends.backend_agg, PIL.Image; "
    "PIL.Image.preinit()"
)

# command -> (arguments, the imports it cannot avoid: its floor)
COMMANDS: dict[str, tuple[list[str], str]] = {
    "--help": (["--help"], "import typer, typer.rich_utils, rich._emoji_codes"),
    "sizes": (["sizes"], TYPER),
    "validate": (["validate"], f"{TYPER}; {READ}"),
    # the table's p-values are adjusted by statsmodels' multipletests (issue 10.2), whose import brings
    # scipy.stats through statsmodels.tools: ~0.6-0.8 s of both floors below. The table is plain text
    # (cli.records), so no rich.
    "analyze --table": (
        ["analyze", "--table"],
        f"{TYPER}; {READ}; import scipy.special, statsmodels.stats.multitest",
    ),
    # the fitted line is statsmodels' WLS (rr_analysis.stats.meta), whose module loads statsmodels' formula
    # support (formulaic, narwhals)
    "plot emergence": (
        ["plot", "emergence", "--out", "{tmp}/e.png"],
        f"{TYPER}; {READ}; import scipy.special, statsmodels.stats.multitest, statsmodels.regression.linear_model; "
        f"{PNG}",
    ),
    # seaborn draws it (issue 19.8: judged against its own floor): seaborn's import brings pandas and
    # scipy.stats (its kde). What the floor leaves out is rr's: its modules, reading and validating the
    # CSV, the comparison, seaborn's and matplotlib's drawing of the facets and the savefig.
    "plot seeds": (
        ["plot", "seeds", "--out", "{tmp}/s.png"],
        f"{TYPER}; {READ}; import scipy.special; {PNG}; import seaborn",
    ),
}
# Absolute targets where rr sets one; `plot seeds` is judged by its ratio alone (issue 19.8): seaborn's
# import by itself is near 2.5 s on 2 shared cores, so an absolute figure would judge the machine, not rr.
TARGETS = {"--help": 0.3, "analyze --table": 1.5}
RATIO_TARGET = 1.3
# rr's console script skips the interpreter's shutdown collection (cli.heap), ~0.3 s once pandas, scipy and
# matplotlib are loaded, which a plain `python -c "import ..."` floor still pays; the "same exit" column
# divides by the floor ended the same way, so it shows what rr's own work adds with no help from that
EXIT = "; import gc; gc.freeze()"
OWN = ("cli", "rr_analysis", "rr_model", "rr_core", "__main__")


def paired(cmd: list[str], floors: list[list[str]], repeat: int) -> tuple[float, list[tuple[float, float]]]:
    """Median wall time of `cmd`, and for each floor its median and the median per-round ratio cmd / floor.

    Each round runs the command and its floors back to back, so a burst of load on a shared machine hits
    every side of a ratio alike.
    """
    rounds = [(wall(cmd, 1), [wall(f, 1) for f in floors]) for _ in range(repeat)]
    return statistics.median(c for c, _ in rounds), [
        (statistics.median(fs[i] for _, fs in rounds), statistics.median(c / fs[i] for c, fs in rounds))
        for i in range(len(floors))
    ]


def wall(cmd: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True)
        times.append(time.perf_counter() - t)
        if out.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr}")
    return statistics.median(times)


# printed at exit by every audited process: the modules it loaded, whatever imported them
LOADED = "import atexit, sys; atexit.register(lambda: print('LOADED-MODULES', *sorted(sys.modules)))"


def imported(code: str) -> dict[str, int]:
    """Module -> its own import time in microseconds, for every module not rr's own (OWN) that `python -c
    code` has loaded at exit.

    Which modules: `sys.modules` at exit, since `-X importtime` has no line for a module imported through
    `importlib.import_module` (matplotlib loads its backend and checks its dependencies so); those count
    0 us here, and their own imports are timed as usual.
    """
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"{LOADED}\n{code}"], capture_output=True, text=True
    )
    mods = dict.fromkeys(run.stdout.rpartition("LOADED-MODULES ")[2].split(), 0)
    for line in run.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if line.startswith("import time:") and len(parts) == 3 and parts[0].strip().isdigit():
            mods[parts[2].strip()] = int(parts[0])
    return {m: t for m, t in mods.items() if m.split(".")[0] not in OWN}


def audit(script: str, argv: list[str], floor: str) -> str:
    """What the floor lacks (imported by the command, not rr's own) and what it has in excess, in ms."""
    command = f"sys.argv = {['rr', *argv]!r}; import runpy; runpy.run_path({script!r}, run_name='__main__')"
    cmd, fl = imported(command), imported(floor)

    def top(mods: dict[str, int]) -> str:
        worst = sorted(mods, key=mods.get, reverse=True)[:3]
        return f"{sum(mods.values()) / 1e3:.0f} ms" + (f" ({', '.join(worst)})" if worst else "")

    lacks = {m: t for m, t in cmd.items() if m not in fl}
    excess = {m: t for m, t in fl.items() if m not in cmd}
    return f"floor lacks {top(lacks)}; floor has in excess {top(excess)}"


def byte_compile() -> str:
    """Write the bytecode cache of the rr being timed where imports write none; the reason, or "" if not.

    The libraries of every floor come compiled (pip byte-compiles what it installs), but an editable rr
    under PYTHONDONTWRITEBYTECODE=1 (set in some containers) recompiles its own modules on every run,
    ~30 ms of `rr plot seeds` that no installed rr pays. The cache is written beside the sources, in
    `__pycache__` folders git ignores.
    """
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return ""  # each module's first import writes its cache
    code = (
        "import compileall, os, cli, rr_analysis, rr_model\n"
        "for m in (cli, rr_analysis, rr_model): compileall.compile_dir(os.path.dirname(m.__file__), quiet=2)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    return "PYTHONDONTWRITEBYTECODE is set here, so imports write no cache"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=9, help="cold runs per figure (median reported)")
    ap.add_argument("--audit", action="store_true", help="check each floor against -X importtime")
    ap.add_argument(
        "--only", action="append", choices=list(COMMANDS), help="time this command alone (repeatable)"
    )
    args = ap.parse_args()
    py = sys.executable
    script = Path(py).parent / "rr"
    rr = (
        str(script)
        if script.is_file()
        else shutil.which("rr") or sys.exit("rr is not installed: pip install -e .")
    )
    on_path = shutil.which("rr")
    env_note = f"python {sys.version.split()[0]}, {os.cpu_count()} cores"
    compiled = byte_compile()
    with tempfile.TemporaryDirectory() as tmp:
        bare = wall([py, "-c", "pass"], args.repeat)
        print(f"CLI latency, median of {args.repeat} cold runs ({env_note}); rr = {rr}")
        if compiled:
            print(f"rr's modules byte-compiled first, as pip does on install ({compiled})")
        print(f"{'command':<20}{'rr (s)':>8}{'floor (s)':>11}{'ratio':>7}{'same exit':>11}  target")
        print(f"{'python -c pass':<20}{bare:>8.3f}")
        notes = []
        for name, (argv, floor_imports) in COMMANDS.items():
            if args.only and name not in args.only:
                continue
            argv = [a.format(tmp=tmp) for a in argv]
            # the second floor ends as rr does (cli.heap.skip_exit_collection): a like-for-like ratio
            t, [(floor, ratio), (_, same_exit)] = paired(
                [rr, *argv], [[py, "-c", floor_imports], [py, "-c", floor_imports + EXIT]], args.repeat
            )
            target = f"<{TARGETS[name]} s, " if name in TARGETS else ""
            met = "met" if ratio <= RATIO_TARGET and t <= TARGETS.get(name, t) else "MISSED"
            print(
                f"rr {name:<17}{t:>8.3f}{floor:>11.3f}{ratio:>7.2f}{same_exit:>11.2f}"
                f"  {target}<{RATIO_TARGET}x floor: {met}"
            )
            if args.audit:
                notes.append(f"  rr {name}: {audit(rr, argv, floor_imports)}")
        if on_path and Path(on_path).resolve() != Path(rr).resolve():
            print(f"{'rr --help via PATH':<20}{wall([on_path, '--help'], args.repeat):>8.3f}  ({on_path})")
    if notes:
        print(
            "floor audit (python -X importtime, one run each; rr's own modules excluded):", *notes, sep="\n"
        )


if __name__ == "__main__":
    main()

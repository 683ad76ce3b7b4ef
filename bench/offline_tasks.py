"""`rr eval --tasks` offline: the wall time of its refusal beside the wait it saves (issue 49.7).

Offline, with a task whose dataset the Hugging Face cache lacks, `rr eval --tasks NAME` refuses from the
task's own YAML file (`rr_model.uses.task_files`) before lm-evaluation-harness indexes its task files; that
index alone is what every such refusal used to wait for. Each round runs, in a fresh process and with an
empty Hugging Face cache (HF_HOME in a temporary folder) and HF_HUB_OFFLINE=1:

    rr eval     `rr eval --checkpoint NEVER_READ --tasks NAMES` to its refusal (the checkpoint is not read
                before it, so none is needed)
    index       `lm_eval.tasks.TaskManager()`: the index the old path built first

and the ratio index / rr eval is the median over rounds run back to back (a burst of load on a shared
machine hits both alike). The target: the refusal within 2 s.

    python bench/offline_tasks.py [--tasks hellaswag] [--repeat 5]
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

TARGET_S = 2.0


def timed(cmd: list[str], env: dict[str, str], want: int) -> float:
    """Wall seconds of `cmd`, which must end with exit status `want`."""
    start = time.perf_counter()
    run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if run.returncode != want:
        raise SystemExit(f"{' '.join(cmd)} ended {run.returncode}, not {want}:\n{run.stderr[-2000:]}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="hellaswag", help="comma-separated lm-eval tasks (default: hellaswag)")
    ap.add_argument("--repeat", type=int, default=5, help="rounds (median reported)")
    args = ap.parse_args()
    script = Path(sys.executable).parent / "rr"
    rr = str(script) if script.is_file() else shutil.which("rr") or sys.exit("rr is not installed")
    with tempfile.TemporaryDirectory() as home:
        env = os.environ | {"HF_HOME": home, "HF_HUB_OFFLINE": "1"}
        env.pop("HF_DATASETS_CACHE", None)
        env.pop("HF_HUB_CACHE", None)
        refuse = [rr, "eval", "--checkpoint", str(Path(home) / "never-read.pt"), "--tasks", args.tasks]
        index = [sys.executable, "-c", "from lm_eval.tasks import TaskManager; TaskManager()"]
        rounds = [(timed(refuse, env, 2), timed(index, env, 0)) for _ in range(args.repeat)]
    ours = statistics.median(r for r, _ in rounds)
    theirs = statistics.median(i for _, i in rounds)
    ratio = statistics.median(i / r for r, i in rounds)
    print(f"rr eval --tasks {args.tasks}, offline, median of {args.repeat} ({os.cpu_count()} cores)")
    print(
        f"  refusal          {ours:6.2f} s  (target < {TARGET_S:g} s: {'met' if ours < TARGET_S else 'MISSED'})"
    )
    print(f"  lm-eval's index  {theirs:6.2f} s  (what the refusal used to wait for, at least)")
    print(f"  ratio index / refusal: {ratio:.1f}x")


if __name__ == "__main__":
    main()

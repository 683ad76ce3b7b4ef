"""docs/extending.md's example, end to end: a plugin rule, a pilot ladder, a sweep and its analysis."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_extending_example_runs_end_to_end(tmp_path, token_cache):
    for name in ("myrule.py", "pilot.toml"):
        shutil.copy(ROOT / "docs" / "extending" / name, tmp_path / name)
    env = {**os.environ, "RR_PLUGINS": "./myrule.py", "RR_CACHE": str(token_cache), "PYTHONPATH": str(ROOT)}

    def rr(*args: str) -> subprocess.CompletedProcess:
        result = subprocess.run([sys.executable, "-m", "cli.main", *args], capture_output=True, text=True,
                                cwd=tmp_path, env=env)  # fmt: skip
        return result

    sweep = rr("sweep", "--ladder", "pilot.toml", "--reference", "myrule", "--variant", "myrule",
               "--variant", "standard", "--seeds", "0,1,2", "--corpus", "synthetic")  # fmt: skip
    assert "18 run(s) to train" in sweep.stdout, sweep.stderr
    assert "Channel scale vs each baseline" in sweep.stdout  # the closing table, against the reference
    rows = (tmp_path / "data" / "pilot.csv").read_text().splitlines()
    assert len(rows) == 19 and {r.split(",")[1] for r in rows[1:]} == {"myrule", "standard"}
    compare = ("--data", "data/pilot.csv", "--reference", "myrule", "--baselines", "standard")
    table = rr("analyze", *compare)
    assert table.returncode == 0 and table.stdout.startswith("Channel scale vs each baseline"), table.stderr
    emergence = rr("analyze", "--emergence", *compare)
    assert emergence.returncode == 0 and "Does Channel scale's advantage grow" in emergence.stdout
    plot = rr("plot", "emergence", "--data", "data/pilot.csv", "--reference", "myrule", "--out", "e.png")
    assert plot.returncode == 0 and (tmp_path / "e.png").read_bytes().startswith(b"\x89PNG")

"""docs/extending.md's example, end to end: a plugin rule, a pilot ladder, a sweep and its analysis."""

from __future__ import annotations

import json
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
        result = subprocess.run(
            [sys.executable, "-m", "cli.main", *args], capture_output=True, text=True, cwd=tmp_path, env=env
        )
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


@pytest.mark.slow
def test_the_tuning_pilot_runs_end_to_end(tmp_path, token_cache):
    """docs/extending.md, "Is my rule still ahead when everyone is tuned?": the tuning of the plugin rule
    against the standard residual on the pilot ladder, its analysis and its figure, and a second rr tune that
    trains nothing."""
    for name in ("myrule.py", "pilot.toml"):
        shutil.copy(ROOT / "docs" / "extending" / name, tmp_path / name)
    env = {**os.environ, "RR_PLUGINS": "./myrule.py", "RR_CACHE": str(token_cache), "PYTHONPATH": str(ROOT)}

    def rr(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "cli.main", *args], capture_output=True, text=True, cwd=tmp_path, env=env
        )

    tune = ("tune", "--ladder", "pilot.toml", "--size", "0.05M", "--variant", "myrule", "--variant", "standard",
            "--lr", "1e-3,2e-3,4e-3,8e-3", "--select-seeds", "0,1", "--seeds", "2,3,4", "--corpus", "synthetic")  # fmt: skip
    first = rr(*tune)
    assert first.returncode == 0, first.stderr
    assert "rr tune: selection: 16 run(s) to train" in first.stdout
    assert "rr tune: comparison: 6 run(s) to train" in first.stdout
    rows = (tmp_path / "data" / "pilot-tune.csv").read_text().splitlines()
    assert rows[0].endswith(",lr,role") and len(rows) == 1 + 16 + 6
    again = rr(*tune)
    assert "selection: 0 run(s) to train, 16 already in" in again.stdout
    assert "comparison: 0 run(s) to train, 6 already in" in again.stdout
    compare = ("--data", "data/pilot-tune.csv", "--ladder", "pilot.toml", "--reference", "myrule")
    table = rr("analyze", "tuning", *compare, "--format", "json")
    assert table.returncode == 0, table.stderr
    tuned = [r for r in json.loads(table.stdout) if r["part"] == "tuned"]
    assert len(tuned) == 1 and tuned[0]["n"] == 3 and tuned[0]["verdict"]
    plot = rr("plot", "tuning", *compare, "--out", "t.png")
    assert plot.returncode == 0 and (tmp_path / "t.png").read_bytes().startswith(b"\x89PNG")

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


# docs/extending.md, "Against the field": Review, its four ablations and the field's three rival residual
# methods, each at its own tuned rate.
ABLATIONS = ("review_half", "gate_bias", "review_state", "review_update")
RIVALS = ("hyper_connections", "denseformer", "attn_res")


@pytest.mark.slow
def test_the_field_pilot_runs_end_to_end(tmp_path, token_cache):
    """Every variant tuned on the pilot ladder's middle size (4 rates x 2 selection seeds, then 3 comparison
    seeds at its own rate), the tuning analysis against Review (one Holm family of the seven tuned gaps), and
    the gate anatomy of Review's runs and of the gate bias (token_share and freeze_delta exactly 0)."""
    from statsmodels.stats.multitest import multipletests

    shutil.copy(ROOT / "docs" / "extending" / "pilot.toml", tmp_path / "pilot.toml")
    env = {**os.environ, "RR_CACHE": str(token_cache), "PYTHONPATH": str(ROOT)}

    def rr(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "cli.main", *args], capture_output=True, text=True, cwd=tmp_path, env=env
        )

    baselines = [*ABLATIONS, *RIVALS]
    every = [arg for v in ("review_neutral", *baselines) for arg in ("--variant", v)]
    tune = rr("tune", "--ladder", "pilot.toml", "--size", "0.05M", *every, "--lr", "2e-3,4e-3,8e-3,1.6e-2",
              "--select-seeds", "0,1", "--seeds", "2,3,4", "--corpus", "synthetic", "--out", "data/field.csv")  # fmt: skip
    assert tune.returncode == 0, tune.stderr
    n = 1 + len(baselines)
    assert f"rr tune: selection: {8 * n} run(s) to train" in tune.stdout
    assert f"rr tune: comparison: {3 * n} run(s) to train" in tune.stdout
    compare = ("--data", "data/field.csv", "--ladder", "pilot.toml", "--baselines", ",".join(baselines))
    table = rr("analyze", "tuning", *compare, "--format", "json")
    assert table.returncode == 0, table.stderr
    tuned = [r for r in json.loads(table.stdout) if r["part"] == "tuned"]
    assert sorted(r["variant"] for r in tuned) == sorted(baselines) and {r["n"] for r in tuned} == {3}
    # the seven gaps are one family: Holm's adjustment of their seed-paired p-values, computed apart
    holm = multipletests([r["p"] for r in tuned], method="holm")[1]
    assert [r["p_adj"] for r in tuned] == pytest.approx(list(holm), rel=1e-9)
    plot = rr("plot", "tuning", *compare, "--out", "field.png")
    assert plot.returncode == 0 and (tmp_path / "field.png").read_bytes().startswith(b"\x89PNG")

    finals = tmp_path / "data" / "field.checkpoints"
    reviews = sorted(finals.glob("0.05M-review_neutral-seed[234]-*.final.pt"))
    assert len(reviews) == 3
    for path in reviews:
        gates = rr("gates", "--checkpoint", str(path), "--anatomy", "--format", "json")
        assert gates.returncode == 0, gates.stderr
        rows = json.loads(gates.stdout)
        assert [(r["layer"], r["sublayer"]) for r in rows] == [
            (0, "attn"),
            (0, "mlp"),
            (1, "attn"),
            (1, "mlp"),
        ]
        assert all(0 <= r["token_share"] <= 1 and r["state_share"] is not None for r in rows)
    (bias,) = finals.glob("0.05M-gate_bias-seed2-*.final.pt")
    rows = json.loads(rr("gates", "--checkpoint", str(bias), "--anatomy", "--format", "json").stdout)
    assert {(r["token_share"], r["freeze_delta"]) for r in rows} == {(0.0, 0.0)}
    drawn = rr("plot", "gates", "--checkpoint", str(reviews[0]), "--out", "anatomy.png")
    assert drawn.returncode == 0 and (tmp_path / "anatomy.png").read_bytes().startswith(b"\x89PNG")

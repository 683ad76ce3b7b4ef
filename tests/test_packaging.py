"""The base install is enough for the analysis: `pip install -e . && rr analyze --table` (the README's first
line) must work without any extra. The test environment has every extra installed, so each command runs in
a child interpreter that refuses to import what only an extra (train, cluster, test) declares."""

from __future__ import annotations

import importlib.metadata as md
import re
import subprocess
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")

ROOT = Path(__file__).resolve().parents[1]
OWN = "rr-toolkit"


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def extras_only() -> set[str]:
    """Top-level modules of distributions that pyproject.toml declares in an extra but not in the base."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {_name(r) for r in project["dependencies"]}
    extra = {_name(r) for reqs in project["optional-dependencies"].values() for r in reqs} - base - {OWN}
    modules = set()
    for module, dists in md.packages_distributions().items():
        if any(d.lower().replace("_", "-") in extra for d in dists):
            modules.add(module)
    return modules


BLOCKER = """
import importlib.abc, sys
class _Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (an extra: not in the base install)", name=name)
sys.meta_path.insert(0, _Refuse())
sys.argv = ["rr", *ARGS]
from cli.main import main
main()
"""


def test_the_extras_are_known_here():
    blocked = extras_only()
    assert {"torch", "tokenizers", "datasets", "submitit", "pytest", "hypothesis"} <= blocked
    assert not blocked & {"pandas", "pandera", "pyarrow", "scipy", "statsmodels", "seaborn", "matplotlib"}


@pytest.mark.parametrize(
    "args",
    [
        ["validate"],
        ["analyze", "--table"],
        ["analyze", "claims"],
        ["analyze", "--emergence", "--format", "json"],
        ["report", "--out", "{tmp}/report"],
    ],
    ids=" ".join,
)
def test_analysis_commands_run_on_the_base_install(args, tmp_path):
    args = [a.format(tmp=tmp_path) for a in args]
    code = f"BLOCKED = {sorted(extras_only())!r}\nARGS = {args!r}\n" + BLOCKER
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "an extra: not in the base install" not in result.stderr

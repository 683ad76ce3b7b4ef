"""The base install is enough for the analysis: `pip install -e . && rr analyze --table` (the README's first
line) must work without any extra. The test environment has every extra installed, so each command runs in
a child interpreter that refuses to import what only an extra (train, cluster, test) declares."""

from __future__ import annotations

import importlib.metadata as md
import subprocess
import sys
from pathlib import Path

import pytest

from cli.errors import requirement_name

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")

ROOT = Path(__file__).resolve().parents[1]
OWN = "rr-toolkit"


def extras_only() -> set[str]:
    """Top-level modules of distributions that pyproject.toml declares in an extra but not in the base."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {requirement_name(r) for r in project["dependencies"]}
    extra = (
        {requirement_name(r) for reqs in project["optional-dependencies"].values() for r in reqs}
        - base
        - {OWN}
    )
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
        ["analyze", "claims"],  # the table, emergence and equivalence behind it
        pytest.param(["report", "--out", "{tmp}/report"], marks=pytest.mark.slow),  # every view and figure
    ],
    ids=" ".join,
)
def test_analysis_commands_run_on_the_base_install(args, tmp_path):
    result = _child([a.format(tmp=tmp_path) for a in args], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "an extra: not in the base install" not in result.stderr


def _child(args: list[str], cwd: Path, blocked: set[str] | None = None) -> subprocess.CompletedProcess:
    """`rr ARGS` in a child interpreter without the `blocked` modules (default: every extra's)."""
    blocked = extras_only() if blocked is None else blocked
    code = f"BLOCKED = {sorted(blocked)!r}\nARGS = {args!r}\n" + BLOCKER
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd)


@pytest.mark.parametrize(
    "args, extra",
    [
        (["train", "--size", "tiny", "--corpus", "synthetic", "--out", "demo.csv"], "train"),
        (
            ["sweep", "--sizes", "tiny", "--seeds", "0", "--launcher", "slurm"],
            "cluster",
        ),  # --dry-run needs none
    ],
    ids=lambda a: a if isinstance(a, str) else a[0],
)
def test_a_command_that_needs_an_extra_says_which_to_install(args, extra, tmp_path):
    result = _child(args, tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert f"comes with rr's '{extra}' extra: pip install 'rr-toolkit[{extra}]'" in result.stderr
    assert not (tmp_path / "demo.csv").exists()


def test_the_extra_is_read_from_the_installed_metadata_and_a_bug_stays_a_bug():
    from cli.errors import missing_extra

    assert [missing_extra(m) for m in ("torch", "torch.nn", "submitit", "pytest")] == [
        "train",
        "train",
        "cluster",
        "test",
    ]
    assert missing_extra("pandas") is None  # a base dependency missing is a broken install, not an extra
    assert missing_extra("no_such_module") is None and missing_extra(None) is None


@pytest.mark.parametrize(
    "args, blocked, extra",
    [
        (["--log", "tensorboard"], "tensorboard", "logging"),
        (["--log", "wandb"], "wandb", "logging"),
        (["export"], "safetensors", "export"),
        (["eval"], "lm_eval", "eval"),
        (["sweep", "--log", "tensorboard"], "tensorboard", "logging"),
    ],
    ids=lambda a: a if isinstance(a, str) else " ".join(a),
)
def test_a_missing_logging_or_export_extra_is_one_line(args, blocked, extra, tiny_run, offline, tmp_path):
    """With torch installed but one backend absent: `rr train --log X`, `rr export` and `rr eval --tasks` say
    which extra to install, in one line, and leave no row, log or export folder behind."""
    from rr_model.checkpoint import state as checkpoint

    final = checkpoint.final_path(tiny_run["out"], "tiny", "standard", 0)
    if args == ["export"]:
        args = ["export", "--checkpoint", str(final), "--out", "exported"]
    elif args == ["eval"]:
        args = ["eval", "--checkpoint", str(final), "--tasks", "hellaswag"]
    else:
        command, *args = args if args[0] == "sweep" else ["train", *args]
        where = ["--sizes", "tiny", "--seeds", "0"] if command == "sweep" else ["--size", "tiny"]
        args = [command, *where, "--corpus", "synthetic", "--steps", "2", "--out", "demo.csv", *args]
    result = _child(args, tmp_path, blocked={blocked})
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("rr: error:")]
    assert len(lines) == 1 and f"comes with rr's '{extra}' extra" in lines[0], result.stderr[-3000:]
    assert not (tmp_path / "demo.csv").exists() and not (tmp_path / "exported" / "model.safetensors").exists()


def test_the_constraints_pin_every_declared_dependency_inside_its_range():
    """constraints.txt (the README's exact reproduction) pins one version of every package pyproject.toml
    declares, in the base and in every extra (those whose marker holds on this Python), each inside the
    declared range, and nothing else but `name==version` lines."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import Version

    pins, malformed = {}, []
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        pin = Requirement(line)
        if pin.marker is not None and not pin.marker.evaluate():
            continue
        specs = list(pin.specifier)
        if len(specs) != 1 or specs[0].operator != "==" or pin.extras:
            malformed.append(line)
            continue
        pins[canonicalize_name(pin.name)] = Version(specs[0].version)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = [Requirement(r) for r in project["dependencies"]]
    declared += [Requirement(r) for reqs in project["optional-dependencies"].values() for r in reqs]
    declared = [r for r in declared if r.name != OWN and (r.marker is None or r.marker.evaluate())]
    missing = sorted({r.name for r in declared if canonicalize_name(r.name) not in pins})
    outside = [
        f"{r.name}=={pins[canonicalize_name(r.name)]} is outside {r.specifier}"
        for r in declared
        if canonicalize_name(r.name) in pins
        and not r.specifier.contains(pins[canonicalize_name(r.name)], True)
    ]
    assert len(declared) > 20 and (malformed, missing, outside) == ([], [], [])

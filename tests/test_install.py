"""install.py, the README's test command: which torch it installs where, from fake version listings and fake
GPUs (no pip runs here), and that the README and CI run the same line."""

from __future__ import annotations

import importlib.util
import stat
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("install", ROOT / "install.py")
install = importlib.util.module_from_spec(spec)
spec.loader.exec_module(install)

LISTING = """torch (2.15.0)
Available versions: 2.15.0, 2.14.1, 2.10.0+cpu, 2.9.1+cpu, 2.13.0+cpu.cxx11.abi, 2.12.0+cu126, 2.9.1
  INSTALLED: 2.13.0+cpu
"""


def test_the_newest_cpu_build_is_chosen_by_version_not_by_text():
    versions = install.listed_versions(LISTING)
    assert versions[:3] == ["2.15.0", "2.14.1", "2.10.0+cpu"] and len(versions) == 7
    assert install.cpu_builds(versions) == ["2.10.0+cpu", "2.9.1+cpu"]  # 2.10 above 2.9; cu126 and plain out
    assert install.listed_versions("ERROR: No matching distribution found for torch\n") == []


@pytest.mark.parametrize(
    ("installed", "gpu", "platform", "builds", "tries", "said"),
    [
        ("2.13.0+cpu", False, "linux", ["2.14.0+cpu"], [], "torch 2.13.0+cpu is installed: kept"),
        (None, True, "linux", ["2.14.0+cpu"], [], "an NVIDIA GPU is here"),
        (None, False, "darwin", ["2.14.0+cpu"], [], "on darwin pip's torch has no CUDA libraries"),
        (None, False, "linux", [], [], "no CPU build of torch can be seen"),
        (
            None,
            False,
            "linux",
            ["4+cpu", "3+cpu", "2+cpu", "1+cpu"],
            ["4+cpu", "3+cpu", "2+cpu"],
            "torch 4+cpu",
        ),
    ],
)
def test_which_torch_is_installed_before_rr(installed, gpu, platform, builds, tries, said):
    got, why = install.torch_choice(installed, gpu, platform, builds)
    assert got == tries and said in why


def fake_smi(tmp_path: Path, exit_code: int, listing: str) -> str:
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\necho '{listing}'\nexit {exit_code}\n")
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    return str(smi)


def test_an_nvidia_gpu_is_found_by_its_driver_or_nvidia_smi(tmp_path):
    none, driver = tmp_path / "no-driver", tmp_path / "nvidia"
    driver.mkdir()
    assert install.has_nvidia_gpu(lambda name: None, driver)
    assert not install.has_nvidia_gpu(lambda name: None, none)
    listed = fake_smi(tmp_path, 0, "GPU 0: NVIDIA H200 (UUID: GPU-1)")
    assert install.has_nvidia_gpu(lambda name: listed, none)
    assert not install.has_nvidia_gpu(lambda name: fake_smi(tmp_path, 9, "NVIDIA-SMI has failed"), none)


class Pip:
    """Stands in for pip: records each call, lists `listing`, refuses to install the builds in `refused`."""

    def __init__(self, listing: str = LISTING, refused: tuple[str, ...] = ()):
        self.calls: list[tuple[str, ...]] = []
        self.listing, self.refused = listing, refused

    def __call__(self, *args: str, capture: bool = False):
        self.calls.append(args)
        refused = any(f"torch=={b}" in args for b in self.refused)
        return type("Done", (), {"returncode": 1 if refused else 0, "stdout": self.listing})()


@pytest.fixture
def machine(monkeypatch):
    """A Linux machine without torch or GPU, the CPU index unreachable; returns the fake pip."""
    pip = Pip()
    monkeypatch.setattr(install, "pip", pip)
    monkeypatch.setattr(install, "installed_torch", lambda: None)
    monkeypatch.setattr(install, "has_nvidia_gpu", lambda: False)
    monkeypatch.setattr(install, "reachable", lambda url=install.CPU_INDEX: False)
    monkeypatch.setattr(install.sys, "platform", "linux")
    return pip


def test_a_cpu_machine_installs_the_cpu_build_then_rr(machine, capsys):
    assert install.main(["test"]) == 0
    assert machine.calls == [
        ("index", "versions", "torch"),  # the index unreachable: not asked again for each package
        ("install", "torch==2.10.0+cpu"),
        ("install", "-e", f"{ROOT}[test]"),
    ]
    assert (
        capsys.readouterr().out
        == "install.py: no NVIDIA GPU here: torch 2.10.0+cpu, the CPU build (the newest pip can see)\n"
    )


def test_the_cpu_index_is_used_where_it_answers_and_a_refused_build_gives_way(machine, monkeypatch):
    monkeypatch.setattr(install, "reachable", lambda url=install.CPU_INDEX: True)
    machine.refused = ("2.10.0+cpu",)  # as pip's constraints refuse a torch above their cap
    assert install.main(["train,hf"]) == 0
    extra = ("--extra-index-url", install.CPU_INDEX)
    assert machine.calls == [
        ("index", "versions", "torch", *extra),
        ("install", "torch==2.10.0+cpu", *extra),
        ("install", "torch==2.9.1+cpu", *extra),
        ("install", "-e", f"{ROOT}[train,hf]"),
    ]


@pytest.mark.parametrize(
    ("argv", "setup"),
    [
        (["test"], {"has_nvidia_gpu": lambda: True}),
        (["test"], {"installed_torch": lambda: "2.13.0"}),
        (["test", "--gpu"], {}),
        (["cluster"], {}),  # no torch in this extra
        ([], {}),  # the analysis only
    ],
)
def test_rr_alone_where_torch_is_pip_s_to_choose_or_not_needed(machine, monkeypatch, argv, setup):
    for name, value in setup.items():
        monkeypatch.setattr(install, name, value)
    assert install.main(argv) == 0
    target = f"{ROOT}[{argv[0]}]" if argv else str(ROOT)
    assert machine.calls == [("install", "-e", target)]


def test_every_build_refused_stops_before_rr(machine):
    machine.refused = ("2.10.0+cpu", "2.9.1+cpu")
    assert install.main(["test"]) == 1 and machine.calls[-1] == ("install", "torch==2.9.1+cpu")


def test_the_readme_and_ci_run_one_test_command_in_a_fresh_environment_after_the_lint_steps():
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    command = readme[readme.index("```bash") + 2].split("  #")[0].strip()
    assert command == "python install.py test && pytest"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    steps = [
        "python3 -m venv",
        "python install.py test",
        "ruff check .",
        "ruff format --check .",
        "lint-imports",
    ]
    at = [next(i for i, line in enumerate(ci) if line.startswith(step)) for step in steps]
    assert at == sorted(at) and ci[-1] == command and "set -euo pipefail" in ci

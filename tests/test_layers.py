"""What the house's tools cannot check: how much each entry point imports (`rr --help` loads no heavy library,
`import rr_core` and `import rr_analysis` no torch and no pandas), the names a notebook imports, and a pandas
rule that keeps results the same across the pandas versions pyproject allows.

The import contracts (layers, no cycles) are in `.importlinter` and lint and format in pyproject.toml's ruff
settings; CI runs `lint-imports`, `ruff check` and `ruff format --check` as steps of their own.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("cli", "rr_analysis", "rr_model", "rr_core")
SOURCES = [p for folder in (*PACKAGES, "bench") for p in sorted((ROOT / folder).rglob("*.py"))]


def test_help_loads_no_heavy_library():
    """`rr --help` lists the commands with typer alone: no torch, statsmodels, seaborn, scipy or pandas."""
    heavy = ("torch", "statsmodels", "seaborn", "scipy", "pandas", "matplotlib")
    code = (
        "import sys; from typer.testing import CliRunner; from cli.main import app; "
        "assert CliRunner().invoke(app, ['--help']).exit_code == 0; "
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert result.stdout.strip() == "[]"


def test_importing_the_analysis_package_loads_no_pandas():
    """`import rr_analysis` exports nothing: each name is imported from the module that defines it."""
    code = (
        "import sys, rr_analysis; print(sorted(m for m in ('pandas', 'numpy', 'scipy') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert result.stdout.strip() == "[]"


def unobserved_groupings(path: Path) -> list[str]:
    """`FILE:LINE` of each pandas groupby or pivot_table call in `path` that does not pass observed=True."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in ("groupby", "pivot_table"):
            continue
        if isinstance(node.func.value, ast.Name) and node.func.value.id == "itertools":
            continue
        observed = [k for k in node.keywords if k.arg == "observed"]
        if not (observed and isinstance(observed[0].value, ast.Constant) and observed[0].value.value is True):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_every_grouping_states_observed_true():
    """`size` is an ordered categorical: pandas 2 (which pyproject allows) groups categoricals with
    observed=False by default, adding a row for every size absent from the subset; pandas 3 does not.
    Stating observed=True gives the same result under both."""
    found = [f for path in SOURCES for f in unobserved_groupings(path)]
    assert not found, f"groupby/pivot_table without observed=True: {', '.join(found)}"


def test_importing_the_ground_loads_no_torch_and_no_pandas():
    """`import rr_core` and its lazy names: the ground is torch-free, and pandas loads with the sweep file."""
    code = (
        "import sys, rr_core, rr_core.shapes, rr_core.plugins, rr_core.ladder; "
        "print(sorted(m for m in ('torch', 'pandas', 'scipy') if m in sys.modules)); "
        "from rr_core import load_sweep; load_sweep(); "
        "print(sorted(m for m in ('torch', 'pandas') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert result.stdout.split("\n")[:2] == ["[]", "['pandas']"]


def test_notebook_names_come_from_the_packages_users_think_in():
    """`from rr_analysis import load_sweep, gap_table, emergence_figure` works, lazily: the package loads no
    pandas until a name is used, and each name is the object of the module that defines it."""
    import rr_analysis
    from rr_analysis import emergence_figure, gap_table, load_sweep
    from rr_analysis.figures.gaps import emergence_figure as defined
    from rr_analysis.stats.gap_tests import gap_table as gap_defined

    assert emergence_figure is defined and gap_table is gap_defined and callable(load_sweep)
    assert {"load_sweep", "gap_table", "emergence_figure", "write_report"} <= set(dir(rr_analysis))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        rr_analysis.nope  # noqa: B018

"""The house's structure as tests: import contracts, no module cycles, short functions, a light `rr --help`.

The contracts themselves are in `.importlinter` at the repository root (`lint-imports` runs them too).
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
MAX_LINES = 60  # lines of code in one function, docstring, comments and blank lines aside


def test_import_contracts_are_kept():
    """Layers cli > rr_analysis > rr_model, rr_model's floors, and the independent renderers and commands."""
    lint = Path(sys.executable).with_name("lint-imports")  # installed with this interpreter; no PATH lookup
    result = subprocess.run([lint, "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[result.stdout.find("Broken contracts") :] or result.stderr


def test_no_module_imports_itself_back_through_others():
    """Every import counts, those inside functions too: an import on use that dodges a cycle is a cycle."""
    import grimp

    g = grimp.build_graph(*PACKAGES, cache_dir=None)
    loops = [
        f"{a} -> {b} -> ... -> {a}"
        for a in sorted(g.modules)
        for b in sorted(g.find_modules_directly_imported_by(a))
        if g.chain_exists(importer=b, imported=a)
    ]
    assert loops == []


def code_lines(node: ast.AST, source: list[str]) -> int:
    """Lines of `node` that hold code: not blank, not a comment alone, not part of its docstring."""
    skip = set()
    body = getattr(node, "body", [])
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        if isinstance(body[0].value.value, str):
            skip = set(range(body[0].lineno, body[0].end_lineno + 1))
    lines = range(node.lineno, node.end_lineno + 1)
    return sum(1 for i in lines if i not in skip and source[i - 1].strip()[:1] not in ("", "#"))


def long_functions(path: Path) -> list[str]:
    text = path.read_text()
    source = text.splitlines()
    return [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({n} lines)"
        for node in ast.walk(ast.parse(text))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and (n := code_lines(node, source)) >= MAX_LINES
    ]


def test_code_lines_leave_out_the_docstring_comments_and_blanks():
    source = 'def f(x):\n    """Doc.\n\n    More.\n    """\n    # why\n\n    y = x\n    return y  # so\n'
    (node,) = ast.parse(source).body
    assert code_lines(node, source.splitlines()) == 3


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_function_is_under_60_lines_of_code(path):
    assert long_functions(path) == []


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


class _OnImport(ast.NodeVisitor):
    """The calls a module makes when it is imported: at its top level, in decorators and in defaults."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def visit_Call(self, node: ast.Call) -> None:
        self.calls.append(ast.unparse(node.func))
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:  # the body runs later, when called
        for n in (*node.decorator_list, *node.args.defaults, *node.args.kw_defaults):
            if n is not None:
                self.visit(n)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit(node.args)


@pytest.mark.parametrize("path", sorted((ROOT / "tests").glob("test_*.py")), ids=lambda p: p.name)
def test_collecting_a_test_module_needs_no_rr_on_path(path):
    """Importing a test module must not look up `rr` (or run anything): pytest collects without it."""
    visitor = _OnImport()
    visitor.visit(ast.parse(path.read_text()))
    looked_up = [c for c in visitor.calls if c.endswith("which") or c.startswith("subprocess.")]
    assert looked_up == []


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _root(node: ast.expr) -> str | None:
    """The name an attribute chain (`a.b.c`) or a dotted string ("rr_model.data.token_cache") starts from."""
    while isinstance(node, ast.Attribute):
        node = node.value
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.split(".")[0]
    return node.id if isinstance(node, ast.Name) else None


def private_uses(path: Path) -> list[str]:
    """ "file:line name" for each private name of rr a test imports, reads as an attribute or patches by name.

    rr's names are those a module binds by importing from `PACKAGES` (module or object); an attribute chain
    rooted at one, a dotted string naming rr ("rr_model.files._x", as mock.patch takes it), a private name
    beside an rr module's in a tuple (a parametrized patch target) and a (get|set|del)attr of one by name
    all count.
    """
    tree = ast.parse(path.read_text(), str(path))
    rr, found = set(PACKAGES), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PACKAGES:
            rr |= {a.asname or a.name for a in node.names}
            names = [*node.module.split("."), *(a.name for a in node.names)]
            found += [(node.lineno, n) for n in names if _private(n)]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in PACKAGES:
                    rr.add(a.asname or a.name.split(".")[0])
                    found += [(node.lineno, n) for n in a.name.split(".") if _private(n)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and _root(node) in rr:
            found.append((node.lineno, node.attr))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _root(node) in PACKAGES:
            parts = node.value.split(".")
            if len(parts) > 1 and all(p.isidentifier() for p in parts):
                found += [(node.lineno, p) for p in parts if _private(p)]
        elif isinstance(node, ast.Tuple) and any(_root(e) in PACKAGES for e in node.elts):
            strings = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            found += [
                (node.lineno, v) for v in strings if _private(v)
            ]  # ("rr_model.x", "_y"): a patch target
        elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith(
            ("setattr", "getattr", "delattr")
        ):
            target, name = (node.args + [None, None])[:2]
            if target is not None and _root(target) in rr and isinstance(name, ast.Constant):
                if isinstance(name.value, str) and _private(name.value):
                    found.append((node.lineno, name.value))
    return [f"{path.name}:{line} {name}" for line, name in sorted(set(found))]


def test_private_uses_finds_imports_attributes_and_patches(tmp_path):
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "from rr_model.data.token_cache import _x, load_tokens\n"
        "import rr_model.data.token_cache as tok\n"
        "import os\n"
        "tok._y\n"
        "os._exit\n"
        "tok.__name__\n"
        "def test(monkeypatch):\n"
        "    from rr_core import files\n"
        "    monkeypatch.setattr(files, '_z', None)\n"
        "    monkeypatch.setattr('rr_core.files._w', None)\n"
        "    monkeypatch.setattr(os, '_v', None)\n"
        "TARGETS = [('rr_core.sweepfile.dataset', '_parse'), ('os', '_u')]\n"
    )
    assert private_uses(probe) == [
        "test_probe.py:1 _x",
        "test_probe.py:4 _y",
        "test_probe.py:9 _z",
        "test_probe.py:10 _w",
        "test_probe.py:12 _parse",
    ]


def test_no_test_reaches_a_private_name_of_rr():
    """Tests go through rr's public names; a name a test needs is public because it is part of the contract."""
    uses = [u for path in sorted((ROOT / "tests").glob("*.py")) for u in private_uses(path)]
    assert uses == []


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


def test_no_two_library_modules_share_a_name():
    """One name, one module: rr_core, rr_model and rr_analysis never hold two modules of one name (a reader
    who finds `curves.py` knows which it is); cli's modules are named for their commands."""
    seen: dict[str, list[str]] = {}
    for folder in ("rr_core", "rr_model", "rr_analysis"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name != "__init__.py":
                seen.setdefault(path.stem, []).append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}


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

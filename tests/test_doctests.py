"""Every `>>>` example in rr's packages runs and shows what it prints, one test per docstring.

The examples are found in the source without importing it; a module that needs an extra which is not
installed skips its examples, naming the extra (`cli.errors.missing_extra`).
"""

from __future__ import annotations

import ast
import doctest
import functools
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("cli", "rr_analysis", "rr_model", "rr_core")


def _owners(body: list[ast.stmt], prefix: str):
    """Qualified names of the functions and classes (and their methods) in `body` whose docstring has `>>>`."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if ">>>" in (ast.get_docstring(node) or ""):
                yield prefix + node.name
            if isinstance(node, ast.ClassDef):
                yield from _owners(node.body, f"{prefix}{node.name}.")


def examples() -> list[tuple[str, str]]:
    """(module, doctest name) of every docstring with an example in `PACKAGES`."""
    found = []
    for path in sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if ">>>" in (ast.get_docstring(tree) or ""):
            found.append((module, module))
        found += [(module, f"{module}.{name}") for name in _owners(tree.body, "")]
    return found


@functools.cache
def _doctests(module: str) -> dict[str, doctest.DocTest]:
    try:
        imported = importlib.import_module(module)
    except ModuleNotFoundError as e:
        from cli.errors import missing_extra

        if (extra := missing_extra(e.name)) is None:
            raise
        pytest.skip(f"{module}'s examples need rr's '{extra}' extra ({e.name} is not installed)")
    return {t.name: t for t in doctest.DocTestFinder().find(imported, module) if t.examples}


EXAMPLES = examples()


def test_the_examples_are_found():
    assert (
        len(EXAMPLES) >= 60 and ("rr_analysis.stats.exact", "rr_analysis.stats.exact.sign_flip") in EXAMPLES
    )


@pytest.mark.parametrize("module, name", EXAMPLES, ids=[name for _, name in EXAMPLES])
def test_example_runs_and_prints_what_it_shows(module, name):
    test = _doctests(module)[name]
    report: list[str] = []
    result = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS).run(test, out=report.append)
    assert result.failed == 0, "".join(report)

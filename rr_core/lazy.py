"""A package's public names imported on first use (PEP 562), so importing the package itself stays cheap.

`rr_analysis`, `rr_core`, `rr_model` and `rr_analysis.figures` each export the names a notebook reaches for
(`from rr_analysis import load_sweep, gap_table, emergence_figure`) without loading pandas, matplotlib or
torch until one of them is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, where: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`, exporting each name of `where` from the module it maps to.

    Example
    -------
    >>> getattr_, dir_ = lazy_exports("demo", {"sqrt": "math"})
    >>> getattr_("sqrt")(9.0), "sqrt" in dir_()
    (3.0, True)
    """

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(where[name]), name)

    def __dir__() -> list[str]:
        return sorted(where)

    return __getattr__, __dir__

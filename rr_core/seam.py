"""The stream seam a residual rule plugs into (`rr_model.model`), as a contract checked without torch: what the
seam gives a rule (`SEAM`: its constructor's d_model, site and sites; forward's state and update; read's state),
and what a rule asks that it does not give (`seam_problem`), refused when the rule registers.
"""

from __future__ import annotations

import inspect

__all__ = ["SEAM", "seam_problem"]


# What the stream seam (`rr_model.model`) gives a rule: its constructor d_model and, where it names them,
# site (the sublayer's place in depth order) and sites (2 n_layer); forward the state and the update u;
# read, where defined, the state alone.
SEAM = {"__init__": ("d_model", "site", "sites"), "forward": ("state", "u"), "read": ("state",)}


def seam_problem(rule: type) -> str | None:
    """What a rule class asks of the stream seam that the seam does not give (`SEAM`), or None.

    Its constructor may require d_model (first, positional) and the names site and sites; its ``forward``
    two inputs (the state, the update) and its ``read``, where defined, one. A parameter with a default is
    never asked for.
    """
    for method, given in SEAM.items():
        found = getattr(rule, method, None)
        if method == "read" and found is None:
            continue
        try:
            params = list(inspect.signature(found).parameters.values())[1:]  # after self
        except (TypeError, ValueError):
            continue  # a builtin's signature: nothing to check
        variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        required = [p for p in params if p.default is p.empty and p.kind not in variadic]
        if method == "__init__":  # d_model first, then only what the seam names
            takes_d = any(p.kind is not p.KEYWORD_ONLY and p.kind is not p.VAR_KEYWORD for p in params)
            named = [p.name for p in required[1:] if p.name not in given[1:]]
            if named or not takes_d:
                what = ", ".join(named) or "no d_model"
                return f"its constructor asks for {what}; the seam gives {', '.join(given)}"
        elif len(required) != len(given):
            return (
                f"its {method} takes {len(required)} inputs ({', '.join(p.name for p in required)}); "
                f"the seam gives {len(given)} ({', '.join(given)})"
            )
    return None

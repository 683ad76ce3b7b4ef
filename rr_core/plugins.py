"""Residual rules from outside rr: `register_residual`, and finding the modules that call it.

A plugin is a Python module that defines a residual rule as rr's own are (`rr_model.model`): an
``nn.Module`` class built as ``rule(d_model)`` whose ``forward(h, u)`` adds a sublayer's update u to the
stream h, and registers it::

    import rr_model
    rr_model.register_residual("myrule", MyRule, label="My rule", matched=True)

rr imports plugins once per process, when something asks for a variant it does not know or lists the
variants (`load_plugins`): the modules named in the environment variable ``RR_PLUGINS`` (comma-separated
module names, or paths of .py files), then every module named by an installed package's entry point in
the group ``rr.residuals``. Child processes (`rr sweep`'s runs, DDP ranks, Slurm jobs) inherit
``RR_PLUGINS`` and find the same rules. Importing this module loads no torch: a rule's parameters are
counted on torch's meta device when they are first asked for (`rule_params`).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path
from typing import Any

from rr_core.errors import InputError
from rr_core.variants import NAMES, VARIANTS, Variant, register, variant_problem

__all__ = ["ENV", "GROUP", "register_residual", "load_plugins", "residual_rule", "rule_params", "provenance"]

ENV = "RR_PLUGINS"  # comma-separated plugin modules (or .py files) to import
GROUP = "rr.residuals"  # the entry point group of installed plugin packages
_COLOUR = re.compile(r"#[0-9A-Fa-f]{6}")
_RULES: dict[str, type] = {}
_LOADED: set[str] = set()  # the plugin specs (RR_PLUGINS items, entry points) imported in this process


def register_residual(
    name: str, rule: type, *, label: str | None = None, colour: str | None = None, matched: bool = False
) -> None:
    """Make a residual rule a variant every rr command can train, count, read and plot.

    Parameters
    ----------
    name
        The variant's name in sweep files and on the command line: a lower-case ASCII letter, then at
        most 39 lower-case letters, digits or _ (`rr_core.variants.VARIANT_NAME`); not one of rr's own.
    rule
        An ``nn.Module`` class: ``rule(d_model)`` builds one sublayer's rule, ``forward(h, u)`` returns the
        new stream. Its parameters count towards the exact count of `rr sizes` (every parameter the module
        holds). A ``gate`` attribute, if any, must be an ``nn.Linear``: it is initialised as rr's gated rules
        are (normal(0, 0.02), bias 0, drawn after the sublayers' Linears); an ``r(h, u)`` method is what
        `rr gates` reads. Other parameters keep the values ``__init__`` gives them, unless the class defines
        ``init_published(self)``, which is called after rr's own initialisation, in sublayer order, under
        ``torch.no_grad()`` and drawing from torch's seeded stream: the hook for a custom init.
    label, colour
        Legend label (default: the name) and a ``#RRGGBB`` colour (default: one of the extra colours, never
        a registered variant's; `rr_core.variants.palette`).
    matched
        Widen the variant in steps of n_head until it has the reference's parameter count, as Highway and
        Standard are.

    Raises
    ------
    InputError
        A bad name or colour, a name of rr's own or one another rule holds, or a `rule` that is no
        ``nn.Module`` class.
    """
    import torch.nn as nn  # the plugin has imported torch already, to define `rule`

    where = f"register_residual({name!r})"
    if (problem := variant_problem(name)) is not None:
        raise InputError(f"{where}: the name {problem}")
    if name in NAMES:
        raise InputError(f"{where}: {name} is one of rr's own variants; give your rule another name")
    if not (isinstance(rule, type) and issubclass(rule, nn.Module)):
        raise InputError(f"{where}: the rule must be an nn.Module class built as rule(d_model), not {rule!r}")
    held = _RULES.get(name)
    if held is not None and (held.__module__, held.__qualname__) != (rule.__module__, rule.__qualname__):
        raise InputError(
            f"{where}: {held.__module__}.{held.__qualname__} is registered under that name already"
        )
    if colour is not None and not _COLOUR.fullmatch(colour):
        raise InputError(f"{where}: colour {colour!r} must be #RRGGBB")
    _RULES[name] = rule
    rule_params.cache_clear()
    register(Variant(name, label or name, colour, matched, rule.__module__))


def load_plugins() -> None:
    """Import the plugin modules of ``RR_PLUGINS`` and of the ``rr.residuals`` entry points not imported yet.

    An item of ``RR_PLUGINS`` is a module name (``mylab.rules``) or the path of a .py file
    (``./myrule.py``, imported as a module named by its stem). An entry point names a module
    (``myrule = mylab.rules``). Raises InputError naming the plugin and its exception when one fails to
    import, so a broken plugin is one sentence, not a traceback.
    """
    for spec in (s.strip() for s in os.environ.get(ENV, "").split(",")):
        if spec and spec not in _LOADED:
            _import(spec, f"{ENV} names the plugin {spec!r}", lambda spec=spec: _module(spec))
    from importlib.metadata import entry_points  # here: ~12 ms that only a run asking for variants pays

    for ep in entry_points(group=GROUP):
        spec = f"{ep.name} = {ep.value}"
        if spec not in _LOADED:
            dist = getattr(ep.dist, "name", "an installed package")
            _import(spec, f"the plugin {spec} ({dist}, entry point group {GROUP})", ep.load)


def _import(spec: str, what: str, load: Any) -> None:
    try:
        load()
    except InputError as e:  # a register_residual refusal: its own sentence, with the plugin named
        raise InputError(f"{what}: {e}") from None
    except Exception as e:  # anything the plugin's own code raises while it is imported
        raise InputError(f"{what}, which cannot be imported: {type(e).__name__}: {e}") from None
    _LOADED.add(spec)


def _module(spec: str) -> object:
    """The module an ``RR_PLUGINS`` item names: a .py file by its path, else a module by its name."""
    if not spec.endswith(".py"):
        return importlib.import_module(spec)
    path = Path(spec)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[path.stem] = module  # as an import would: the rule's class names its module
    module_spec.loader.exec_module(module)
    return module


def residual_rule(name: str) -> type:
    """The rule class a plugin registered as `name` (KeyError if none did)."""
    return _RULES[name]


@functools.lru_cache(maxsize=4096)
def rule_params(name: str, d_model: int) -> int:
    """Parameters of one plugin rule at width `d_model`, counted on a build on torch's meta device (no memory)."""
    import torch

    with torch.device("meta"):
        module = _RULES[name](d_model)
    return sum(p.numel() for p in module.parameters())


def provenance(name: str) -> dict[str, Any] | None:
    """Where a plugin variant's code is: its module, file and the file's sha256; None for rr's own variants."""
    variant = VARIANTS.get(name)
    if variant is None or variant.module is None:
        return None
    file = getattr(sys.modules.get(variant.module), "__file__", None)
    digest = hashlib.sha256(Path(file).read_bytes()).hexdigest() if file else None
    return {"module": variant.module, "file": file, "sha256": digest}

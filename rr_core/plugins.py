"""Residual rules from outside rr: finding and importing the modules that register them.

A plugin is a Python module that defines a residual rule as rr's own are (`rr_model.model`): an
``nn.Module`` class built as ``rule(d_model)`` whose ``forward(h, u)`` adds a sublayer's update u to the
stream h, and registers it through the call that registers rr's own (`rr_core.variants.register_residual`)::

    import rr_model
    rr_model.register_residual("myrule", MyRule, label="My rule", matched=True)

rr imports plugins once per process, when something asks for a variant it does not know or lists the
variants (`load_plugins`): the modules named in the environment variable ``RR_PLUGINS`` (comma-separated
module names, or paths of .py files), then every module named by an installed package's entry point in
the group ``rr.residuals``. Child processes (`rr sweep`'s runs, DDP ranks, Slurm jobs) inherit
``RR_PLUGINS`` and find the same rules. Importing this module loads no torch.

A rule is identified by its code, not its module's name: each registration records the file that defined
the rule and the sha256 of its bytes as they were imported (`provenance`, which every run's record keeps;
`rr_core.variants.rule_origin`), a second rule under a name another file registered is refused naming both
files, and two plugin files of one module name in different folders are refused rather than one silently
replacing the other.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from rr_core.errors import InputError
from rr_core.variants import NAMES, SOURCES, VARIANTS, rule_origin, unknown_variant

__all__ = ["ENV", "GROUP", "load_plugins", "require_variant", "provenance"]

ENV = "RR_PLUGINS"  # comma-separated plugin modules (or .py files) to import
GROUP = "rr.residuals"  # the entry point group of installed plugin packages
_LOADED: set[str] = set()  # the plugin specs (RR_PLUGINS items, entry points) imported in this process


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


def require_variant(name: str, recorded: dict[str, Any] | None = None) -> None:
    """Refuse a variant with no residual rule to train, after looking for it among the plugins not yet
    imported (`load_plugins`); InputError naming the nearest registered name and every registered one.

    `recorded` is the plugin's `provenance` as a run kept it (a checkpoint or final weights of a plugin
    run): the refusal then names the file that defined the rule and the ``RR_PLUGINS`` setting that loads
    it, since a run read back without its plugin is the usual way to meet an unknown variant.
    """
    if name not in VARIANTS:
        load_plugins()
    if name in VARIANTS:
        return
    if recorded and recorded.get("file"):
        raise InputError(
            f"unknown variant {name!r}: the run was trained with the plugin rule of {recorded['file']} "
            f"(module {recorded.get('module', '?')}), which is not loaded; set {ENV}={recorded['file']} "
            f"(or the module's name where it is installed) and run the command again"
        )
    raise InputError(unknown_variant(name))


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
        if "." not in spec:  # a top-level name: the file the path would give it, against one imported so
            found = importlib.machinery.PathFinder.find_spec(spec)
            _one_file(spec, Path(found.origin) if found and found.origin else None)
        return importlib.import_module(spec)
    path = Path(spec)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    _one_file(path.stem, path)
    source = path.read_bytes()  # run and hashed from the same bytes: the record names the code that ran
    SOURCES[str(path.resolve())] = hashlib.sha256(source).hexdigest()
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[path.stem] = module  # as an import would: the rule's class names its module
    exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102 (the plugin the user named)
    return module


def _one_file(name: str, path: Path | None) -> None:
    """Refuse to import `path` as the module `name` when a module of that name is imported from another file:
    one would replace the other (or never be imported), and a run's record would name the wrong code."""
    other = getattr(sys.modules.get(name), "__file__", None)
    if path is not None and other is not None and Path(other).resolve() != path.resolve():
        raise InputError(
            f"{path} would be imported as the module {name}, which is imported already from {other}: two "
            "plugin files of one module name would replace each other; rename one of them"
        )


def provenance(name: str) -> dict[str, Any] | None:
    """The code that built a plugin variant's rule, as recorded when it registered (or, for a rule named
    as "module:Class", when it was imported): its module, file and the sha256 of the file's bytes as they
    were run; None for rr's own variants."""
    if name not in VARIANTS or name in NAMES:
        return None
    origin = rule_origin(name)
    return {k: origin[k] for k in ("module", "file", "sha256")}

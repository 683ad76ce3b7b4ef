"""The Python files an export carries so that transformers loads it (``trust_remote_code``).

Three files, importing only torch, transformers and each other (relative imports, as transformers requires):

- ``configuration_rr.py`` and ``modeling_rr.py``, copied from ``rr_model/uses/remote_code/``: the configuration
  and transformers' plumbing (loading, the KV cache, padding, positions, generation);
- ``rr_layers.py``, generated here: the source of `rr_model.model.LAYERS` (normalisation, attention, MLP,
  the block, the trunk of embeddings and blocks) and of every rule rr registers as its own
  (`rr_core.variants.NAMES`, found through the registry's ``"module:Class"`` paths) copied verbatim with
  `inspect.getsource`, after the imports it needs, and a ``residual_rule`` that looks the variant up in
  the file's own table as the registry's does in rr. The export runs the very code rr trains with, so the
  two cannot drift apart.

A plugin's rule travels as a fourth file: the file that defines its class, copied byte for byte and
imported relatively by ``rr_layers.py``. transformers refuses remote code that imports a package the
machine lacks, so that file may import only torch, transformers and the standard library (imports inside a
``try`` block aside: transformers skips them too, which is how a plugin guards its registration with rr);
any other plugin is refused with the reason (`plugin_rule`).
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rr_core.errors import InputError
from rr_core.variants import NAMES, residual_rule
from rr_model import model

__all__ = [
    "AUTO_MAP",
    "ARCHITECTURE",
    "MODEL_TYPE",
    "TEMPLATES",
    "LAYERS_FILE",
    "PluginRule",
    "plugin_rule",
    "layers_source",
    "remote_code",
]

TEMPLATES = Path(__file__).with_name("remote_code")  # configuration_rr.py, modeling_rr.py
LAYERS_FILE = "rr_layers.py"
ARCHITECTURE = "RRForCausalLM"
MODEL_TYPE = "rr_gpt"  # RRConfig.model_type (tests/test_hf_export.py holds the two equal)
AUTO_MAP = {"AutoConfig": "configuration_rr.RRConfig", "AutoModelForCausalLM": f"modeling_rr.{ARCHITECTURE}"}
ALLOWED = frozenset({"torch", "transformers", "__future__"})  # besides the standard library


@dataclass(frozen=True)
class PluginRule:
    """A plugin's rule as an export carries it: its class, defined in `source` (the bytes of `origin`),
    shipped as `file_name` beside the model."""

    variant: str
    class_name: str
    origin: Path
    source: bytes

    @property
    def file_name(self) -> str:
        return f"rule_{self.variant}.py"

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.source).hexdigest()


def _imports(tree: ast.AST) -> tuple[set[str], bool]:
    """Top-level packages a module imports outside ``try`` blocks, and whether it imports relatively
    (transformers' own reading of remote code, `transformers.dynamic_module_utils.get_imports`)."""
    names, relative = set(), False
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Try | getattr(ast, "TryStar", ast.Try)):
            continue
        if isinstance(node, ast.Import):
            names |= {a.name.partition(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            relative |= node.level > 0
            names |= {node.module.partition(".")[0]} if node.level == 0 and node.module else set()
        inner, rel = _imports(node)
        names, relative = names | inner, relative or rel
    return names, relative


def plugin_rule(variant: str) -> PluginRule | None:
    """The plugin rule an export of `variant` carries; None for rr's own variants.

    Raises
    ------
    InputError
        The rule cannot travel, with the reason: its class is not defined at the top level of a file, or
        that file imports another of its package or a package other than torch, transformers and the
        standard library outside a ``try`` block (rr itself included: the registration must be guarded).
    """
    if variant in NAMES:
        return None
    rule = residual_rule(variant)
    where = f"the variant {variant}'s rule {rule.__module__}.{rule.__qualname__} cannot travel with an export"
    try:
        origin = Path(inspect.getsourcefile(rule) or "")
    except TypeError:
        origin = Path()
    if "." in rule.__qualname__ or not origin.is_file():
        raise InputError(f"{where}: its class is not defined at the top level of a source file")
    source = origin.read_bytes()
    names, relative = _imports(ast.parse(source, str(origin)))
    foreign = sorted(n for n in names - ALLOWED if n not in sys.stdlib_module_names)
    if relative or foreign:
        what = ", ".join(foreign) + (" and other files of its package" if relative else "")
        raise InputError(
            f"{where}: its file {origin} imports {what.removeprefix(', ')}, which transformers requires on "
            "every machine that loads the model; keep the class in a file that imports only torch and the "
            "standard library, with rr's registration inside try/except ImportError (docs/extending.md)"
        )
    return PluginRule(variant, rule.__name__, origin, source)


def layers_source(plugin: PluginRule | None, toolkit: str | None) -> str:
    """rr_layers.py: `rr_model.model.LAYERS`' and rr's own rules' source verbatim, the imports it needs,
    the rule table."""
    own = {name: residual_rule(name) for name in NAMES}
    rules = {name: cls.__name__ for name, cls in own.items()}
    imports = ""
    if plugin is not None:
        rules[plugin.variant] = plugin.class_name
        imports = f"from .{Path(plugin.file_name).stem} import {plugin.class_name}\n"
    table = ",\n".join(f"    {json.dumps(name)}: {cls}" for name, cls in rules.items())
    return "\n".join(
        [
            f'"""rr\'s layers, residual rules, block and trunk for modeling_rr.py, copied verbatim from '
            f"rr_model/model.py\n(rr-toolkit {toolkit}) by `rr export`. Generated: change rr's model, not "
            'this file."""',
            "",
            "from __future__ import annotations",
            "",
            "import inspect  # noqa: F401",
            "import math  # noqa: F401",
            "",
            "import torch",
            "import torch.nn as nn",
            "import torch.nn.functional as F",
            "",
            "from .configuration_rr import RRConfig as GPTConfig  # noqa: F401 (the name rr's annotations use)",
            imports,
            "# KVCache in the annotations is rr's cache; here transformers' DynamicCache takes its place (the",
            "# same update and get_seq_length).",
            f"EPS = {model.EPS!r}",
            "",
            "",
            *(inspect.getsource(obj) + "\n" for obj in (*model.LAYERS, *_in_file_order(own.values()))),
            f"RULES = {{\n{table},\n}}",
            "",
            "",
            "def residual_rule(variant: str) -> type[nn.Module]:",
            '    """The residual rule of a variant: rr\'s own, or the plugin\'s this export carries."""',
            "    return RULES[variant]",
            "",
        ]
    )


def _in_file_order(classes: Iterable[type]) -> list[type]:
    """Each class once, file by file in the order the registry first names a rule of each (rr's: the model's,
    Review's ablations, the field's rivals), each file's in the order it defines them (a subclass after its
    base: ReviewConvex)."""
    classes = list(dict.fromkeys(classes))
    files = list(dict.fromkeys(inspect.getsourcefile(cls) for cls in classes))
    return sorted(
        classes, key=lambda cls: (files.index(inspect.getsourcefile(cls)), inspect.getsourcelines(cls)[1])
    )


def remote_code(variant: str, toolkit: str | None) -> tuple[dict[str, bytes], PluginRule | None]:
    """The Python files (name -> bytes) an export of `variant` carries, and the plugin rule among them.

    Raises InputError when the variant's plugin rule cannot travel (`plugin_rule`).
    """
    plugin = plugin_rule(variant)
    files = {name: (TEMPLATES / name).read_bytes() for name in ("configuration_rr.py", "modeling_rr.py")}
    files[LAYERS_FILE] = layers_source(plugin, toolkit).encode("utf-8")
    if plugin is not None:
        files[plugin.file_name] = plugin.source
    return files, plugin

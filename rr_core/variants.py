"""The registry of residual variants: one entry per variant, rr's own and plugins' alike. The one source of truth.

An entry (`Variant`) holds everything rr knows of a variant: its residual rule (the ``nn.Module`` class every
sublayer is added back through, named lazily as ``"module:Class"`` where it is rr's own, so that this module
stays torch-free), its legend label and colour, whether it is parameter-matched to the reference, and the
parameters one rule adds per sublayer as a function of d_model (exact arithmetic: their count, or their
names and shapes; None: found on a build of the rule on torch's meta device). How a rule is initialised is the rule's own business (its
``init_published``, `rr_model.model`). rr's own ten variants (the paper's six and four ablations of Review)
are registered below by `register_residual`, the call a plugin makes too (`rr_core.plugins` finds and
imports plugins); the model (`residual_rule`), the exact parameter count (`rule_params`, `rr_core.shapes`),
the memory plan's shapes (`rule_shapes`), analysis, plots and the CLI all read the entries.

Variants are open: a sweep file may hold any name that `VARIANT_NAME` accepts; a name nobody registered is
labelled by itself and coloured from `EXTRA_COLOURS`.
"""

from __future__ import annotations

import hashlib
import importlib
import re
import sys
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rr_core.errors import InputError, did_you_mean
from rr_core.errors import nearest as nearest_name
from rr_core.kept_bytes import HC_STREAMS, Kept, attn_res_kept, denseformer_kept, hyper_kept, per_sublayer
from rr_core.seam import seam_problem

__all__ = [
    "Variant",
    "VARIANTS",
    "REFERENCE",
    "BASELINES",
    "COMPARED",
    "compared",
    "NAMES",
    "VARIANT_NAME",
    "VARIANT_RULE",
    "SOURCES",
    "register_residual",
    "residual_rule",
    "rule_origin",
    "Shapes",
    "label",
    "matched",
    "order_key",
    "nearest",
    "variant_problem",
    "unknown_variant",
]


# Parameters as (name, shape) pairs, in the order a module's named_parameters() gives them; () is a scalar.
Shapes = list[tuple[str, tuple[int, ...]]]


@dataclass(frozen=True)
class Variant:
    """One variant's entry: what `register_residual` was given (see there)."""

    name: str
    label: str  # for legends and tables
    colour: str | None  # Okabe-Ito palette for rr's own: colour-blind safe, fixed across every figure
    matched: bool  # widened in steps of n_head to the reference's parameter count (paper's baselines)
    rule: type | str  # the rule class, or "module:Class" where it lives (imported when a model is built)
    params: Callable[..., int | Shapes] | None = (
        None  # per sublayer at width d (or d, site, sites): count or shapes; None: built
    )
    kept: Kept | None = None  # bytes its rules keep for the backward pass beyond Standard's; None: unknown

    @property
    def module(self) -> str:
        """The module that holds the rule's code."""
        return _rule_path(self.rule).partition(":")[0]


VARIANTS: dict[str, Variant] = {}
NAMES: tuple[str, ...] = ()  # rr's own variants, once registered (end of module); plugins' come after
REFERENCE = "review_neutral"  # the variant every gap is measured against
BASELINES: tuple[str, ...] = ("highway", "standard")  # the paper's parameter-matched baselines
COMPARED: tuple[str, ...] = (REFERENCE, *BASELINES)  # one seed of the sweep trains these three


def compared(reference: str = REFERENCE) -> tuple[str, ...]:
    """The variants one seed trains where `reference` is the variant under study: it and the matched
    baselines (`COMPARED` for Review, the published design).

    Example
    -------
    >>> compared("myrule"), compared("standard")
    (('myrule', 'highway', 'standard'), ('standard', 'highway'))
    """
    return (reference, *(b for b in BASELINES if b != reference))


# A variant name a sweep file may hold: ASCII only, so that a look-alike ('hіghway' with a Cyrillic i,
# 'Highway', 'high way') is refused rather than analysed as a variant of its own.
VARIANT_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}", re.ASCII)
VARIANT_RULE = "a variant name: a lower-case ASCII letter, then at most 39 lower-case letters, digits or _"

_COLOUR = re.compile(r"#[0-9A-Fa-f]{6}")
_LAZY_RULE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*", re.ASCII)

# The code behind each rule, so that a run's record names the bytes that built it, not a file edited since.
SOURCES: dict[str, str] = {}  # resolved path of a plugin file rr ran itself -> sha256 of the bytes it ran
_ORIGINS: dict[str, dict[str, Any]] = {}  # variant name -> module, qualname, file, sha256 of its rule's code


def _rule_path(rule: type | str) -> str:
    """Where a rule lives, as "module:Class"."""
    return rule if isinstance(rule, str) else f"{rule.__module__}:{rule.__qualname__}"


def register_residual(
    name: str,
    rule: type | str,
    *,
    label: str | None = None,
    colour: str | None = None,
    matched: bool = False,
    params: Callable[[int], int | Shapes] | None = None,
    kept: Kept | None = None,
) -> None:
    """Make a residual rule a variant every rr command can train, count, read and plot.

    Parameters
    ----------
    name
        The variant's name in sweep files and on the command line: a lower-case ASCII letter, then at
        most 39 lower-case letters, digits or _ (`VARIANT_NAME`); not one of rr's own.
    rule
        An ``nn.Module`` class, or where one lives as ``"module:Class"`` (imported when a model is first
        built, so registering loads no torch): ``rule(d_model)`` builds one sublayer's rule, ``forward(h,
        u)`` returns the new stream. A ``gate`` attribute, if any, must be an ``nn.Linear``: it is
        initialised as rr's gated rules are (normal(0, 0.02), bias 0, drawn after the sublayers' Linears);
        an ``r(h, u)`` method is what `rr gates` reads (and ``halves(h, u)``, the two parts of a gate logit
        that reads the stream and the update, what `rr gates --anatomy` splits its variance by). Other
        parameters keep the values ``__init__`` gives them, unless the class defines
        ``init_published(self)``, which is called after rr's own initialisation, in sublayer order, under
        ``torch.no_grad()`` and drawing from torch's seeded stream (`rr_model.model.GPT.init_published`); a
        ``published_draws()`` method returns a module drawn in the gate's place instead (Review's
        ablations: a stand-in of Review's gate, so they start from Review's weights).
    label, colour
        Legend label (default: the name) and a ``#RRGGBB`` colour (default: one of the extra colours, never
        a registered variant's; `palette`).
    matched
        Widen the variant in steps of n_head until it has the reference's parameter count, as Highway and
        Standard are.
    params
        The exact parameters one rule adds per sublayer, as a function of d_model: their count, or their
        (name, shape) pairs in the order the rule's ``named_parameters()`` gives them, its own parameters
        before its submodules' (`Shapes`; the count follows). None: every parameter a build of the rule holds, on torch's meta device (`rule_params`,
        `rule_shapes`). Either way `rr sizes` and parameter matching count them without building a model;
        with shapes, the memory plan of a sharded run (`rr_model.parallel.memory`) also cuts them exactly without
        torch.
    kept
        The bytes the rules of a model keep for the backward pass beyond Standard's (`Kept`), for the memory
        plan (`rr_model.parallel.memory.saved_activation_bytes`). None: as much as Review (convex) keeps,
        the largest of rr's one-stream rules.

    Raises
    ------
    InputError
        A bad name or colour, a name of rr's own or one another rule holds (another class, or the same
        class name from another file: both named, with their files), or a `rule` that is neither an
        ``nn.Module`` class nor a ``"module:Class"`` string. The held class defined again by a byte-for-byte
        copy of its file (an export carries one, `rr_model.uses.hf_code`) is the rule already held: the call
        does nothing.
    """
    where = f"register_residual({name!r})"
    if (problem := variant_problem(name)) is not None:
        raise InputError(f"{where}: the name {problem}")
    if name in NAMES:
        raise InputError(f"{where}: {name} is one of rr's own variants; give your rule another name")
    if isinstance(rule, str):
        if not _LAZY_RULE.fullmatch(rule):
            raise InputError(f"{where}: the rule {rule!r} must name a class as 'module:Class'")
    else:
        import torch.nn as nn  # the plugin has imported torch already, to define `rule`

        if not (isinstance(rule, type) and issubclass(rule, nn.Module)):
            raise InputError(
                f"{where}: the rule must be an nn.Module class built as rule(d_model), not {rule!r}"
            )
    origin, held = (None if isinstance(rule, str) else _origin(rule)), _ORIGINS.get(name)
    if name in VARIANTS and (
        _rule_path(VARIANTS[name].rule) != _rule_path(rule)
        or (held and origin and held["file"] != origin["file"])
    ):
        if _copy_of(origin, name):
            return  # the same file's bytes imported again under another name (an export's copy of it)
        raise InputError(
            f"{where}: {_described(VARIANTS[name].rule, held)} is registered under that name already; "
            f"{_described(rule, origin)} may not replace it"
        )
    if colour is not None and not _COLOUR.fullmatch(colour):
        raise InputError(f"{where}: colour {colour!r} must be #RRGGBB")
    if not isinstance(rule, str) and (problem := seam_problem(rule)) is not None:
        raise InputError(
            f"{where}: {_rule_path(rule)} needs an input the stream seam does not give: {problem}"
        )
    VARIANTS[name] = Variant(name, label or name, colour, matched, rule, params, kept)
    if origin is not None:
        _ORIGINS[name] = origin


def _origin(rule: type) -> dict[str, Any]:
    """The module, qualname, file and sha256 of the code that defines `rule` (file and sha256 None where it
    has no file, as in a notebook); for a plugin file rr ran itself, the sha256 of the bytes it ran."""
    file = getattr(sys.modules.get(rule.__module__), "__file__", None)
    file = str(Path(file).resolve()) if file else None
    digest = SOURCES.get(file) if file else None
    if file and digest is None:
        digest = hashlib.sha256(Path(file).read_bytes()).hexdigest()
    return {"module": rule.__module__, "qualname": rule.__qualname__, "file": file, "sha256": digest}


def _described(rule: type | str, origin: dict[str, Any] | None) -> str:
    """A rule as a refusal names it: module.Class and the file it came from, where known."""
    if origin is None:
        return _rule_path(rule)
    return f"{origin['module']}.{origin['qualname']}" + (f" from {origin['file']}" if origin["file"] else "")


def _copy_of(origin: dict[str, Any] | None, name: str) -> bool:
    """Whether the class whose code is `origin` is the rule `name` holds, defined again: the same name, from
    a file of the same bytes (an export carries such a copy, `rr_model.uses.hf_code`)."""
    if origin is None or origin["sha256"] is None:
        return False
    try:
        held = rule_origin(name)
    except Exception:  # a lazy path that no longer imports: no rule to be a copy of
        return False
    return (held["qualname"], held["sha256"]) == (origin["qualname"], origin["sha256"])


def residual_rule(name: str) -> type:
    """The rule class of a registered variant, imported from where its entry names it (KeyError if none);
    a plugin's rule named as "module:Class" has its code recorded (`rule_origin`) when first imported."""
    rule = VARIANTS[name].rule
    if not isinstance(rule, str):
        return rule
    module, _, qualname = rule.partition(":")
    found = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    if (problem := seam_problem(found)) is not None:
        raise InputError(f"variant {name}: {rule} needs an input the stream seam does not give: {problem}")
    if name not in NAMES and name not in _ORIGINS:
        _ORIGINS[name] = _origin(found)
    return found


def rule_origin(name: str) -> dict[str, Any]:
    """The code behind a registered variant's rule: its module, qualname, file (resolved) and the sha256 of
    the file's bytes, recorded when the rule was registered as a class or first imported from its
    "module:Class" (which this imports, if nothing has yet)."""
    if name not in _ORIGINS:
        _ORIGINS[name] = _origin(residual_rule(name))
    return _ORIGINS[name]


def label(name: str) -> str:
    """A variant's name for legends and tables; an unknown name stands as it is, so new variants still show."""
    v = VARIANTS.get(name)
    return v.label if v else name


def matched(name: str) -> bool:
    """Whether a variant is widened to the reference's parameter count (False for a name nobody registered)."""
    v = VARIANTS.get(name)
    return bool(v and v.matched)


def order_key(name: str) -> tuple[int, str]:
    """Sort key for variants: registry order first (rr's own, then plugins'), then other names by name."""
    order = list(VARIANTS)
    return (order.index(name), "") if name in VARIANTS else (len(order), name)


def _folded(name: str) -> str:
    """`name` as a look-alike of a registered name reads: NFKC, case folded, spaces and hyphens gone."""
    return re.sub(r"[\s\-]+", "", unicodedata.normalize("NFKC", name).casefold())


def nearest(name: str, among: Iterable[str] | None = None) -> str | None:
    """The variant `name` most looks like ('Highway', 'high way', 'hіghway' -> highway; 'reviw', by its
    label Review, -> review_neutral), among the registered ones (or the names `among`), or None.

    Example
    -------
    >>> nearest("reviw"), nearest("Standrd"), nearest("reviw", ["highway", "standard"])
    ('review_neutral', 'standard', None)
    """
    names = list(VARIANTS if among is None else among)
    folded = _folded(name)
    if folded in names:
        return folded
    labels = {_folded(label(n)): n for n in names if label(n) != n}  # a name as its legend writes it
    near = nearest_name(folded, [*names, *labels])
    return labels.get(near, near)


def variant_problem(name: str) -> str | None:
    """Why `name` may not stand in a sweep file's variant column, naming the nearest registered name."""
    if VARIANT_NAME.fullmatch(name):
        return None
    return f"must be {VARIANT_RULE}{did_you_mean(nearest(name))}"


def unknown_variant(name: str) -> str:
    """What to say of a variant that has no residual rule to train: the nearest name and the registered."""
    near = nearest(name)
    return f"unknown variant {name!r}{did_you_mean(near if near != name else None)}; registered: {', '.join(VARIANTS)}"


# rr's own variants, in the order tables and legends list them. Parameters per sublayer, by name and shape:
# see each rule in rr_model.model, rr_model.ablations and rr_model.streams (tests/test_model.py and
# tests/test_shapes.py build every one and check the count and the shapes); bytes kept for the backward
# pass: tests/test_memory.py counts what autograd keeps on CPU for every one.
register_residual(
    "review_neutral",
    "rr_model.model:ReviewNeutral",
    label="Review",
    colour="#0072B2",
    params=lambda d: [("gate.weight", (d, 2 * d)), ("gate.bias", (d,))],  # gate Linear(2d -> d)
    kept=per_sublayer((16, 8), (8, 6)),
)
register_residual(
    "highway",
    "rr_model.model:Highway",
    label="Highway",
    colour="#E69F00",
    matched=True,
    params=lambda d: [("gate.weight", (d, d)), ("gate.bias", (d,))],  # gate Linear(d -> d)
    kept=per_sublayer((8, 0), (6, 0)),
)
register_residual(
    "standard",
    "rr_model.model:Standard",
    label="Standard",
    colour="#009E73",
    matched=True,
    params=lambda d: [],
    kept=per_sublayer((0, 0), (0, 0)),
)
register_residual(
    "review_convex",
    "rr_model.model:ReviewConvex",
    label="Review (convex)",
    colour="#D55E00",
    params=lambda d: [("gate.weight", (d, 2 * d)), ("gate.bias", (d,))],  # Review's gate
    kept=per_sublayer((20, 8), (10, 6)),
)
register_residual(
    "layerscale",
    "rr_model.model:LayerScale",
    label="LayerScale",
    colour="#CC79A7",
    params=lambda d: [("scale", (d,))],  # per-channel scale
    kept=per_sublayer((4, 0), (2, 0)),
)
register_residual(
    "rezero",
    "rr_model.model:ReZero",
    label="ReZero",
    colour="#56B4E9",
    params=lambda d: [("alpha", ())],  # one scalar
    kept=per_sublayer((4, 0), (2, 0)),
)  # fmt: skip
# Ablations of Review, at its width (not matched): each changes one thing about its gate, and each starts
# as Review does, bit for bit (`rr_model.ablations`). Tol's "light" colours and Okabe-Ito's black.
register_residual(
    "review_half", "rr_model.ablations:ReviewHalf", label="Review (r = 0.5)", colour="#77AADD",
    params=lambda d: [],  # the gate held at 0.5: nothing to learn
    kept=per_sublayer((0, 0), (0, 0)),
)  # fmt: skip
register_residual(
    "gate_bias", "rr_model.ablations:GateBias", label="Gate bias", colour="#EE8866",
    params=lambda d: [("bias", (d,))],  # b, one per channel
    kept=lambda N, d, L, bf16, copies: per_sublayer((4, 0), (2, 0))(N, d, L, bf16, copies) + 8 * d * L,  # sigmoid(b)
)  # fmt: skip
register_residual(
    "review_state", "rr_model.ablations:ReviewState", label="Review (state only)", colour="#BBCC33",
    params=lambda d: [("gate.weight", (d, d)), ("gate.bias", (d,))],  # gate Linear(d -> d) on rms(h)
    kept=per_sublayer((12, 4), (6, 4)),
)  # fmt: skip
register_residual(
    "review_update", "rr_model.ablations:ReviewUpdate", label="Review (update only)", colour="#000000",
    params=lambda d: [("gate.weight", (d, d)), ("gate.bias", (d,))],  # gate Linear(d -> d) on rms(u)
    kept=per_sublayer((12, 4), (6, 2)),
)  # fmt: skip
# The field's rivals, on the stream seam (rr_model.streams): several streams, or every earlier output.
# Hyper-connections at expansion n = 4 (the rule's `streams`): [A_m A_r] n x (n + 1) and B n per sublayer;
# dynamic adds the d x (n + 1) and d dynamic matrices, two scales and the norm's gain. DenseFormer: the
# weights of block i's average (i + 2) on its MLP's rule. AttnRes: a pseudo-query per sublayer, and the
# last sublayer's rule one more for the final norm's input. Colours: Paul Tol's "vibrant" magenta, teal and
# red, his light pink for static hyper-connections beside the dynamic ones, Okabe-Ito's yellow for the block
# form of AttnRes; none is another variant's or an extra (`EXTRA_COLOURS`).
register_residual(
    "hyper_connections", "rr_model.streams:HyperConnections", label="Hyper-connections", colour="#EE3377",
    matched=True,
    params=lambda d, n=HC_STREAMS: [("static_alpha", (n, n + 1)), ("static_beta", (n,)), ("dynamic_alpha", (d, n + 1)),
                      ("dynamic_beta", (d,)), ("scale_alpha", ()), ("scale_beta", ()), ("norm.weight", (d,))],
    kept=hyper_kept(dynamic=True),
)  # fmt: skip
register_residual(
    "hyper_connections_static", "rr_model.streams:StaticHyperConnections", label="Hyper-connections (static)",
    colour="#FFAABB", matched=True, params=lambda d, n=HC_STREAMS: [("static_alpha", (n, n + 1)), ("static_beta", (n,))],
    kept=hyper_kept(dynamic=False),
)  # fmt: skip
register_residual(
    "denseformer", "rr_model.streams:DenseFormer", label="DenseFormer", colour="#009988", matched=True,
    params=lambda d, site, sites: [("dwa", (site // 2 + 2,))] if site % 2 else [], kept=denseformer_kept,
)  # fmt: skip
register_residual(
    "attn_res", "rr_model.streams:AttnRes", label="AttnRes", colour="#CC3311", matched=True,
    params=lambda d, site, sites: [("query", (d,))] + ([("exit_query", (d,))] if site == sites - 1 else []),
    kept=attn_res_kept(blocks=0),
)  # fmt: skip
register_residual(
    "attn_res_block", "rr_model.streams:BlockAttnRes", label="Block AttnRes", colour="#F0E442", matched=True,
    params=lambda d, site, sites: [("query", (d,))] + ([("exit_query", (d,))] if site == sites - 1 else []),
    kept=attn_res_kept(blocks=8),
)  # fmt: skip
NAMES = tuple(VARIANTS)

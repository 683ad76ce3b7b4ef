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

import functools
import hashlib
import importlib
import inspect
import math
import re
import sys
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rr_core.errors import InputError, did_you_mean
from rr_core.errors import nearest as nearest_name

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
    "EXTRA_COLOURS",
    "SOURCES",
    "register_residual",
    "residual_rule",
    "rule_origin",
    "rule_params",
    "model_rule_params",
    "rule_shapes",
    "SEAM",
    "seam_problem",
    "Shapes",
    "Kept",
    "HC_STREAMS",
    "colour",
    "palette",
    "label",
    "matched",
    "order_key",
    "nearest",
    "variant_problem",
    "unknown_variant",
]


# Parameters as (name, shape) pairs, in the order a module's named_parameters() gives them; () is a scalar.
Shapes = list[tuple[str, tuple[int, ...]]]
# Bytes autograd keeps for the backward pass of a model's residual rules beyond what Standard's keep, as a
# function of (tokens, d_model, n_layer, bf16, weight_copies): `tokens` the micro-batch's B x T; `bf16`
# under bf16 autocast, whose copies of the rules' matrices count where `weight_copies` (not under FSDP's
# bf16 policy, `rr_model.parallel.memory.saved_activation_bytes`). Exact arithmetic, the tensors counted.
Kept = Callable[[int, int, int, bool, bool], int]


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

# Colours of variants that bring none (unregistered, or registered without one): Paul Tol's "muted"
# qualitative scheme (https://personal.sron.nl/~pault/), colour-blind safe and distinct from Okabe-Ito's.
EXTRA_COLOURS: tuple[str, ...] = (
    "#CC6677",
    "#332288",
    "#DDCC77",
    "#117733",
    "#88CCEE",
    "#882255",
    "#44AA99",
    "#999933",
    "#AA4499",
)
_COLOUR = re.compile(r"#[0-9A-Fa-f]{6}")
_LAZY_RULE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*", re.ASCII)

# The code behind each rule, so that a run's record names the bytes that built it, not a file edited since.
SOURCES: dict[str, str] = {}  # resolved path of a plugin file rr ran itself -> sha256 of the bytes it ran
_ORIGINS: dict[str, dict[str, Any]] = {}  # variant name -> module, qualname, file, sha256 of its rule's code


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
    _built.cache_clear()


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


def _given(name: str, d_model: int, site: int, sites: int) -> int | Shapes | None:
    """What the entry of `name` says of one rule: its params function of d_model, or of (d_model, site,
    sites) where it takes three arguments; None where it has none."""
    params = VARIANTS[name].params
    if params is None:
        return None
    return params(d_model, site, sites) if _per_site(params) else params(d_model)


@functools.lru_cache(maxsize=256)
def _per_site(params: Callable[..., int | Shapes]) -> bool:
    """Whether a params function takes (d_model, site, sites) rather than d_model alone."""
    return len(inspect.signature(params).parameters) == 3


def rule_params(name: str, d_model: int, site: int = 0, sites: int = 2) -> int:
    """Parameters one rule of the variant `name` adds at width `d_model`, at sublayer `site` of `sites`
    (2 n_layer): its entry's exact count (or the sum of its entry's shapes), else those of a build of the
    rule on torch's meta device. The same at every site unless the entry's params take the site."""
    given = _given(name, d_model, site, sites)
    return (
        given
        if isinstance(given, int)
        else sum(math.prod(shape) for _, shape in rule_shapes(name, d_model, site, sites))
    )


def model_rule_params(name: str, d_model: int, n_layer: int) -> int:
    """Parameters every rule of the variant `name` adds to a model of `n_layer` blocks: 2 n_layer sites."""
    sites = 2 * n_layer
    if VARIANTS[name].params is not None and not _per_site(VARIANTS[name].params):
        return sites * rule_params(name, d_model)
    return sum(rule_params(name, d_model, site, sites) for site in range(sites))


def rule_shapes(name: str, d_model: int, site: int = 0, sites: int = 2) -> Shapes:
    """The parameters one rule of the variant `name` adds at width `d_model` at sublayer `site` of `sites`,
    as (name, shape) in ``named_parameters()`` order: its entry's shapes, else a build's on torch's meta
    device (no memory), built once per width and site. What the memory plan cuts into a sharded run's
    pieces (`rr_core.shapes`)."""
    given = _given(name, d_model, site, sites)
    if given is not None and not isinstance(given, int):
        return list(given)
    return list(_built(name, d_model, site, sites))


@functools.lru_cache(maxsize=4096)
def _built(name: str, d_model: int, site: int, sites: int) -> tuple[tuple[str, tuple[int, ...]], ...]:
    import torch

    rule = residual_rule(name)
    named = inspect.signature(rule).parameters
    with torch.device("meta"):  # built as the seam builds it (rr_model.model.build_rule)
        module = rule(d_model, **{k: v for k, v in (("site", site), ("sites", sites)) if k in named})
    return tuple((n, tuple(p.shape)) for n, p in module.named_parameters())


def palette(names: Iterable[str]) -> dict[str, str]:
    """The colour of each variant in one figure: its registered colour, or an extra one.

    Variants without a registered colour take `EXTRA_COLOURS` in sorted order of their names, skipping any
    colour a registered variant of the figure holds, so no two variants of a figure share a colour while
    the extras last (past them the extras repeat, still never a registered variant's colour).

    Example
    -------
    >>> palette(["standard", "myrule", "another"])
    {'standard': '#009E73', 'another': '#CC6677', 'myrule': '#332288'}
    """
    names = list(dict.fromkeys(names))
    fixed = {n: VARIANTS[n].colour for n in names if n in VARIANTS and VARIANTS[n].colour}
    free = [c for c in EXTRA_COLOURS if c.upper() not in {f.upper() for f in fixed.values()}]
    free = free or list(EXTRA_COLOURS)
    rest = sorted(n for n in names if n not in fixed)
    return {**fixed, **{n: free[i % len(free)] for i, n in enumerate(rest)}}


def colour(name: str) -> str:
    """Colour for a variant shown alone; in a figure of several, use `palette` so extras do not collide."""
    return palette([name])[name]


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


def per_sublayer(fp32: tuple[int, int], bf16: tuple[int, int]) -> Kept:
    """`Kept` of a rule on one stream that keeps (r_d, r_t) bytes per token at each sublayer: r_d per channel
    and r_t per token, in float32 (`fp32`) or under bf16 autocast (`bf16`): 2 L (r_d N d + r_t N)."""

    def kept(tokens: int, d: int, n_layer: int, bf16_: bool, weight_copies: bool) -> int:
        r_d, r_t = bf16 if bf16_ else fp32
        return 2 * n_layer * (r_d * tokens * d + r_t * tokens)

    return kept


HC_STREAMS = 4  # hyper-connections' expansion rate n: the paper's default (`rr_model.streams`)


def _hyper_kept(dynamic: bool, n: int = HC_STREAMS) -> Kept:
    """`Kept` of hyper-connections on n streams, by block (two sublayers) in n, d and the tokens N, less
    what the first block saves by reading the embeddings expanded (a view: d per token, not n d). Read off
    the tensors autograd keeps on CPU and checked to the byte at n = 2, 3 and 4 (tests/test_memory.py at the
    registered n): the state, n d per token, kept per sublayer (in bfloat16 under bf16 autocast, which adds
    copies of the matrices it multiplies by: [A_m A_r], or the dynamic weights), and for the dynamic rule
    the normalised state and its weights' tanh. The copies of a block's matrices are counted with every
    rule's (`rr_model.parallel.memory.saved_activation_bytes`' W); what differs from them is counted here."""

    def kept(tokens: int, d: int, n_layer: int, bf16: bool, weight_copies: bool) -> int:
        N, L = tokens, n_layer
        first = -(4 * n - 4) * N * d if dynamic else (0 if bf16 else -(8 * n - 4) * N * d)
        if not dynamic:  # [A_m A_r]'s bfloat16 copy: counted with the block's matrices
            per, copies = ((8 * n - 4) * N * d - 4 * N if bf16 else (16 * n + 8) * N * d), 0
        elif bf16:  # B's dynamic vector copied too; [A_m A_r], counted with the matrices, is only added
            per, copies = (48 * n - 4) * N * d + (12 * n * n + 44 * n - 4) * N, 4 * d - 4 * n * (n + 1)
        else:
            per, copies = (40 * n + 8) * N * d + (32 * n * n + 72 * n) * N, 0
        return first + L * (per + (copies if bf16 and weight_copies else 0))

    return kept


def _denseformer_kept(tokens: int, d: int, n_layer: int, bf16: bool, weight_copies: bool) -> int:
    """DenseFormer keeps each block's output, in float32, for its depth-weighted averages: 4 N d L."""
    return 4 * tokens * d * n_layer


def _attn_res_kept(blocks: int) -> Kept:
    """`Kept` of Attention Residuals over `blocks` blocks of sublayers (0: every sublayer a source): each of
    the S = 2 L + 1 sources (the embeddings, each sublayer's output or block's partial sum) in float32 (4 N d
    each), and per source read by each of the 2 L + 1 depth attentions (P pairs: `_attn_res_pairs`) its
    logit, norm and weight (12 N; 8 N under bf16, which adds a bfloat16 copy of the embeddings, 2 N a source
    and the queries' copies, 2 d each)."""

    def kept(tokens: int, d: int, n_layer: int, bf16: bool, weight_copies: bool) -> int:
        N, S, P = tokens, 2 * n_layer + 1, _attn_res_pairs(n_layer, blocks)
        if not bf16:
            return 4 * N * d * S + 12 * N * P
        return 4 * N * d * S + 2 * N * d + 2 * N * S + 8 * N * P + (2 * d * S if weight_copies else 0)

    return kept


def _attn_res_pairs(n_layer: int, blocks: int) -> int:
    """The (depth attention, source) pairs of a model: sublayer s reads 1 + ceil(s / span) sources (span:
    the sublayers a source sums, 1 for full AttnRes), the final norm's input every source.

    Example
    -------
    >>> _attn_res_pairs(2, 0), _attn_res_pairs(6, 8)  # full: (2 L + 1)(L + 1); 12 sublayers in 8 blocks of 2
    (15, 55)
    """
    sites = 2 * n_layer
    span = -(-sites // blocks) if blocks else 1
    return sum(1 + -(-s // span) for s in range(sites + 1))


# rr's own variants, in the order tables and legends list them. Parameters per sublayer, by name and shape:
# see each rule in rr_model.model (tests/test_model.py and tests/test_shapes.py build every one and check
# the count and the shapes); bytes kept for the backward pass: tests/test_memory.py counts what autograd
# keeps on CPU for every one.
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
# as Review does, bit for bit (`rr_model.model.ReviewHalf`). Tol's "light" colours and Okabe-Ito's black.
register_residual(
    "review_half", "rr_model.model:ReviewHalf", label="Review (r = 0.5)", colour="#77AADD",
    params=lambda d: [],  # the gate held at 0.5: nothing to learn
    kept=per_sublayer((0, 0), (0, 0)),
)  # fmt: skip
register_residual(
    "gate_bias", "rr_model.model:GateBias", label="Gate bias", colour="#EE8866",
    params=lambda d: [("bias", (d,))],  # b, one per channel
    kept=lambda N, d, L, bf16, copies: per_sublayer((4, 0), (2, 0))(N, d, L, bf16, copies) + 8 * d * L,  # sigmoid(b)
)  # fmt: skip
register_residual(
    "review_state", "rr_model.model:ReviewState", label="Review (state only)", colour="#BBCC33",
    params=lambda d: [("gate.weight", (d, d)), ("gate.bias", (d,))],  # gate Linear(d -> d) on rms(h)
    kept=per_sublayer((12, 4), (6, 4)),
)  # fmt: skip
register_residual(
    "review_update", "rr_model.model:ReviewUpdate", label="Review (update only)", colour="#000000",
    params=lambda d: [("gate.weight", (d, d)), ("gate.bias", (d,))],  # gate Linear(d -> d) on rms(u)
    kept=per_sublayer((12, 4), (6, 2)),
)  # fmt: skip
# The field's rivals, on the stream seam (rr_model.streams): several streams, or every earlier output.
# Hyper-connections at expansion n = 4 (the rule's `streams`): [A_m A_r] n x (n + 1) and B n per sublayer;
# dynamic adds the d x (n + 1) and d dynamic matrices, two scales and the norm's gain. DenseFormer: the
# weights of block i's average (i + 2) on its MLP's rule. AttnRes: a pseudo-query per sublayer, and the
# last sublayer's rule one more for the final norm's input.
register_residual(
    "hyper_connections", "rr_model.streams:HyperConnections", label="Hyper-connections", matched=True,
    params=lambda d, n=HC_STREAMS: [("static_alpha", (n, n + 1)), ("static_beta", (n,)), ("dynamic_alpha", (d, n + 1)),
                      ("dynamic_beta", (d,)), ("scale_alpha", ()), ("scale_beta", ()), ("norm.weight", (d,))],
    kept=_hyper_kept(dynamic=True),
)  # fmt: skip
register_residual(
    "hyper_connections_static", "rr_model.streams:StaticHyperConnections", label="Hyper-connections (static)",
    matched=True, params=lambda d, n=HC_STREAMS: [("static_alpha", (n, n + 1)), ("static_beta", (n,))],
    kept=_hyper_kept(dynamic=False),
)  # fmt: skip
register_residual(
    "denseformer", "rr_model.streams:DenseFormer", label="DenseFormer", matched=True,
    params=lambda d, site, sites: [("dwa", (site // 2 + 2,))] if site % 2 else [], kept=_denseformer_kept,
)  # fmt: skip
register_residual(
    "attn_res", "rr_model.streams:AttnRes", label="AttnRes", matched=True,
    params=lambda d, site, sites: [("query", (d,))] + ([("exit_query", (d,))] if site == sites - 1 else []),
    kept=_attn_res_kept(blocks=0),
)  # fmt: skip
register_residual(
    "attn_res_block", "rr_model.streams:BlockAttnRes", label="Block AttnRes", matched=True,
    params=lambda d, site, sites: [("query", (d,))] + ([("exit_query", (d,))] if site == sites - 1 else []),
    kept=_attn_res_kept(blocks=8),
)  # fmt: skip
NAMES = tuple(VARIANTS)

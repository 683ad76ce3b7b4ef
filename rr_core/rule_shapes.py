"""A registered rule's parameters without building a model: their count (`rule_params`, `model_rule_params`) and
their names and shapes (`rule_shapes`), from the variant's entry where it states them, else from a build of
the rule on torch's meta device. What `rr sizes`, parameter matching (`rr_core.shapes`) and the memory plan
of a sharded run read.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable

from rr_core.variants import VARIANTS, Shapes, Variant, residual_rule

__all__ = ["rule_params", "model_rule_params", "rule_shapes"]


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
    return list(_built(VARIANTS[name], d_model, site, sites))


@functools.lru_cache(maxsize=4096)
def _built(entry: Variant, d_model: int, site: int, sites: int) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """The parameters of a build of the entry's rule on torch's meta device, once per entry, width and site
    (a name registered again is a new entry, built again)."""
    import torch

    rule = residual_rule(entry.name)
    named = inspect.signature(rule).parameters
    with torch.device("meta"):  # built as the seam builds it (rr_model.model.build_rule)
        module = rule(d_model, **{k: v for k, v in (("site", site), ("sites", sites)) if k in named})
    return tuple((n, tuple(p.shape)) for n, p in module.named_parameters())

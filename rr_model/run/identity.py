"""What a run is, as what it is compared with must see it: the config its record and final weights keep
(`result_config`), its identity that a checkpoint or final weights must share to be resumed (`run_identity`,
`identity_changes`), and how it departs from its size's published recipe (`recipe_differences`, against
`published_settings`): the recipe guard that keeps off-recipe rows from beside the published ones.
Torch-free.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, fields
from typing import TYPE_CHECKING, Any

from rr_core.budget import budget_steps, reference_params
from rr_core.ladder import LADDER, Recipe, Size, get_size
from rr_core.variants import REFERENCE, VARIANTS

if TYPE_CHECKING:
    from rr_model.data.token_cache import Corpus, Tokens
from rr_model.config import PRECISIONS, TrainConfig, schedule_words

__all__ = ["published_settings", "result_config", "run_identity", "identity_changes", "recipe_differences"]


def published_settings(size: Size) -> dict[str, object]:
    """What the published recipe sets for a run of `size` beyond its shape and optimiser: its steps (of its
    budget, `rr_core.budget`), the precision, the corpus and the tokenizer (`recipe_differences` and
    `rr reproduce`'s refusals read them)."""
    from rr_model.data.corpus import TINYSTORIES  # here: the corpus readers load numpy

    in_params = size.budget[0] == "tokens_per_param"  # of the reference under the published tokenizer
    params = reference_params(size.name, size.recipe.vocab_size, size.ladder) if in_params else None
    steps = budget_steps(size, size.recipe, params)
    return {"steps": steps, "precision": PRECISIONS[0], "data": TINYSTORIES, "tokenizer": "gpt2"}


# Fields that decide a run's numbers: a checkpoint resumes only under a config that agrees on them.
_RESULT_FIELDS = ("size", "variant", "seed", "data", "tokenizer", "steps", "recipe", "precision")


def result_config(cfg: TrainConfig) -> dict[str, Any]:
    """The fields of `cfg` that decide its numbers, as stored in (and compared with) a checkpoint.

    A ladder file's size adds its file and shape: the file may be edited between a checkpoint and a resume.
    """
    found = {k: v for k, v in asdict(cfg).items() if k in _RESULT_FIELDS}
    if cfg.text_field != "text":  # stored only where it is not the default, as the ladder below
        found["text_field"] = cfg.text_field
    if cfg.reference != REFERENCE:  # the matched widths follow it
        found["reference"] = cfg.reference
    if cfg.schedule != "cosine":  # the published schedule's checkpoints keep the identity they had
        found |= {k: getattr(cfg, k) for k in ("schedule", "decay_frac", "decay_shape")}
    for name, value in zip(("init_seed", "data_seed"), cfg.seeds, strict=True):
        if value != cfg.seed:  # the numbers follow the seeds drawn from, not how they were given
            found[name] = value
    if cfg.ladder is not None:
        size = get_size(cfg.size, cfg.ladder)
        found["ladder"] = {
            "file": cfg.ladder,
            **{k: getattr(size, k) for k in ("d_model", "n_layer", "n_head")},
        }
    return found


def run_identity(cfg: TrainConfig, tokens: Tokens) -> dict[str, Any]:
    """Everything a run's numbers depend on, as a checkpoint stores it (`rr_model.checkpoint.state.Resumable`'s
    fields of these names) and a resume compares it (`identity_changes`).

    Returns
    -------
    {"config": `result_config` (size, variant, seed, corpus path, tokenizer, steps, the recipe, precision,
    and a ladder file's entry), "data": the tokens trained on (`Tokens.describe`: source, tokenizer,
    documents, lengths and the stream's sha256, `rr_model.data.token_cache`), "plugin": the module, file
    and sha256 of the code that built a plugin's rule (`rr_core.plugins.provenance`; None for rr's own)}.
    """
    from rr_core.plugins import provenance  # here: as for require_variant, only a run pays for it

    return {"config": result_config(cfg), "data": tokens.describe(), "plugin": provenance(cfg.variant)}


def identity_changes(saved: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What differs between a stored run identity and the present one, one phrase per value that differs
    (``config.recipe.lr 0.001 when saved, 0.002 now``); [] when they agree. Long values (a sha256) are cut
    to their first 12 characters."""
    return list(_differences(saved, now, ""))


def _differences(then: Any, now: Any, key: str) -> Iterator[str]:
    if isinstance(then, dict) and isinstance(now, dict):
        for part in sorted(then.keys() | now.keys()):
            yield from _differences(then.get(part), now.get(part), f"{key}.{part}" if key else part)
    elif then != now:
        yield f"{key} {_shown(then)} when saved, {_shown(now)} now"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:13] + "...'"


def recipe_differences(cfg: TrainConfig, tokens: Tokens | Corpus) -> list[str]:
    """How a run departs from its size's published recipe, one readable phrase per difference ([]: none).

    A ladder file's size is compared with its own recipe, unless it carries the label of one of rr's sizes:
    then with rr's size, and its shape, from the file, is always a difference (its rows would be taken for
    rr's), so such rows never go beside the published ones. A matched baseline widened to another reference
    than Review (`--reference`) has another shape than the published one of its name.
    """
    size = get_size(cfg.size, cfg.ladder)
    found, published = {}, {}
    if VARIANTS[cfg.variant].matched:
        found["reference"], published["reference"] = cfg.reference, REFERENCE
    if cfg.ladder is not None and cfg.size in LADDER:
        shape = "d_model {}, n_layer {}, n_head {}"
        found["shape"] = (
            shape.format(size.d_model, size.n_layer, size.n_head) + f" from the ladder file {cfg.ladder}"
        )
        size = LADDER[cfg.size]
        published["shape"] = shape.format(size.d_model, size.n_layer, size.n_head)
    found["schedule"], published["schedule"] = (
        (cfg.schedule if cfg.schedule == "cosine" else schedule_words(cfg)),
        "cosine",
    )
    found |= {
        "steps": cfg.steps,
        "precision": cfg.precision,
        "data": tokens.source,
        "tokenizer": tokens.tokenizer,
    }
    published |= published_settings(size)
    for f in fields(Recipe):
        found[f.name], published[f.name] = getattr(cfg.recipe, f.name), getattr(size.recipe, f.name)
    found["n_text"] = tokens.n_text  # the stories actually used (a small corpus may have fewer)
    published.pop("vocab_size")  # follows from the tokenizer
    return [f"{k} {found[k]} (published: {v})" for k, v in published.items() if found[k] != v]

"""Training budgets: a run's steps, the tokens it trains on, its tokens per parameter and its training FLOPs.
Torch-free, so `rr sizes --budget`, every dry run and a run's config state them without torch.

A budget is stated one way of three (`rr_core.ladder.BUDGET_KEYS`): steps; tokens D; or tokens per parameter
X, of the reference's exact parameter count N (`rr_core.shapes`: the reference is the variant the matched
baselines are widened to, so N is the same for every arm of a cell and every arm trains the same tokens on
the same batches). The steps of a token budget are D over a step's tokens (batch x block), to the nearest
step (halves to even, as Python rounds), at least one; the tokens trained are those steps x batch x block,
within half a step of D. The Chinchilla-optimal budget is about 20 tokens per parameter (Hoffmann et al.
2022, arXiv 2203.15556); the OLMo ladder states budgets as multiples of it.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, replace

from rr_core.errors import InputError
from rr_core.ladder import BUDGET_KEYS, MAX_RUN_TOKENS, RECIPE, Recipe, Size, get_size, ladder_sizes
from rr_core.shapes import flops_per_token, model_config
from rr_core.variants import REFERENCE

__all__ = [
    "Budget",
    "FLOPS_FORMULA",
    "step_tokens",
    "reference_params",
    "budget_steps",
    "budget",
    "budget_table",
    "passes",
]

FLOPS_FORMULA = (
    "training FLOPs = (6 N' + 12 L d T) x tokens, of the reference: N' its parameters but the position "
    "embedding, L layers of width d, context T (PaLM appendix B; 6 N' D plus the attention term)"
)


@dataclass(frozen=True)
class Budget:
    """One size's training budget, as trained: its reference's exact parameter count (params), steps, the
    tokens trained (steps x batch x block), tokens per parameter (tokens / params) and the reference's
    training FLOPs (`FLOPS_FORMULA`)."""

    size: str
    params: int
    steps: int
    tokens: int
    tokens_per_param: float
    flops: float


def step_tokens(recipe: Recipe) -> int:
    """Tokens one optimiser step trains on: the recipe's batch x block (64 x 256 = 16,384 published)."""
    return recipe.batch_size * recipe.block_size


def steps_for(tokens: float, recipe: Recipe) -> int:
    """The steps that train on `tokens`: round(tokens / (batch x block)), at least one.

    Example
    -------
    >>> steps_for(20 * 59_470_848, RECIPE)  # 20 tokens per parameter of the published 60M Review model
    72596
    """
    return max(1, round(tokens / step_tokens(recipe)))


def reference_params(
    size: str,
    vocab_size: int = RECIPE.vocab_size,
    ladder: str | os.PathLike | None = None,
    reference: str = REFERENCE,
    block_size: int | None = None,
) -> int:
    """The exact parameter count of `size`'s reference (at the ladder's width, `model_config`) with this
    vocabulary and context (`block_size`; None: the size's recipe's): what tokens per parameter divide by."""
    cfg = model_config(size, reference, vocab_size, ladder, reference)
    return (cfg if block_size is None else replace(cfg, block_size=block_size)).n_params


def budget_steps(
    size: Size,
    recipe: Recipe,
    params: int | None,
    *,
    steps: int | None = None,
    tokens: int | None = None,
    tokens_per_param: float | None = None,
) -> int:
    """The steps of a run of `size`: those its budget options give (steps, tokens or tokens_per_param), else
    those its ladder entry gives (`Size.budget`), at `recipe`'s batch and block.

    `params` is the reference's exact parameter count (`reference_params`); it is read only for a budget in
    tokens per parameter (None where none is). Steps given beside tokens must be the steps those derive (a
    config read back from its record states both); anything else that names two budgets is refused.

    Raises
    ------
    InputError
        Two budgets that disagree, naming both; a budget past `rr_core.ladder.MAX_RUN_TOKENS` tokens.
    """
    if tokens is not None and tokens_per_param is not None:
        raise InputError(
            f"tokens {tokens} and tokens_per_param {tokens_per_param:g}: give one of {', '.join(BUDGET_KEYS)}"
        )
    kind, value = (
        ("tokens", tokens)
        if tokens is not None
        else ("tokens_per_param", tokens_per_param)
        if tokens_per_param is not None
        else ("steps", steps)
        if steps is not None
        else size.budget
    )
    derived = (
        int(value) if kind == "steps" else steps_for(value if kind == "tokens" else value * params, recipe)
    )
    if steps is not None and steps != derived:
        raise InputError(
            f"steps {steps} and {kind} {value:g} (which train {derived} steps): give one of "
            f"{', '.join(BUDGET_KEYS)}"
        )
    if (trained := derived * step_tokens(recipe)) > MAX_RUN_TOKENS:
        raise InputError(
            f"{kind} {value:,} trains {trained:,} tokens ({derived:,} steps of {recipe.batch_size} x "
            f"{recipe.block_size}), more than the {MAX_RUN_TOKENS:,} any run may read "
            "(rr_core.ladder.MAX_RUN_TOKENS): a digit too many?"
        )
    return derived


def budget(
    size: str,
    *,
    vocab_size: int = RECIPE.vocab_size,
    ladder: str | os.PathLike | None = None,
    reference: str = REFERENCE,
    recipe: Recipe | None = None,
    steps: int | None = None,
    tokens: int | None = None,
    tokens_per_param: float | None = None,
) -> Budget:
    """The budget of a run of `size` (its steps, tokens or tokens per parameter given, else the ladder's) at
    `recipe` (None: the size's), counted on the reference's shape at this vocabulary.

    Example
    -------
    >>> b = budget("60M")  # the published 60M: 8000 steps of 64 x 256 tokens
    >>> b.steps, b.tokens, round(b.tokens_per_param, 2), f"{b.flops:.3g}"
    (8000, 131072000, 2.2, '4.83e+16')
    """
    s = get_size(size, ladder)
    recipe = recipe or s.recipe
    cfg = replace(
        model_config(s.name, reference, vocab_size, ladder, reference), block_size=recipe.block_size
    )
    n = cfg.n_params
    trained = budget_steps(s, recipe, n, steps=steps, tokens=tokens, tokens_per_param=tokens_per_param)
    d = trained * step_tokens(recipe)
    return Budget(s.name, n, trained, d, d / n, float(flops_per_token(cfg) * d))


def budget_table(
    vocab_size: int = RECIPE.vocab_size,
    ladder: str | os.PathLike | None = None,
    reference: str = REFERENCE,
    train_tokens: int | None = None,
    **given: float | None,
) -> list[dict]:
    """Every ladder size's budget (`budget`), at the budget `given` (steps, tokens or tokens_per_param; none:
    each size's own), and the passes over a corpus of `train_tokens` training tokens where it is known.

    Returns
    -------
    One record per size, in ladder order: size, params (the reference's, exact), steps, tokens,
    tokens_per_param, flops and, with `train_tokens`, passes (`passes`).
    """
    rows = []
    for name in ladder_sizes(ladder):
        row = asdict(budget(name, vocab_size=vocab_size, ladder=ladder, reference=reference, **given))
        if train_tokens is not None:
            row["passes"] = passes(row["tokens"], train_tokens)
        rows.append(row)
    return rows


def passes(tokens: int, train_tokens: int) -> float:
    """Passes over a corpus of `train_tokens` training tokens that `tokens` make (above 1: windows repeat).

    The trainer draws each window at random (`rr_model.data.windows.sample_batch`), so a pass is a
    measure of how often each token is seen on average, not a count of epochs walked in order.
    """
    return tokens / train_tokens

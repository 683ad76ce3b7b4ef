"""Gate anatomy: what each residual gate r does on held-out text of a run's corpus, for `rr gates --anatomy`.

The gated rules are those with a method ``r(h, u)`` (`rr_model.run.gate_watch.gated`: Review, Highway, the
ablations, a plugin's rule written so). On windows of the validation part of the run's own corpus (or another,
tokenized with the run's tokenizer), each gated sublayer gets:

- how open its gate is (mean r) and how much of r's spread depends on the token (`token_share`): the rest is a
  fixed level per channel, which a per-channel scale (LayerScale, Touvron et al. 2021) would give as well;
- for rules that read the stream and the update with one matrix (Review: W = [W_h, W_u]), how much of the gate
  logit's token-to-token variance each half of W carries, and their covariance;
- the freeze test (`freeze_delta`): the loss change when r is replaced by its per-channel mean over the same
  windows, one sublayer at a time; what the token dependence of that gate is worth to the model.

Every number comes from the model's own forward passes, read through ``r`` and replaced on the rule instance
(as the trainer's gate watch wraps it), so the model's code is untouched. Imports torch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F

from rr_core.errors import InputError
from rr_model.model import GPT
from rr_model.parallel.hardware import host_memory
from rr_model.parallel.memory import refuse_windows
from rr_model.run.gate_watch import gated
from rr_model.uses.inference import heldout_windows, load_trained, run_tokens

__all__ = ["ANATOMY_COLUMNS", "Anatomy", "gate_anatomy", "anatomy"]

ANATOMY_COLUMNS = (
    "layer",
    "sublayer",
    "mean",
    "std",
    "token_share",
    "freeze_delta",
    "logit_var",
    "state_share",
    "update_share",
    "cov_share",
)


@dataclass(frozen=True)
class Anatomy:
    """A run's gate anatomy (`anatomy`): the table, and the text it was read on."""

    table: pd.DataFrame  # ANATOMY_COLUMNS, one row per gated sublayer in depth order
    loss: float  # mean nats per target token of the model as trained, on the windows
    corpus: str  # as the run (or --corpus) names it
    tokenizer: str
    windows: int
    tokens: int  # targets scored: windows x block size
    path: Path  # the weights read


class _Moments:
    """Per-channel sums over tokens of one or two quantities (their last dimension the channels), each taken
    from its first token's value: a shifted sum keeps the variance exact where the values barely differ
    (Chan, Golub & LeVeque 1983), and exactly 0 where they do not differ at all."""

    def __init__(self) -> None:
        self.n = 0
        self.shift: list[torch.Tensor] = []
        self.sums: dict[str, torch.Tensor] = {}
        self.dtype = torch.float32

    def add(self, *xs: torch.Tensor) -> None:
        flat = [x.detach().reshape(-1, x.shape[-1]).double() for x in xs]
        if not self.shift:
            self.shift = [x[0].clone() for x in flat]
            self.dtype = xs[0].dtype
        dx = [x - s for x, s in zip(flat, self.shift, strict=True)]
        terms = {f"{i}": d for i, d in enumerate(dx)}
        terms |= {f"{i}{j}": dx[i] * dx[j] for i in range(len(dx)) for j in range(i, len(dx))}
        for key, term in terms.items():
            self.sums[key] = self.sums.get(key, 0) + term.sum(0)
        self.n += flat[0].shape[0]

    def mean(self, i: int = 0) -> torch.Tensor:
        """Per-channel mean of quantity `i` (float64)."""
        return self.shift[i] + self.sums[f"{i}"] / self.n

    def cov(self, i: int, j: int) -> torch.Tensor:
        """Per-channel (population) covariance over tokens of quantities i <= j; i == j: the variance."""
        mi, mj = self.sums[f"{i}"] / self.n, self.sums[f"{j}"] / self.n
        return self.sums[f"{i}{j}"] / self.n - mi * mj


@torch.no_grad()
def gate_anatomy(model: GPT, windows: np.ndarray, *, batch: int = 8) -> tuple[pd.DataFrame, float]:
    """The anatomy of every gated sublayer of `model` on `windows` (N, block + 1) of token ids.

    Parameters
    ----------
    model
        A `rr_model.model.GPT`; put in eval mode for the reading and left so.
    windows
        Token ids: each window's first block tokens are read and its last block tokens are the targets.
    batch
        Windows per forward pass: memory only (the numbers agree to rounding).

    Returns
    -------
    The table (columns `ANATOMY_COLUMNS`, one row per gated sublayer in depth order; empty for a model
    without a gate) and the model's loss on the windows (mean nats per target token).

    Notes
    -----
    r_tc is sublayer's gate at token t (every position of every window, N tokens) and channel c (d of them),
    m_c = (1/N) sum_t r_tc its per-channel mean and rbar = (1/d) sum_c m_c = ``mean``. The variance of r over
    tokens and channels splits exactly into the between-channel variance of the per-channel means and the
    within-channel (token) variance::

        (1/Nd) sum_tc (r_tc - rbar)^2 = (1/d) sum_c (m_c - rbar)^2 + (1/d) sum_c (1/N) sum_t (r_tc - m_c)^2
                 total (std^2)                     between                         within

    ``token_share`` = within / total, None where r does not vary at all (an untrained Review: r = 0.5). A rule
    whose r is one value per channel whatever the token (the gate bias, LayerScale's scale) has within = 0
    exactly, so its token_share is 0.

    For a rule with ``halves(h, u)`` (Review: the gate logit z = W_h rms(h) + W_u rms(u) + b, the halves a
    = W_h rms(h) and e = W_u rms(u)), the logit's within-channel variance splits as b is fixed per channel::

        logit_var = (1/d) sum_c var_t(z_tc) = (1/d) sum_c [var_t(a_tc) + var_t(e_tc) + 2 cov_t(a_tc, e_tc)]

    ``state_share``, ``update_share`` and ``cov_share`` are the three terms over logit_var (they sum to 1;
    cov_share may be negative); None for rules without halves. Variances are population ones (divided by
    N), summed in float64 from each channel's first value (`_Moments`).

    ``freeze_delta`` = L(r_tc -> m_c in that sublayer alone) - L, the mean next-token loss on the windows
    with that sublayer's r replaced by its per-channel mean, minus the loss as trained: what the gate's
    token dependence is worth to the model (positive: freezing it hurts). Where within = 0 the frozen r is r
    itself, bit for bit, and freeze_delta is exactly 0. A rule whose forward never calls ``self.r`` cannot
    be read or frozen: its row is None throughout.
    """
    sites = gated(model)
    was_training = model.training
    model.eval()
    moments = [_Moments() for _ in sites]
    logit = [_Moments() if callable(getattr(rule, "halves", None)) else None for _, _, rule in sites]
    try:
        for (_, _, rule), seen, parts in zip(sites, moments, logit, strict=True):
            rule.r = _observed(rule, seen, parts)
        loss = _loss(model, windows, batch)
        for _, _, rule in sites:
            del rule.r
        rows = []
        for (layer, sublayer, rule), seen, parts in zip(sites, moments, logit, strict=True):
            row = {"layer": layer, "sublayer": sublayer, **dict.fromkeys(ANATOMY_COLUMNS[2:])}
            if seen.n:
                frozen = seen.mean().to(seen.dtype)
                rule.r = lambda h, u, frozen=frozen: frozen.expand_as(u)
                row |= _spread(seen) | {"freeze_delta": _loss(model, windows, batch) - loss}
                del rule.r
            if parts is not None and parts.n:
                row |= _split(parts)
            rows.append(row)
    finally:
        for _, _, rule in sites:
            vars(rule).pop("r", None)
        model.train(was_training)
    return pd.DataFrame(rows, columns=list(ANATOMY_COLUMNS)), loss


def _observed(rule: nn.Module, seen: _Moments, parts: _Moments | None):
    """The rule's r, adding each reading to `seen` (and its logit's halves to `parts`)."""
    read = type(rule).r.__get__(rule)

    def r(h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        value = read(h, u)
        seen.add(value.expand_as(u))
        if parts is not None:
            parts.add(*rule.halves(h, u))
        return value

    return r


def _loss(model: GPT, windows: np.ndarray, batch: int) -> float:
    """Mean cross-entropy (nats) of every target token of `windows`, summed in float64."""
    nats = 0.0
    for i in range(0, len(windows), batch):
        w = torch.from_numpy(windows[i : i + batch]).to(model.lm_head.weight.device)
        logits, _ = model(w[:, :-1])
        losses = F.cross_entropy(logits.flatten(0, 1).float(), w[:, 1:].flatten(), reduction="none")
        nats += losses.double().sum().item()
    return nats / (windows.shape[0] * (windows.shape[1] - 1))


def _spread(seen: _Moments) -> dict[str, float | None]:
    """mean, std and token_share of r from its per-channel sums (see `gate_anatomy`'s Notes)."""
    means, within = seen.mean(), seen.cov(0, 0).clamp(min=0).mean()
    grand = means.mean()
    total = (means - grand).square().mean() + within
    share = float(within / total) if total > 0 else None
    return {"mean": float(grand), "std": float(total.sqrt()), "token_share": share}


def _split(parts: _Moments) -> dict[str, float | None]:
    """logit_var and the shares of its state half, update half and their covariance."""
    state, update, cov2 = (t.mean() for t in (parts.cov(0, 0), parts.cov(1, 1), 2 * parts.cov(0, 1)))
    total = state + update + cov2
    if not total > 0:
        return {"logit_var": float(total), "state_share": None, "update_share": None, "cov_share": None}
    return {
        "logit_var": float(total),
        "state_share": float(state / total),
        "update_share": float(update / total),
        "cov_share": float(cov2 / total),
    }


def anatomy(
    checkpoint_path: str | os.PathLike,
    *,
    corpus: str | None = None,
    windows: int = 64,
    seed: int = 0,
    batch: int = 8,
    cache_dir: str | os.PathLike | None = None,
) -> Anatomy:
    """The gate anatomy of a run's weights on held-out windows of its corpus (`gate_anatomy`).

    Parameters
    ----------
    checkpoint_path
        A run's weights as `rr_model.uses.inference.load_trained` reads them (final weights, a checkpoint, or
        the checkpoint folder of one run), of any vocabulary: its text is tokenized with the run's own
        tokenizer (GPT-2's from the Hugging Face cache; nothing is downloaded when the run's token cache is
        still there).
    corpus
        The corpus whose validation part is read (`rr_model.uses.inference.run_tokens`); default the run's own,
        split as the run split it, so the windows are text it never trained on.
    windows, seed
        How many windows of block_size + 1 tokens, their starts drawn by ``numpy.random.default_rng(seed)``
        alone: every run of one block size and corpus is read on the same windows.
    batch
        Windows per forward pass: memory only.
    cache_dir
        Root of rr's caches (default $RR_CACHE, else ~/.cache/rr).

    Returns
    -------
    `Anatomy`: the table (`ANATOMY_COLUMNS`) and what it was read on.

    Raises
    ------
    InputError
        No gate to read (standard, LayerScale, ReZero, review_half), bad counts, or a corpus that cannot be
        read with the run's tokenizer (`run_tokens`).
    """
    if windows < 1 or batch < 1:
        raise InputError(f"windows ({windows}) and batch ({batch}) must be >= 1")
    trained = load_trained(checkpoint_path)
    variant = trained.config["variant"]
    if not gated(trained.model):
        raise InputError(f"{trained.path}: {variant} has no gate to read")
    mcfg = trained.model.config
    refuse_windows(windows, mcfg.block_size, mcfg.vocab_size, "--windows", host_memory(), batch=batch)
    tokens = run_tokens(trained, corpus, cache_dir=cache_dir)
    block = trained.model.config.block_size
    if len(tokens.val) < block + 2:
        raise InputError(
            f"{tokens.source}: its validation part ({len(tokens.val)} tokens) is shorter than one window"
        )
    table, loss = gate_anatomy(trained.model, heldout_windows(tokens.val, block, windows, seed), batch=batch)
    return Anatomy(
        table=table,
        loss=loss,
        corpus=corpus if corpus is not None else trained.config["data"],
        tokenizer=trained.tokenizer,
        windows=windows,
        tokens=windows * block,
        path=trained.path,
    )

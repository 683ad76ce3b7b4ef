"""Generation: a model continues its prompt token by token, as nanoGPT's ``generate``, with a KV cache.

`GPT` inherits `Generation`'s ``generate`` (as transformers' models inherit ``GenerationMixin``), so
``model.generate(...)`` is the call; this module holds what generation adds to a model that computes logits:
the cache of earlier positions' keys and values (`KVCache`) and the draw of each next token (`next_token`).
It imports nothing of the model: `rr_model.model` stands on it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["Generation", "KVCache", "next_token"]


class KVCache:
    """The keys and values of the positions a model has seen, per layer: what generation attends to
    instead of running the whole prefix again at every token.

    Its interface (``update``, ``get_seq_length``) is that of transformers' ``DynamicCache``, so the
    attention of `rr_model.model` runs unchanged under either (an export's model gets transformers' cache).
    """

    def __init__(self) -> None:
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []

    def update(self, k: torch.Tensor, v: torch.Tensor, layer_idx: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Append the new positions' keys and values (B, heads, T, head_dim) to layer `layer_idx`'s; all of them."""
        if layer_idx == len(self.keys):
            self.keys.append(k)
            self.values.append(v)
        else:
            self.keys[layer_idx] = torch.cat([self.keys[layer_idx], k], dim=2)
            self.values[layer_idx] = torch.cat([self.values[layer_idx], v], dim=2)
        return self.keys[layer_idx], self.values[layer_idx]

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """Positions held (0 before the first forward)."""
        return self.keys[layer_idx].shape[2] if layer_idx < len(self.keys) else 0


class Generation:
    """What `GPT` inherits to generate: ``generate``, on a model with ``config.block_size`` whose call
    ``model(idx, cache=...)`` returns the logits of every position first (`rr_model.model.GPT.forward`)."""

    @torch.no_grad()
    def generate(
        self,
        idx: torch.Tensor,
        max_new_tokens: int,
        *,
        temperature: float = 1.0,
        top_k: int | None = None,
        generator: torch.Generator | None = None,
        use_cache: bool = True,
    ) -> torch.Tensor:
        """Continue each row of `idx` (B, T) by `max_new_tokens` sampled tokens, as nanoGPT's generate.

        Each new token is drawn from the softmax of the last position's logits divided by `temperature`,
        restricted to the `top_k` most likely tokens when given (`next_token`). `generator` makes the
        draws reproducible (torch.multinomial's); temperature 0 takes the most likely token.

        Notes
        -----
        With `use_cache` (the default) the first step runs the prompt and keeps every layer's keys and
        values (`KVCache`); each later step runs only the newest token against them. Without it every step
        runs the whole context again. The two give the same tokens for a seed (the logits agree to
        rounding: the matrix shapes differ).

        Past block_size tokens the learned absolute positions cannot slide, so both do what nanoGPT does:
        each further step runs the last block_size tokens afresh, at positions 0..block_size-1, without a
        cache (a prompt longer than block_size is cropped so from the first step). A model exported for
        transformers generates the same way (its ``prepare_inputs_for_generation``).

        Returns
        -------
        (B, T + max_new_tokens) token ids, the prompt first.
        """
        block = self.config.block_size
        cache = KVCache() if use_cache else None
        for _ in range(max_new_tokens):
            if cache is not None and idx.shape[1] <= block:
                logits, _ = self(idx[:, cache.get_seq_length() :], cache=cache)
            else:
                logits, _ = self(idx[:, -block:])
            nxt = next_token(logits[:, -1, :], temperature, top_k, generator)
            idx = torch.cat([idx, nxt], dim=1)
        return idx


def next_token(
    logits: torch.Tensor, temperature: float, top_k: int | None, generator: torch.Generator | None
) -> torch.Tensor:
    """The next token of each row (B, 1) from its last position's logits (B, vocab_size), as nanoGPT draws it.

    Temperature 0 takes the most likely token; otherwise one draw of torch.multinomial from
    softmax(logits / temperature), restricted to the `top_k` largest logits (ties at the k-th kept).
    """
    logits = logits.float()
    if temperature == 0:
        return logits.argmax(-1, keepdim=True)
    logits = logits / temperature
    if top_k is not None:
        kth = torch.topk(logits, min(top_k, logits.size(-1))).values[:, [-1]]
        logits = logits.masked_fill(logits < kth, -float("inf"))
    return torch.multinomial(F.softmax(logits, dim=-1), 1, generator=generator)

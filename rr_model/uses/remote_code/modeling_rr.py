"""rr's reference GPT for transformers (``trust_remote_code``), as `rr export` ships it.

Imports only torch, transformers and the files beside it: ``rr_layers.py``, which `rr export` copies
verbatim from rr's own model (its layers, residual rules and blocks), and a plugin's rule when the export
carries one. This file adds transformers' plumbing: loading, the KV cache, padding masks, positions and
generation. Parameter names are rr's state-dict names, so rr's weights load one to one; without padding
and without a cache the forward runs rr's operations in rr's order, so the logits equal rr's bitwise.

The cache: transformers 5.24 renamed the forward's cache argument to ``cache`` (``past_key_values`` is
deprecated); a forward that knows only the old name and takes ``**kwargs`` silently gets no cache from
``generate`` and produces wrong text. This forward takes both names.

The context: the learned absolute positions stop at block_size. A forward reaching past it raises
ValueError; ``generate`` does what rr's ``GPT.generate`` does: once a sequence is longer than block_size,
each step runs its last block_size tokens afresh, at positions 0..block_size-1, without the cache.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers import GenerationMixin, PreTrainedModel
from transformers import initialization as init
from transformers.cache_utils import Cache, DynamicCache
from transformers.modeling_outputs import CausalLMOutputWithPast

from .configuration_rr import RRConfig
from .rr_layers import ReviewNeutral, ReviewState, build_rule, run_blocks, trunk

# the output field the installed transformers names the cache with (5.24 renamed past_key_values)
_CACHE_FIELD = "cache" if "cache" in CausalLMOutputWithPast.__dataclass_fields__ else "past_key_values"


class RRPreTrainedModel(PreTrainedModel):
    config_class = RRConfig
    base_model_prefix = ""
    _no_split_modules = ["Block"]
    _supports_sdpa = True  # attention always runs F.scaled_dot_product_attention

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """rr's initial distribution (not its random order: rr's `GPT.init_published` alone reproduces a
        run's initial weights) for a fresh model or a tensor a checkpoint lacks.

        Linear weights normal(0, initializer_range), the residual projections' scaled by 1/sqrt(2 n_layer)
        and the gates of Review and its ablations zero (``_rr_std``, set in `RRForCausalLM.__init__`),
        biases 0; embeddings normal(0, initializer_range); any other module with parameters of its own
        (RMSNorm, LayerScale, ReZero, the gate bias, a plugin's rule) the values its constructor gives. transformers' init functions skip every
        tensor a checkpoint filled, so loaded weights are never touched.
        """
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            std = getattr(module, "_rr_std", std)
            if std == 0:
                init.zeros_(module.weight)
            else:
                init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=std)
        elif any(True for _ in module.parameters(recurse=False)):
            site, sites = getattr(module, "site", 0), 2 * self.config.n_layer  # a rule built at its site
            with torch.device("cpu"):
                fresh = dict(
                    build_rule(type(module), self.config.d_model, site, sites).named_parameters(recurse=False)
                )
            for name, p in module.named_parameters(recurse=False):
                init.copy_(p, fresh[name])


class RRForCausalLM(RRPreTrainedModel, GenerationMixin):
    # transformers 5: {target: source}; the checkpoint stores the source, the embedding, once
    _tied_weights_keys = {"lm_head.weight": "transformer.wte.weight"}

    def __init__(self, config: RRConfig):
        super().__init__(config)
        self.transformer = trunk(config)  # rr's modules under rr's names
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        for block in self.transformer.h:  # what _init_weights draws differently, as rr's init_published
            for proj in (block.attn.c_proj, block.mlp.c_proj):
                proj._rr_std = config.initializer_range / math.sqrt(2 * config.n_layer)
            for rule in (block.res_attn, block.res_mlp):
                if isinstance(rule, ReviewNeutral | ReviewState):  # ReviewUpdate is a ReviewState
                    rule.gate._rr_std = 0.0
        self.post_init()

    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        """As PreTrainedModel's, then each parameter on the CPU copied once out of the file's memory map.

        transformers 5 leaves CPU weights as views of the mmapped safetensors file, aligned only as the
        file's offsets fall; torch's CPU matrix-vector product (batch 1, one token) rounds differently
        with the alignment, so the logits would not be rr's bitwise. An owned copy is aligned as rr's.
        """
        out = super().from_pretrained(*args, **kwargs)
        model = out[0] if isinstance(out, tuple) else out
        with torch.no_grad():
            for p in model.parameters():  # each Parameter once: the tied matrix stays tied
                if p.device.type == "cpu":
                    p.data = p.data.clone()
        return out

    def get_input_embeddings(self) -> nn.Embedding:
        return self.transformer.wte

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.transformer.wte = value

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def set_output_embeddings(self, value: nn.Linear) -> None:
        self.lm_head = value

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        cache: Cache | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> CausalLMOutputWithPast:
        """Logits of `input_ids` (B, T) after the `cache`'s positions (or `past_key_values`'s, the name
        before transformers 5.24); `attention_mask` marks padding (0), left or right.

        Without a mask, positions continue the cache's (0.. without one); with one they count each row's
        real tokens (pads at 0). `labels` (HF's convention: the inputs, shifted here; -100 ignored) give the
        mean cross-entropy as ``loss``.
        """
        if inputs_embeds is not None:
            raise ValueError("inputs_embeds is not supported: pass input_ids")
        cache = _one_cache(cache, past_key_values, self.config, use_cache)
        past = cache.get_seq_length() if cache is not None else 0
        if attention_mask is not None and bool(attention_mask.all()):
            attention_mask = None  # no padding: rr's own path
        if position_ids is None:
            position_ids = _positions(attention_mask, past, input_ids.shape[1], input_ids.device)
        if int(position_ids.max()) >= self.config.block_size:
            raise ValueError(
                f"position {int(position_ids.max())} is past block_size {self.config.block_size}: learned "
                "absolute positions cannot slide; feed the last block_size tokens without a cache "
                "(generate does)"
            )
        mask = None if attention_mask is None else _padding_mask(attention_mask, past, input_ids.shape[1])
        pos = position_ids[0] if position_ids.shape[0] == 1 else position_ids  # (T, C) broadcasts as rr's
        x = run_blocks(
            self.transformer.h, self.transformer.wte(input_ids) + self.transformer.wpe(pos), cache, mask
        )
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None
        if labels is not None:
            loss = F.cross_entropy(
                logits[:, :-1].flatten(0, 1).float(), labels[:, 1:].flatten(), ignore_index=-100
            )
        return CausalLMOutputWithPast(loss=loss, logits=logits, **{_CACHE_FIELD: cache})

    def prepare_inputs_for_generation(self, input_ids: torch.LongTensor, *args, **kwargs) -> dict:
        """transformers' own within block_size; past it, the last block_size tokens afresh, no cache (rr's
        ``GPT.generate``), positions 0..block_size-1 (counting real tokens under a padding mask)."""
        n = self.config.block_size
        if input_ids.shape[1] <= n:
            return super().prepare_inputs_for_generation(input_ids, *args, **kwargs)
        inputs = {"input_ids": input_ids[:, -n:].contiguous(), "use_cache": False}
        attention_mask = kwargs.get("attention_mask")
        if attention_mask is not None:
            inputs["attention_mask"] = attention_mask[:, -n:]
        inputs["position_ids"] = _positions(inputs.get("attention_mask"), 0, n, input_ids.device)
        return inputs


def _one_cache(cache: Cache | None, past_key_values: Cache | None, config: RRConfig, use_cache: bool | None):
    """The cache to extend: `cache` or `past_key_values` (not both), a new one when `use_cache` asks for
    one and none came, None when `use_cache` is False."""
    if cache is not None and past_key_values is not None:
        raise ValueError("pass the cache as `cache` or as `past_key_values`, not both")
    cache = cache if cache is not None else past_key_values
    if not (config.use_cache if use_cache is None else use_cache):
        return None
    return cache if cache is not None else DynamicCache(config=config)


def _positions(attention_mask: torch.Tensor | None, past: int, T: int, device: torch.device) -> torch.Tensor:
    """Positions of the T new tokens: past.. without a mask (1, T); with one, each row's count of real
    tokens before each (B, T), pads at 0."""
    if attention_mask is None:
        return torch.arange(past, past + T, device=device).unsqueeze(0)
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)[:, -T:]


def _padding_mask(attention_mask: torch.Tensor, past: int, T: int) -> torch.Tensor:
    """Boolean (B, 1, T, past + T): query i sees key j when j is real and not after i (bottom-right causal).

    A query with no key to see (a left pad's) sees every key instead: its output is padding that no real
    token reads, and softmax over nothing would be NaN.
    """
    S = past + T
    if attention_mask.shape[-1] != S:
        raise ValueError(
            f"attention_mask has {attention_mask.shape[-1]} columns; expected {S} (cached + new)"
        )
    causal = torch.ones(T, S, dtype=torch.bool, device=attention_mask.device).tril(past)
    mask = causal[None, None] & attention_mask.bool()[:, None, None, :]
    return mask | ~mask.any(-1, keepdim=True)


RRForCausalLM.register_for_auto_class("AutoModelForCausalLM")

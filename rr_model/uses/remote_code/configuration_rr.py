"""The configuration of rr's reference GPT for transformers (``trust_remote_code``), as `rr export` ships it.

Imports only transformers. The fields are rr's own (`rr_core.shapes.GPTConfig`'s, the same names in
config.json, which rr's `GPT.from_pretrained` reads too); `attribute_map` gives them the names transformers,
its cache and lm-evaluation-harness look for. transformers 5 no longer defines ``tie_word_embeddings``,
``use_cache`` or the special token ids on its base class, and reads a missing ``tie_word_embeddings`` as
False (an untied, randomly initialised head): this class sets them all.
"""

from transformers import PretrainedConfig


class RRConfig(PretrainedConfig):
    model_type = "rr_gpt"
    attribute_map = {
        "hidden_size": "d_model",
        "num_hidden_layers": "n_layer",
        "num_attention_heads": "n_head",
        "max_position_embeddings": "block_size",
        "n_positions": "block_size",
    }

    def __init__(
        self,
        vocab_size: int = 50257,
        block_size: int = 256,
        n_layer: int = 8,
        n_head: int = 8,
        d_model: int = 512,
        variant: str = "review_neutral",
        initializer_range: float = 0.02,
        use_cache: bool = True,
        tie_word_embeddings: bool = True,
        bos_token_id: int | None = None,
        eos_token_id: int | None = None,
        pad_token_id: int | None = None,
        **kwargs,
    ):
        self.vocab_size = vocab_size
        self.block_size = block_size
        self.n_layer = n_layer
        self.n_head = n_head
        self.d_model = d_model
        self.variant = variant
        self.initializer_range = initializer_range
        self.use_cache = use_cache
        self.tie_word_embeddings = tie_word_embeddings
        self.bos_token_id = bos_token_id
        self.eos_token_id = eos_token_id
        self.pad_token_id = pad_token_id
        super().__init__(**kwargs)


RRConfig.register_for_auto_class()

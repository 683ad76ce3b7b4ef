"""A trained run's model at work: loaded from its weights, sampled from, scored on held-out text.

`load_trained` reads what `rr train` leaves (the final weights ``NAME.checkpoints/RUN.final.pt``, a
resumable checkpoint, or the checkpoint folder of one run; `rr_model.checkpoint.state.load_weights`) and
rebuilds the model with the run's tokenizer. `sample` is `rr sample`; `heldout` is `rr eval`: loss and
bits per byte on windows of a corpus drawn from a seeded stream that does not depend on the model, so two
checkpoints (every variant of a seed) are scored on the very same text.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from rr_core.errors import InputError
from rr_core.ladder import BYTE_EOS, RECIPE
from rr_core.plugins import require_variant
from rr_core.shapes import GPTConfig, model_config
from rr_core.variants import REFERENCE
from rr_model.checkpoint import state as checkpoint
from rr_model.data.token_cache import Tokens, load_tokens
from rr_model.data.tokenizers import decode_text, encode_text, eos_id, token_bytes
from rr_model.model import GPT
from rr_model.parallel.hardware import host_memory
from rr_model.parallel.memory import refuse_windows

__all__ = ["Trained", "load_trained", "sample", "heldout", "heldout_windows", "run_tokens"]


@dataclass(frozen=True)
class Trained:
    """A run's model (in eval mode, on the CPU) and what describes it."""

    model: GPT
    tokenizer: str  # "bytes" or "gpt2"
    config: dict[str, Any]  # the run's result config: size, variant, seed, data, steps, recipe, ...
    data: dict[str, Any] | None  # the training data's description (final weights only)
    record: dict[str, Any] | None  # the run's provenance record (final weights only)
    path: Path  # the file read

    @property
    def title(self) -> str:
        return f"{self.config['size']} {self.config['variant']} seed {self.config['seed']}"


def _tokenizer(config: dict[str, Any], data: dict[str, Any] | None, vocab: int) -> str:
    if data is not None:
        return data["tokenizer"]
    return config.get("tokenizer") or ("bytes" if vocab == BYTE_EOS + 1 else "gpt2")


def load_trained(path: str | os.PathLike) -> Trained:
    """The model of a run's final weights, checkpoint, or checkpoint folder (one run), ready to use.

    Raises
    ------
    rr_model.checkpoint.state.CheckpointError
        `path` holds no weights of rr's trainer, or the weights do not fit the run's model.
    """
    path, saved = checkpoint.load_weights(path)
    config, weights = saved.config, saved.model
    require_variant(config["variant"], (saved.record or {}).get("plugin"))  # a plugin run: name its file
    vocab = weights["transformer.wte.weight"].shape[0]
    if saved.model_config is not None:
        mcfg = GPTConfig(**saved.model_config)
    else:  # a checkpoint of an unfinished run: the shape follows from its size, variant and weights
        block = weights["transformer.wpe.weight"].shape[0]
        ladder = (config.get("ladder") or {}).get("file")  # a ladder file's size: as result_config saved it
        reference = config.get("reference", REFERENCE)  # saved where it is not Review (`result_config`)
        mcfg = model_config(config["size"], config["variant"], vocab, ladder, reference)
        mcfg = replace(mcfg, block_size=block)
    with torch.random.fork_rng(devices=[]):  # building draws nothing from the caller's stream
        model = GPT(mcfg)
    try:
        model.load_state_dict(weights)
    except RuntimeError as e:
        raise checkpoint.CheckpointError(f"{path}: its weights do not fit {mcfg}: {e}") from None
    tokenizer = _tokenizer(config, saved.data, vocab)
    return Trained(model.eval(), tokenizer, config, saved.data, saved.record, path)


def sample(
    trained: Trained,
    prompt: str = "",
    *,
    tokens: int = 200,
    temperature: float = 0.8,
    top_k: int | None = 200,
    seed: int = 0,
) -> str:
    """`prompt` and `tokens` sampled tokens after it, decoded with the run's tokenizer.

    Deterministic for a seed: the draws come from a `torch.Generator` seeded with `seed` (on the CPU). An
    empty prompt starts a new document (the model is fed its end-of-document token, which is not shown).
    """
    if not (math.isfinite(temperature) and temperature >= 0) or tokens < 0:
        raise InputError(
            f"temperature ({temperature}) must be a finite number >= 0 and tokens ({tokens}) >= 0"
        )
    ids = encode_text(prompt, trained.tokenizer).astype(np.int64)
    start = ids if len(ids) else np.array([eos_id(trained.tokenizer)])
    generator = torch.Generator().manual_seed(seed)
    out = trained.model.generate(
        torch.from_numpy(start)[None], tokens, temperature=temperature, top_k=top_k, generator=generator
    )
    return prompt + decode_text(out[0, len(start) :].tolist(), trained.tokenizer)


def run_tokens(
    trained: Trained, corpus: str | None = None, *, cache_dir: str | os.PathLike | None = None
) -> Tokens:
    """The run's own corpus, or `corpus`, tokenized with the run's tokenizer and split as the run's recipe
    splits it (its n_text and val_frac, and the run's text field), so that its validation part is the text
    the run held out.

    Raises
    ------
    InputError
        The run's corpus is not recorded (a checkpoint written without it: give `corpus`); the run's corpus
        has changed since the run read it (its stream's sha256 differs from the one the run recorded); the
        corpus holds token ids past the model's vocabulary.
    """
    config, recipe = trained.config, trained.config.get("recipe") or {}
    data = corpus if corpus is not None else config.get("data")
    if data is None:
        raise InputError(f"{trained.path} does not record the corpus its run trained on; name one (--corpus)")
    tokens = load_tokens(
        data,
        n_text=recipe.get("n_text", RECIPE.n_text),
        cache_dir=cache_dir,
        tokenizer=trained.tokenizer,
        text_field=config.get("text_field", "text"),
        val_frac=recipe.get("val_frac", RECIPE.val_frac),
    )
    then = (trained.data or {}).get("sha256")
    if corpus is None and then and tokens.sha256 and then != tokens.sha256:
        raise InputError(
            f"{data}: the run's corpus has changed since it trained (its tokens' sha256 was {then[:12]}, is "
            f"{tokens.sha256[:12]} now), so its validation part is not the text the run held out; name the "
            "corpus to read it anyway (--corpus)"
        )
    if tokens.vocab_size > trained.model.config.vocab_size:
        raise InputError(
            f"{data}: tokenized with {tokens.tokenizer}, its vocabulary ({tokens.vocab_size:,}) is larger than "
            f"the model's ({trained.model.config.vocab_size:,})"
        )
    return tokens


def heldout_windows(stream: np.ndarray, block: int, windows: int, seed: int) -> np.ndarray:
    """`windows` windows of `block` + 1 tokens of `stream` (windows, block + 1), int64, their starts drawn by
    ``numpy.random.default_rng(seed)`` alone: the same windows for every model of a block size."""
    starts = np.random.default_rng(seed).integers(0, len(stream) - block, size=windows)
    return np.stack([stream[s : s + block + 1] for s in starts]).astype(np.int64)


@torch.no_grad()
def heldout(
    trained: Trained,
    data: str,
    *,
    windows: int = 64,
    seed: int | None = None,
    batch: int = 16,
    cache_dir: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Loss and bits per byte of a run's model on `windows` random windows of a corpus's validation part.

    Parameters
    ----------
    trained
        From `load_trained`.
    data
        A corpus as `rr_model.data.token_cache.load_tokens` takes it ("synthetic", "tinystories", a local corpus or
        a token cache), tokenized with the run's tokenizer; its validation split (the last val_frac of the
        run's recipe, 3% published) is scored.
    windows, seed
        How many windows of block_size + 1 tokens, and the seed of their starts (default: the run's seed).
        The starts come from ``numpy.random.default_rng(seed)`` alone, so every variant of a seed (same
        tokenizer and block size) is scored on the same windows.
    batch
        Windows per forward pass: memory only (the result agrees to rounding, the windows are the same).

    Returns
    -------
    dict with data, tokenizer, seed, windows, tokens (scored targets), bytes (their UTF-8 bytes), loss
    (mean nats per token), bpb (bits per byte) and tokens_per_byte.

    Notes
    -----
    Every position of a window is scored: target t+1 given tokens 0..t. bpb = sum of nats / (ln 2 *
    bytes), where bytes sums `rr_model.data.tokenizers.token_bytes` over the targets (an end-of-document token
    counts 1), so the figure does not depend on the tokenizer: bpb = loss * tokens_per_byte / ln 2.
    """
    if windows < 1 or batch < 1:
        raise InputError(f"windows ({windows}) and batch ({batch}) must be >= 1")
    mcfg = trained.model.config
    refuse_windows(windows, mcfg.block_size, mcfg.vocab_size, "--windows", host_memory(), batch=batch)
    val_frac = (trained.config.get("recipe") or {}).get("val_frac", RECIPE.val_frac)
    stream = load_tokens(data, tokenizer=trained.tokenizer, cache_dir=cache_dir, val_frac=val_frac).val
    block = trained.model.config.block_size
    if len(stream) < block + 2:
        raise InputError(f"{data}: its validation part ({len(stream)} tokens) is shorter than one window")
    seed = trained.config["seed"] if seed is None else seed
    every = heldout_windows(stream, block, windows, seed)
    nats, n_bytes, lengths = 0.0, 0, token_bytes(trained.tokenizer)
    for i in range(0, windows, batch):
        w = every[i : i + batch]
        x, y = torch.from_numpy(w[:, :-1]), torch.from_numpy(w[:, 1:])
        logits, _ = trained.model(x)
        nats += F.cross_entropy(logits.flatten(0, 1).double(), y.flatten(), reduction="sum").item()
        n_bytes += int(lengths[w[:, 1:]].sum())
    n_tokens = windows * block
    return {
        "data": data,
        "tokenizer": trained.tokenizer,
        "seed": seed,
        "windows": windows,
        "tokens": n_tokens,
        "bytes": n_bytes,
        "loss": nats / n_tokens,
        "bpb": nats / (math.log(2) * n_bytes),
        "tokens_per_byte": n_tokens / n_bytes,
    }

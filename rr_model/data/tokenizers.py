"""The two tokenizers a run can use, GPT-2's BPE (through `tokenizers`) and rr's byte tokenizer (ids
0-255 are the bytes of UTF-8 text, `BYTE_EOS` ends a document), and the conversions every command shares:
text to ids and back, and each id's byte length (bits per byte). Torch-free.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from rr_core.ladder import BYTE_EOS
from rr_model.data.hub import DataUnavailable, from_hub

__all__ = [
    "EOT",
    "DataUnavailable",
    "Tokenizer",
    "load_tokenizer",
    "encode_bytes",
    "decode_bytes",
    "encode_text",
    "decode_text",
    "token_bytes",
    "eos_id",
    "tokenizer_json",
]


EOT = "<|endoftext|>"  # GPT-2's end-of-text token; also the story separator in TinyStories' .txt files
TOKEN_DTYPE = np.dtype("<u2")  # fixed byte order, so a cache copied between machines reads the same
CHUNK = 4096  # documents per tokenizer call: bounds memory and keeps the tokenizer's threads busy


# What serves a corpus when the hub cannot: said whenever GPT-2's tokenizer or a hub corpus cannot be had.
LOCAL_COPIES = (
    "Without the hub, point --corpus at a local copy: a .txt corpus (documents separated by "
    f"blank lines, or by {EOT} lines as in TinyStories' own .txt files), a .jsonl or .parquet corpus "
    "with a 'text' field, or a token cache directory written by an earlier run (under $RR_CACHE, "
    "default ~/.cache/rr, in tokens/). The byte-level tokenizer ('bytes') needs no download, and "
    "--corpus synthetic needs nothing at all. A dataset or tokenizer downloaded once stays in the Hugging "
    "Face cache (HF_HOME) and loads offline, with HF_HUB_OFFLINE=1 too."
)


# ---------------------------------------------------------------------------------------------- tokenizers


def encode_bytes(text: str) -> np.ndarray:
    """Byte-level token ids of `text`: its UTF-8 bytes, no EOS."""
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(TOKEN_DTYPE)


def decode_bytes(ids: Iterable[int] | np.ndarray) -> str:
    """Text of byte-level token ids; each EOS is written as `<|endoftext|>`."""
    ids = np.asarray(ids)
    docs = np.split(ids, np.flatnonzero(ids == BYTE_EOS))
    docs = [docs[0]] + [d[1:] for d in docs[1:]]  # every piece after the first starts with its EOS
    return EOT.join(bytes(d.astype(np.uint8)).decode("utf-8", errors="replace") for d in docs)


@functools.cache
def gpt2_tokenizer():
    """GPT-2's `tokenizers.Tokenizer` (the Rust tokenizer; its file comes through the hub's client, from the
    Hugging Face cache or the hub: `rr_model.data.hub.from_hub`), loaded once per process.

    `gpt2_tokenizer.cache_clear()` forgets it (the tests serve stand-ins through the hub's loader).
    """
    import tokenizers

    with from_hub("the GPT-2 tokenizer", LOCAL_COPIES):
        return tokenizers.Tokenizer.from_pretrained("gpt2")


def eos_id(tokenizer: str) -> int:
    """The end-of-document token of `tokenizer` ("bytes": 256; "gpt2": 50256, `<|endoftext|>`)."""
    return BYTE_EOS if tokenizer == "bytes" else gpt2_tokenizer().token_to_id(EOT)


def encode_text(text: str, tokenizer: str) -> np.ndarray:
    """Token ids of `text` under `tokenizer` ("bytes" or "gpt2"), no EOS; `<|endoftext|>` ends a document."""
    docs = text.split(EOT)
    if tokenizer == "bytes":
        parts = [encode_bytes(d) for d in docs]
    else:
        parts = [
            np.asarray(e.ids, dtype=TOKEN_DTYPE)
            for e in gpt2_tokenizer().encode_batch(docs, add_special_tokens=False)
        ]
    eos = eos_id(tokenizer)
    joined = [
        part for i, d in enumerate(parts) for part in ((d,) if i == 0 else (np.array([eos], TOKEN_DTYPE), d))
    ]
    return np.concatenate(joined).astype(TOKEN_DTYPE)


def decode_text(ids: Iterable[int] | np.ndarray, tokenizer: str) -> str:
    """Text of token ids under `tokenizer`; EOS is written as `<|endoftext|>`."""
    if tokenizer == "bytes":
        return decode_bytes(ids)
    return gpt2_tokenizer().decode([int(i) for i in ids], skip_special_tokens=False)


@functools.cache
def token_bytes(tokenizer: str) -> np.ndarray:
    """UTF-8 bytes each token id stands for, by id; EOS counts 1 (the document break it marks).

    Bits per byte divide by the bytes of the scored text (`rr_model.uses.inference.heldout`). Bytes map to ids
    0-255 one to one; GPT-2's byte-level BPE writes each byte of a token as one character of its
    vocabulary string, so a token's byte count is that string's length.
    """
    if tokenizer == "bytes":
        return np.ones(BYTE_EOS + 1, dtype=np.int64)
    tok = gpt2_tokenizer()
    lengths = np.zeros(tok.get_vocab_size(), dtype=np.int64)
    for token, i in tok.get_vocab().items():
        lengths[i] = len(token)
    lengths[eos_id(tokenizer)] = 1
    return lengths


def byte_chars() -> dict[int, str]:
    """GPT-2's table of each byte to a printable character (Radford et al. 2019, the byte-level BPE's
    alphabet): printable Latin-1 bytes stand for themselves, the other 68 map to code points from 256 on in
    byte order. `tokenizers`' ByteLevel pre-tokenizer writes bytes with it."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    others = [b for b in range(256) if b not in printable]
    return {b: chr(b) for b in printable} | {b: chr(256 + i) for i, b in enumerate(others)}


def tokenizer_json(name: str) -> str:
    """The tokenizer `name` ("bytes" or "gpt2") as a `tokenizers` JSON document: what an export ships as
    tokenizer.json, so transformers' AutoTokenizer encodes text as `encode_text` does.

    GPT-2's is its own file. The byte tokenizer is a byte-level BPE without merges whose vocabulary maps
    each byte's character (`byte_chars`) to the byte's value, no regex splitting (every byte stays one
    token), and ``<|endoftext|>`` added as a special token: id 256, `BYTE_EOS`.
    """
    if name != "bytes":
        return gpt2_tokenizer().to_str()
    from tokenizers import Tokenizer as Built
    from tokenizers import decoders, models, pre_tokenizers

    vocab = {char: b for b, char in byte_chars().items()}
    tok = Built(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([EOT])
    assert tok.token_to_id(EOT) == BYTE_EOS  # the next free id after the 256 bytes
    return tok.to_str()


@dataclass(frozen=True)
class Tokenizer:
    """A tokenizer as `load_tokens` tokenizes a corpus with it: its vocabulary, EOS id and batch encoder."""

    name: str
    vocab_size: int
    eos_id: int
    encode_batch: Callable[[list[str]], list[np.ndarray]]


def load_tokenizer(name: str) -> Tokenizer:
    """The tokenizer `name` ("bytes" or "gpt2") that `load_tokens` builds a token cache with.

    GPT-2's comes from the Hugging Face cache or hub (`DataUnavailable` when neither has it); its documents
    are encoded without special tokens, as `encode_text` encodes them.
    """
    if name == "bytes":
        return Tokenizer("bytes", 257, BYTE_EOS, lambda texts: [encode_bytes(t) for t in texts])
    tok = gpt2_tokenizer()

    def encode_batch(texts: list[str]) -> list[np.ndarray]:
        return [
            np.asarray(e.ids, dtype=TOKEN_DTYPE) for e in tok.encode_batch(texts, add_special_tokens=False)
        ]

    return Tokenizer("gpt2", tok.get_vocab_size(), tok.token_to_id(EOT), encode_batch)

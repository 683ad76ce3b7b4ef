"""Token streams for training: TinyStories, the synthetic corpus, a local corpus (a file or a folder of
files) or a Hugging Face dataset (`hf:NAME[:SPLIT]`), cached on disk.

`load_tokens` turns a corpus into one uint16 token stream (each document followed by EOS; the first 97%
is train, the rest validation: the recipe's val_frac) and caches it as a memory-mapped file, so only the
first run tokenizes and later runs start at once, offline too. `check_data` says what a run will train
on without tokenizing. Windows of a stream (training batches, held-out windows) are drawn in
`rr_model.data.windows`. Torch-free.

A cache is a directory `<cache_dir>/tokens/<key>/` holding `tokens.bin` (raw little-endian uint16) and
`meta.json` (provenance, lengths and the stream's sha256). It is built in a temporary directory and
published by one rename (`rr_core.files.replacing.atomic_dir`), so a killed run never leaves a cache that loads,
and the next build of the same cache removes what a killed one left. It is only trusted when its meta is
current, matches the file's length and its sha256 (computed once, while the stream is written, and checked
at every load): a damaged stream is refused, never trained on. The sha256 is also the corpus's identity in
a run's record and checkpoint (a resume on other tokens is refused). Such a directory is also a valid `data`
path: copy it to an offline machine and point `--corpus` at it.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import logging
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from rr_core.errors import InputError
from rr_core.files.checksums import Damaged
from rr_core.files.locks import locked
from rr_core.files.reading import read_regular
from rr_core.files.replacing import atomic_dir
from rr_core.ladder import BYTE_EOS, PUBLISHED_CORPUS, RECIPE
from rr_model.data import synthetic
from rr_model.data.corpus import READERS, TINYSTORIES, corpus_files, corpus_reader, no_data
from rr_model.data.tokenizers import CHUNK, TOKEN_DTYPE, Tokenizer, load_tokenizer

__all__ = ["Tokens", "Corpus", "load_tokens", "check_data", "known_train_tokens", "default_cache_dir"]


FORMAT = 1  # bump when the cache layout or the tokenization changes: older caches are then rebuilt

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Tokens:
    """A tokenized corpus: memory-mapped train and validation streams, and where they came from."""

    train: np.ndarray
    val: np.ndarray
    vocab_size: int
    eos_id: int
    source: str  # "roneneldan/TinyStories", "synthetic" or the local path given
    tokenizer: str  # "gpt2" or "bytes"
    n_text: int  # documents used
    key: str  # names the cache: hash of (source, tokenizer, n_text, FORMAT)
    sha256: str | None = None  # of the whole stream (tokens.bin): what the run trained and validated on

    def describe(self) -> dict:
        """JSON-able provenance for the run record."""
        return {
            "source": self.source,
            "tokenizer": self.tokenizer,
            "n_text": self.n_text,
            "key": self.key,
            "vocab_size": self.vocab_size,
            "eos_id": self.eos_id,
            "train_tokens": len(self.train),
            "val_tokens": len(self.val),
            "sha256": self.sha256,
        }


def _is_cache(path: Path) -> bool:
    """Whether `path` is a token cache of rr's (its folder, meta.json or tokens.bin), complete or not."""
    if path.name in ("meta.json", "tokens.bin"):
        return True
    return path.is_dir() and any((path / name).exists() for name in ("meta.json", "tokens.bin"))


# -------------------------------------------------------------------------------------------------- cache


def default_cache_dir() -> Path:
    """$RR_CACHE, else ~/.cache/rr."""
    return Path(os.environ.get("RR_CACHE") or Path.home() / ".cache" / "rr")


def _key(*parts: object) -> str:
    return hashlib.sha256(json.dumps([FORMAT, *parts]).encode()).hexdigest()[:16]


def _split(n: int, val_frac: float, source: str) -> int:
    """Tokens in the train part of a stream of `n`: the first int(n * (1 - val_frac))."""
    n_train = int(n * (1 - val_frac))
    if not 0 < n_train < n:
        raise InputError(f"{source}, {n} tokens: too few to split train/val (val_frac {val_frac})")
    return n_train


def _scan(path: Path) -> tuple[str, int]:
    """The sha256 of a token stream and its largest id, in one pass over the file."""
    digest, largest = hashlib.sha256(), -1
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            digest.update(chunk)
            largest = max(largest, int(np.frombuffer(chunk, dtype=TOKEN_DTYPE).max()))
    return digest.hexdigest(), largest


class _NotCache(Exception):
    """Why a folder holds no usable token cache: `where` (its meta.json or tokens.bin) and the `rule` broken."""

    def __init__(self, where: Path, rule: str):
        self.where, self.rule = where, rule
        super().__init__(f"{where}: {rule}")


# What meta.json holds, each with the rule it keeps (`_meta`); sha256 is read where present (older caches).
_META_RULES: dict[str, tuple] = {
    "format": (lambda v, m: v == FORMAT, f"must be {FORMAT}, this rr's cache format (an older rr wrote it)"),
    "key": (lambda v, m: isinstance(v, str), "must be a string"),
    "source": (lambda v, m: isinstance(v, str), "must be a string"),
    "tokenizer": (lambda v, m: v in ("gpt2", "bytes"), "must be gpt2 or bytes"),
    "n_text": (lambda v, m: _int(v) and v >= 1, "must be an integer >= 1"),
    "vocab_size": (
        lambda v, m: _int(v) and (v == BYTE_EOS + 1 if m.get("tokenizer") == "bytes" else 0 < v <= 2**16),
        "must be the tokenizer's vocabulary: 257 for bytes, at most 65536 (a uint16 id) for gpt2",
    ),
    "eos_id": (
        lambda v, m: (
            _int(v) and (v == BYTE_EOS if m.get("tokenizer") == "bytes" else 0 <= v < m["vocab_size"])
        ),
        "must be the tokenizer's end-of-document id: 256 for bytes, below vocab_size for gpt2",
    ),
    "n_tokens": (lambda v, m: _int(v) and v >= 2, "must be an integer >= 2"),
    "n_train": (lambda v, m: _int(v) and 0 < v < m["n_tokens"], "must be an integer in 1 .. n_tokens - 1"),
}


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _meta(directory: Path) -> dict:
    """A cache's meta.json, every field checked against its rule (`_META_RULES`), in order, so a rule may
    read the fields before it; `_NotCache` naming the file and the first rule broken."""
    path = directory / "meta.json"
    try:
        meta = json.loads(read_regular(path))
    except FileNotFoundError:
        raise _NotCache(path, "missing (a cache whose build did not finish?)") from None
    except (OSError, ValueError) as e:  # Unreadable, UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise _NotCache(path, f"not a JSON object ({e})") from None
    if not isinstance(meta, dict):
        raise _NotCache(path, f"a JSON {type(meta).__name__}, not an object")
    for name, (ok, rule) in _META_RULES.items():
        if name not in meta:
            raise _NotCache(path, f"no {name!r} field")
        if not ok(meta[name], meta):
            raise _NotCache(path, f"{name} {meta[name]!r} {rule}")
    return meta


def _read_cache(directory: Path, key: str | None, val_frac: float) -> Tokens:
    """The cache in `directory`, checked whole: its meta (`_meta`), the stream's length, sha256 and ids.

    Raises `_NotCache` for a cache that is missing, partial, stale, malformed or not for `key`, and
    `rr_core.files.checksums.Damaged` when its stream is not the one its meta records (sha256).
    """
    meta = _meta(directory)
    n, path = meta["n_tokens"], directory / "tokens.bin"
    if key not in (None, meta["key"]):
        raise _NotCache(directory / "meta.json", f"the cache of another corpus (key {meta['key']})")
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise _NotCache(path, "missing") from None
    if size != n * TOKEN_DTYPE.itemsize:
        raise _NotCache(
            path,
            f"{size} bytes, but meta.json records {n} tokens of {TOKEN_DTYPE.itemsize} bytes (cut short?)",
        )
    digest, largest = _scan(path)  # caches built before rr recorded the sha256 are hashed, not checked
    if meta.get("sha256", digest) != digest:
        raise Damaged(
            path,
            "its sha256 is not the one meta.json records",
            f"delete the folder {directory} and rr tokenizes the corpus again",
        )
    if largest >= meta["vocab_size"]:
        raise _NotCache(
            path,
            f"holds token id {largest}, outside its vocabulary of {meta['vocab_size']} ({meta['tokenizer']})",
        )
    n_train = _split(n, val_frac, meta["source"])
    stream = np.memmap(path, dtype=TOKEN_DTYPE, mode="r", shape=(n,))
    return Tokens(
        train=stream[:n_train],
        val=stream[n_train:],
        vocab_size=meta["vocab_size"],
        eos_id=meta["eos_id"],
        source=meta["source"],
        tokenizer=meta["tokenizer"],
        n_text=meta["n_text"],
        key=meta["key"],
        sha256=digest,
    )


def _open(directory: Path, key: str | None = None, val_frac: float = RECIPE.val_frac) -> Tokens | None:
    """The cache in `directory`, or None when it is missing, partial, stale or not for `key` (`_read_cache`).

    Raises `rr_core.files.checksums.Damaged` when its stream is not the one its meta records (sha256).
    """
    try:
        return _read_cache(directory, key, val_frac)
    except (_NotCache, OSError):
        return None


def _build(directory: Path, key: str, source: str, tok: Tokenizer, docs: Iterable[str], n_text: int) -> None:
    """Tokenize `docs` (at most n_text) and publish the cache at `directory` whole (`atomic_dir`: built
    aside under a name with this process's id, which the next build removes if this one is killed; an
    invalid cache there, found under the lock, is replaced)."""

    def write(tmp: Path) -> None:
        n_docs = n_tokens = 0
        eos = np.array([tok.eos_id], dtype=TOKEN_DTYPE)
        digest, docs_ = hashlib.sha256(), iter(docs)
        with open(tmp / "tokens.bin", "wb") as f:
            while chunk := list(itertools.islice(docs_, min(CHUNK, n_text - n_docs))):
                ids = np.concatenate([part for d in tok.encode_batch(chunk) for part in (d, eos)])
                f.write(ids.tobytes())
                digest.update(ids.tobytes())
                n_docs += len(chunk)
                n_tokens += len(ids)
        meta = {
            "format": FORMAT,
            "key": key,
            "source": source,
            "tokenizer": tok.name,
            "n_text": n_docs,
            "vocab_size": tok.vocab_size,
            "eos_id": tok.eos_id,
            "n_tokens": n_tokens,
            "n_train": _split(n_tokens, RECIPE.val_frac, f"{source}: {n_docs} documents"),
            "sha256": digest.hexdigest(),
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))

    atomic_dir(directory, write)


# ---------------------------------------------------------------------------------------------------- API


def load_tokens(
    data: str = PUBLISHED_CORPUS,
    *,
    n_text: int = RECIPE.n_text,
    cache_dir: str | Path | None = None,
    tokenizer: str | None = None,
    text_field: str = "text",
    val_frac: float = RECIPE.val_frac,
) -> Tokens:
    """Load a tokenized corpus, tokenizing and caching it on first use.

    Parameters
    ----------
    data
        "tinystories": the first `n_text` training stories of roneneldan/TinyStories via Hugging Face
        `datasets` (the published recipe). "synthetic": the project's own story corpus
        (`rr_model.data.synthetic`, at most 10,000 stories). Otherwise a path: a .txt corpus (documents
        separated by blank lines, or by `<|endoftext|>` lines if the file has them), a .jsonl or .parquet
        corpus with a "text" field (first `n_text` documents), a folder of such files (read in order of
        their paths), or a token cache directory written by this function (or its meta.json / tokens.bin),
        which is loaded as it is, whatever `n_text`. "hf:NAME[:SPLIT]": a dataset through Hugging Face
        `datasets` (`load_dataset(NAME, split=SPLIT)`, default split "train"; NAME may be a local
        folder that `datasets` reads).
    n_text
        Documents to use, from the start of the corpus.
    cache_dir
        Root of rr's caches; tokens live in its `tokens/` folder. Default $RR_CACHE, else ~/.cache/rr.
    tokenizer
        "gpt2" (default for TinyStories and local corpora) or "bytes" (default for synthetic; needs no
        download, so it serves offline runs).
    text_field
        The field of a .jsonl, .parquet or hub corpus that holds the text.
    val_frac
        The share of the stream, at its end, held out for validation (the recipe's; 0.03 published).

    Returns
    -------
    Tokens
        Memory-mapped train and validation streams with their provenance.

    Raises
    ------
    DataUnavailable
        The hub cannot be reached for the dataset or the GPT-2 tokenizer and neither is cached.
    rr_core.files.checksums.Damaged
        The cache's stream is not the one it recorded (its sha256 differs): refused, not trained on.
    InputError
        A corpus file that cannot be read as text (`rr_model.data.corpus`), naming the file and line.

    Notes
    -----
    The cache key hashes (source, tokenizer, n_text, format); for a local corpus the source is its
    resolved path, size and modification time (of every file, for a folder), so an edited file is
    tokenized again; a `text_field` other than "text" joins the key.
    """
    if tokenizer not in (None, "gpt2", "bytes"):
        raise InputError(f"unknown tokenizer {tokenizer!r}; use 'gpt2' or 'bytes'")
    if n_text < 1:
        raise InputError(f"n_text must be positive, got {n_text}")
    path = Path(data)
    if data not in (PUBLISHED_CORPUS, "synthetic") and not data.startswith("hf:") and _is_cache(path):
        return _given_cache(path.parent if path.is_file() else path, tokenizer, val_frac)
    directory, key, docs, tokenizer, n_text = _cache_of(data, n_text, cache_dir, tokenizer, text_field)
    source = TINYSTORIES if data == PUBLISHED_CORPUS else data
    if (tokens := _open(directory, key, val_frac)) is not None:
        return tokens
    directory.parent.mkdir(parents=True, exist_ok=True)
    with locked(directory.with_suffix(".lock")):
        if (tokens := _open(directory, key, val_frac)) is None:  # nobody built it while we waited
            tok = load_tokenizer(tokenizer)
            log.info("tokenizing %s with %s into %s (first use only)", source, tokenizer, directory)
            start = time.perf_counter()
            _build(directory, key, source, tok, docs(), n_text)
            tokens = _open(directory, key, val_frac)
            n = len(tokens.train) + len(tokens.val)
            log.info("%d tokens cached in %.1fs", n, time.perf_counter() - start)
    return tokens


def _cache_of(
    data: str, n_text: int, cache_dir: str | Path | None, tokenizer: str | None, text_field: str
) -> tuple[Path, str, Callable[[], Iterable[str]], str, int]:
    """Where `load_tokens` caches a corpus that is not a token cache itself: (its folder, its key, the
    document reader, the tokenizer and the documents it uses)."""
    if data == "synthetic":
        n_text = min(n_text, synthetic.N_STORIES)
        ident, docs = "synthetic", functools.partial(synthetic.stories, n_text)
        tokenizer = tokenizer or "bytes"
    else:
        ident, docs = corpus_reader(data, n_text, text_field)
        tokenizer = tokenizer or "gpt2"
    key = _key(ident, tokenizer, n_text)
    return Path(cache_dir or default_cache_dir()) / "tokens" / key, key, docs, tokenizer, n_text


def known_train_tokens(
    data: str,
    tokenizer: str | None = None,
    n_text: int = RECIPE.n_text,
    cache_dir: str | Path | None = None,
    text_field: str = "text",
    val_frac: float = RECIPE.val_frac,
) -> int | None:
    """The training tokens of a corpus where they are known without tokenizing or downloading: a token cache
    given as `data`, or the cache an earlier run built of it (its meta.json alone is read); None otherwise.
    What a dry run's passes over the corpus divide by (`rr_core.budget.passes`)."""
    path = Path(data)
    try:
        if data not in (PUBLISHED_CORPUS, "synthetic") and not data.startswith("hf:") and _is_cache(path):
            directory, key = (path.parent if path.is_file() else path), None
        else:
            directory, key, *_ = _cache_of(data, n_text, cache_dir, tokenizer, text_field)
        meta = json.loads((directory / "meta.json").read_text())
        if meta["format"] != FORMAT or key not in (None, meta["key"]):
            return None
        return _split(meta["n_tokens"], val_frac, meta["source"])
    except (OSError, ValueError, KeyError, TypeError):  # no cache (yet), or one rr would build again
        return None


class Corpus(NamedTuple):
    """What a run will train on, as far as it is known before anything is tokenized (`check_data`): the
    facts of `Tokens` that a run's checks read (`rr_model.run.checks.check_run`: the recipe guard, the model's
    vocabulary), so that a dry run checks what the run checks."""

    source: str  # as `Tokens.source`
    tokenizer: str
    n_text: int  # the documents asked for; a local or hub corpus may turn out to hold fewer when read
    vocab_size: int


def check_data(data: str, tokenizer: str | None = None, n_text: int = RECIPE.n_text) -> Corpus:
    """Refuse what `load_tokens` would refuse for `data`, without tokenizing or downloading anything, and
    say what the run would train on.

    For `rr train --dry-run` and the checks before a run's first step: the corpus file must exist (a folder
    must hold one), a token cache must be complete and match `tokenizer`; whether the hub can be reached is
    only found out by loading. The `Corpus` follows `load_tokens`'s rules (the default tokenizers, the
    synthetic corpus's size, a cache's own meta); only a local or hub corpus holding fewer than `n_text`
    documents is found out by loading.
    """
    if tokenizer not in (None, "gpt2", "bytes"):
        raise InputError(f"unknown tokenizer {tokenizer!r}; use 'gpt2' or 'bytes'")
    path = Path(data)
    synthetic_ = data == "synthetic"
    if not synthetic_ and data != PUBLISHED_CORPUS and not data.startswith("hf:"):
        if _is_cache(path):
            tokens = _given_cache(path.parent if path.is_file() else path, tokenizer)
            return Corpus(tokens.source, tokens.tokenizer, tokens.n_text, tokens.vocab_size)
        if path.is_dir():
            corpus_files(path)
        elif not (path.suffix in READERS and path.is_file()):
            raise no_data(data)
    tokenizer = tokenizer or ("bytes" if synthetic_ else "gpt2")
    vocab = BYTE_EOS + 1 if tokenizer == "bytes" else RECIPE.vocab_size  # 256 bytes and EOS; GPT-2's
    n_text = min(n_text, synthetic.N_STORIES) if synthetic_ else n_text
    return Corpus(TINYSTORIES if data == PUBLISHED_CORPUS else data, tokenizer, n_text, vocab)


def _given_cache(directory: Path, tokenizer: str | None, val_frac: float = RECIPE.val_frac) -> Tokens:
    """A token cache given as the corpus, refused with the file and the rule it breaks (`_read_cache`)."""
    try:
        tokens = _read_cache(directory, None, val_frac)
    except _NotCache as e:
        raise InputError(
            f"{e}, so {directory} is not a complete token cache written by rr (partial, corrupt, outdated)"
        ) from None
    if tokenizer not in (None, tokens.tokenizer):
        raise InputError(f"{directory}: the cache was tokenized with {tokens.tokenizer!r}, not {tokenizer!r}")
    return tokens


# ------------------------------------------------------------------------------------ held-out windows

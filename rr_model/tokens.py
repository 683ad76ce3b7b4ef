"""Token streams for training: TinyStories, the synthetic corpus, a local corpus (a file or a folder of
files) or a Hugging Face dataset (`hf:NAME[:SPLIT]`), cached on disk.

`load_tokens` turns a corpus into one uint16 token stream (each document followed by EOS; the first 97%
is train, the rest validation, RECIPE.val_frac) and caches it as a memory-mapped file, so only the first
run tokenizes and later runs start at once, offline too. `sample_batch` draws the random training windows.
Torch-free: the trainer turns the windows into tensors.

A cache is a directory `<cache_dir>/tokens/<key>/` holding `tokens.bin` (raw little-endian uint16) and
`meta.json` (provenance and lengths). It is written to a temporary directory, fsynced and renamed into
place, and it is only trusted when its meta is current and matches the file's length, so a killed run
never leaves a cache that loads. Such a directory is also a valid `data` path: copy it to an offline
machine and point `--data` at it.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rr_model import synthetic
from rr_model.core.errors import InputError, RRError
from rr_model.core.files import fsync_path, locked
from rr_model.core.ladder import BYTE_EOS, RECIPE

__all__ = [
    "Tokens",
    "DataUnavailable",
    "load_tokens",
    "Tokenizer",
    "load_tokenizer",
    "gpt2_tokenizer",
    "check_data",
    "corpus_files",
    "sample_batch",
    "encode_bytes",
    "decode_bytes",
    "encode_text",
    "decode_text",
    "token_bytes",
    "eos_id",
    "default_cache_dir",
    "TINYSTORIES",
]

FORMAT = 1  # bump when the cache layout or the tokenization changes: older caches are then rebuilt
TINYSTORIES = "roneneldan/TinyStories"
EOT = "<|endoftext|>"  # GPT-2's end-of-text token; also the story separator in TinyStories' .txt files
_DTYPE = np.dtype("<u2")  # fixed byte order, so a cache copied between machines reads the same
_CHUNK = 4096  # documents per tokenizer call: bounds memory and keeps the tokenizer's threads busy
_SUFFIXES = (".txt", ".jsonl", ".parquet")

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
        }


class DataUnavailable(RRError):
    """The hub, or a dataset or tokenizer on it, cannot be reached and nothing usable is cached."""


def _unavailable(what: str, err: BaseException) -> DataUnavailable:
    return DataUnavailable(
        f"cannot load {what} from the Hugging Face hub ({type(err).__name__}: {err}). "
        "If this machine is offline, point --data at a local copy: a .txt corpus (documents separated by "
        f"blank lines, or by {EOT} lines as in TinyStories' own .txt files), a .jsonl or .parquet corpus "
        "with a 'text' field, or a token cache directory written by an earlier run (under $RR_CACHE, "
        "default ~/.cache/rr, in tokens/). The byte-level tokenizer ('bytes') needs no download, and "
        "--data synthetic needs nothing at all. HF_HUB_OFFLINE=1 and the Hugging Face cache (HF_HOME) "
        "are honoured: a dataset or tokenizer downloaded once loads offline."
    )


# ---------------------------------------------------------------------------------------------- tokenizers


def encode_bytes(text: str) -> np.ndarray:
    """Byte-level token ids of `text`: its UTF-8 bytes, no EOS."""
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(_DTYPE)


def decode_bytes(ids: Iterable[int] | np.ndarray) -> str:
    """Text of byte-level token ids; each EOS is written as `<|endoftext|>`."""
    ids = np.asarray(ids)
    docs = np.split(ids, np.flatnonzero(ids == BYTE_EOS))
    docs = [docs[0]] + [d[1:] for d in docs[1:]]  # every piece after the first starts with its EOS
    return EOT.join(bytes(d.astype(np.uint8)).decode("utf-8", errors="replace") for d in docs)


@functools.cache
def gpt2_tokenizer():
    """GPT-2's `tokenizers.Tokenizer`, from the Hugging Face cache or hub, loaded once per process.

    `gpt2_tokenizer.cache_clear()` forgets it (the tests serve stand-ins through the hub's loader).
    """
    import tokenizers

    try:
        return tokenizers.Tokenizer.from_pretrained("gpt2")
    except OSError as e:  # huggingface_hub's offline, not-found and HTTP errors are all OSErrors
        raise _unavailable("the GPT-2 tokenizer", e) from e


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
            np.asarray(e.ids, dtype=_DTYPE)
            for e in gpt2_tokenizer().encode_batch(docs, add_special_tokens=False)
        ]
    eos = eos_id(tokenizer)
    joined = [
        part for i, d in enumerate(parts) for part in ((d,) if i == 0 else (np.array([eos], _DTYPE), d))
    ]
    return np.concatenate(joined).astype(_DTYPE)


def decode_text(ids: Iterable[int] | np.ndarray, tokenizer: str) -> str:
    """Text of token ids under `tokenizer`; EOS is written as `<|endoftext|>`."""
    if tokenizer == "bytes":
        return decode_bytes(ids)
    return gpt2_tokenizer().decode([int(i) for i in ids], skip_special_tokens=False)


@functools.cache
def token_bytes(tokenizer: str) -> np.ndarray:
    """UTF-8 bytes each token id stands for, by id; EOS counts 1 (the document break it marks).

    Bits per byte divide by the bytes of the scored text (`rr_model.trained.heldout`). Bytes map to ids
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
        return [np.asarray(e.ids, dtype=_DTYPE) for e in tok.encode_batch(texts, add_special_tokens=False)]

    return Tokenizer("gpt2", tok.get_vocab_size(), tok.token_to_id(EOT), encode_batch)


# ------------------------------------------------------------------------------------------------ corpora


def _tinystories(n_text: int) -> Iterator[str]:
    return _hub(TINYSTORIES, f"train[:{n_text}]", "text")


def _hub(name: str, split: str, field: str) -> Iterator[str]:
    """The `field` of every row of a split of a Hugging Face dataset (a hub name or a local folder)."""
    import datasets

    try:
        ds = datasets.load_dataset(name, split=split)
    except OSError as e:  # ConnectionError (offline), DatasetNotFoundError, HTTP errors
        raise _unavailable(f"the {name} dataset", e) from e
    except ValueError as e:  # an unknown split, a split slice it cannot read
        raise InputError(f"--data hf:{name}:{split}: {e}") from None
    if field not in ds.column_names:
        raise InputError(f"--data hf:{name}: no {field!r} column (columns: {', '.join(ds.column_names)})")
    return (text for batch in ds.iter(batch_size=_CHUNK) for text in batch[field])


def _txt(path: Path, field: str = "text") -> Iterator[str]:
    """Documents of a .txt file: split at `<|endoftext|>` lines if its first MB has one, else at blank lines.

    `field` is not read: a .txt file is all text."""
    with open(path, encoding="utf-8") as f:
        eot = EOT in f.read(1 << 20)
        f.seek(0)
        is_sep = (lambda s: s == EOT) if eot else (lambda s: not s)
        for sep, lines in itertools.groupby(f, key=lambda line: is_sep(line.strip())):
            if not sep and (text := "".join(lines).strip()):
                yield text


def _jsonl(path: Path, field: str = "text") -> Iterator[str]:
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if line.strip():
                row = json.loads(line)
                if field not in row:
                    raise InputError(f"{path}:{i}: no {field!r} field (--text-field names another)")
                yield row[field]


def _parquet(path: Path, field: str = "text") -> Iterator[str]:
    import pyarrow.parquet as pq

    file = pq.ParquetFile(path)
    if field not in file.schema_arrow.names:
        raise InputError(f"{path}: no {field!r} column (columns: {', '.join(file.schema_arrow.names)})")
    for batch in file.iter_batches(batch_size=_CHUNK, columns=[field]):
        yield from batch.column(0).to_pylist()


_READERS = {".txt": _txt, ".jsonl": _jsonl, ".parquet": _parquet}


def corpus_files(path: Path) -> list[Path]:
    """The corpus files of a folder: every .txt, .jsonl and .parquet file under it, in order of their paths."""
    files = sorted(p for p in path.rglob("*") if p.suffix in _READERS and p.is_file())
    if not files:
        raise InputError(f"--data {path}: no {'/'.join(_SUFFIXES)} file in this folder, nor a token cache")
    return files


def _files(files: list[Path], field: str) -> Iterator[str]:
    for path in files:
        yield from _READERS[path.suffix](path, field)


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


def _open(directory: Path, key: str | None = None) -> Tokens | None:
    """The cache in `directory`, or None when it is missing, partial, stale or not for `key`."""
    try:
        meta = json.loads((directory / "meta.json").read_text())
        n, n_train = meta["n_tokens"], meta["n_train"]
        path = directory / "tokens.bin"
        if meta["format"] != FORMAT or key not in (None, meta["key"]) or not 0 < n_train < n:
            return None
        if path.stat().st_size != n * _DTYPE.itemsize:
            return None
        stream = np.memmap(path, dtype=_DTYPE, mode="r", shape=(n,))
        return Tokens(
            train=stream[:n_train],
            val=stream[n_train:],
            vocab_size=meta["vocab_size"],
            eos_id=meta["eos_id"],
            source=meta["source"],
            tokenizer=meta["tokenizer"],
            n_text=meta["n_text"],
            key=meta["key"],
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _build(directory: Path, key: str, source: str, tok: Tokenizer, docs: Iterable[str], n_text: int) -> None:
    """Tokenize `docs` (at most n_text) and publish the cache at `directory` atomically."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=directory.parent))
    try:
        tmp.chmod(0o755)  # mkdtemp makes it private; a shared cache should be readable like the files in it
        n_docs = n_tokens = 0
        eos = np.array([tok.eos_id], dtype=_DTYPE)
        docs = iter(docs)
        with open(tmp / "tokens.bin", "wb") as f:
            while chunk := list(itertools.islice(docs, min(_CHUNK, n_text - n_docs))):
                ids = np.concatenate([part for d in tok.encode_batch(chunk) for part in (d, eos)])
                f.write(ids.tobytes())
                n_docs += len(chunk)
                n_tokens += len(ids)
        n_train = int(n_tokens * (1 - RECIPE.val_frac))
        if not 0 < n_train < n_tokens:
            raise InputError(f"{source}: {n_docs} documents, {n_tokens} tokens: too few to split train/val")
        meta = {
            "format": FORMAT,
            "key": key,
            "source": source,
            "tokenizer": tok.name,
            "n_text": n_docs,
            "vocab_size": tok.vocab_size,
            "eos_id": tok.eos_id,
            "n_tokens": n_tokens,
            "n_train": n_train,
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
        for path in (tmp / "tokens.bin", tmp / "meta.json", tmp):
            fsync_path(path)
        if directory.exists():  # an invalid cache (we hold the lock and found none valid): replace it
            shutil.rmtree(directory)
        os.rename(tmp, directory)
        fsync_path(directory.parent)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone already after a successful rename


# ---------------------------------------------------------------------------------------------------- API


def load_tokens(
    data: str = "tinystories",
    *,
    n_text: int = RECIPE.n_text,
    cache_dir: str | Path | None = None,
    tokenizer: str | None = None,
    text_field: str = "text",
) -> Tokens:
    """Load a tokenized corpus, tokenizing and caching it on first use.

    Parameters
    ----------
    data
        "tinystories": the first `n_text` training stories of roneneldan/TinyStories via Hugging Face
        `datasets` (the published recipe). "synthetic": the project's own story corpus
        (`rr_model.synthetic`, at most 10,000 stories). Otherwise a path: a .txt corpus (documents
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

    Returns
    -------
    Tokens
        Memory-mapped train and validation streams with their provenance.

    Raises
    ------
    DataUnavailable
        The hub cannot be reached for the dataset or the GPT-2 tokenizer and neither is cached.

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
    if data not in ("tinystories", "synthetic") and not data.startswith("hf:") and _is_cache(path):
        return _given_cache(path.parent if path.is_file() else path, tokenizer)
    if data == "synthetic":
        n_text = min(n_text, synthetic.N_STORIES)
        ident, docs = "synthetic", functools.partial(synthetic.stories, n_text)
        tokenizer = tokenizer or "bytes"
    else:
        ident, docs = _corpus(data, n_text, text_field)
        tokenizer = tokenizer or "gpt2"
    source = TINYSTORIES if data == "tinystories" else data
    key = _key(ident, tokenizer, n_text)
    directory = Path(cache_dir or default_cache_dir()) / "tokens" / key
    if (tokens := _open(directory, key)) is not None:
        return tokens
    directory.parent.mkdir(parents=True, exist_ok=True)
    with locked(directory.with_suffix(".lock")):
        if (tokens := _open(directory, key)) is None:  # nobody built it while we waited for the lock
            tok = load_tokenizer(tokenizer)
            log.info("tokenizing %s with %s into %s (first use only)", source, tokenizer, directory)
            start = time.perf_counter()
            _build(directory, key, source, tok, docs(), n_text)
            tokens = _open(directory, key)
            n = len(tokens.train) + len(tokens.val)
            log.info("%d tokens cached in %.1fs", n, time.perf_counter() - start)
    return tokens


def _corpus(data: str, n_text: int, field: str) -> tuple[object, Callable[[], Iterable[str]]]:
    """The cache identity and the document reader of TinyStories, a hub dataset or a local corpus."""
    extra = [field] if field != "text" else []  # the published keys stay as they were
    if data == "tinystories":
        return TINYSTORIES, functools.partial(_tinystories, n_text)
    if data.startswith("hf:"):
        name, _, split = data.removeprefix("hf:").partition(":")
        split = split or "train"
        split = split if "[" in split else f"{split}[:{n_text}]"  # only the documents used are read
        return ["hf", name, split, *extra], functools.partial(_hub, name, split, field)
    path = Path(data)
    files = (
        [path]
        if path.suffix in _READERS and path.is_file()
        else corpus_files(path)
        if path.is_dir()
        else None
    )
    if files is None:
        raise _no_data(data)
    stats = [(str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p in files]
    ident = [*stats[0], *extra] if path.is_file() else ["folder", stats, *extra]
    return ident, functools.partial(_files, files, field)


def _no_data(data: str) -> FileNotFoundError:
    return FileNotFoundError(
        f"--data {data!r}: expected 'tinystories', 'synthetic', an existing {'/'.join(_SUFFIXES)} "
        "corpus or a folder of them, a token cache directory, or hf:NAME[:SPLIT]"
    )


def check_data(data: str, tokenizer: str | None = None) -> None:
    """Refuse what `load_tokens` would refuse for `data`, without tokenizing or downloading anything.

    For `rr train --dry-run`: the corpus file must exist (a folder must hold one), a token cache must be
    complete and match `tokenizer`; whether the hub can be reached is only found out by loading.
    """
    if tokenizer not in (None, "gpt2", "bytes"):
        raise InputError(f"unknown tokenizer {tokenizer!r}; use 'gpt2' or 'bytes'")
    path = Path(data)
    if data in ("tinystories", "synthetic") or data.startswith("hf:"):
        return
    if path.suffix in _READERS and path.is_file():
        return
    if _is_cache(path):
        _given_cache(path.parent if path.is_file() else path, tokenizer)
        return
    if path.is_dir():
        corpus_files(path)
        return
    raise _no_data(data)


def _given_cache(directory: Path, tokenizer: str | None) -> Tokens:
    tokens = _open(directory)
    if tokens is None:
        raise InputError(
            f"{directory}: not a complete token cache written by rr (partial, corrupt, outdated)"
        )
    if tokenizer not in (None, tokens.tokenizer):
        raise InputError(f"{directory}: the cache was tokenized with {tokens.tokenizer!r}, not {tokenizer!r}")
    return tokens


def sample_batch(
    data: np.ndarray, rng: np.random.RandomState, batch: int, block: int
) -> tuple[np.ndarray, np.ndarray]:
    """Random windows of a token stream: inputs `x` and next-token targets `y`, each (batch, block) int64.

    Window starts are `rng.randint(0, len(data) - block - 1, size=batch)`, the published script's draw
    from numpy's legacy Mersenne Twister, so a seed's batches are the published ones and a given rng state
    always gives the same batch; only the selected windows are read from the memory map.
    """
    if len(data) < block + 2:
        raise InputError(f"a stream of {len(data)} tokens is too short for blocks of {block}")
    offsets = rng.randint(0, len(data) - block - 1, size=batch)
    windows = np.lib.stride_tricks.sliding_window_view(data, block + 1)[offsets].astype(np.int64)
    return np.ascontiguousarray(windows[:, :-1]), np.ascontiguousarray(windows[:, 1:])

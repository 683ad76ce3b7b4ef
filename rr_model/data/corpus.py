"""Where a run's documents come from: TinyStories, the synthetic corpus, a local corpus (.txt, .jsonl,
.parquet, or a folder of them) or a Hugging Face dataset (`hf:NAME[:SPLIT]`), each read as an iterator of
texts, and the cache identity of each (what makes two corpora the same). Torch-free.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from rr_core.errors import InputError
from rr_model.data.tokenizers import CHUNK, EOT, unavailable

__all__ = [
    "corpus_files",
    "TINYSTORIES",
]


TINYSTORIES = "roneneldan/TinyStories"
_SUFFIXES = (".txt", ".jsonl", ".parquet")


# ------------------------------------------------------------------------------------------------ corpora


def _tinystories(n_text: int) -> Iterator[str]:
    return _hub(TINYSTORIES, f"train[:{n_text}]", "text")


def _hub(name: str, split: str, field: str) -> Iterator[str]:
    """The `field` of every row of a split of a Hugging Face dataset (a hub name or a local folder)."""
    import datasets

    try:
        ds = datasets.load_dataset(name, split=split)
    except OSError as e:  # ConnectionError (offline), DatasetNotFoundError, HTTP errors
        raise unavailable(f"the {name} dataset", e) from e
    except ValueError as e:  # an unknown split, a split slice it cannot read
        raise InputError(f"--corpus hf:{name}:{split}: {e}") from None
    if field not in ds.column_names:
        raise InputError(f"--corpus hf:{name}: no {field!r} column (columns: {', '.join(ds.column_names)})")
    return (text for batch in ds.iter(batch_size=CHUNK) for text in batch[field])


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
    for batch in file.iter_batches(batch_size=CHUNK, columns=[field]):
        yield from batch.column(0).to_pylist()


READERS = {".txt": _txt, ".jsonl": _jsonl, ".parquet": _parquet}


def corpus_files(path: Path) -> list[Path]:
    """The corpus files of a folder: every .txt, .jsonl and .parquet file under it, in order of their paths."""
    files = sorted(p for p in path.rglob("*") if p.suffix in READERS and p.is_file())
    if not files:
        raise InputError(f"--corpus {path}: no {'/'.join(_SUFFIXES)} file in this folder, nor a token cache")
    return files


def _files(files: list[Path], field: str) -> Iterator[str]:
    for path in files:
        yield from READERS[path.suffix](path, field)


def corpus_reader(data: str, n_text: int, field: str) -> tuple[object, Callable[[], Iterable[str]]]:
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
        [path] if path.suffix in READERS and path.is_file() else corpus_files(path) if path.is_dir() else None
    )
    if files is None:
        raise no_data(data)
    stats = [(str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p in files]
    ident = [*stats[0], *extra] if path.is_file() else ["folder", stats, *extra]
    return ident, functools.partial(_files, files, field)


def no_data(data: str) -> FileNotFoundError:
    return FileNotFoundError(
        f"--corpus {data!r}: expected 'tinystories', 'synthetic', an existing {'/'.join(_SUFFIXES)} "
        "corpus or a folder of them, a token cache directory, or hf:NAME[:SPLIT]"
    )

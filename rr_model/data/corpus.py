"""Where a run's documents come from: TinyStories, the synthetic corpus, a local corpus (.txt, .jsonl,
.parquet, or a folder of them) or a Hugging Face dataset (`hf:NAME[:SPLIT]`), each read as an iterator of
texts, and the cache identity of each (what makes two corpora the same). Torch-free.

A corpus rr cannot read is one `InputError` naming the file, the line (or record) and the rule, whatever
the reader and however the input is malformed: text that is not UTF-8 (a UTF-16 file named as such), a
JSON line cut short, not an object, nested past what a parser holds or with a number longer than Python
reads, a text field that is a number, null, a list or a string that is not valid Unicode (a lone
surrogate escape in JSON, bytes that are not UTF-8 in a Parquet string column or a hub dataset), a Parquet
file cut short.
Every document passes one rule (`_document`). A local folder given through `hf:` is read with rr's own
readers before `datasets` reads it (`_check_folder`, its .json and .csv files too): its JSON reader crashes
the process on a deeply nested line, and rr's readers name the file and line at fault. A corpus whose documents are empty or too
few for the run's blocks is refused before the first step by the run's checks
(`rr_model.run.checks.check_run`), which know the block size.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import itertools
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from rr_core.errors import InputError
from rr_core.ladder import PUBLISHED_CORPUS
from rr_model.data.hub import from_hub
from rr_model.data.tokenizers import CHUNK, EOT, LOCAL_COPIES

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

    where = f"--corpus hf:{name}:{split}"
    _check_folder(name, field)
    local = Path(name).is_dir()  # read without the hub
    try:
        with contextlib.nullcontext() if local else from_hub(f"the {name} dataset", LOCAL_COPIES):
            ds = datasets.load_dataset(name, split=split)
    except (ValueError, datasets.exceptions.DatasetGenerationError) as e:  # a split, a file it cannot read
        cause = f" ({type(e.__cause__).__name__}: {e.__cause__})" if e.__cause__ else ""
        raise InputError(f"{where}: {e}{cause}") from None
    if field not in ds.column_names:
        raise InputError(f"--corpus hf:{name}: no {field!r} column (columns: {', '.join(ds.column_names)})")
    return _hub_texts(ds, name, where, field)


def _hub_texts(ds, name: str, where: str, field: str) -> Iterator[str]:
    """The texts of a loaded dataset, each held to `_document`, read as Arrow batches so a string that is not
    UTF-8 (Arrow stores what it is given unchecked) is named by its record (`_column`); a local folder's
    files were checked file by file before `datasets` read them (`_check_folder`)."""
    number = 0
    for batch in ds.with_format("arrow").iter(batch_size=CHUNK):
        for text in _column(batch.column(field), where, field, number):
            number += 1
            yield _document(text, f"{where}: record {number}", field)


def _check_folder(name: str, field: str) -> None:
    """Read every file of a local folder given as `hf:FOLDER` that `datasets` would read, with rr's own
    readers, before `datasets` reads it, to refuse a malformed one naming its file and line: `datasets`' JSON
    reader (pyarrow's) crashes the whole process on a line nested deeply enough, and its other errors name no
    line. Its .json and .csv files too, which rr reads only here (`_json`, `_csv`). Nothing for a hub name.
    One more pass over the files, made only when the token cache is built."""
    folder = Path(name)
    if not folder.is_dir():
        return
    readers = READERS | _HUB_FORMATS
    for path in sorted(p for p in folder.rglob("*") if p.suffix in readers and p.is_file()):
        for _ in readers[path.suffix](path, field):
            pass


def _json(path: Path, field: str) -> Iterator[str]:
    """The `field` of every record of a .json file as `datasets` reads one: JSON Lines, or one JSON array of
    records (a file whose first character is ``[``)."""
    try:
        with open(path, encoding="utf-8") as f:
            array = f.read(1 << 16).lstrip().startswith("[")
    except UnicodeDecodeError:
        raise _not_utf8(path) from None
    if not array:
        yield from _jsonl(path, field)
        return
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise _not_utf8(path) from None
    except json.JSONDecodeError as e:
        raise InputError(
            f"{path}:{e.lineno}: not a complete JSON array ({e.msg}; a file cut short?)"
        ) from None
    except (RecursionError, ValueError):
        raise InputError(f"{path}: a JSON value nested too deep or a number too long, not records") from None
    for number, row in enumerate(records, 1):
        if not isinstance(row, dict) or field not in row:
            raise InputError(f"{path}: record {number}: not an object with a {field!r} field")
        yield _document(row[field], f"{path}: record {number}", field)


def _csv(path: Path, field: str) -> Iterator[str]:
    """The `field` column of a .csv file as `datasets` reads one (a header row, then a row per record, blank
    lines skipped): every row as many cells as the header."""
    csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))  # a document may be longer than 128 KiB
    try:
        with open(path, encoding="utf-8", newline="") as f:
            rows = csv.reader(f)
            header = next(rows, None)
            if header is None:
                return
            if field not in header:
                raise InputError(f"{path}:1: no {field!r} column (columns: {', '.join(header)})")
            column = header.index(field)
            for row in rows:
                if row and len(row) != len(header):
                    raise InputError(
                        f"{path}:{rows.line_num}: {len(row)} cells where the header has {len(header)}"
                    )
                if row:
                    yield _document(row[column], f"{path}:{rows.line_num}", field)
    except UnicodeDecodeError:
        raise _not_utf8(path) from None
    except csv.Error as e:
        raise InputError(f"{path}: not CSV that rr reads ({e})") from None


def _document(text: object, where: str, field: str) -> str:
    """`text` if it can be a document, the one rule every reader holds its documents to: a string (not a
    number, null or list), of valid Unicode (no lone surrogate, which a JSON escape such as \\ud800 makes
    and no encoder takes). An empty string is a document: the published corpus's are kept (each adds its
    end-of-document token); a corpus with too few tokens is refused by the run's checks."""
    if not isinstance(text, str):
        raise _not_text(where, field, text)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise InputError(
                f"{where}: {field!r} holds U+{ord(text[e.start]):04X} at character {e.start + 1}, a lone "
                "surrogate (a JSON escape without its pair): not valid Unicode; every document must be "
                "valid Unicode text"
            ) from None
    return text


def _not_text(where: str, field: str, value: object) -> InputError:
    """The error for a document whose text field holds no text (a number, null, a list)."""
    return InputError(
        f"{where}: {field!r} is {type(value).__name__} {value!r:.40}, not text: every document's "
        f"{field!r} must be a string"
    )


# The first bytes of the compressed formats a corpus file is most often found in, by format.
_COMPRESSED = {b"\x1f\x8b": "gzip", b"\x28\xb5\x2f\xfd": "zstd", b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz"}


def _not_utf8(path: Path) -> InputError:
    """The error for a file that is not UTF-8, naming its first line that is not, and the byte; a file that
    starts with a UTF-16 byte-order mark is named as UTF-16, one that starts as a compressed file as such."""
    with open(path, "rb") as f:
        head = f.read(6)
        if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
            return InputError(
                f"{path}:1: UTF-16 text (its first bytes are a UTF-16 byte-order mark); rr reads corpora as "
                f"UTF-8: convert the file, e.g. iconv -f utf-16 -t utf-8 {path}"
            )
        if packed := next((name for magic, name in _COMPRESSED.items() if head.startswith(magic)), None):
            return InputError(
                f"{path}:1: {packed}-compressed, not text (its first bytes are {packed}'s); rr reads corpora "
                "uncompressed: decompress the file first"
            )
        f.seek(0)
        for number, line in enumerate(f, 1):  # a multi-byte character never holds the byte of a newline
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as e:
                return InputError(
                    f"{path}:{number}: not UTF-8 text (byte 0x{line[e.start]:02x} at column {e.start + 1}); rr "
                    f"reads corpora as UTF-8: convert the file, e.g. iconv -f latin1 -t utf-8 {path}"
                )
    return InputError(f"{path}: not UTF-8 text")


def _txt(path: Path, field: str = "text") -> Iterator[str]:
    """Documents of a .txt file: split at `<|endoftext|>` lines if its first MB has one, else at blank lines.

    `field` is not read: a .txt file is all text."""
    try:
        with open(path, encoding="utf-8") as f:
            eot = EOT in f.read(1 << 20)
            f.seek(0)
            is_sep = (lambda s: s == EOT) if eot else (lambda s: not s)
            for sep, lines in itertools.groupby(f, key=lambda line: is_sep(line.strip())):
                if not sep and (text := "".join(lines).strip()):
                    yield text
    except UnicodeDecodeError:
        raise _not_utf8(path) from None


def _jsonl(path: Path, field: str = "text") -> Iterator[str]:
    """The `field` of every line of a .jsonl file, each line a JSON object whose `field` is a string."""
    try:
        with open(path, encoding="utf-8") as f:
            for i, line in enumerate(f, 1):
                if line.strip():
                    yield _jsonl_text(line, f"{path}:{i}", field)
    except UnicodeDecodeError:
        raise _not_utf8(path) from None


def _jsonl_text(line: str, where: str, field: str) -> str:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as e:
        raise InputError(f"{where}: not a complete JSON record ({e.msg}; a line cut short?)") from None
    except RecursionError:
        raise InputError(
            f"{where}: a JSON value nested deeper than a parser holds, not a document record"
        ) from None
    except ValueError as e:  # a number of more digits than Python converts
        raise InputError(f"{where}: not a JSON record rr reads ({str(e).split(':')[0]})") from None
    if not isinstance(row, dict):
        raise InputError(f"{where}: a JSON {type(row).__name__}, not an object with a {field!r} field")
    if field not in row:
        raise InputError(f"{where}: no {field!r} field (--text-field names another)")
    return _document(row[field], where, field)


def _parquet(path: Path, field: str = "text") -> Iterator[str]:
    """The `field` column of a .parquet file, every value a string."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        file = pq.ParquetFile(path)
        if field not in file.schema_arrow.names:
            columns = ", ".join(file.schema_arrow.names)
            raise InputError(f"{path}: no {field!r} column (columns: {columns})")
        number = 0
        for batch in file.iter_batches(batch_size=CHUNK, columns=[field]):
            for text in _column(batch.column(0), path, field, number):
                number += 1
                yield _document(text, f"{path}: record {number}", field)
    except (pa.ArrowException, OSError) as e:
        raise InputError(
            f"{path}: not a readable Parquet file ({e}); a file cut short or not Parquet"
        ) from None


def _column(column, where: str | Path, field: str, before: int) -> list:
    """An Arrow batch's column (of a Parquet file or a hub dataset, `where`) as Python values; a string that
    is not UTF-8 (Arrow does not check what it is given) refused naming its record, `before` being the
    records read before this batch."""
    try:
        return column.to_pylist()
    except UnicodeDecodeError:
        for i in range(len(column)):
            try:
                column[i].as_py()
            except UnicodeDecodeError as e:
                raise InputError(
                    f"{where}: record {before + i + 1}: {field!r} is not valid UTF-8 "
                    f"(byte 0x{e.object[e.start]:02x} at byte {e.start + 1}): every document must be valid "
                    "Unicode text"
                ) from None
        raise


READERS = {".txt": _txt, ".jsonl": _jsonl, ".parquet": _parquet}
_HUB_FORMATS = {".json": _json, ".csv": _csv}  # read by `datasets` in an hf: folder, checked by rr first


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
    if data == PUBLISHED_CORPUS:
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
        f"--corpus {data!r}: expected {PUBLISHED_CORPUS!r}, 'synthetic', an existing {'/'.join(_SUFFIXES)} "
        "corpus or a folder of them, a token cache directory, or hf:NAME[:SPLIT]"
    )

"""What rr reads back is checked against what it wrote.

`zip_damage` runs a zip archive's per-entry CRC-32s (every file `torch.save` writes is one), and a folder
published by `rr_core.files.replacing.create_dir` or `atomic_dir(sums=True)` carries `SHA256SUMS`
(sha256sum's format), which `verify_sums` checks; a mismatch is `Damaged`.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from rr_core.errors import InputError
from rr_core.files.synced import write_synced

__all__ = ["Damaged", "SUMS", "verify_sums", "write_sums", "zip_damage"]

SUMS = "SHA256SUMS"  # a published folder's checksums, one "HEX  NAME" line per file, as sha256sum writes them


class Damaged(InputError):
    """A file rr wrote whose bytes are no longer those it wrote (a checksum fails): refused, never used."""

    def __init__(self, path: str | os.PathLike, what: str, todo: str):
        self.path = str(path)
        super().__init__(f"{path}: damaged: {what}; {todo}")


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def write_sums(folder: str | os.PathLike) -> None:
    """Write `SHA256SUMS` into `folder`: the sha256 of every file under it, sorted by name, one line each in
    sha256sum's format (``HEX  NAME``), so ``sha256sum -c SHA256SUMS`` checks it too; fsynced."""
    folder = Path(folder)
    names = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    text = "".join(f"{_sha256(folder / n)}  {n}\n" for n in names if n != SUMS)
    write_synced(folder / SUMS, lambda f: f.write(text.encode("utf-8")))


def verify_sums(folder: str | os.PathLike, todo: str) -> None:
    """Check every file `SHA256SUMS` lists in `folder` against its sha256: `Damaged`, naming the first file
    that differs or is missing and ending in `todo` (what the reader should do), if one fails.

    A folder without the file passes (it predates the sums); a line that is not ``HEX  NAME`` with a plain
    relative NAME is damage too.
    """
    folder = Path(folder)
    try:
        lines = (folder / SUMS).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return
    except (OSError, UnicodeDecodeError) as e:
        raise Damaged(folder / SUMS, f"unreadable ({e})", todo) from None
    for number, line in enumerate(lines, 1):
        digest, _, name = line.partition("  ")
        if not name or Path(name).is_absolute() or ".." in Path(name).parts or len(digest) != 64:
            raise Damaged(folder / SUMS, f"line {number} is not a sha256sum line", todo)
        if not (folder / name).is_file():
            raise Damaged(folder / name, f"missing, though {SUMS} lists it", todo)
        if _sha256(folder / name) != digest:
            raise Damaged(folder / name, f"its sha256 is not the one {SUMS} records for it", todo)


def zip_damage(path: str | os.PathLike) -> str | None:
    """What is wrong with a zip archive rr wrote (every `torch.save` file is one): None when every entry
    reads back with the CRC-32 its directory records, else the first failure, in words.

    Notes
    -----
    Each entry is read whole once, 1 MiB at a time, and its CRC-32 compared with the central directory's
    (`zipfile.ZipFile.testzip`); bench/read_back.py measures the cost. torch's own reader does not check
    them, so without this a page of zeros inside a tensor loads as weights.
    """
    import zipfile  # here: ~3 ms (bz2, lzma) that only a reader of torch files needs

    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except (zipfile.BadZipFile, EOFError, ValueError, NotImplementedError) as e:
        return f"its zip structure is broken ({e})"
    return None if bad is None else f"its entry {bad} fails its CRC-32 check (its bytes changed on disk)"

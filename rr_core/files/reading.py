"""Reading what rr is given: a regular file of bounded size, JSON lines that survive a torn line, TOML.

`read_regular` reads a whole file only if it is a regular file of a bounded size, so a FIFO, a device or a
socket named as input never hangs or exhausts memory. `json_lines` reads a JSON-lines file skipping a torn
line (one without its newline: a writer cut short) with a `Note`, so one torn line never costs the file.
`read_toml` is the one reader of rr's TOML inputs (ladder, claims and run config files). `stamp` and
`same_file` tell whether a file changed since it was read, and whether two paths name one file.
"""

from __future__ import annotations

import json
import os
import stat
import warnings
from collections.abc import Iterator
from typing import Any

from rr_core.errors import InputError, Note

__all__ = [
    "MAX_READ",
    "Unreadable",
    "json_lines",
    "read_open",
    "read_regular",
    "read_toml",
    "same_file",
    "stamp",
]

MAX_READ = 1 << 30  # 1 GiB: 20x the largest sweep rr has been measured on, far below a host's memory


class Unreadable(InputError):
    """A path rr refuses to read: not a regular file, or larger than it will hold in memory."""

    def __init__(self, path: str | os.PathLike, rule: str):
        self.path, self.rule = str(path), rule
        super().__init__(f"{path}: {rule}")


def _kind(mode: int) -> str | None:
    """Why a file of this mode cannot be read as data (None for a regular file)."""
    for test, what in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return what
    return None if stat.S_ISREG(mode) else "not a regular file"


def read_regular(path: str | os.PathLike, limit: int = MAX_READ) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; `Unreadable` for anything else.

    The type is checked before opening (opening a FIFO for reading waits for a writer) and again on the
    open descriptor (the name may have been swapped meanwhile); at most `limit` + 1 bytes are ever read,
    so a file that grows while being read cannot exhaust memory either.
    """
    if (what := _kind(os.stat(path).st_mode)) is not None:
        raise Unreadable(path, f"is {what}, not a regular file")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    try:
        return read_open(fd, path, limit)
    finally:
        os.close(fd)


def read_open(fd: int, path: str | os.PathLike, limit: int = MAX_READ) -> bytes:
    """The bytes of the regular file open as `fd` (named `path` in errors), as `read_regular` reads them, from
    its start and without moving its offset: what a writer holding the file's lock reads, so the file it
    appends to is opened once (`rr_core.sweepfile.dataset.append_rows`)."""
    st = os.fstat(fd)
    if (what := _kind(st.st_mode)) is not None:
        raise Unreadable(path, f"is {what}, not a regular file")
    too_big = Unreadable(path, f"is larger than {limit:,} bytes, more than rr reads into memory")
    if st.st_size > limit:
        raise too_big
    chunks, at = [], 0
    while at <= limit and (chunk := os.pread(fd, min(limit + 1 - at, 1 << 24), at)):
        chunks.append(chunk)
        at += len(chunk)
    if at > limit:
        raise too_big
    return b"".join(chunks)


def stamp(path: str | os.PathLike) -> tuple[int, int, int, int] | None:
    """A file's (device, inode, size, modification time in ns), None when it is missing: what tells, for one
    stat, whether a file changed since it was read (an append, an edit, a replacement)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name one file (device and inode), through hard links and symlinks alike."""
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def json_lines(text: str, path: str | os.PathLike) -> Iterator[tuple[int, Any]]:
    """(line number, value) of every line of a JSON-lines text that holds a JSON value; blank lines aside.

    A line that does not parse is a torn write (a writer killed mid-line, a full disk on another tool; an
    append after it starts on a new line, `append_whole`): it is skipped with a `Note` naming the file and
    the line, so one torn line never costs the records around it.
    """
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as e:
            note = (
                f"{path}: line {number} is not a complete JSON record ({e.msg}), a write cut short: skipped"
            )
            warnings.warn(Note(note), stacklevel=2)
            continue
        yield number, value


def read_toml(path: str | os.PathLike, label: str, kind: str = "TOML file") -> dict:
    """The tables of the TOML file at `path`; one that does not parse (or is not UTF-8) is an `InputError`
    "LABEL: not a KIND (why)". OSErrors (a missing file) pass through to the caller's own handling.

    Example
    -------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "x.toml"
    >>> _ = path.write_text("steps = 4\\n")
    >>> read_toml(path, f"--config {path}")
    {'steps': 4}
    """
    try:  # imported here: ~5 ms that only the commands reading TOML need
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the same parser as a package (a dependency there)
        import tomli as tomllib
    try:
        return tomllib.loads(read_regular(path).decode("utf-8"))  # a FIFO named as a file never hangs
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{label}: not a {kind} ({e})") from None

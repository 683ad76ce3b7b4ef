"""Appends whole or not at all, to a file held under `rr_core.files.locks.locked`.

`append_whole` appends in one write whose count is checked, an fsync, and on a short write (a full disk, a
file-size limit) or any error the file is cut back to its old length. An append after a torn last line (a
writer of another tool cut short) starts on a new line, so the torn line stays a line of its own, which
`rr_core.files.reading.json_lines` skips.
"""

from __future__ import annotations

import errno
import os

from rr_core.errors import InputError

__all__ = ["Unwritten", "append_whole", "torn_tail", "truncate_to"]


class Unwritten(InputError):
    """An append that could not be made whole (a full disk, a file-size limit); the file is as it was."""

    def __init__(self, path: str | os.PathLike, what: str, error: OSError, undone: bool = True):
        self.path, self.errno = str(path), error.errno
        state = "it is as it was before" if undone else "cutting it back failed too, so check its last line"
        super().__init__(f"{path}: could not append {what} ({error.strerror or error}); {state}")


def append_whole(fd: int, data: bytes, path: str | os.PathLike, what: str = "to it") -> int:
    """Append `data` to the file open (and locked) as `fd` in one write, whole or not at all.

    The write's count is checked and the file fsynced; a short write (a full disk, RLIMIT_FSIZE) or any
    OSError cuts the file back to its length before the write and raises `Unwritten` naming `path` and
    `what` was being appended. Returns that length (where the new bytes start), so a caller holding the
    lock can undo the append with `truncate_to` if a later step of the same unit fails. After a torn last
    line (`torn_tail`; `fd` must then be open for reading too) the data starts on a new line, so the new
    line stays whole and the torn one stays a line of its own, which readers skip.
    """
    start = os.lseek(fd, 0, os.SEEK_END)
    if torn_tail(fd):
        data = b"\n" + data
    try:
        written = os.write(fd, data)
        if written != len(data):  # the kernel wrote what fitted: the rest would be the torn row
            raise OSError(
                errno.ENOSPC, f"only {written} of {len(data)} bytes fitted: a full disk or a file-size limit"
            )
        os.fsync(fd)
    except OSError as e:
        raise Unwritten(path, what, e, undone=truncate_to(fd, start)) from None
    return start


def torn_tail(fd: int) -> bool:
    """Whether the file open (for reading) as `fd` ends in a line without its newline: a write cut short."""
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def truncate_to(fd: int, length: int) -> bool:
    """Cut the file open as `fd` back to `length` bytes and fsync it; False if that failed too."""
    try:
        os.ftruncate(fd, length)
        os.fsync(fd)
    except OSError:
        return False
    return True

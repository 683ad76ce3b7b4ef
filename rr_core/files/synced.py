"""Writes that reach the disk: a file written and fsynced, a folder fsynced so a rename in it lasts.

The one primitive under every writer of `rr_core.files` (`replacing`, `checksums`): a failed write names the
file meant, and a folder that refuses a temporary file is named as the folder, not by rr's temporary name.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

__all__ = ["fsync_path", "write_synced"]

_REFUSED = (errno.EACCES, errno.EPERM, errno.EROFS)  # a folder that may not be written to


def fsync_path(path: str | os.PathLike) -> None:
    """fsync a file or a folder by path (a folder's fsync makes a rename in it durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_synced(
    path: Path, write: Callable[[BinaryIO], object], flags: int = os.O_TRUNC, target: Path | None = None
) -> None:
    """Write and fsync `path`; an OSError of the write (a full disk) names `target`, the file meant, and one
    of creating a temporary `path` beside it that the folder refuses names the folder (`filename`) and the file
    meant (`filename2`), not a name rr made up."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | flags, 0o666)  # 0o666 & ~umask, like open()
    except OSError as e:
        if target is None or e.errno not in _REFUSED:
            raise
        folder = target.parent if target.parent != Path() else Path.cwd()
        raise OSError(e.errno, e.strerror, str(folder), None, str(target)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        raise OSError(e.errno, e.strerror or str(e), str(target or path)) from None

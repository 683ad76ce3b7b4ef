"""The two file mechanisms every writer in rr shares: an atomic replace and an exclusive lock.

`atomic_write` writes beside the target under a name that carries the writer's pid, fsyncs, renames over
the target and fsyncs the folder: a reader sees the old file or the new one whole. A writer killed midway
leaves its temporary file behind; the next write to the same target removes leftovers of dead processes.
`locked` is `flock` on an open file: it excludes other processes and other threads of this one (a POSIX
`lockf` record lock is per process, so two threads would both get it). Linux NFS clients since 2.6.12
emulate flock with byte-range locks served by the lock manager, so it holds across hosts too.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_write", "fsync_path", "locked", "temp_name"]

_TMP = ".rr-tmp"


def fsync_path(path: str | os.PathLike) -> None:
    """fsync a file or a folder by path (a folder's fsync makes a rename in it durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temp_name(path: Path, pid: int | None = None) -> Path:
    """The temporary name a process writes `path` under: hidden, beside it, tagged with the pid."""
    return path.with_name(f".{path.name}.{os.getpid() if pid is None else pid}{_TMP}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_leftovers(path: Path) -> None:
    """Delete temporary files of `path` left by processes that no longer exist (killed writers)."""
    prefix = f".{path.name}."
    for p in path.parent.glob(f"{prefix}*{_TMP}"):
        pid = p.name[len(prefix) : -len(_TMP)]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                if p.is_dir():
                    import shutil

                    shutil.rmtree(p)
                else:
                    p.unlink()


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], object]) -> None:
    """Call `write` on a temporary file beside `path`, fsync it and rename it over `path`.

    Any failure removes the temporary file and leaves `path` as it was; the OSError propagates.
    """
    path = Path(path)
    _remove_leftovers(path)
    tmp = temp_name(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)  # 0o666 & ~umask, like open()
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_path(path.parent)


@contextlib.contextmanager
def locked(path: str | os.PathLike, flags: int = os.O_RDWR | os.O_CREAT | os.O_APPEND) -> Iterator[int]:
    """Open `path` with `flags`, hold an exclusive lock on it, and yield the descriptor.

    Every writer that appends to a shared file (sweep CSV, run sidecar, token cache) takes this lock.
    Closing the descriptor releases it.
    """
    fd = os.open(path, flags, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)

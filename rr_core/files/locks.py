"""Exclusive locks: `locked` waits for a shared file, `claim` refuses a run another process is making.

`locked` is `flock` on an open file: it excludes other processes and other threads of this one (a POSIX
`lockf` record lock is per process, so two threads would both get it). Linux NFS clients since 2.6.12
emulate flock with byte-range locks served by the lock manager, so it holds across hosts too. `claim` is
the same lock taken without waiting: a run claimed by one process is refused to another (`Held`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator

from rr_core.errors import InputError

__all__ = ["Held", "claim", "locked", "pid_alive"]


class Held(InputError):
    """A claim (`claim`) another process holds: the run it guards is being made there."""

    def __init__(self, path: str | os.PathLike, what: str, holder: str):
        self.path, self.what, self.holder = str(path), what, holder
        super().__init__(f"{what} is claimed by {holder} (the lock {path}), which is making it now")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def claim(path: str | os.PathLike, what: str) -> Iterator[None]:
    """Hold an exclusive lock on `path` while the block runs, or raise `Held` at once if another process
    holds it, naming that process (its pid and host, which the holder writes into the lock file).

    The lock is `flock`'s, released by the kernel when the holder ends however it ends, so a killed holder
    leaves no stale claim. The file stays (deleting a lock file would let two processes hold two locks).
    """
    import socket  # here: only a claim names its host

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
            raise Held(path, what, holder) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


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

"""The two file mechanisms every writer in rr shares: an atomic replace and an exclusive lock.

`atomic_write` writes beside the target under a name that carries the writer's pid, fsyncs, renames over
the target and fsyncs the folder: a reader sees the old file or the new one whole. A writer killed midway
leaves its temporary file behind; the next write to the same target removes leftovers of dead processes.
`create_new` makes a file whole or not at all (written under a temporary name, then hard-linked into
place, which fails if the name exists). `read_regular` reads a whole file only if it is a regular file of a
bounded size, so a FIFO, a device or a socket named as input never hangs or exhausts memory.
`append_whole` appends to a locked file whole or not at all: one write whose count is checked, an fsync,
and on a short write (a full disk, a file-size limit) or any error the file is cut back to its old length.
An append after a torn last line (one without its newline: a writer of another tool cut short) starts on
a new line, and `json_lines` reads a JSON-lines file skipping such a line with a `Note`, so one torn line
never costs the file.
`read_toml` is the one reader of rr's TOML inputs (ladder, claims and run config files).
`locked` is `flock` on an open file: it excludes other processes and other threads of this one (a POSIX
`lockf` record lock is per process, so two threads would both get it). Linux NFS clients since 2.6.12
emulate flock with byte-range locks served by the lock manager, so it holds across hosts too. `claim` is
the same lock taken without waiting: a run claimed by one process is refused to another (`Held`).

What rr reads back is checked against what it wrote: `zip_damage` runs a zip archive's per-entry CRC-32s
(every file `torch.save` writes is one), and a folder published by `create_dir` or `atomic_dir(sums=True)`
carries `SHA256SUMS` (sha256sum's format), which `verify_sums` checks; a mismatch is `Damaged`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import stat
import warnings
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from rr_core.errors import InputError, Note

__all__ = [
    "MAX_READ",
    "SUMS",
    "Damaged",
    "Foreign",
    "Held",
    "Unreadable",
    "Unwritten",
    "append_whole",
    "atomic_dir",
    "atomic_write",
    "claim",
    "create_dir",
    "create_new",
    "fsync_path",
    "json_lines",
    "locked",
    "pid_alive",
    "read_regular",
    "read_toml",
    "same_file",
    "stamp",
    "temp_name",
    "torn_tail",
    "truncate_to",
    "verify_sums",
    "write_sums",
    "zip_damage",
]

_TMP = ".rr-tmp"
SUMS = "SHA256SUMS"  # a published folder's checksums, one "HEX  NAME" line per file, as sha256sum writes them
MAX_READ = 1 << 30  # 1 GiB: 20x the largest sweep rr has been measured on, far below a host's memory
# Filesystems without hard links (some FUSE and FAT mounts) answer os.link with one of these.
_NO_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS}


class Unreadable(InputError):
    """A path rr refuses to read: not a regular file, or larger than it will hold in memory."""

    def __init__(self, path: str | os.PathLike, rule: str):
        self.path, self.rule = str(path), rule
        super().__init__(f"{path}: {rule}")


class Unwritten(InputError):
    """An append that could not be made whole (a full disk, a file-size limit); the file is as it was."""

    def __init__(self, path: str | os.PathLike, what: str, error: OSError, undone: bool = True):
        self.path, self.errno = str(path), error.errno
        state = "it is as it was before" if undone else "cutting it back failed too, so check its last line"
        super().__init__(f"{path}: could not append {what} ({error.strerror or error}); {state}")


class Foreign(InputError):
    """A file or folder rr would replace was changed by another writer meanwhile; it is left as it is."""


class Damaged(InputError):
    """A file rr wrote whose bytes are no longer those it wrote (a checksum fails): refused, never used."""

    def __init__(self, path: str | os.PathLike, what: str, todo: str):
        self.path = str(path)
        super().__init__(f"{path}: damaged: {what}; {todo}")


class Held(InputError):
    """A claim (`claim`) another process holds: the run it guards is being made there."""

    def __init__(self, path: str | os.PathLike, what: str, holder: str):
        self.path, self.what, self.holder = str(path), what, holder
        super().__init__(f"{what} is claimed by {holder} (the lock {path}), which is making it now")


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


def truncate_to(fd: int, length: int) -> bool:
    """Cut the file open as `fd` back to `length` bytes and fsync it; False if that failed too."""
    try:
        os.ftruncate(fd, length)
        os.fsync(fd)
    except OSError:
        return False
    return True


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


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name one file (device and inode), through hard links and symlinks alike."""
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def stamp(path: str | os.PathLike) -> tuple[int, int, int, int] | None:
    """A file's (device, inode, size, modification time in ns), None when it is missing: what tells, for one
    stat, whether a file changed since it was read (an append, an edit, a replacement)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


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
        st = os.fstat(fd)
        if (what := _kind(st.st_mode)) is not None:
            raise Unreadable(path, f"is {what}, not a regular file")
        too_big = Unreadable(path, f"is larger than {limit:,} bytes, more than rr reads into memory")
        if st.st_size > limit:
            raise too_big
        with os.fdopen(os.dup(fd), "rb") as f:
            raw = f.read(limit + 1)
    finally:
        os.close(fd)
    if len(raw) > limit:
        raise too_big
    return raw


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_leftovers(path: Path, owned: Collection[str] | None = None) -> None:
    """Delete temporary files of `path` left by processes that no longer exist (killed writers); of a
    temporary folder, only the `owned` names where given (see `atomic_dir`), and the temporary files their
    own writers left in it (a figure being saved when the build was killed).

    Every writer of rr goes through here before it writes (`atomic_write`, `create_new`, `atomic_dir`,
    `create_dir`), so the next run of a command removes what a killed run of it left.
    """
    prefix = f".{path.name}."
    if not path.parent.is_dir():
        return
    for p in path.parent.glob(f"{prefix}*{_TMP}"):
        pid = p.name[len(prefix) : -len(_TMP)]
        if pid.isdigit() and not pid_alive(int(pid)):
            with contextlib.suppress(OSError):
                _remove_owned(p, owned) if p.is_dir() else p.unlink()


def atomic_write(
    path: str | os.PathLike, write: Callable[[BinaryIO], object], *, expect: bytes | None = None
) -> None:
    """Call `write` on a temporary file beside `path`, fsync it and rename it over `path`.

    Any failure removes the temporary file and leaves `path` as it was; the OSError propagates. With
    `expect` (the bytes a read-modify-write read), `path` is read again just before the rename and left as
    it is, with `Foreign` raised, if another writer changed it meanwhile: its edit is not lost.
    """
    path = Path(path)
    _remove_leftovers(path)
    tmp = temp_name(path)
    try:
        _write_synced(tmp, write, target=path)
        if expect is not None and read_regular(path) != expect:
            raise Foreign(f"{path} changed while rr was rewriting it, so it was left as it is; run again")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_path(path.parent)


def atomic_dir(
    path: str | os.PathLike,
    build: Callable[[Path], object],
    owned: Collection[str] | None = None,
    *,
    sums: bool = False,
) -> None:
    """Build a folder with `build(folder)` in a temporary sibling of `path`, then swap it into place.

    On Linux the swap is one `renameat2(RENAME_EXCHANGE)`: a reader of `path` sees the old folder or the new
    one whole, never a mix and never nothing. Elsewhere the old folder is removed first. The old folder is
    deleted afterwards; a builder killed midway leaves a temporary folder that the next build removes.

    With `owned` (the names the builder writes), only those are ever deleted: the old folder is checked at
    the swap itself, after the build (a file saved into it meanwhile), and if it holds any other name the
    swap is undone and `Foreign` raised, leaving the old folder as it was and nothing of the new one.
    With `sums`, the folder's `SHA256SUMS` is written last, before the swap (`write_sums`), for
    `verify_sums` to check before it is read back (a sharded checkpoint, replaced at each save).
    """
    path = Path(path)
    _remove_leftovers(path, owned)
    tmp = temp_name(path)
    try:
        tmp.mkdir()
        build(tmp)
        _seal(tmp, sums)
        if not path.exists():
            os.rename(tmp, path)
        elif _exchange(tmp, path):
            _check_owned(tmp, owned, path, undo=lambda: _exchange(tmp, path))
            _remove_owned(tmp, owned)
        else:  # no atomic exchange here: check, remove the old folder, then rename (a short window)
            _check_owned(path, owned, path)
            _remove_owned(path, owned)
            os.rename(tmp, path)
    finally:
        _remove_owned(tmp, owned)
    fsync_path(path.parent)


def _check_owned(old: Path, owned: Collection[str] | None, path: Path, undo=None) -> None:
    if owned is None or not (foreign := sorted(set(os.listdir(old)) - set(owned))):
        return
    if undo is not None:
        undo()  # the old folder back in place, with what was saved into it; the new one is removed below
    raise Foreign(
        f"{path} changed while rr was writing it: it now holds files rr does not write there "
        f"({', '.join(foreign[:5])}), so it was not replaced; nothing in it was deleted"
    )


def _remove_owned(folder: Path, owned: Collection[str] | None) -> None:
    """Remove `folder`: whole when `owned` is None, else only the owned names in it and then the folder if it
    is empty (a file saved into it in the last instant stays, in a folder of the name rr used)."""
    if owned is None:
        shutil.rmtree(folder, ignore_errors=True)
        return
    for name in owned:
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            (folder / name).unlink()
        _remove_leftovers(folder / name)  # a killed writer's temporary file of an owned name
    with contextlib.suppress(FileNotFoundError, OSError):
        folder.rmdir()


def _exchange(new: Path, old: Path) -> bool:
    """Swap two folders' names in one step where the kernel can (True); False where it cannot."""
    import ctypes  # here: only a swap of two folders needs libc

    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    at_cwd, exchange = -100, 2  # AT_FDCWD, RENAME_EXCHANGE (linux/fcntl.h, linux/fs.h)
    return (
        renameat2 is not None and renameat2(at_cwd, os.fsencode(new), at_cwd, os.fsencode(old), exchange) == 0
    )


def create_dir(path: str | os.PathLike, build: Callable[[Path], object], *, sums: bool = True) -> bool:
    """Make the folder `path` with what `build(folder)` writes, whole or not at all; False if it exists.

    The folder is built under a temporary name beside `path` (`temp_name`), its files fsynced and, with
    `sums`, its `SHA256SUMS` written last (`write_sums`); then one rename publishes it. A reader never sees
    part of it, and an interrupted build leaves no `path` (its temporary folder is removed, by the next
    build of `path` if the builder was killed), so running the same command again works. `path` may be an
    empty folder (the rename replaces it); one holding anything is left as it is and False returned.
    """
    path = Path(path)
    _remove_leftovers(path)
    tmp = temp_name(path)
    try:
        tmp.mkdir()
        build(tmp)
        _seal(tmp, sums)
        try:
            os.rename(tmp, path)  # onto a missing name or an empty folder; never onto one with files
        except OSError as e:
            if e.errno in (errno.ENOTEMPTY, errno.EEXIST):
                return False
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone already after the rename
    fsync_path(path.parent)
    return True


def _seal(folder: Path, sums: bool) -> None:
    """fsync every file of a folder built aside (and its SHA256SUMS, written last, with `sums`), then it."""
    for p in folder.rglob("*"):
        if p.is_file():
            fsync_path(p)
    if sums:
        write_sums(folder)
    fsync_path(folder)


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def write_sums(folder: str | os.PathLike) -> None:
    """Write `SHA256SUMS` into `folder`: the sha256 of every file under it, sorted by name, one line each in
    sha256sum's format (``HEX  NAME``), so ``sha256sum -c SHA256SUMS`` checks it too; fsynced."""
    folder = Path(folder)
    names = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    text = "".join(f"{_sha256(folder / n)}  {n}\n" for n in names if n != SUMS)
    _write_synced(folder / SUMS, lambda f: f.write(text.encode("utf-8")))


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


def create_new(path: str | os.PathLike, write: Callable[[BinaryIO], object]) -> bool:
    """Create `path` with what `write` writes, whole or not at all; False (nothing written) if it exists.

    The content is written and fsynced under a temporary name, then hard-linked to `path`: the link fails
    if `path` exists, and a reader (or a writer killed midway) never sees a partial or empty file. Where
    the filesystem has no hard links, `path` is created exclusively and written in place.
    """
    path = Path(path)
    _remove_leftovers(path)
    tmp = temp_name(path)
    try:
        _write_synced(tmp, write, target=path)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError as e:
            if e.errno not in _NO_LINKS:
                raise
            try:
                _write_synced(path, write, os.O_EXCL)
            except FileExistsError:
                return False
            except BaseException:
                path.unlink(missing_ok=True)  # created here, exclusively: a partial file is ours to remove
                raise
    finally:
        tmp.unlink(missing_ok=True)
    fsync_path(path.parent)
    return True


_REFUSED = (errno.EACCES, errno.EPERM, errno.EROFS)  # a folder that may not be written to


def _write_synced(
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

"""Files and folders published whole: an atomic replace, a create that fails if the name exists, a folder swap.

`atomic_write` writes beside the target under a name that carries the writer's pid, fsyncs, renames over
the target and fsyncs the folder: a reader sees the old file or the new one whole. A writer killed midway
leaves its temporary file behind; the next write to the same target removes leftovers of dead processes.
`create_new` makes a file whole or not at all (written under a temporary name, then hard-linked into
place, which fails if the name exists). `atomic_dir` and `create_dir` do the same for a folder.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

from rr_core.errors import InputError
from rr_core.files.checksums import write_sums
from rr_core.files.locks import pid_alive
from rr_core.files.reading import read_regular
from rr_core.files.synced import fsync_path, write_synced

__all__ = [
    "Foreign",
    "atomic_dir",
    "atomic_write",
    "create_dir",
    "create_files",
    "create_new",
    "probe",
    "scratch",
    "temp_name",
]

_TMP = ".rr-tmp"
_SET = ".rr-set"  # the journal of files being created together (`create_files`)


# Filesystems without hard links (some FUSE and FAT mounts) answer os.link with one of these.
_NO_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS}


class Foreign(InputError):
    """A file or folder rr would replace was changed by another writer meanwhile; it is left as it is."""


def temp_name(path: Path, pid: int | None = None) -> Path:
    """The temporary name a process writes `path` under: hidden, beside it, tagged with the pid."""
    return path.with_name(f".{path.name}.{os.getpid() if pid is None else pid}{_TMP}")


def _target(path: Path) -> Path:
    """The file a path names, through symbolic links: a file rr replaces or creates under a link is the
    link's target, written beside it, so the link stays (a rename onto the link's own name would replace the
    link, and a hard link onto it would find the name taken, even where its target is missing)."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


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


@contextlib.contextmanager
def scratch(target: str | os.PathLike, *, folder: bool = False) -> Iterator[Path]:
    """A file (or, with `folder`, a folder) that rr keeps only while the block runs: a probe, a scratch
    folder. It is `target`'s temporary name for this process (`temp_name`), removed when the block ends;
    one that a kill leaves is removed by the next `scratch` (or write) of `target`, its pid no longer
    running, so nothing of a killed process outlasts the next run of the command that made it."""
    target = Path(target)
    _remove_leftovers(target)
    path = temp_name(target)
    if folder:
        path.mkdir()
    else:  # no O_EXCL: a name a dead process of another host left under this pid is reused
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    try:
        yield path
    finally:
        if folder:
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)  # another host's next scratch may have taken it for a dead one's


def probe(folder: str | os.PathLike) -> None:
    """Create a file in `folder` and remove it: the proof that rr can make files there, which `os.access`
    cannot give (it answers yes to root on a root-squashed NFS mount, and knows nothing of a full inode
    table). The probe is a `scratch` file, so one a kill leaves is removed by the next probe of the folder.
    Raises the OSError of the creation, naming `folder`.
    """
    try:
        with scratch(Path(folder) / "rr-probe"):
            pass
    except OSError as e:
        raise OSError(e.errno, e.strerror, str(folder)) from None


def atomic_write(
    path: str | os.PathLike, write: Callable[[BinaryIO], object], *, expect: bytes | None = None
) -> None:
    """Call `write` on a temporary file beside `path`, fsync it and rename it over `path`.

    Any failure removes the temporary file and leaves `path` as it was; the OSError propagates. With
    `expect` (the bytes a read-modify-write read), `path` is read again just before the rename and left as
    it is, with `Foreign` raised, if another writer changed it meanwhile: its edit is not lost. A symbolic
    link is written through (`_target`), as `open` writes through one.
    """
    path = _target(Path(path))
    _remove_leftovers(path)
    tmp = temp_name(path)
    try:
        write_synced(tmp, write, target=path)
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


def create_new(path: str | os.PathLike, write: Callable[[BinaryIO], object]) -> bool:
    """Create `path` with what `write` writes, whole or not at all; False (nothing written) if it exists.

    The content is written and fsynced under a temporary name, then hard-linked to `path`: the link fails
    if `path` exists, and a reader (or a writer killed midway) never sees a partial or empty file. Where
    the filesystem has no hard links, `path` is created exclusively and written in place. A symbolic link
    whose target is missing creates its target (`_target`), as `open` with O_CREAT does.
    """
    path = _target(Path(path))
    _remove_leftovers(path)
    tmp = temp_name(path)
    try:
        write_synced(tmp, write, target=path)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError as e:
            if e.errno not in _NO_LINKS:
                raise
            try:
                write_synced(path, write, os.O_EXCL)
            except FileExistsError:
                return False
            except BaseException:
                path.unlink(missing_ok=True)  # created here, exclusively: a partial file is ours to remove
                raise
    finally:
        tmp.unlink(missing_ok=True)
    fsync_path(path.parent)
    return True


def create_files(
    files: Mapping[str | os.PathLike, bytes], absent: Collection[str | os.PathLike] = ()
) -> Path | None:
    """Create several new files as one unit: all of them, or none. Returns None when they are in place (made
    now, or found holding exactly these bytes: the rerun of a command killed once they were), else the first
    that exists, or the first of `absent` (names of the unit this time without content) that does: nothing
    is created then.

    Each file is written and fsynced under its temporary name (`temp_name`); then a journal beside the last
    file (the commit point: the file readers start from, created last) records each file's path and identity
    (device and inode); the files are hard-linked into place in order, and removing the journal commits the
    unit. A failure removes the files linked so far. A writer killed before its journal is gone leaves one,
    and the next `create_files` of the same last file removes the files it lists that still have the identity
    it recorded (a file made under the name since by another writer stays), so the command's rerun finds no
    half of its output in the way. Where the filesystem has no hard links, a missing name is renamed onto.
    """
    paths = [_target(Path(p)) for p in files]
    commit = paths[-1]
    _undo_cut_short(commit)
    for path in paths:
        _remove_leftovers(path)
    if taken := next((Path(p) for p in absent if Path(p).exists()), None):
        return taken
    if existing := [p for p in paths if p.exists() or p.is_symlink()]:
        same = len(existing) == len(paths) and all(
            p.is_file() and read_regular(p) == data for p, data in zip(paths, files.values(), strict=True)
        )
        return None if same else existing[0]
    temps = [temp_name(p) for p in paths]
    journal = commit.with_name(f".{commit.name}.{os.getpid()}{_SET}")
    linked: list[Path] = []
    try:
        for tmp, path, data in zip(temps, paths, files.values(), strict=True):
            write_synced(tmp, lambda f, data=data: f.write(data), target=path)
        ids = [[str(p), *_identity(t)] for p, t in zip(paths, temps, strict=True)]
        write_synced(journal, lambda f: f.write(json.dumps(ids).encode("utf-8")), target=commit)
        fsync_path(commit.parent)
        for tmp, path in zip(temps, paths, strict=True):
            if not _link(tmp, path):
                return path  # another writer took the name meanwhile: ours are removed below
            linked.append(path)
        fsync_path(commit.parent)
        journal.unlink()  # the unit is committed
        linked.clear()
    finally:
        _unlink_all([*linked, *temps, journal])  # after a failure, none of the files stays
    fsync_path(commit.parent)
    return None


def _identity(path: Path) -> tuple[int, int]:
    st = os.lstat(path)
    return st.st_dev, st.st_ino


def _link(tmp: Path, path: Path) -> bool:
    """Put `tmp`'s file at `path` keeping its identity (a hard link; a rename where there are none); False if
    the name is taken."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    except OSError as e:
        if e.errno not in _NO_LINKS:
            raise
        if path.exists():
            return False
        os.rename(tmp, path)
    return True


def _unlink_all(paths: list[Path]) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _undo_cut_short(commit: Path) -> None:
    """Remove what a killed `create_files` of `commit` published: each file its journal lists that still has
    the identity recorded there, then the journal. A journal that does not parse was cut short itself, before
    any file was linked."""
    prefix = f".{commit.name}."
    if not commit.parent.is_dir():
        return
    for journal in commit.parent.glob(f"{prefix}*{_SET}"):
        pid = journal.name[len(prefix) : -len(_SET)]
        if not pid.isdigit() or pid_alive(int(pid)):
            continue
        try:
            ids = json.loads(journal.read_bytes())
        except (OSError, ValueError):
            ids = []
        for entry in ids if isinstance(ids, list) else []:
            with contextlib.suppress(OSError, ValueError, TypeError):
                name, dev, ino = entry
                if _identity(Path(name)) == (dev, ino):
                    Path(name).unlink()
        with contextlib.suppress(OSError):
            journal.unlink()

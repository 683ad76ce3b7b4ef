"""Writing a figure: the format its suffix names, a check that the file can be written before anything is
drawn, and an atomic save with fixed metadata, so the same figure gives the same bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from matplotlib.figure import Figure

from rr_core.errors import PlotError
from rr_core.files.replacing import atomic_write

__all__ = [
    "FORMATS",
    "DEFAULT_DPI",
    "output_format",
    "check_writable",
    "save_figure",
    "write_atomic",
]


FORMATS: tuple[str, ...] = ("png", "pdf", "svg")
DEFAULT_DPI = 150


def output_format(path: str | os.PathLike) -> str:
    """The format a path's suffix names ('png', 'pdf' or 'svg'); PlotError for anything else."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        shown = f"'.{suffix}'" if suffix else "no suffix"
        raise PlotError(
            f"cannot write {path}: the file name has {shown}; end it in one of "
            + ", ".join(f".{f}" for f in FORMATS)
            + " to choose the format"
        )
    return suffix


def check_writable(path: str | os.PathLike) -> Path:
    """Fail early, before any work, when `path` cannot be written (bad suffix, no such folder, a folder)."""
    path = Path(path)
    output_format(path)
    if path.is_dir():
        raise PlotError(
            f"cannot write {path}: it is a directory; give a file name such as {path / 'fig.png'}"
        )
    if not path.parent.is_dir():
        raise PlotError(f"cannot write {path}: the folder {path.parent} does not exist")
    return path


def save_figure(fig: Figure, path: str | os.PathLike, *, dpi: int = DEFAULT_DPI) -> Path:
    """Write `fig` to `path` in the format its suffix names; never leaves a partial file.

    The figure is written to a hidden temporary file beside `path` and renamed over it only when
    complete (`write_atomic`), so a failure (full disk, unwritable folder, interrupted run) leaves `path`
    as it was.

    Returns
    -------
    The path written. Raises PlotError (a ValueError) for an unknown suffix or an unwritable path.
    """
    path = check_writable(path)
    fmt = output_format(path)
    if dpi <= 0:
        raise PlotError(f"dpi must be a positive number, not {dpi}")
    write_atomic(
        path, lambda f: fig.savefig(f, format=fmt, dpi=dpi, bbox_inches="tight", metadata=_metadata(fmt))
    )
    return path


def write_atomic(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """`rr_core.files.replacing.atomic_write`, with an unwritable folder reported as a PlotError."""
    try:
        atomic_write(path, write)
    except OSError as e:
        raise PlotError(f"cannot write {path}: {e.strerror or e}") from None


def _metadata(fmt: str) -> dict:
    # No creation date: the same data give byte-identical PDF and SVG files.
    return {"png": {}, "pdf": {"CreationDate": None}, "svg": {"Date": None}}[fmt]

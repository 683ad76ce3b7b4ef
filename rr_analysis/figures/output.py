"""Writing a figure: the format its suffix names, a check that the file can be written before anything is
drawn, an atomic save with fixed metadata, so the same figure gives the same bytes, what a write did (the
file, whether it replaced one), and the provenance footnote every figure of a sweep carries where its cells
hold runs that differ from the published ones.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from matplotlib.figure import Figure

from rr_analysis.comparison import Comparison
from rr_analysis.stats.pooling import cell_provenance, provenance_notes
from rr_core.errors import PlotError
from rr_core.files.replacing import atomic_write

__all__ = [
    "FORMATS",
    "DEFAULT_DPI",
    "output_format",
    "check_writable",
    "save_figure",
    "Written",
    "write_figure",
    "write_atomic",
    "with_provenance",
]

if TYPE_CHECKING:
    import pandas as pd

_FOOTNOTE_SIZE = 7  # points: the footnote reads as a caption, below the figure's own text


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


@dataclass(frozen=True)
class Written:
    """What `write_figure` did: the file it wrote, and whether a file was there before (which it replaced)."""

    path: Path
    replaced: bool


def write_figure(fig: Figure, path: str | os.PathLike, *, dpi: int = DEFAULT_DPI) -> Written:
    """`save_figure`, saying what it did, so that a caller can tell its reader that a file was replaced.

    Returns
    -------
    Written: the path written and whether a file stood there before. Raises PlotError as `save_figure`.

    Example
    -------
    >>> import tempfile
    >>> from matplotlib.figure import Figure
    >>> with tempfile.TemporaryDirectory() as d:
    ...     first = write_figure(Figure(), Path(d) / "f.svg")
    ...     again = write_figure(Figure(), Path(d) / "f.svg")
    >>> first.replaced, again.replaced
    (False, True)
    """
    replaced = check_writable(path).exists()
    return Written(save_figure(fig, path, dpi=dpi), replaced)


def with_provenance(fig: Figure, df: pd.DataFrame, comparison: Comparison | None = None) -> Figure:
    """`fig` with a footnote below it naming the cells of `df` the comparison reads whose runs differ from the
    published ones (`rr_analysis.stats.pooling.provenance_notes`: corpus, recipe, schedule, precision,
    hardware), one line per size and difference, so a figure of pooled rows never hides them. A sweep with
    none (the published file) gets nothing: the figure is drawn as before."""
    notes = provenance_notes(cell_provenance(df, comparison=comparison or Comparison()))
    if notes:
        # as many characters a line as the figure is wide (a character about 0.55 of the font size)
        chars = max(40, int(fig.get_figwidth() * 72 / (_FOOTNOTE_SIZE * 0.55)))
        lines = [w for n in notes for w in textwrap.wrap(n, chars, subsequent_indent="  ")]
        fig.text(0.01, 0.0, "\n".join(lines), ha="left", va="top", fontsize=_FOOTNOTE_SIZE, color="0.25")
    return fig


def write_atomic(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """`rr_core.files.replacing.atomic_write`, with an unwritable folder reported as a PlotError."""
    try:
        atomic_write(path, write)
    except OSError as e:
        raise PlotError(f"cannot write {path}: {e.strerror or e}") from None


def _metadata(fmt: str) -> dict:
    # No creation date: the same data give byte-identical PDF and SVG files.
    return {"png": {}, "pdf": {"CreationDate": None}, "svg": {"Date": None}}[fmt]

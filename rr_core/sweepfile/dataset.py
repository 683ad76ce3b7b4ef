"""Reading, writing and appending sweep CSVs, always through the schema.

`load_sweep` is the only way data enters the analysis; `append_rows` is the only way the trainer
writes it back. Both report every problem of a file at once, by line and column, as a `DataError`.
"""

from __future__ import annotations

import errno
import hashlib
import itertools
import os
from collections.abc import Callable, Iterable, Mapping
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from rr_core.files.appending import append_whole, truncate_to
from rr_core.files.locks import locked
from rr_core.files.reading import same_file
from rr_core.files.replacing import create_new
from rr_core.ladder import size_sort_key
from rr_core.sweepfile.columns import (
    INTEGER_COLUMNS,
    extra_columns,
    file_columns,
    format_row,
    header_of,
    known_columns,
    row_problems,
)
from rr_core.sweepfile.csv_text import FIELDS, DataError, file_problem, read_bytes
from rr_core.sweepfile.schema import (
    EXTRA_NAME,
    EXTRA_RULE,
    Problem,
    several_budgets,
    unknown_column,
)
from rr_core.sweepfile.typed import as_new, parse, schema_problems
from rr_core.variants import COMPARED

__all__ = [
    "run_keys",
    "next_seeds",
    "load_sweep",
    "read_sweep_text",
    "write_sweep",
    "sweep_text",
    "append_rows",
    "check_append",
    "bundled_path",
    "card_path",
    "size_order",
    "digest",
    "verify_reference",
    "PUBLISHED_DIGEST",
]


def bundled_path() -> Path:
    """The published dataset (42 runs) as shipped inside the installed package."""
    return Path(str(resources.files("rr_core.sweepfile") / "published" / "scaling_v8.csv"))


def card_path() -> Path:
    """The dataset card of the published sweep (its Markdown description), shipped beside it in the package."""
    return bundled_path().with_name("README.md")


def refuse_reference(path: str | os.PathLike) -> None:
    """Raise DataError if `path` is the packaged reference copy under any name (hard link, symlink)."""
    if same_file(path, bundled_path()):
        raise file_problem(
            path,
            f"is the reference copy of the published sweep installed with rr ({bundled_path()}), which rr "
            "never writes; write to a copy of it instead",
        )


def read_sweep_text(text: str, path: str | os.PathLike | None = None) -> pd.DataFrame:
    """Parse and validate CSV text (see `load_sweep`)."""
    return parse(text.encode("utf-8"), path)


def load_sweep(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """Load a sweep CSV, validated against the schema, as a typed DataFrame.

    Parameters
    ----------
    path
        A CSV with the columns size, variant, seed, params_M, steps, val_loss, ece, minutes (any order).
        None loads the published dataset bundled with the package, which is checked against its pinned
        digest (`PUBLISHED_DIGEST`), as is any other name for that file.

    Returns
    -------
    DataFrame with those columns in that order: seed and steps int64, size an ordered categorical whose
    categories are the sizes present smallest first (`size_order`: sorting and grouping follow size, and
    ``df["size"].astype(str)`` gives plain labels), variant str, the rest float64 (ece and minutes NaN where not measured); then the recipe columns it has
    (`rr_core.sweepfile.schema.RECIPE_COLUMNS`: lr, init_seed and data_seed float64, NaN where empty, role
    str); then any extra measured column the file carries, in
    its order, as float64 (`rr_core.sweepfile.schema.EXTRA_NAME` and `EXTRA_RULE`: an ``accuracy`` column for
    ``rr analyze --metric accuracy``). Writers (`write_sweep`, `append_rows`, `rr merge`) keep them. Rows keep the file's order;
    ``df.attrs["lines"]`` holds each row's line number in the file (a tuple).

    Raises
    ------
    DataError
        Listing every problem (file, line, column, value, rule). A BOM, CRLF line ends, blank lines and
        whitespace around cells are tolerated. Only a regular file of at most 1 GiB is read
        (`rr_core.files.reading.read_regular`); a FIFO, device or socket is refused before it is opened.

    Example
    -------
    >>> df = load_sweep()
    >>> len(df), df["size"].nunique()
    (42, 5)
    >>> df.sort_values("size")["size"].unique().tolist()
    ['60M', '150M', '320M', '590M', '1B']
    """
    path = Path(path) if path is not None else bundled_path()
    df = parse(read_bytes(path), path)
    if same_file(path, bundled_path()):
        verify_reference(df, path)
    df["size"] = pd.Categorical(df["size"], categories=size_order(df), ordered=True)
    return df


def size_order(df: pd.DataFrame) -> list[str]:
    """The sizes present in `df`, smallest first: by mean parameter count, then by the label's nominal count
    (`rr_core.ladder.size_sort_key`), then by median steps (the budgets of one size, where an analysis reads
    each as a cell of its own), then by label. `load_sweep`'s ``size`` categories follow it."""
    g = df.groupby("size", observed=True)
    m, steps = g["params_M"].mean(), g["steps"].median()
    return sorted(map(str, m.index), key=lambda s: (m[s], size_sort_key(s), steps[s], s))


def run_keys(df: pd.DataFrame) -> set[tuple]:
    """The (size, variant, seed) of every row of a sweep frame; with lr where the file records learning
    rates (lr None in an empty cell), then steps where it holds several budgets
    (`rr_core.sweepfile.schema.key_columns`, `several_budgets`)."""
    keys = zip(df["size"], df["variant"], df["seed"].astype(int), strict=True)
    if "lr" in df.columns:
        lrs = (None if np.isnan(lr) else float(lr) for lr in df["lr"])
        keys = ((*key, lr) for key, lr in zip(keys, lrs, strict=True))
    if several_budgets(df):
        keys = ((*key, int(steps)) for key, steps in zip(keys, df["steps"], strict=True))
    return set(keys)


def next_seeds(
    keys: set[tuple[str, str, int]], size: str, n: int, variants: tuple[str, ...] = COMPARED
) -> list[int]:
    """The `n` lowest seeds of `size` on which some of `variants` has no run in `keys`: the seeds to add.

    A seed that a crash left incomplete comes first, so every added seed completes a pairable block.
    """
    missing = (s for s in itertools.count() if any((size, v, s) not in keys for v in variants))
    return list(itertools.islice(missing, n))


# SHA-256 of the published rows in canonical form (sorted by size, variant, seed; published number format).
# Pins the reference copy itself: a test fails if rr_core/sweepfile/published/scaling_v8.csv is ever edited.
PUBLISHED_DIGEST = "075ec1eca0234b40efdcb075d394735114b1700770dbf70dca2f5800d93e9f90"


def digest(df: pd.DataFrame) -> str:
    """SHA-256 of rows in canonical form, independent of row order, column order and line ends."""
    rows = sorted(format_row(r) for r in df[FIELDS].to_dict("records"))
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


def verify_reference(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Raise DataError, naming the installed file, if the reference copy no longer holds the published rows.

    `load_sweep` calls this whenever it reads the reference copy (under any name), so an edited install
    is caught before any analysis or integrity check trusts it. (Here, not in `rr_core.sweepfile.integrity`, which
    reads this module: the loader may not import what stands on it.)
    """
    if digest(df) != PUBLISHED_DIGEST:
        rule = (
            "is the installed reference copy of the published sweep, and it does not match its pinned digest "
            "(it was edited or damaged); reinstall rr-toolkit to restore it"
        )
        raise DataError(path, [Problem(None, None, None, rule)])


def write_sweep(df: pd.DataFrame, path: str | os.PathLike, *, exact: bool = False) -> None:
    """Write a new sweep file, whole or not at all, refusing to overwrite an existing one.

    The schema's columns come first, in `FIELDS`' order, then the frame's extra measured columns in its
    order (finite numbers or empty, named by `EXTRA_NAME`). ``exact=True`` writes floats at full precision
    (round-trips bit for bit) instead of the published number format; extra columns are always written at
    full precision.
    """
    path = Path(path)
    body = sweep_text(df, path, exact=exact)
    if not create_new(path, lambda f: f.write(body)):  # never clobber a dataset
        raise FileExistsError(
            errno.EEXIST, "a sweep file already exists there; rr never overwrites one", str(path)
        )


def sweep_text(df: pd.DataFrame, path: str | os.PathLike, *, exact: bool = False) -> bytes:
    """The bytes `write_sweep` writes for `df` (validated, `path` naming the file in its errors): for a
    writer that publishes the file with others (`rr_core.sweepfile.merge`)."""
    refuse_reference(path)
    columns = file_columns(df.columns)
    problems = schema_problems(df[known_columns(columns)].reset_index(drop=True), range(2, len(df) + 2))
    problems += _extra_problems(df)
    if problems:
        raise DataError(path, problems)
    if exact:
        whole = {
            c: df[c].astype("Int64") for c in INTEGER_COLUMNS if c in columns
        }  # 131072000, not 131072000.0
        body = df[columns].assign(**whole).to_csv(index=False, float_format=None, lineterminator="\n")
    else:
        body = (
            "\n".join([",".join(columns), *(format_row(r, columns) for r in df[columns].to_dict("records"))])
            + "\n"
        )
    return body.encode("utf-8")


def _extra_problems(df: pd.DataFrame) -> list[Problem]:
    """What is wrong with a frame's extra columns as a sweep file would hold them (name, finite numbers)."""
    problems = []
    for name in extra_columns(df.columns):
        if not EXTRA_NAME.fullmatch(str(name)):
            problems.append(
                Problem(1, str(name), None, unknown_column(str(name), list(map(str, df.columns))))
            )
            continue
        values = pd.to_numeric(df[name], errors="coerce")
        if (values.isna() & df[name].notna()).any() or np.isinf(values).any():
            problems.append(Problem(1, str(name), None, EXTRA_RULE))
    return problems


def check_append(df: pd.DataFrame, rows: Iterable[Mapping], path: str | os.PathLike | None = None) -> None:
    """Raise the DataError `append_rows` would raise for `rows` on the file `df` was loaded from, without
    reading that file again: only the new rows are parsed, then checked with `df`'s by the schema.

    Problems in the new rows are cited as "new row N", as `append_rows` cites them.

    Example
    -------
    >>> row = load_sweep().iloc[0].to_dict()
    >>> try:
    ...     check_append(load_sweep(), [row], "copy.csv")
    ... except DataError as e:
    ...     print(e.problems[-1])
    new row 1, column size,variant,seed: ('60M', 'review_neutral', 0) - duplicate run: this (size, variant, seed) appears more than once
    """
    rows = list(rows)
    columns = file_columns(df.columns)
    if problems := row_problems(rows, columns):
        raise DataError(path, problems)
    new = [format_row(r, columns) for r in rows]
    added = parse(("\n".join([",".join(columns), *new]) + "\n").encode("utf-8"), path, new_from=2)
    lines = list(df.attrs.get("lines") or range(2, len(df) + 2))
    first = max(lines, default=1) + 1  # where the new rows would start
    known = known_columns(columns)
    both = pd.concat([df[known], added[known]], ignore_index=True)
    if problems := schema_problems(both, [*lines, *range(first, first + len(new))]):
        raise DataError(path, [as_new(p, first) for p in problems])


def append_rows(
    path: str | os.PathLike, rows: Iterable[Mapping], *, then: Callable[[], object] | None = None
) -> pd.DataFrame:
    """Append validated rows to a sweep CSV under an exclusive lock, whole or not at all.

    A missing file is created whole, header and rows at once (`rr_core.files.replacing.create_new`): a writer
    killed midway leaves no file or a valid one, never an empty one. An existing file is locked
    (`rr_core.files.locks.locked`), re-read and validated together with the new rows, and only then are the new
    lines appended in one write, checked and fsynced (`rr_core.files.appending.append_whole`): on a full disk or a
    file-size limit the file is cut back to its old length, never left with a torn last row. The packaged
    reference copy is refused under any name.

    `then`, if given, runs under the same lock once the rows are in (the trainer appends the run's provenance
    record there, so a reader holding the lock sees the row and its record together or neither); if it raises,
    the rows are removed again and its exception propagates.

    Rows are written in the file's own column order; an extra column of the file a row lacks is left empty,
    and a row with a key the file has no column for is refused (a new file gets `FIELDS`, then the rows'
    other keys). Returns the new rows as parsed back. Raises DataError if the combined file would be invalid
    (for instance a duplicate (size, variant, seed)), in which case nothing is written; problems in the new
    rows are cited as "new row N", since they have no line in the file. Raises `rr_core.files.appending.Unwritten`
    (an InputError naming the file) when the rows could not be written whole.
    """
    path, rows = Path(path), list(rows)
    refuse_reference(path)
    if not path.exists():
        whole = _lines(rows, file_columns(dict.fromkeys(k for r in rows for k in r)), path, header=True)
        df = parse(whole, path, new_from=2)
        if create_new(path, lambda f: f.write(whole)):
            if then is not None:
                _then_or_remove(path, len(whole), then)
            return df
    with locked(path, os.O_RDWR | os.O_APPEND) as fd:  # another writer may have created it meanwhile
        existing = read_bytes(path, fd)  # through the lock's descriptor: one opening of the file per append
        if not existing.strip():  # empty, as a writer killed mid-create once left it: add the header
            columns = file_columns(dict.fromkeys(k for r in rows for k in r))
            body = _lines(rows, columns, path, header=True)
        else:  # the file's own columns, in its order
            body = _lines(rows, header_of(existing), path)
        # after a torn last line the rows start on a new line (append_whole adds it), the torn one skipped
        torn = b"\n" if existing.strip() and not existing.endswith(b"\n") else b""
        combined = existing + torn + body
        df = parse(combined, path, new_from=combined.count(b"\n") - len(rows) + 1)
        start = append_whole(fd, body, path, f"{len(rows)} row(s)")  # O_APPEND keeps it at the end
        if then is not None:
            _then_or_undo(fd, start, then)
    return df.iloc[len(df) - len(rows) :].reset_index(drop=True)


def _lines(rows: list[Mapping], columns: list[str], path, *, header: bool = False) -> bytes:
    """The CSV lines of `rows` in `columns`' order (after a header line when asked), each ending in a newline.

    Raises DataError when a row has a key that is none of `columns`.
    """
    if problems := row_problems(rows, columns):
        raise DataError(path, problems)
    lines = [",".join(columns)] if header else []
    return ("\n".join([*lines, *(format_row(r, columns) for r in rows)]) + "\n").encode("utf-8")


def _then_or_undo(fd: int, start: int, then: Callable[[], object]) -> None:
    """Run `then`; if it raises, cut the locked file `fd` back to `start` (removing the rows just added)."""
    try:
        then()
    except BaseException:
        truncate_to(fd, start)
        raise


def _then_or_remove(path: Path, size: int, then: Callable[[], object]) -> None:
    """`then` for a file just created: under its lock; if it raises, the file is removed again, unless another
    writer has appended to it meanwhile (then only the rows it holds beyond ours would be lost)."""
    with locked(path, os.O_RDWR | os.O_APPEND) as fd:
        try:
            then()
        except BaseException:
            if os.fstat(fd).st_size == size:
                path.unlink(missing_ok=True)
            raise

"""Reading, writing and appending sweep CSVs, always through the schema.

`load_sweep` is the only way data enters the analysis; `append_rows` is the only way the trainer
writes it back. Both report every problem of a file at once, by line and column, as a `DataError`.
"""

from __future__ import annotations

import csv
import errno
import hashlib
import io
import itertools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pandera.pandas as pandera
import pyarrow as pa
import pyarrow.compute as pc

from rr_core.files.appending import append_whole, truncate_to
from rr_core.files.locks import locked
from rr_core.files.reading import same_file
from rr_core.files.replacing import create_new
from rr_core.ladder import size_problem, size_sort_key
from rr_core.sweepfile import DECIMALS
from rr_core.sweepfile.csv_text import DECIMAL_COMMA, FIELDS, DataError, file_problem, read_bytes, split_cells
from rr_core.sweepfile.schema import (
    COLUMNS,
    EXTRA_NAME,
    EXTRA_RULE,
    GROUP_RULES,
    RECIPE_COLUMNS,
    Problem,
    key_columns,
    no_value,
    schema_for,
    several_budgets,
    unknown_column,
)
from rr_core.variants import COMPARED, variant_problem

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
    "plain",
    "digest",
    "verify_reference",
    "PUBLISHED_DIGEST",
]


_INT = r"^-?[0-9]+$"
_FLOAT = r"(?i)^[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)(e[+-]?[0-9]+)?|inf|infinity|nan)$"


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


def _numbers(s: pa.ChunkedArray, kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parse one numeric column: (values, which cells do not parse, which are too large for int64).

    Integers are ASCII digits with an optional minus, nothing else ('1e1', '0x10', '1_000' and '1.0' are
    not integers); numbers are decimal, with an exponent, or inf/nan. Unparsed cells become 0 or NaN.
    """
    ok = pc.match_substring_regex(s, _INT if kind == "int" else _FLOAT).to_numpy(zero_copy_only=False)
    big = np.zeros(len(s), dtype=bool)
    if kind == "int":
        long = np.flatnonzero(ok & (pc.utf8_length(s).to_numpy() >= 19))
        big[long] = [not -(2**63) <= int(s[i].as_py()) < 2**63 for i in long]
        ok &= ~big
    filler = "0" if kind == "int" else "nan"
    values = pc.cast(pc.if_else(pa.array(ok), s, filler), pa.int64() if kind == "int" else pa.float64())
    return values.to_numpy(zero_copy_only=False), ~ok & ~big, big


def _comma_rule(rule: str, value: str, kind: str) -> str:
    """`rule`, naming the decimal comma when a number is written with one ('1,7016')."""
    if kind == "float" and rule.startswith("is not") and DECIMAL_COMMA.fullmatch(value.encode()):
        return f"{rule}: it has a decimal comma; write {value.replace(',', '.')}"
    return rule


def _typed(columns: dict[str, pa.ChunkedArray], lines: np.ndarray) -> tuple[pd.DataFrame, list[Problem]]:
    """Turn string cells into typed columns, collecting every cell that does not parse."""
    out, problems = {}, []
    for col in (*COLUMNS, *(c for c in RECIPE_COLUMNS if c.name in columns)):
        s = pc.utf8_trim_whitespace(columns[col.name])
        empty = pc.equal(s, "").to_numpy(zero_copy_only=False)
        if not col.optional:
            problems += [
                Problem(int(lines[i]), col.name, "", no_value(col.name)) for i in np.flatnonzero(empty)
            ]
        if col.kind == "str":
            out[col.name] = s.to_pandas()
            if col.name in _LABEL_PROBLEMS:
                problems += _label_problems(s, lines, col.name)
            continue
        values, bad, big = _numbers(s, col.kind)
        kind = "an integer" if col.kind == "int" else "a number"
        # an empty recipe cell means the recipe's value, so a NaN there is refused, not read as empty
        recipe = col in RECIPE_COLUMNS and col.kind == "float"
        spelled_nan = ~empty & ~bad & np.isnan(values) if recipe else np.zeros(len(values), dtype=bool)
        for rule, mask in (
            (f"is not {kind}", bad & ~empty),
            ("is too large: an integer must be below 2^63", big),
            (f"holds NaN: {col.name} must be {col.rule}", spelled_nan),
        ):
            problems += [
                Problem(int(lines[i]), col.name, (v := s[i].as_py()), _comma_rule(rule, v, col.kind))
                for i in np.flatnonzero(mask)
            ]
        # an optional integer (tokens, init_seed, data_seed) is held as float64, NaN where empty, as every optional number is
        out[col.name] = np.where(empty, np.nan, values) if col.optional and col.kind == "int" else values
    for name in (n for n in columns if n not in out):
        values, problem = _extra(pc.utf8_trim_whitespace(columns[name]), name)
        out[name] = values
        problems += [problem] if problem else []
    return pd.DataFrame(out), problems


def _extra(s: pa.ChunkedArray, name: str) -> tuple[np.ndarray, Problem | None]:
    """An extra measured column as float64 (NaN where empty), or a header problem when a cell is not a
    finite number."""
    values, bad, _ = _numbers(s, "float")
    empty = pc.equal(s, "").to_numpy(zero_copy_only=False)
    if (bad & ~empty).any() or not np.isfinite(values[~empty]).all():
        return values, Problem(1, name, None, f"unknown column (expected {','.join(FIELDS)}): {EXTRA_RULE}")
    return values, None


_LABEL_PROBLEMS = {"size": size_problem, "variant": variant_problem}


def _label_problems(s: pa.ChunkedArray, lines: np.ndarray, column: str) -> list[Problem]:
    """A problem for each size or variant label that is not one, naming the nearest valid one (looked up once
    per label)."""
    problems = []
    for label in pc.unique(s).to_pylist():
        if label and (rule := _LABEL_PROBLEMS[column](label)) is not None:
            rows = np.flatnonzero(pc.equal(s, label).to_numpy(zero_copy_only=False))
            problems += [Problem(int(lines[i]), column, label, rule) for i in rows]
    return problems


def _schema_problems(
    df: pd.DataFrame, lines: Sequence[int], unparsed: Sequence[Problem] = ()
) -> list[Problem]:
    """What the schema finds wrong in `df`, cited by `lines[i]` for the row labelled i (one per cell).

    Rows with an `unparsed` cell hold a filler there (0 or NaN): their other cells are still checked one by
    one, but the rules across rows (duplicate runs, constant params_M and steps) see only the other rows, so a
    seed 'abc' is not also reported as a duplicate of seed 0.
    """
    if unparsed:
        seen = {(p.line, p.column) for p in unparsed}
        cells = [
            p
            for p in _schema_problems(df, lines)
            if p.column in df.columns and p.rule not in GROUP_RULES and (p.line, p.column) not in seen
        ]
        rows = _schema_problems(df[~np.isin(lines, [p.line for p in unparsed])], lines)
        return cells + [p for p in rows if p.rule in GROUP_RULES or p.column not in df.columns]
    if isinstance(df["size"].dtype, pd.CategoricalDtype):  # a loaded sweep: the schema checks the labels
        df = df.astype({"size": str})
    budgets = several_budgets(df)
    try:
        schema_for(df.columns, budgets).validate(df, lazy=True)
        return []
    except pandera.errors.SchemaErrors as e:
        fc = e.failure_cases
    problems, seen = [], set()
    for row in fc.itertuples(index=False):
        if pd.isna(row.index):
            continue
        i = int(row.index)
        line = int(lines[i])
        if row.check in GROUP_RULES:
            column, rule = GROUP_RULES[row.check], row.check
        elif row.check == "multiple_fields_uniqueness":
            key = key_columns(df.columns, budgets)
            column, rule = ",".join(key), f"duplicate run: this ({', '.join(key)}) appears more than once"
        elif row.check == "not_nullable":  # a NaN where a value is needed: 'nan' in a file, NaN in a frame
            column, rule = row.column, no_value(row.column, "holds NaN (no value)")
        else:
            column, rule = row.column, f"must be {row.check}"
        if (line, column) in seen:
            continue
        seen.add((line, column))
        value = (
            df.at[i, column]
            if column in df.columns
            else tuple(map(plain, df.loc[i, key_columns(df.columns, budgets)]))
        )
        if column in _INTEGERS and pd.notna(value):  # an optional integer held as float64: shown as written
            value = int(value)
        problems.append(Problem(line, column, plain(value), rule))
    return sorted(problems, key=lambda p: (p.line, p.column or ""))


def plain(value):
    """A numpy scalar as the Python value it holds (np.int64(3) -> 3), so messages and JSON show plain numbers."""
    return value.item() if isinstance(value, np.generic) else value


class _Lines(tuple):
    """Line numbers in `DataFrame.attrs`: immutable, so a deep copy may return the same object.

    pandas deep-copies attrs into the result of every operation; for a plain list of 10^5 line numbers
    each copy was a Python loop (~0.1 s), and `gap_table` on 10^5 rows spent 90% of its time there.
    """

    def __deepcopy__(self, memo: dict) -> _Lines:
        return self


def _parse(raw: bytes, path, new_from: int | None = None) -> pd.DataFrame:
    """Parse and validate the bytes of a sweep file; rows from line `new_from` on are being appended."""
    columns, lines = split_cells(raw, path)
    df, problems = _typed(columns, lines)
    del columns
    problems += _schema_problems(df[known_columns(df.columns)], lines, problems)
    if problems:
        problems.sort(key=lambda p: (p.line or 0, p.column or ""))
        raise DataError(path, problems if new_from is None else [_as_new(p, new_from) for p in problems])
    df.attrs["path"] = str(path) if path is not None else None
    df.attrs["lines"] = _Lines(lines.tolist())
    return df


def _as_new(problem: Problem, new_from: int) -> Problem:
    """A problem on a row not yet in the file, cited by its place among the new rows, not a line number."""
    if problem.line is None or problem.line < new_from:
        return problem
    return replace(problem, line=None, row=f"new row {problem.line - new_from + 1}")


def read_sweep_text(text: str, path: str | os.PathLike | None = None) -> pd.DataFrame:
    """Parse and validate CSV text (see `load_sweep`)."""
    return _parse(text.encode("utf-8"), path)


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
    df = _parse(read_bytes(path), path)
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


def format_row(row: Mapping, columns: Sequence[str] = FIELDS) -> str:
    """One CSV line (no newline) of `columns` in the published number format; an extra measured column's
    number as Python writes it (shortest round trip), an empty cell where `row` has none."""
    cells = []
    for name in columns:
        v = row.get(name)
        if v is None or (isinstance(v, float) and np.isnan(v)):
            cells.append("")
        elif name in DECIMALS:
            cells.append(repr(round(float(v), DECIMALS[name])))
        elif name in _INTEGERS:  # an optional integer, held as float64 (tokens, init_seed, data_seed)
            cells.append(str(int(v)))
        elif name in FIELDS or isinstance(v, str):
            cells.append(str(v))
        else:
            cells.append(repr(float(v)))
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(cells)
    return buf.getvalue()


def extra_columns(columns: Iterable[str]) -> list[str]:
    """The names among `columns` beyond the schema's (`FIELDS` and the recipe columns): extra measured
    columns, in their order."""
    return [c for c in columns if c not in FIELDS and c not in _RECIPE]


_RECIPE = [c.name for c in RECIPE_COLUMNS]
_INTEGERS = {c.name for c in RECIPE_COLUMNS if c.kind == "int"}


def known_columns(columns: Iterable[str]) -> list[str]:
    """The schema's columns a file of `columns` has: `FIELDS`, then the recipe columns present (lr, role,
    init_seed, data_seed)."""
    columns = list(columns)
    return [*FIELDS, *(c for c in _RECIPE if c in columns)]


def file_columns(columns: Iterable[str]) -> list[str]:
    """The columns a sweep file of `columns` is written with: `known_columns`, then the extra measured ones."""
    columns = list(columns)
    return [*known_columns(columns), *extra_columns(columns)]


def _header(raw: bytes) -> list[str]:
    """The column names of a sweep file's first line, as written (any order); `FIELDS` when it does not
    name them all (the file is then refused for what it is once the new rows are parsed with it)."""
    first = raw.split(b"\n", 1)[0].decode("utf-8-sig", errors="replace").strip("\r")
    names = [name.strip() for name in next(csv.reader([first]), [])]
    return names if set(FIELDS) <= set(names) else list(FIELDS)


def _row_columns(rows: Sequence[Mapping], columns: Sequence[str]) -> list[Problem]:
    """A problem for each key of a new row that is not one of `columns` (a file's header): rows are
    appended to the columns a file has, never to a column it lacks."""
    return [
        Problem(
            None,
            key,
            None,
            "the file has no such column: rr appends only to the columns a file has",
            f"new row {i}",
        )
        for i, row in enumerate(rows, 1)
        for key in row
        if key not in columns
    ]


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
    problems = _schema_problems(df[known_columns(columns)].reset_index(drop=True), range(2, len(df) + 2))
    problems += _extra_problems(df)
    if problems:
        raise DataError(path, problems)
    if exact:
        whole = {c: df[c].astype("Int64") for c in _INTEGERS if c in columns}  # 131072000, not 131072000.0
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
    if problems := _row_columns(rows, columns):
        raise DataError(path, problems)
    new = [format_row(r, columns) for r in rows]
    added = _parse(("\n".join([",".join(columns), *new]) + "\n").encode("utf-8"), path, new_from=2)
    lines = list(df.attrs.get("lines") or range(2, len(df) + 2))
    first = max(lines, default=1) + 1  # where the new rows would start
    known = known_columns(columns)
    both = pd.concat([df[known], added[known]], ignore_index=True)
    if problems := _schema_problems(both, [*lines, *range(first, first + len(new))]):
        raise DataError(path, [_as_new(p, first) for p in problems])


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
        df = _parse(whole, path, new_from=2)
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
            body = _lines(rows, _header(existing), path)
        # after a torn last line the rows start on a new line (append_whole adds it), the torn one skipped
        torn = b"\n" if existing.strip() and not existing.endswith(b"\n") else b""
        combined = existing + torn + body
        df = _parse(combined, path, new_from=combined.count(b"\n") - len(rows) + 1)
        start = append_whole(fd, body, path, f"{len(rows)} row(s)")  # O_APPEND keeps it at the end
        if then is not None:
            _then_or_undo(fd, start, then)
    return df.iloc[len(df) - len(rows) :].reset_index(drop=True)


def _lines(rows: list[Mapping], columns: list[str], path, *, header: bool = False) -> bytes:
    """The CSV lines of `rows` in `columns`' order (after a header line when asked), each ending in a newline.

    Raises DataError when a row has a key that is none of `columns`.
    """
    if problems := _row_columns(rows, columns):
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

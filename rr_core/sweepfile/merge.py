"""Merging sweep files: per-job results files (or sweeps from several machines) into one new dataset.

Where the shared results file cannot be locked across hosts (see the README, "On a cluster"), each job
writes its own file and `merge_sweeps` joins them afterwards: every input is validated, a run present in
several inputs must have the same values everywhere, extra measured columns included (a column a file
lacks counts as empty; identical copies are kept once; the published rows that each file started from are
such copies), the merged file has every input's columns, the merged rows must pass the schema together (same steps and
params_M across seeds of a size and variant), and the provenance sidecars (`A.runs.jsonl`, ...) are merged
into the new file's. Nothing is ever overwritten: the output and its sidecar must not exist. Each input is
read with its sidecar under the input's lock, so a trainer appending meanwhile adds its row and record to the
merge together or not at all; the output and its sidecar are written as one unit
(`rr_core.files.replacing.create_files`), both whole or neither left behind (a full disk, a kill between the
two included), so a merge cut short is run again as it was; a rerun that finds both holding what it would
write succeeds. Torch-free.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from rr_core.errors import InputError
from rr_core.files.locks import locked
from rr_core.files.replacing import create_files
from rr_core.sweepfile.columns import file_columns
from rr_core.sweepfile.csv_text import FIELDS, DataError
from rr_core.sweepfile.dataset import bundled_path, load_sweep, sweep_text
from rr_core.sweepfile.provenance import read_records, sidecar_path
from rr_core.sweepfile.schema import KEY, key_columns, several_budgets
from rr_core.sweepfile.typed import plain

__all__ = ["merge_sweeps", "join_columns"]


def _same(a: Any, b: Any) -> bool:
    """Equal cells: both empty (NaN, or a column the row's file lacks) or the same value."""
    return (pd.isna(a) and pd.isna(b)) or a == b


def _key_cell(value: Any) -> Any:
    """A key's cell as a dict key: a plain value, None for an empty one (NaN never equals itself)."""
    return None if value is None or (isinstance(value, float) and pd.isna(value)) else plain(value)


def _cell(value: Any) -> str:
    return "an empty cell" if pd.isna(value) else repr(plain(value))


def _snapshot(path: Path) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """A sweep file's rows and its sidecar's records as one snapshot, read under the file's lock.

    The trainer appends a run's row and its record under that lock (`append_rows(then=...)`), so a run being
    appended meanwhile is in both or in neither, never a row without its record.
    """
    if not path.is_file():
        return load_sweep(path), []  # load_sweep says what it is instead (no such file, a FIFO, a folder)
    with locked(path, os.O_RDONLY | os.O_NONBLOCK):
        return load_sweep(path), read_records(sidecar_path(path))


def _combine(snapshots: Sequence[tuple[Path, pd.DataFrame]]) -> tuple[pd.DataFrame, list[str], int]:
    """The rows of all inputs in order, each run once: (rows, each row's origin "file line N", copies dropped).

    Raises InputError listing every run whose copies disagree, with both places and the differing column.
    """
    first: dict[tuple, tuple[pd.Series, str]] = {}
    parts, origins, conflicts = [], [], []
    columns = file_columns(dict.fromkeys(c for _, df in snapshots for c in df.columns))
    # with lr where an input records it (one seed at two rates is two runs), and with steps where the inputs
    # together hold a run at several step counts (one run's budgets are several runs)
    names = key_columns(columns)
    both = pd.concat([df.reindex(columns=[*names, "steps"]).astype({"size": str}) for _, df in snapshots])
    key_of = key_columns(columns, several_budgets(both))
    for path, df in snapshots:
        keep = []
        for (_, row), line in zip(df.iterrows(), df.attrs["lines"], strict=True):
            key, where = tuple(_key_cell(row.get(k)) for k in key_of), f"{path} line {line}"
            keep.append(key not in first)
            if keep[-1]:
                first[key] = (row, where)
                origins.append(where)
            elif diff := [c for c in columns if not _same(row.get(c), first[key][0].get(c))]:
                seen, there = first[key]
                conflicts.append(
                    f"  {where}: {' '.join(map(str, key))} has {diff[0]} {_cell(row.get(diff[0]))}, "
                    f"{there} has {_cell(seen.get(diff[0]))}"
                )
        parts.append((df, keep))
    if conflicts:
        raise InputError(
            f"{len(conflicts)} run(s) appear with different values in the inputs; rr merge keeps one copy of "
            "identical rows only. Remove the wrong row, then merge again:\n" + "\n".join(conflicts)
        )
    merged = pd.concat([df[keep] for df, keep in parts], ignore_index=True)
    return merged, origins, sum(len(df) for df, _ in parts) - len(merged)


def _merged_records(sidecars: Sequence[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every provenance record of the inputs' sidecars, in input order, each distinct record once."""
    seen, records = set(), []
    for sidecar in sidecars:
        for record in sidecar:
            text = json.dumps(record, sort_keys=True)
            if text not in seen:
                seen.add(text)
                records.append(record)
    return records


def merge_sweeps(paths: Sequence[str | os.PathLike], out: str | os.PathLike) -> dict[str, Any]:
    """Merge sweep files into the new file `out`, and their provenance sidecars into its sidecar.

    Parameters
    ----------
    paths
        Sweep CSVs, each valid on its own (`load_sweep`). Rows keep their order, inputs in the given order;
        a run already taken from an earlier input is dropped if identical, refused if it differs.
    out
        The merged dataset; neither it nor its sidecar may exist. Values are written at full precision.

    Returns
    -------
    A summary: out, rows (written), copies (identical rows dropped), records (the inputs' provenance records
    written to the sidecar `out.runs.jsonl`). The sidecar also holds one "source" record per merged row: the
    input file and line it came from, and whether it is a published row unchanged.

    Raises
    ------
    DataError
        An input is not a valid sweep (every problem, by line and column).
    InputError
        `out` or its sidecar exists; no input; runs whose copies disagree (each listed with both places);
        or merged rows that break a rule together (say, two step counts for one size and variant), each
        named by the input file and line it comes from.
    """
    paths, out = [Path(p) for p in paths], Path(out)
    if not paths:
        raise InputError("rr merge needs at least one sweep file to read")
    snapshots = [_snapshot(path) for path in paths]
    merged, origins, copies = _combine([(p, df) for p, (df, _) in zip(paths, snapshots, strict=True)])
    records = _merged_records([records for _, records in snapshots])
    _write_merged(merged, records + _source_records(merged, origins), out, origins, "rr merge")
    return {"out": str(out), "rows": len(merged), "copies": copies, "records": len(records)}


def _source_records(merged: pd.DataFrame, origins: list[str]) -> list[dict[str, Any]]:
    """One "source" record per merged row: the input file and line it came from, and whether it is a
    published row unchanged (what `rr analyze --pool-check` reads beside the run records)."""
    published = load_sweep(bundled_path())
    values = [c for c in FIELDS if c not in KEY]
    pub = {
        tuple(plain(v) for v in k): tuple(r)
        for k, r in zip(
            published[KEY].itertuples(index=False), published[values].itertuples(index=False), strict=True
        )
    }
    out = []
    for (_, row), origin in zip(merged.iterrows(), origins, strict=True):
        key = tuple(plain(row[k]) for k in KEY)
        lr = _key_cell(row.get("lr"))  # a row that records its rate (a tuning's) is never a published one
        same = (
            lr is None and key in pub and all(_same(a, b) for a, b in zip(pub[key], row[values], strict=True))
        )
        named = dict(zip(KEY, key, strict=True)) | ({} if lr is None else {"lr": lr})
        out.append({"status": "source", **named, "source": origin, "published": same})
    return out


def _write_merged(
    merged: pd.DataFrame, records: list[dict[str, Any]], out: Path, origins: list[str], command: str
) -> None:
    """Write the merged rows to `out` and the records to its sidecar as one unit: both whole, or neither
    (`rr_core.files.replacing.create_files`: the sidecar first, the CSV last), so `out` never appears without
    its records, and a merge killed between the two leaves nothing that blocks its rerun."""
    try:
        body = sweep_text(merged, out, exact=True)
    except DataError as e:
        lines = [f"  {origins[p.line - 2]}, column {p.column}: {p.value!r} - {p.rule}" for p in e.problems]
        raise InputError("the merged rows break the schema together:\n" + "\n".join(lines)) from None
    text = "".join(json.dumps(r, sort_keys=True, allow_nan=False) + "\n" for r in records)
    files = {sidecar_path(out): text.encode("utf-8")} if records else {}
    if (
        existing := create_files({**files, out: body}, absent=[] if records else [sidecar_path(out)])
    ) is not None:
        raise InputError(f"{existing} exists; {command} writes a new file and never overwrites one")


def join_columns(
    path: str | os.PathLike, measured: Sequence[dict[str, Any]], out: str | os.PathLike
) -> dict[str, Any]:
    """Write the new file `out`: the sweep `path`'s rows with measured columns joined on by run.

    Parameters
    ----------
    path
        A sweep CSV (`load_sweep`); its provenance sidecar is copied to `out`'s.
    measured
        One record per run: its size, variant and seed (`KEY`) and its measured values, column name ->
        number (downstream accuracies, say). Each run must be a row of `path`, once.
    out
        The new file; neither it nor its sidecar may exist.

    Returns
    -------
    A summary: out, rows (written), joined (rows that got values), columns (the new ones, in order).

    Notes
    -----
    A row of `path` no record names keeps an empty cell in the new columns (analyses of such a column leave
    it out). Every column of `path` is kept; a new column may not have a name `path` already uses, and it
    must be an extra measured column as the schema reads one (`rr_core.sweepfile.schema.EXTRA_NAME`).

    Raises
    ------
    InputError
        `out` or its sidecar exists, a record names a run `path` lacks or names one twice, or a column
        is one `path` has already.
    DataError
        `path` is not a valid sweep, or a column's name or values cannot stand in a sweep file.
    """
    path, out = Path(path), Path(out)
    df, records = _snapshot(path)
    rows = {tuple(plain(v) for v in key): i for i, key in enumerate(df[KEY].itertuples(index=False))}
    new = list(dict.fromkeys(c for m in measured for c in m if c not in KEY))
    if taken := [c for c in new if c in df.columns]:
        raise InputError(
            f"{path} has the column(s) {', '.join(taken)} already; join onto a file without them"
        )
    joined = df.assign(**{c: float("nan") for c in new})
    seen, problems = set(), []
    for m in measured:
        key = tuple(m[k] for k in KEY)
        if key not in rows or key in seen:
            problems.append(
                f"  {' '.join(map(str, key))}: "
                + ("measured twice" if key in seen else f"no such run in {path}")
            )
            continue
        seen.add(key)
        for c in new:
            joined.loc[rows[key], c] = m.get(c, float("nan"))
    if problems:
        raise InputError(
            f"{len(problems)} measured run(s) cannot be joined onto {path}:\n" + "\n".join(problems)
        )
    origins = [f"{path} line {line}" for line in df.attrs["lines"]]
    _write_merged(joined, records, out, origins, "a join")
    return {"out": str(out), "rows": len(joined), "joined": len(seen), "columns": new}

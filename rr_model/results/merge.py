"""Merging sweep files: per-job results files (or sweeps from several machines) into one new dataset.

Where the shared results file cannot be locked across hosts (see the README, "On a cluster"), each job
writes its own file and `merge_sweeps` joins them afterwards: every input is validated, a run present in
several inputs must have the same values everywhere (identical copies are kept once; the published rows
that each file started from are such copies), the merged rows must pass the schema together (same steps and
params_M across seeds of a size and variant), and the provenance sidecars (`A.runs.jsonl`, ...) are merged
into the new file's. Nothing is ever overwritten: the output and its sidecar must not exist. Torch-free.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from rr_model.core.errors import InputError
from rr_model.core.files import atomic_write
from rr_model.results.dataset import FIELDS, DataError, load_sweep, plain, write_sweep
from rr_model.results.provenance import read_records, sidecar_path
from rr_model.results.schema import KEY

__all__ = ["merge_sweeps"]


def _same(a: Any, b: Any) -> bool:
    return (pd.isna(a) and pd.isna(b)) or a == b


def _combine(paths: Sequence[Path]) -> tuple[pd.DataFrame, list[str], int]:
    """The rows of all `paths` in order, each run once: (rows, each row's origin "file line N", copies dropped).

    Raises InputError listing every run whose copies disagree, with both places and the differing column.
    """
    first: dict[tuple, tuple[pd.Series, str]] = {}
    parts, origins, conflicts = [], [], []
    for path in paths:
        df = load_sweep(path)
        keep = []
        for (_, row), line in zip(df.iterrows(), df.attrs["lines"], strict=True):
            key, where = tuple(plain(row[k]) for k in KEY), f"{path} line {line}"
            keep.append(key not in first)
            if keep[-1]:
                first[key] = (row, where)
                origins.append(where)
            elif diff := [c for c in FIELDS if not _same(row[c], first[key][0][c])]:
                seen, there = first[key]
                conflicts.append(
                    f"  {where}: {' '.join(map(str, key))} has {diff[0]} {plain(row[diff[0]])!r}, "
                    f"{there} has {plain(seen[diff[0]])!r}"
                )
        parts.append((df, keep))
    if conflicts:
        raise InputError(
            f"{len(conflicts)} run(s) appear with different values in the inputs; rr merge keeps one copy of "
            "identical rows only. Remove the wrong row, then merge again:\n" + "\n".join(conflicts)
        )
    merged = pd.concat([df[keep] for df, keep in parts], ignore_index=True)
    return merged, origins, sum(len(df) for df, _ in parts) - len(merged)


def _merged_records(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """Every provenance record of the inputs' sidecars, in input order, each distinct record once."""
    seen, records = set(), []
    for path in paths:
        for record in read_records(sidecar_path(path)):
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
    A summary: out, rows (written), copies (identical rows dropped), records (provenance records written,
    to the sidecar `out.runs.jsonl`, absent when the inputs have none).

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
    for target in (out, sidecar_path(out)):
        if target.exists():
            raise InputError(f"{target} exists; rr merge writes a new file and never overwrites one")
    merged, origins, copies = _combine(paths)
    try:
        write_sweep(merged, out, exact=True)
    except DataError as e:  # a rule across rows of different inputs: name each row by its origin
        lines = [f"  {origins[p.line - 2]}, column {p.column}: {p.value!r} - {p.rule}" for p in e.problems]
        raise InputError("the merged rows break the schema together:\n" + "\n".join(lines)) from None
    records = _merged_records(paths)
    if records:
        text = "".join(json.dumps(r, sort_keys=True, allow_nan=False) + "\n" for r in records)
        atomic_write(sidecar_path(out), lambda f: f.write(text.encode("utf-8")))
    return {"out": str(out), "rows": len(merged), "copies": copies, "records": len(records)}

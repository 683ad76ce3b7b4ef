"""The second stage of reading a sweep file, after its text is cut into cells (`rr_core.sweepfile.csv_text`): every
cell typed (integers, numbers, an extra measured column), the size and variant labels and the schema checked,
every problem cited by line and column (`parse`). What `rr_core.sweepfile.dataset`'s loading and appending
both read rows through.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd
import pandera.pandas as pandera
import pyarrow as pa
import pyarrow.compute as pc

from rr_core.ladder import size_problem
from rr_core.sweepfile.columns import INTEGER_COLUMNS, known_columns
from rr_core.sweepfile.csv_text import DECIMAL_COMMA, FIELDS, DataError, split_cells
from rr_core.sweepfile.schema import (
    COLUMNS,
    EXTRA_RULE,
    GROUP_RULES,
    RECIPE_COLUMNS,
    Problem,
    key_columns,
    no_value,
    schema_for,
    several_budgets,
)
from rr_core.variants import variant_problem

__all__ = ["parse", "schema_problems", "as_new", "plain"]


_INT = r"^-?[0-9]+$"


_FLOAT = r"(?i)^[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)(e[+-]?[0-9]+)?|inf|infinity|nan)$"


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


def schema_problems(
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
            for p in schema_problems(df, lines)
            if p.column in df.columns and p.rule not in GROUP_RULES and (p.line, p.column) not in seen
        ]
        rows = schema_problems(df[~np.isin(lines, [p.line for p in unparsed])], lines)
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
        if column in INTEGER_COLUMNS and pd.notna(
            value
        ):  # an optional integer held as float64: shown as written
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


def parse(raw: bytes, path, new_from: int | None = None) -> pd.DataFrame:
    """Parse and validate the bytes of a sweep file; rows from line `new_from` on are being appended."""
    columns, lines = split_cells(raw, path)
    df, problems = _typed(columns, lines)
    del columns
    problems += schema_problems(df[known_columns(df.columns)], lines, problems)
    if problems:
        problems.sort(key=lambda p: (p.line or 0, p.column or ""))
        raise DataError(path, problems if new_from is None else [as_new(p, new_from) for p in problems])
    df.attrs["path"] = str(path) if path is not None else None
    df.attrs["lines"] = _Lines(lines.tolist())
    return df


def as_new(problem: Problem, new_from: int) -> Problem:
    """A problem on a row not yet in the file, cited by its place among the new rows, not a line number."""
    if problem.line is None or problem.line < new_from:
        return problem
    return replace(problem, line=None, row=f"new row {problem.line - new_from + 1}")

"""The sweep CSV's schema: columns, types and rules, in one place.

`SCHEMA` (pandera) checks values once a file has been parsed and typed; `COLUMNS` drives parsing.
The rules are written as short human phrases because they end up verbatim in error messages. What each
column means is told once, in the dataset card (rr_core/sweepfile/published/README.md, `card_path()`).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pandera.pandas as pa

from rr_core.ladder import LADDER, SIZE_LABEL
from rr_core.lr_choice import ROLES
from rr_core.variants import VARIANT_NAME, VARIANT_RULE

__all__ = [
    "Column",
    "COLUMNS",
    "RECIPE_COLUMNS",
    "ROLES",
    "KEY",
    "SCHEMA",
    "Problem",
    "GROUP_RULES",
    "EXTRA_NAME",
    "EXTRA_NAME_RULE",
    "EXTRA_RULE",
    "no_value",
    "unknown_column",
    "key_columns",
    "several_budgets",
    "schema_for",
    "run_stem",
    "record_key",
]


MAX_PARAMS_M = 1e7  # 10^13 parameters: a typo guard (a count in units, not millions), far above any model


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # "str", "int" or "float"
    optional: bool  # may be empty ("where measured")
    rule: str  # the constraint, as a reader would say it


COLUMNS: tuple[Column, ...] = (
    Column("size", "str", False, "a ladder size or a <number><K|M|B> label"),
    Column("variant", "str", False, VARIANT_RULE),
    Column("seed", "int", False, "an integer >= 0"),
    Column("params_M", "float", False, f"a number > 0 and at most {MAX_PARAMS_M:g} (10T parameters)"),
    Column("steps", "int", False, "an integer > 0"),
    Column("val_loss", "float", False, "a finite number in (0, 20)"),
    Column("ece", "float", True, "in [0, 1] or empty"),
    Column("minutes", "float", True, "a number >= 0 or empty"),
)
KEY: list[str] = ["size", "variant", "seed"]
_RULE = {c.name: c.rule for c in COLUMNS}
# Recipe columns: how a row was trained where a file's rows differ in it (a tuning sweep, `rr tune`). A file
# may lack them (the published one does); an empty cell, or no column, means the recipe's value. Where a file
# has `lr`, a run is (size, variant, seed, lr): one seed trained at several learning rates is several runs.
RECIPE_COLUMNS: tuple[Column, ...] = (
    Column("lr", "float", True, "a finite number > 0 or empty (the recipe's)"),
    Column("role", "str", True, f"{' or '.join(ROLES)}, or empty"),
    # the tokens a run trained on, as the trainer records them; empty: steps x the recipe's batch x block
    Column("tokens", "int", True, "an integer > 0 or empty (steps x the recipe's batch x block)"),
    # the seeds of the initial weights and of the data order, where a run named its own (rr train --init-seed,
    # --data-seed); an empty cell means the seed, as published. The analysis pairs arms on data_seed.
    Column("init_seed", "int", True, "an integer in 0 .. 2^32 - 1 or empty (the seed)"),
    Column("data_seed", "int", True, "an integer in 0 .. 2^32 - 1 or empty (the seed)"),
)
# A column beyond COLUMNS is an extra measured metric (an accuracy, a downstream score), read as float64 for
# `rr analyze --metric`, when its name is a plain identifier and every cell is a finite number or empty.
EXTRA_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
EXTRA_NAME_RULE = (
    "a lower-case identifier (a lower-case ASCII letter, then at most 39 lower-case letters, digits or _)"
)
EXTRA_RULE = "an extra column is read as a measured metric only when every cell is a finite number or empty"


def unknown_column(name: str, header: list[str]) -> str:
    """Why the header's column `name` is refused, and the name that would be read, for a name that is neither
    a schema column nor an extra column's identifier (a spreadsheet's 'Accuracy', 'tokens_B', 'val acc').

    Example
    -------
    >>> unknown_column("val acc", ["size", "val acc"]).split(": ")[-1]
    'rename it val_acc to read it as a measured metric'
    """
    wanted = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    schema = {c.name.lower(): c.name for c in COLUMNS}
    if wanted in schema:  # 'Val_Loss', 'params m': a schema column written another way
        return (
            f"unknown column: did you mean {schema[wanted]}? Names are matched exactly, letter case included"
        )
    rule = f"unknown column: an extra measured column's name must be {EXTRA_NAME_RULE}"
    if not EXTRA_NAME.fullmatch(wanted):
        return f"{rule}; the schema's columns are {','.join(c.name for c in COLUMNS)}"
    if wanted in header:
        return f"{rule}; {wanted}, the name it would take, is another column's: rename one of them"
    return f"{rule}: rename it {wanted} to read it as a measured metric"


def no_value(column: str, cell: str = "is empty") -> str:
    """The rule broken by a cell without a value in a column that needs one, in plain words (`cell` says what
    the cell holds: empty, or NaN)."""
    return f"the cell {cell}, and {column} needs a value in every row: {_RULE[column]}"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one cell (or row) of a file."""

    line: int | None  # 1-based line in the file; None for whole-file problems
    column: str | None
    value: object
    rule: str
    row: str | None = None  # where a row not in the file is (an appended one): "new row 2"

    def __str__(self) -> str:
        where = [f"line {self.line}"] if self.line is not None else []
        where += [self.row] if self.row is not None else []
        if self.column is not None:
            where.append(f"column {self.column}")
        return f"{', '.join(where) or 'file'}{_shown(self.value)} - {self.rule}"


def _shown(value: object) -> str:
    """A cell value as a message shows it: numpy scalars as plain numbers, and text escaped to ASCII so that
    a look-alike letter is seen for what it is (Cyrillic 'і' in 'hіghway' reads 'h\\u0456ghway')."""
    if value is None:
        return ""
    value = value.item() if isinstance(value, np.generic) else value
    return f": {ascii(value) if isinstance(value, str) else repr(value)}"


def _size_ok(s: pd.Series) -> pd.Series:
    return s.isin(list(LADDER)) | s.str.fullmatch(SIZE_LABEL.pattern)


def _constant_within(col: str) -> pa.Check:
    return pa.Check(
        lambda df: df.groupby(["size", "variant"], observed=True)[col].transform("nunique") <= 1,
        error=f"{col} must be the same in every row of a (size, variant)",
    )


def key_columns(columns, budgets: bool = False) -> list[str]:
    """The columns that name a run in a file of these columns: `KEY`, lr where the file records it, and steps
    where the file holds several budgets (`several_budgets`: one run trained to several step counts)."""
    return [*KEY, *(["lr"] if "lr" in columns else []), *(["steps"] if budgets else [])]


def several_budgets(df: pd.DataFrame) -> bool:
    """Whether a run of `df` (its (size, variant, seed), with lr where the file records it) appears at several
    step counts: a file of several budgets per size, as a token-budget ladder or cooldown branches write it.

    Such a file names a run by its steps too (`key_columns`), and a (size, variant) may hold several step
    counts; any other file keeps the rule that steps are the same in every row of a (size, variant).

    Example
    -------
    >>> rows = pd.DataFrame({"size": ["60M"] * 2, "variant": ["highway"] * 2, "seed": [0, 0], "steps": [1, 2]})
    >>> several_budgets(rows), several_budgets(rows.assign(seed=[0, 1]))
    (True, False)
    """
    key = key_columns(df.columns)
    if df.empty or "steps" not in df.columns:
        return False
    repeated = df[df.duplicated(key, keep=False)]  # a run may hold several budgets only where its key repeats
    if repeated.empty:
        return False
    return bool((repeated.groupby(key, observed=True, dropna=False)["steps"].nunique() > 1).any())


def run_stem(size: str, variant: str, seed: int, lr: float | None = None, steps: int | None = None) -> str:
    """A run's name in the files beside a dataset (checkpoints, metrics logs, part files):
    ``1B-review-seed3``, ``tiny-review-seed0-lr0.0004`` for a run whose row records its learning rate, and
    ``60M-review_neutral-seed0-steps2000`` for one budget of a run trained to several (`several_budgets`)."""
    return (
        f"{size}-{variant}-seed{seed}"
        + ("" if lr is None else f"-lr{lr:g}")
        + ("" if steps is None else f"-steps{steps}")
    )


def record_key(record) -> tuple:
    """The key of a run record (a provenance record, a job entry): (size, variant, seed), lr where the record
    names one (a tuning run's), and steps where it names a ``budget`` (one budget of a run trained to several),
    as `run_keys` gives a row's and `TrainConfig.key` a run's."""
    key = (record.get("size"), record.get("variant"), record.get("seed"))
    key = key if record.get("lr") is None else (*key, record["lr"])
    return key if record.get("budget") is None else (*key, record.get("steps"))


# Row-level rules that span columns: the column each one is reported against.
GROUP_RULES: dict[str, str] = {
    "params_M must be the same in every row of a (size, variant)": "params_M",
    "steps must be the same in every row of a (size, variant)": "steps",
}

_RECIPE_RULE = {c.name: c.rule for c in RECIPE_COLUMNS}

SCHEMA = pa.DataFrameSchema(
    {
        "size": pa.Column(str, pa.Check(_size_ok, error=_RULE["size"])),
        "variant": pa.Column(
            str, pa.Check(lambda s: s.str.fullmatch(VARIANT_NAME.pattern), error=_RULE["variant"])
        ),
        "seed": pa.Column("int64", pa.Check.ge(0, error=_RULE["seed"])),
        "params_M": pa.Column(
            "float64", pa.Check(lambda s: (s > 0) & (s <= MAX_PARAMS_M), error=_RULE["params_M"])
        ),
        "steps": pa.Column("int64", pa.Check.gt(0, error=_RULE["steps"])),
        "val_loss": pa.Column(
            "float64", pa.Check(lambda s: np.isfinite(s) & (s > 0) & (s < 20), error=_RULE["val_loss"])
        ),
        "ece": pa.Column("float64", pa.Check.in_range(0, 1, error=_RULE["ece"]), nullable=True),
        "minutes": pa.Column(
            "float64", pa.Check(lambda s: np.isfinite(s) & (s >= 0), error=_RULE["minutes"]), nullable=True
        ),
        "lr": pa.Column(
            "float64",
            pa.Check(lambda s: np.isfinite(s) & (s > 0), error=_RECIPE_RULE["lr"]),
            nullable=True,
            required=False,
        ),
        "role": pa.Column(
            str,
            pa.Check(lambda s: s.isin([*ROLES, ""]), error=_RECIPE_RULE["role"]),
            required=False,
        ),
        "tokens": pa.Column(  # float64: NaN where empty; the loader reads only integers into it
            "float64",
            pa.Check(lambda s: s > 0, error=_RECIPE_RULE["tokens"]),
            nullable=True,
            required=False,
        ),
        **{
            name: pa.Column(  # float64: NaN where empty (the seed); the loader reads only integers into it
                "float64",
                pa.Check(lambda s: (s >= 0) & (s < 2**32), error=_RECIPE_RULE[name]),
                nullable=True,
                required=False,
            )
            for name in ("init_seed", "data_seed")
        },
    },
    checks=[_constant_within("params_M"), _constant_within("steps")],
    unique=KEY,
    report_duplicates="all",
    strict=True,
    ordered=False,
)


def schema_for(columns, budgets: bool = False) -> pa.DataFrameSchema:
    """`SCHEMA` for a file of these columns: a run is unique by `key_columns` (with lr where it has lr, with
    steps where it holds several budgets, `several_budgets`, which frees steps within a (size, variant))."""
    return _SCHEMAS[("lr" in columns, budgets)]


def _unique_by(key: list[str], budgets: bool) -> pa.DataFrameSchema:
    schema = copy.deepcopy(SCHEMA)
    schema.unique = key
    if budgets:  # a (size, variant) holds one step count per budget
        schema.checks = [c for c in schema.checks if GROUP_RULES.get(c.error) != "steps"]
    return schema


_SCHEMAS = {(False, False): SCHEMA} | {
    (lr, budgets): _unique_by(key_columns(["lr"] if lr else [], budgets), budgets)
    for lr, budgets in ((False, True), (True, False), (True, True))
}

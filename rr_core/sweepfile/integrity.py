"""Are the 42 published runs still in a file, unchanged? Answered against the copy shipped in the package.

A file that extends the sweep must keep the published rows as they were; new seeds are appended after them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from rr_core.sweepfile.columns import format_row
from rr_core.sweepfile.csv_text import FIELDS
from rr_core.sweepfile.dataset import PUBLISHED_DIGEST, digest, load_sweep, verify_reference
from rr_core.sweepfile.schema import KEY, several_budgets

__all__ = [
    "Integrity",
    "check_integrity",
    "digest",
    "integrity_warning",
    "verify_reference",
    "PUBLISHED_DIGEST",
]


@dataclass
class Integrity:
    """How a file relates to the published sweep."""

    published: int  # rows in the published sweep
    present: int  # published (size, variant, seed) keys found in the file
    missing: list[tuple] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # one readable line per changed value
    added: int = 0  # rows whose key is not a published one

    @property
    def intact(self) -> bool:
        return not self.missing and not self.changed

    @property
    def altered(self) -> bool:
        """Holds published rows, but not all of them as published: the file cannot stand for the paper's."""
        return self.present > 0 and not self.intact

    def details(self) -> list[str]:
        """One line per changed value and one for the missing rows (empty for a file of its own)."""
        missing = "; ".join(", ".join(map(str, k)) for k in self.missing)
        return [f"changed: {c}" for c in self.changed] + (
            [f"missing: {missing}"] if missing and self.present else []
        )

    def summary(self) -> str:
        if self.present == 0:
            return "no published rows (a sweep of its own)"
        if self.intact:
            state = f"published rows {self.present}/{self.published} present and unchanged"
        else:
            state = (
                f"published rows: {self.present}/{self.published} present, {len(self.changed)} value(s) changed, "
                f"{len(self.missing)} missing"
            )
        return f"{state}; {self.added} row(s) added"


def check_integrity(df: pd.DataFrame, reference: pd.DataFrame | None = None) -> Integrity:
    """Compare a loaded sweep with the published one, value by value in the published number format."""
    ref = load_sweep() if reference is None else reference
    lines = df.attrs.get("lines")
    lines = [None] * len(df) if lines is None else lines
    mine = df.assign(_line=lines)
    # rows that record a learning rate or a role (a tuning's runs), or seeds other than their seed: never published
    tuned = _tuning_runs(mine) | _other_seeds(mine)
    # a file of several budgets names a run by its steps too: a published row is the run at its published steps
    named = [*KEY, "steps"] if several_budgets(mine[~tuned]) else KEY
    mine, ref = mine[~tuned].set_index(named), ref.set_index(named)
    common = ref.index.intersection(mine.index)
    added = int((~mine.index.isin(ref.index)).sum()) + int(tuned.sum())
    out = Integrity(published=len(ref), present=len(common), added=added)
    out.missing = [tuple(k) for k in ref.index.difference(mine.index)]
    for key in common:
        a, b = ref.loc[key], mine.loc[key]
        fa, fb = (
            format_row({**dict(zip(named, key, strict=True)), **a}),
            format_row({**dict(zip(named, key, strict=True)), **b}),
        )
        if fa == fb:
            continue
        for col, va, vb in zip(FIELDS, fa.split(","), fb.split(","), strict=True):
            if va != vb:
                where = f"line {int(b['_line'])}" if pd.notna(b["_line"]) else "row"
                out.changed.append(f"{where} ({', '.join(map(str, key))}), {col}: published {va}, found {vb}")
    return out


def _tuning_runs(df: pd.DataFrame) -> pd.Series:
    """Which rows record their own learning rate or a role (`rr_core.sweepfile.schema.RECIPE_COLUMNS`)."""
    tuned = pd.Series(False, index=df.index)
    if "lr" in df.columns:
        tuned |= df["lr"].notna()
    if "role" in df.columns:
        tuned |= df["role"] != ""
    return tuned


def _other_seeds(df: pd.DataFrame) -> pd.Series:
    """Which rows record an init_seed or data_seed other than their seed: not the published run of their key."""
    other = pd.Series(False, index=df.index)
    for name in ("init_seed", "data_seed"):
        if name in df.columns:
            other |= df[name].notna() & (df[name] != df["seed"])
    return other


def integrity_warning(df: pd.DataFrame) -> str | None:
    """What to tell a reader of results computed from `df` whose published rows were altered; else None."""
    report = check_integrity(df)
    if not report.altered:
        return None
    where = df.attrs.get("path") or "the data"
    lines = "\n".join(f"  {d}" for d in report.details())
    return f"{where}: {report.summary()}; results from it are not the published ones:\n{lines}"

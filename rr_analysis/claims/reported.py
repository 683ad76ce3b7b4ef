"""The paper's claims as records: the TOML file that states each claim (its words, source, the cell it is
about, the statistic and the number reported), read and checked, and the reported numbers parsed into
their relation and rounding (`Reported`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from rr_analysis.numbers import cut
from rr_core.errors import InputError
from rr_core.files.reading import read_toml

__all__ = [
    "load_claims",
    "parse_reported",
    "Reported",
    "CLAIMS_FILE",
    "DATA_DECIMALS",
]


CLAIMS_FILE = Path(__file__).with_name("claims.toml")
DATA_DECIMALS = 4  # the sweep file's precision: every val_loss is written at 4 decimals
TESTS = ("welch", "paired", "mean")
SIDES = ("two-sided", "greater", "less")
CHECKS = ("grows", "emergence", "no_advantage", "budget")
_FIELDS = {
    "id",
    "words",
    "source",
    "size",
    "baseline",
    "variant",
    "statistic",
    "reported",
    "test",
    "sided",
    "check",
    "sizes",
}
_REPORTED = re.compile(r"^\s*(?:(?P<stat>t|p|mean)\s*)?(?P<rel><=|>=|=|<|>)?\s*(?P<num>[-+]?\d*\.?\d+)\s*$")


@dataclass(frozen=True)
class Reported:
    """A number as the paper wrote it: statistic, relation, value and the decimals it was rounded to."""

    statistic: str
    relation: str
    value: float
    decimals: int

    def interval(self) -> tuple[float, float]:
        """The values the written number stands for: t = 3.3 is [3.25, 3.35); p < 0.05 is (-inf, 0.05)."""
        if self.relation == "=":
            # rounded to one more decimal: 3.3 + 0.05 is 3.35, not 3.3499999999999996
            half, d = 0.5 * 10.0**-self.decimals, self.decimals + 1
            return round(self.value - half, d), round(self.value + half, d)
        return (-math.inf, self.value) if self.relation in ("<", "<=") else (self.value, math.inf)

    def holds(self, x: float) -> bool:
        """Whether `x` is a value the written number stands for (rounding half away from zero). `x` is first
        `cut` to the decimal it stands for: a mean of 1.5041 and 1.5042 is 1.50415, inside "1.5042", whether
        the float arithmetic gives 1.5041499999999999 or 1.5041500000000002."""
        low, high = self.interval()
        x = cut(x)
        if self.relation == "=":
            return low <= x < high if self.value >= 0 else low < x <= high
        return {"<": x < high, "<=": x <= high, ">": x > low, ">=": x >= low}[self.relation]


def parse_reported(text: str, statistic: str | None = None) -> Reported:
    """A reported value as written ("0.07", "t=3.3", "p<0.05", "mean=1.6891") as a `Reported`.

    Example
    -------
    >>> parse_reported("t=3.3").interval()
    (3.25, 3.35)
    """
    m = _REPORTED.match(text)
    stat = (m["stat"] if m else None) or statistic
    if not m or stat is None:
        raise InputError(f"cannot read the reported value {text!r}: expect e.g. '0.07', 't=3.3' or 'p<0.05'")
    num = m["num"].lstrip("+-")
    return Reported(stat, m["rel"] or "=", float(m["num"]), len(num.split(".")[1]) if "." in num else 0)


def _check_record(r: dict) -> str | None:
    """What is wrong with one record, as a phrase, or None."""
    if not isinstance(r.get("id"), str) or not isinstance(r.get("words"), str):
        return "needs an id and the paper's words"
    if unknown := sorted(set(r) - _FIELDS):
        return f"unknown field(s) {', '.join(unknown)}; the fields are {', '.join(sorted(_FIELDS))}"
    if "check" in r:
        return None if r["check"] in CHECKS else f"check must be one of {', '.join(CHECKS)}"
    if "reported" not in r or "size" not in r:
        return "needs `reported` and `size` (or a `check`)"
    if r.get("test") not in TESTS or r.get("sided", "two-sided") not in SIDES:
        return f"test must be one of {', '.join(TESTS)} and sided one of {', '.join(SIDES)}"
    if ("variant" if r["test"] == "mean" else "baseline") not in r:
        return "a mean names its `variant`; a test names its `baseline`"
    try:
        parse_reported(r["reported"], r.get("statistic"))
    except InputError as e:
        return str(e)
    return None


def load_claims(path: str | Path | None = None) -> list[dict]:
    """The claim records of a claims file (default `CLAIMS_FILE`, the paper's), validated.

    Example
    -------
    >>> [r["reported"] for r in load_claims() if r["id"].startswith("t_590M")]
    ['t=3.3', 't=3.7']
    """
    path = Path(path) if path is not None else CLAIMS_FILE
    records = read_toml(path, str(path), "TOML claims file").get("claim", [])
    seen: set[str] = set()
    for i, r in enumerate(records, 1):
        problem = _check_record(r) or (f"the id {r['id']!r} is used twice" if r["id"] in seen else None)
        if problem:
            raise InputError(f"{path}: claim {i} ({r.get('id', 'no id')}): {problem}")
        seen.add(r["id"])
    return records

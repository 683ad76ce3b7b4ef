"""Every present output stays what it was: each analysis view in every format, every figure and the report, on
the published sweep and on a sweep with a plugin variant, written afresh by tests/golden/update.py and
compared with tests/golden/outputs/, so that they pass with any versions pyproject.toml's ranges allow.

- Numbers (JSON, CSV, a JSON record in a CSV cell) are compared to `REL` relative (conftest.py says why).
- Text (text, Markdown, LaTeX, the report, and the strings inside JSON and CSV) is compared character for
  character, but that a printed number may read one unit of its last digit away where the two readings are
  the two roundings of a value the sweep's JSON outputs hold (`conftest.same_printed`): a value within `REL`
  of a rounding edge, which the library versions round either way (an optimiser's result moves in its 7th
  digit between releases; float noise in the 16th is cut before rounding, `rr_analysis.numbers.cut`).
- A figure is compared by what it draws (`update.fingerprint`: size, data, ticks rr places, texts, colours;
  numbers to `REL`), not by its PNG's bytes, which change with float noise, the library versions and the
  CPU (a line's end moved in its 16th digit shades a pixel differently).

An output changed on purpose: `python tests/golden/update.py`, and the commit names what changed.
"""

from __future__ import annotations

import csv
import difflib
import functools
import io
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REL, close, floats_in, rr, same_printed

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).with_name("golden") / "outputs"
UPDATE = GOLDEN.with_name("update.py")


def files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@functools.cache
def edges(sweep: str) -> tuple[float, ...]:
    """The numbers of `sweep`'s golden JSON outputs: the values a printed number of its outputs may be a
    rounding of (none for a part without analyses, the curves)."""
    found = sorted((GOLDEN / "analyze" / sweep).glob("*.json"))
    return tuple(n for path in found for n in floats_in(json.loads(path.read_text(encoding="utf-8"))))


def same_csv(got: str, want: str, values: tuple[float, ...] = ()) -> bool:
    """Same rows and cells, each cell as `same_cell` reads it."""
    a, b = list(csv.reader(io.StringIO(got))), list(csv.reader(io.StringIO(want)))
    return len(a) == len(b) and all(
        len(r) == len(s) and all(same_cell(x, y, values) for x, y in zip(r, s, strict=True))
        for r, s in zip(a, b, strict=True)
    )


def same_cell(got: str, want: str, values: tuple[float, ...] = ()) -> bool:
    """A number to `REL`; a JSON record (the claims' details) as `close` reads it; text as `same_printed`."""
    if got == want:
        return True
    try:
        return math.isclose(float(got), float(want), rel_tol=REL)
    except ValueError:
        pass
    if got.startswith(("{", "[")) and want.startswith(("{", "[")):
        return close(json.loads(got), json.loads(want), REL, values)
    return same_printed(got, want, values, REL)


def reads_as(got: str, want: str, name: str) -> bool:
    """Whether the output `name` reads as its golden text `want` (as this module's docstring says)."""
    values = edges(Path(name).with_suffix("").parts[1])
    if name.endswith(".json"):
        return close(json.loads(got), json.loads(want), REL, values)
    if name.endswith(".csv"):
        return same_csv(got, want, values)
    return same_printed(got, want, values, REL)


def difference(fresh: Path, golden: Path, name: str) -> str | None:
    """None when the output `name` written afresh reads as the golden one (`reads_as`); else the start of a
    diff."""
    got, want = (fresh / name).read_text(encoding="utf-8"), (golden / name).read_text(encoding="utf-8")
    if reads_as(got, want, name):
        return None
    diff = difflib.unified_diff(
        want.splitlines(), got.splitlines(), f"golden/{name}", f"now/{name}", lineterm=""
    )
    return "\n".join(list(diff)[:30])


def differences(fresh: Path, golden: Path, names: list[str]) -> list[str]:
    """The diff of each output of `names` that changed."""
    return [d for name in names if (d := difference(fresh, golden, name)) is not None]


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Path:
    """The outputs written afresh: the published sweep in one process, the plugin sweep and the curves in
    another, side by side (a plugin changes the registry of the process that imports it)."""
    out = tmp_path_factory.mktemp("golden")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    runs = [
        subprocess.Popen(
            [sys.executable, str(UPDATE), "--into", str(out), *parts],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for parts in (["--part", "pub"], ["--part", "plugin", "--part", "curves"])
    ]
    errors = [run.communicate()[1] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], "\n".join(errors)
    return out


def test_the_same_outputs_are_written(fresh):
    assert files(fresh) == files(GOLDEN)


@pytest.mark.parametrize("room", ["analyze", "report", "figures"])
def test_every_output_reads_as_before(fresh, room):
    """Views in every format (analyze/), the report's Markdown (report/), what each figure draws (figures/)."""
    names = [f"{room}/{n}" for n in files(GOLDEN / room)]
    changed = differences(fresh, GOLDEN, names)
    assert not changed, f"{len(changed)} of {len(names)} outputs changed:\n" + "\n\n".join(changed[:8])


def test_no_output_shows_nan_or_inf():
    """A missing value reads n/a (null in JSON, empty in CSV): no output prints a float's nan or inf."""
    shown = [n for n in files(GOLDEN / "analyze") if not n.endswith((".json", ".csv"))]
    bad = [
        n
        for n in shown
        if {"nan", "inf"} & set((GOLDEN / "analyze" / n).read_text().lower().replace("n/a", "").split())
    ]
    assert len(shown) > 100 and bad == []


@pytest.mark.parametrize("fmt", ["text", "markdown", "latex", "csv", "json"])
def test_the_command_line_prints_the_golden_outputs(fmt):
    """`rr analyze` prints what update.py renders from the library: the notes view in every format, the
    default table at 100 columns and with --wide."""
    ext = {"text": ".txt", "markdown": ".md", "latex": ".tex", "csv": ".csv", "json": ".json"}[fmt]
    printed = {f"analyze/pub/notes{ext}": rr("analyze", "notes", "--format", fmt, env={"COLUMNS": "100"})}
    if fmt == "text":
        printed["analyze/pub/table.txt"] = rr("analyze", env={"COLUMNS": "100"})
        printed["analyze/pub/table.wide.txt"] = rr("analyze", "--wide")
    for name, result in printed.items():
        assert result.exit_code == 0 and reads_as(result.stdout, (GOLDEN / name).read_text(), name), name


def test_a_changed_output_is_caught(tmp_path):
    """The comparison is not blind: a changed character, a number moved past `REL` (in JSON, or in a JSON
    record in a CSV cell), a printed number one unit off where its value is not on a rounding edge and a
    changed colour are each caught; a number moved in its 9th or 16th digit is not, nor a number on a
    rounding edge printed the other way (320M Highway's gap is 0.00405: 0.0041 or 0.0040)."""
    names = [
        "analyze/pub/table.md",
        "analyze/pub/table.json",
        "analyze/pub/fits.csv",
        "figures/pub/emergence.json",
        "analyze/pub/claims.csv",
        "analyze/pub/table.txt",
    ]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(GOLDEN / name, tmp_path / name)
    assert differences(tmp_path, GOLDEN, names) == []
    records = json.loads((GOLDEN / names[1]).read_text())
    claims = (GOLDEN / names[4]).read_text()
    p = json.loads(next(row for row in csv.reader(io.StringIO(claims)) if row[0] == "emerges_highway")[-1])[
        "p"
    ]

    def moved(factor: float) -> str:
        return json.dumps([{**r, "gap": r["gap"] * factor} for r in records])

    def claims_moved(factor: float) -> str:  # the p in the emergence claim's details, a JSON record
        return claims.replace(f'""p"": {p!r}', f'""p"": {p * factor!r}', 1)

    (tmp_path / names[1]).write_text(moved(1 + 1e-9))
    (tmp_path / names[4]).write_text(claims_moved(1 + 3e-16))
    assert claims_moved(1 + 3e-16) != claims
    (tmp_path / names[5]).write_text(
        (GOLDEN / names[5]).read_text().replace("0.0041\u2020", "0.0040\u2020", 1)
    )
    assert differences(tmp_path, GOLDEN, names) == []
    (tmp_path / names[0]).write_text((GOLDEN / names[0]).read_text().replace("0.0032", "0.0033", 1))
    (tmp_path / names[1]).write_text(moved(1 + 1e-4))
    (tmp_path / names[2]).write_text((GOLDEN / names[2]).read_text().replace("highway", "Highway", 1))
    (tmp_path / names[3]).write_text((GOLDEN / names[3]).read_text().replace("#e69f00", "#e69f01", 1))
    (tmp_path / names[4]).write_text(claims_moved(1 + 1e-4))
    (tmp_path / names[5]).write_text((GOLDEN / names[5]).read_text().replace("0.0032", "0.0033", 1))
    changed = differences(tmp_path, GOLDEN, names)
    assert [d.split("\n")[0] for d in changed] == [f"--- golden/{n}" for n in names]


def test_a_printed_number_may_round_either_way_only_on_an_edge():
    """One unit of the last digit, around a value given, in otherwise equal text."""
    assert same_printed("gap 0.0041, p 0.33", "gap 0.0040, p 0.33", [0.0040500001])
    assert same_printed("-0.0015†", "-0.0014†", [-0.00145])
    assert not same_printed("gap 0.0041", "gap 0.0040", [0.00407])  # not on the edge
    assert not same_printed("gap 0.0041", "gap 0.0039", [0.004])  # two units
    assert not same_printed("gap 0.0041 up", "gap 0.0040 down", [0.00405])  # the words differ
    assert not same_printed("0.0100", "0.010", [0.01005])  # printed to other decimals
    assert not same_printed("#e69f00ff", "#e69f01ff", [0.5]) and not same_printed(
        "60", "61", [60.5]
    )  # no decimals

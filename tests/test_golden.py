"""Every present output stays what it was: each analysis view in every format, every figure and the report, on
the published sweep and on a sweep with a plugin variant, written afresh by tests/golden/update.py and
compared with tests/golden/outputs/.

Text (text, Markdown, LaTeX, the report) is compared byte for byte. JSON and CSV numbers are compared to 1e-6
relative, the rest of them exactly: the REML and Kenward-Roger fits are optimiser results that move in the 7th
digit between statsmodels and scipy releases (the text, rounded as printed, does not). A figure is compared by
what it draws (`update.fingerprint`: data, texts, colours; numbers to 1e-6) and by its PNG bytes where
matplotlib is the version that wrote them. An output changed on purpose: `python tests/golden/update.py`, and
the commit names what changed.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import close, rr

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).with_name("golden") / "outputs"
UPDATE = GOLDEN.with_name("update.py")
REL = 1e-6


def files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def same_csv(got: str, want: str) -> bool:
    """Same rows and cells; cells that are numbers in both to `REL` relative."""
    a, b = list(csv.reader(io.StringIO(got))), list(csv.reader(io.StringIO(want)))
    return len(a) == len(b) and all(
        len(r) == len(s) and all(x == y or _close_numbers(x, y) for x, y in zip(r, s, strict=True))
        for r, s in zip(a, b, strict=True)
    )


def _close_numbers(x: str, y: str) -> bool:
    try:
        return math.isclose(float(x), float(y), rel_tol=REL)
    except ValueError:
        return False


def difference(fresh: Path, golden: Path, name: str) -> str | None:
    """None when the output `name` written afresh is the golden one (as this module's docstring says); else
    the start of a diff."""
    got, want = (fresh / name).read_text(encoding="utf-8"), (golden / name).read_text(encoding="utf-8")
    if name.endswith(".json"):
        same = close(json.loads(got), json.loads(want), REL)
    elif name.endswith(".csv"):
        same = same_csv(got, want)
    else:
        same = got == want
    if same:
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
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for parts in (["--part", "pub"], ["--part", "plugin", "--part", "curves"])
    ]  # fmt: skip
    errors = [run.communicate()[1] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], "\n".join(errors)
    return out


def test_the_same_outputs_are_written(fresh):
    assert files(fresh) == files(GOLDEN)


@pytest.mark.parametrize("room", ["analyze", "report", "figures"])
def test_every_output_reads_as_before(fresh, room):
    """Views in every format (analyze/), the report's Markdown (report/), what each figure draws (figures/)."""
    names = [f"{room}/{n}" for n in files(GOLDEN / room) if not n.endswith("png.json")]
    changed = differences(fresh, GOLDEN, names)
    assert not changed, f"{len(changed)} of {len(names)} outputs changed:\n" + "\n\n".join(changed[:8])


@pytest.mark.parametrize("part", ["pub", "plugin", "curves"])
def test_every_figure_gives_the_same_png_bytes(fresh, part):
    """Byte for byte only with the matplotlib that wrote them: another version draws the same figure with other
    bytes (anti-aliasing, font hinting), which the fingerprints above judge instead."""
    import matplotlib

    want = json.loads((GOLDEN / "figures" / part / "png.json").read_text())
    if want["matplotlib"] != matplotlib.__version__:
        pytest.skip(
            f"PNG bytes were recorded with matplotlib {want['matplotlib']}, this is {matplotlib.__version__}"
        )
    got = json.loads((fresh / "figures" / part / "png.json").read_text())["sha256"]
    assert sorted(got) == sorted(want["sha256"])
    assert [name for name in sorted(got) if got[name] != want["sha256"][name]] == []


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
    result = rr("analyze", "notes", "--format", fmt, env={"COLUMNS": "100"})
    assert result.exit_code == 0 and result.stdout == (GOLDEN / "analyze" / "pub" / f"notes{ext}").read_text()
    if fmt == "text":
        assert rr("analyze", env={"COLUMNS": "100"}).stdout == (GOLDEN / "analyze/pub/table.txt").read_text()
        assert rr("analyze", "--wide").stdout == (GOLDEN / "analyze/pub/table.wide.txt").read_text()


def test_a_changed_output_is_caught(tmp_path):
    """The comparison is not blind: a changed character, a number moved past 1e-6 and a changed colour are
    each caught; a number moved in the 9th digit is not."""
    names = [
        "analyze/pub/table.md",
        "analyze/pub/table.json",
        "analyze/pub/fits.csv",
        "figures/pub/emergence.json",
    ]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(GOLDEN / name, tmp_path / name)
    assert differences(tmp_path, GOLDEN, names) == []
    records = json.loads((GOLDEN / names[1]).read_text())

    def moved(factor: float) -> str:
        return json.dumps([{**r, "gap": r["gap"] * factor} for r in records])

    (tmp_path / names[1]).write_text(moved(1 + 1e-9))
    assert differences(tmp_path, GOLDEN, names) == []
    (tmp_path / names[0]).write_text((GOLDEN / names[0]).read_text().replace("0.0032", "0.0033", 1))
    (tmp_path / names[1]).write_text(moved(1 + 1e-5))
    (tmp_path / names[2]).write_text((GOLDEN / names[2]).read_text().replace("highway", "Highway", 1))
    (tmp_path / names[3]).write_text((GOLDEN / names[3]).read_text().replace("#e69f00", "#e69f01", 1))
    changed = differences(tmp_path, GOLDEN, names)
    assert [d.split("\n")[0] for d in changed] == [f"--- golden/{n}" for n in names]

"""`rr validate` and the entry point: exit codes, one-paragraph errors, and a light `rr --help`."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import RR, rr

from rr_core.sweepfile.dataset import bundled_path


def test_validate_bundled_data():
    result = rr("validate")
    assert result.exit_code == 0
    assert "42 rows, 5 sizes (60M, 150M, 320M, 590M, 1B), 3 variants" in result.output
    assert "seeds per cell 2-3 over 15 cells" in result.output
    assert "published rows 42/42 present and unchanged; 0 row(s) added" in result.output


def test_validate_bad_file_exits_2_with_problems_and_no_traceback(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("size,variant,seed,params_M,steps,val_loss,ece,minutes\n60M,Bogus,0,59.47,8000,1.7,,\n")
    result = rr("validate", str(path))
    assert result.exit_code == 2
    assert f"{path}: 1 problem found:" in result.output
    assert "line 2, column variant: 'Bogus' - must be a variant name" in result.output
    assert "Traceback" not in result.output


def altered(tmp_path):
    """The published sweep with one value changed (now on line 4) and one row gone (60M review_neutral seed 1)."""
    path = tmp_path / "s.csv"
    text = (
        bundled_path().read_text().replace("60M,highway,0,60.68,8000,1.698,", "60M,highway,0,60.68,8000,1.7,")
    )
    path.write_text(
        "".join(line for line in text.splitlines(True) if not line.startswith("60M,review_neutral,1,"))
    )
    return path


def test_validate_fails_on_a_changed_or_missing_published_row(tmp_path):
    path = altered(tmp_path)
    result = rr("validate", str(path))
    assert result.exit_code == 2
    assert f"{path}: ALTERED: 41 rows" in result.output
    assert "changed: line 4 (60M, highway, 0), val_loss: published 1.698, found 1.7" in result.output
    assert "missing: 60M, review_neutral, 1" in result.output


def test_added_rows_keep_a_file_valid(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text(bundled_path().read_text() + "2B,standard,0,2000.0,5000,1.4,,\n")
    result = rr("validate", str(path))
    assert result.exit_code == 0 and "OK" in result.output and "1 row(s) added" in result.output


@pytest.mark.parametrize(
    "command", [["analyze", "--power"], ["plot", "scaling", "--dpi", "20", "-o", "x.png"]]
)
def test_results_from_altered_published_rows_warn_once_naming_them(tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    path = altered(tmp_path)
    result = rr(*command, "--data", str(path))
    assert result.exit_code == 0, result.output
    assert result.stderr.count("rr: warning:") == 1
    assert "changed: line 4 (60M, highway, 0), val_loss: published 1.698, found 1.7" in result.stderr
    assert "missing: 60M, review_neutral, 1" in result.stderr
    assert "rr: warning" not in result.stdout


def test_validate_several_files_fails_if_any_fails(tmp_path, published_copy):
    result = rr("validate", str(published_copy), str(tmp_path / "missing.csv"))
    assert result.exit_code == 2
    assert "published.csv: OK" in result.output and "missing.csv: no such file" in result.output


def run_rr(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([RR, *args], capture_output=True, text=True)


def test_entry_point_validate_and_error_stream(tmp_path):
    ok = run_rr("validate")
    assert ok.returncode == 0 and "42 rows" in ok.stdout
    bad = run_rr("validate", str(tmp_path))
    assert bad.returncode == 2
    assert bad.stderr.strip() == f"rr: error: {tmp_path}: is a directory, not a CSV file"


def test_help_imports_nothing_heavy():
    code = (
        "import sys; from cli.main import app; from typer.testing import CliRunner; "
        "r = CliRunner().invoke(app, ['--help']); assert r.exit_code == 0, r.output; "
        "print(sorted(m for m in ('torch', 'statsmodels', 'seaborn', 'matplotlib', 'scipy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_validate_joins_the_run_sidecar(tmp_path):
    from rr_core.sweepfile.provenance import append_record, sidecar_path

    path = tmp_path / "own.csv"
    path.write_text(
        "size,variant,seed,params_M,steps,val_loss,ece,minutes\n"
        "tiny,standard,0,1.13,100,2.2261,0.0296,0.3\n"
        "tiny,standard,1,1.13,100,2.25,0.03,0.3\n"
        "tiny,standard,2,1.13,100,2.24,,0.3\n"
    )
    for seed, val_loss in ((0, 2.22614), (1, 2.2611)):  # seed 1's row no longer matches its record
        append_record(
            sidecar_path(path),
            {
                "size": "tiny",
                "variant": "standard",
                "seed": seed,
                "status": "ok",
                "run_id": f"run-{seed}",
                "environment": {"toolkit": "0.1.0", "git_commit": "abc", "device_name": "cpu"},
                "config": {"precision": "tf32"},
                "started": "2026-12-02T10:00:00",
                "ended": "2026-12-02T10:01:00",
                "result": {"val_loss": val_loss, "ece": 0.0296 if seed == 0 else 0.03},
            },
        )
    result = rr("validate", str(path))
    assert result.exit_code == 0, result.output
    assert "no published rows (a sweep of its own)" in result.output
    assert "provenance: 2 row(s) with a run record, 1 disagree with it" in result.output
    assert "differs from its run record: (tiny, standard, 1)" in result.output
    assert "no run record: (tiny, standard, 2)" in result.output
    assert "missing:" not in result.output


def test_the_bundled_file_is_read_once_and_never_warns(monkeypatch):
    """Its pinned digest is checked as it loads, so it is not loaded again to be compared with itself."""
    import rr_core.sweepfile.integrity as integrity

    def again(*args):
        raise AssertionError("the bundled file was loaded a second time")

    monkeypatch.setattr(integrity, "load_sweep", again)
    for data in ([], ["--data", str(bundled_path())]):
        result = rr("analyze", "notes", "--format", "json", *data)
        assert result.exit_code == 0 and "rr: warning" not in result.stderr, result.exception

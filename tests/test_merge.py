"""`rr merge`: per-job files joined into one new dataset, identical copies kept once, conflicting ones
refused with both places named, provenance sidecars merged, nothing ever overwritten."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import rr

from rr_core.errors import InputError
from rr_core.sweepfile.dataset import append_rows, bundled_path, load_sweep
from rr_core.sweepfile.merge import join_columns, merge_sweeps
from rr_core.sweepfile.provenance import append_record, read_records, sidecar_path


def row(seed: int, val_loss: float, variant: str = "highway", steps: int = 8000) -> dict:
    return {
        "size": "60M",
        "variant": variant,
        "seed": seed,
        "params_M": 60.68,
        "steps": steps,
        "val_loss": val_loss,
        "ece": 0.0081,
        "minutes": 7.25,
    }


def sweep(path, *rows, published: bool = True, records: tuple = ()):
    """A per-job file: the published rows (as a default dataset starts) and its own new rows."""
    if published:
        shutil.copy(bundled_path(), path)
    append_rows(path, rows)
    for r in records:
        append_record(sidecar_path(path), r)
    return path


def test_per_job_files_merge_into_one_with_their_provenance(tmp_path):
    a = sweep(tmp_path / "a.csv", row(3, 1.6951), records=[{"run_id": "a1", "seed": 3}])
    b = sweep(tmp_path / "b.csv", row(4, 1.6977123456), records=[{"run_id": "b1", "seed": 4}])
    out = tmp_path / "merged.csv"
    result = rr("merge", a, b, "--out", out)
    assert result.exit_code == 0, result.output
    assert "44 row(s) from 2 file(s)" in result.stdout and "42 identical copies kept once" in result.stdout
    merged, published = load_sweep(out), load_sweep()
    assert len(merged) == 44
    assert merged.iloc[:42].equals(published)  # the published rows, unchanged and in order
    assert merged.iloc[42:][["seed", "val_loss"]].values.tolist() == [[3, 1.6951], [4, 1.6977]]
    records = read_records(sidecar_path(out))
    assert [r["run_id"] for r in records if r.get("status") != "source"] == ["a1", "b1"]
    sources = [r for r in records if r.get("status") == "source"]  # each merged row's origin (issue 21.3)
    assert len(sources) == 44 and sum(r["published"] for r in sources) == 42
    assert sources[0]["source"] == f"{a} line 2" and sources[-1] == {
        "status": "source",
        "size": "60M",
        "variant": "highway",
        "seed": 4,
        "source": f"{b} line 44",
        "published": False,
    }


def test_full_precision_and_files_without_published_rows(tmp_path):
    a = sweep(tmp_path / "a.csv", row(3, 1.7), published=False)
    b = tmp_path / "b.csv"
    b.write_text(
        "size,variant,seed,params_M,steps,val_loss,ece,minutes\n60M,highway,4,60.68,8000,1.69771234,,\n"
    )
    done = merge_sweeps([a, b], tmp_path / "m.csv")
    assert done == {"out": str(tmp_path / "m.csv"), "rows": 2, "copies": 0, "records": 0}
    merged = load_sweep(tmp_path / "m.csv")
    assert merged["val_loss"].tolist() == [1.7, 1.69771234] and merged["ece"].isna().tolist() == [False, True]
    sources = read_records(sidecar_path(tmp_path / "m.csv"))  # no run records: the rows' sources only
    assert [(r["seed"], r["source"], r["published"]) for r in sources] == [
        (3, f"{a} line 2", False),
        (4, f"{b} line 2", False),
    ]


def test_conflicting_copies_are_refused_naming_both_places(tmp_path):
    a = sweep(tmp_path / "a.csv", row(3, 1.6951))
    b = sweep(tmp_path / "b.csv", row(3, 1.7001))
    result = rr("merge", a, b, "--out", tmp_path / "m.csv")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{b} line 44: 60M highway 3 has val_loss 1.7001, {a} line 44 has 1.6951" in result.stderr
    assert not (tmp_path / "m.csv").exists()


def test_rules_across_files_name_each_row_by_its_origin(tmp_path):
    a = sweep(tmp_path / "a.csv", row(3, 1.6951, "standard", steps=9000), published=False)
    b = sweep(tmp_path / "b.csv", row(4, 1.6951, "standard", steps=8000), published=False)
    with pytest.raises(ValueError, match=f"{a} line 2, column steps") as e:
        merge_sweeps([a, b], tmp_path / "m.csv")
    assert f"{b} line 2, column steps" in str(e.value) and not (tmp_path / "m.csv").exists()


def test_never_overwrites_and_bad_inputs_are_one_clear_error(tmp_path):
    a = sweep(tmp_path / "a.csv", row(3, 1.6951))
    out = tmp_path / "m.csv"
    out.write_text("precious\n")
    result = rr("merge", a, a, "--out", out)
    assert result.exit_code == 2 and "exists; rr merge writes a new file" in result.stderr
    assert out.read_text() == "precious\n"
    sidecar_path(tmp_path / "n.csv").write_text("{}\n")
    assert "n.runs.jsonl exists" in rr("merge", a, "--out", tmp_path / "n.csv").stderr

    bad = tmp_path / "bad.csv"
    bad.write_text("size,variant,seed,params_M,steps,val_loss,ece,minutes\n60M,highway,x,60.68,8000,1.7,,\n")
    result = rr("merge", a, bad, "--out", tmp_path / "o.csv")
    assert result.exit_code == 2 and "line 2, column seed: 'x' - is not an integer" in result.stderr
    assert not (tmp_path / "o.csv").exists()


def refusing_folder(tmp_path: Path) -> Path:
    """A folder that refuses a new file: a read-only one, or (for root, whom modes do not stop) /sys where it
    refuses too; the test is skipped where neither does."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    for candidate in (folder, Path("/sys")):
        try:
            (candidate / "probe").touch()
        except OSError:
            return candidate
        (candidate / "probe").unlink()
    pytest.skip("no folder here refuses to be written to")


def test_a_folder_that_refuses_the_new_file_is_named_not_the_temporary_file(tmp_path):
    # issue 36.10: rr merge into a read-only folder named '.m.runs.jsonl.<pid>.rr-tmp', a name rr made up
    source = tmp_path / "a.csv"
    shutil.copy(bundled_path(), source)
    folder = refusing_folder(tmp_path)
    result = rr("merge", source, "--out", folder / "m.csv")
    assert result.exit_code == 2 and "rr-tmp" not in result.stderr, result.stderr
    assert result.stderr.startswith(f"rr: error: {folder}: ")
    assert result.stderr.endswith(" (the folder of m.runs.jsonl, which cannot be written there)\n")


def test_extra_measured_columns_are_kept_and_compared(tmp_path):
    """A column one input has (a downstream accuracy) reaches the merged file, empty for the other input's
    rows; a run whose copies agree on every column but that one is refused, naming the column."""
    header = "size,variant,seed,params_M,steps,val_loss,ece,minutes"
    a = tmp_path / "a.csv"
    a.write_text(f"{header},arc_easy_acc\n60M,highway,3,60.68,8000,1.6951,,,0.3125\n")
    b = sweep(tmp_path / "b.csv", row(4, 1.6977), published=False)
    merge_sweeps([a, b], tmp_path / "m.csv")
    merged = load_sweep(tmp_path / "m.csv")
    assert merged["arc_easy_acc"].tolist()[0] == 0.3125 and merged["arc_easy_acc"].isna().tolist() == [
        False,
        True,
    ]
    again = tmp_path / "again.csv"
    again.write_text(f"{header},arc_easy_acc\n60M,highway,3,60.68,8000,1.6951,,,0.5\n")
    said = f"{again} line 2: 60M highway 3 has arc_easy_acc 0.5, {a} line 2 has 0.3125"
    with pytest.raises(InputError, match=re.escape(said)):
        merge_sweeps([a, again], tmp_path / "m2.csv")
    without = sweep(tmp_path / "c.csv", row(3, 1.6951) | {"ece": None, "minutes": None}, published=False)
    with pytest.raises(InputError, match="3 has arc_easy_acc 0.3125, .*c.csv line 2 has an empty cell"):
        merge_sweeps([without, a], tmp_path / "m3.csv")


def test_scores_joined_onto_a_sweep_are_analysed_as_val_loss_is(tmp_path, published_copy):
    """A score that is exactly minus val_loss, joined onto the published rows: `rr analyze --metric ...
    --higher-is-better` gives val_loss's analysis number for number (negation is exact), its means negated."""
    df = load_sweep()
    measured = [
        {"size": s, "variant": v, "seed": int(seed), "task_acc": -loss, "task_acc_norm": 0.5}
        for s, v, seed, loss in df[["size", "variant", "seed", "val_loss"]].itertuples(index=False)
    ]
    evals = tmp_path / "evals.csv"
    done = join_columns(published_copy, measured, evals)
    assert done == {"out": str(evals), "rows": 42, "joined": 42, "columns": ["task_acc", "task_acc_norm"]}
    got = rr("analyze", "--data", evals, "--metric", "task_acc", "--higher-is-better", "--format", "json")
    expected = rr("analyze", "--data", published_copy, "--format", "json")
    assert got.exit_code == 0, got.output
    rows, val_loss = json.loads(got.stdout), json.loads(expected.stdout)
    for r in rows:  # the means are the metric's own (minus val_loss's); gaps, tests and effects the same
        assert (r.pop("metric"), r.pop("higher_is_better")) == ("task_acc", True)
        r["review_mean"], r["baseline_mean"] = -r["review_mean"], -r["baseline_mean"]
    assert rows == [{k: v for k, v in r.items() if k not in ("metric", "higher_is_better")} for r in val_loss]

    partial = tmp_path / "partial.csv"
    join_columns(published_copy, measured[:1], partial)  # the other rows' cells stay empty
    assert load_sweep(partial)["task_acc"].notna().tolist() == [True] + [False] * 41
    for records, said in (
        ([{**measured[0], "seed": 99}], "60M review_neutral 99: no such run in"),
        (measured[:1] * 2, "60M review_neutral 0: measured twice"),
        ([{**measured[0], "val_loss": 1.0}], "has the column(s) val_loss already"),
    ):
        with pytest.raises(InputError, match=re.escape(said)):
            join_columns(published_copy, records, tmp_path / "refused.csv")
        assert not (tmp_path / "refused.csv").exists()
    with pytest.raises(InputError, match="exists; a join writes a new file and never overwrites one"):
        join_columns(published_copy, measured[:1], evals)
    assert join_columns(published_copy, measured, evals) == done  # the same join again: already there


def test_budgets_of_one_run_merge_as_separate_runs(tmp_path):
    """Issue 44: one seed at two step counts (two budgets, as cooldown branches write them in part files) is
    two runs to merge, not a conflict; a copy of one of them is kept once."""
    a = sweep(tmp_path / "a.csv", row(3, 1.70, steps=8000), published=False)
    b = sweep(tmp_path / "b.csv", row(3, 1.80, steps=2000), row(3, 1.70, steps=8000), published=False)
    merge_sweeps([a, b], tmp_path / "merged.csv")
    merged = load_sweep(tmp_path / "merged.csv")
    assert sorted(merged["steps"]) == [2000, 8000]

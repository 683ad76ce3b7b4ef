"""What rr promises about its files when the disk fills or two writers meet (docs/reliability.md).

A full disk is simulated portably with RLIMIT_FSIZE in a child process (a write past the limit is cut short,
the next one fails with EFBIG, as on a full filesystem; Python ignores SIGXFSZ), and for real on a small
tmpfs where an unprivileged mount namespace is allowed. Races are made deterministic with a hook that runs
the second writer at the exact point between the first one's steps, never with a sleep.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import rr

from rr_core.sweepfile.columns import format_row
from rr_core.sweepfile.csv_text import FIELDS
from rr_core.sweepfile.dataset import append_rows, load_sweep

HEADER = ",".join(FIELDS)
LINE = "60M,review_neutral,{seed},59.47,8000,1.7016,0.0087,6.9"
ROW = {
    "size": "60M",
    "variant": "review_neutral",
    "seed": 9,
    "params_M": 59.47,
    "steps": 8000,
    "val_loss": 1.6912,
    "ece": 0.0091,
    "minutes": 123.4,
}

# Runs `call` in a child whose files may grow to argv[1] bytes at most; prints the rr error it raised.
LIMITED = """
import resource, sys
from rr_core.errors import RRError
from rr_core.sweepfile.dataset import append_rows
from rr_core.sweepfile.provenance import append_record
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), resource.RLIM_INFINITY))
try:
    {call}
except RRError as e:
    print(e)
    sys.exit(3)
"""


def under_size_limit(limit: int, call: str) -> subprocess.CompletedProcess:
    code = LIMITED.format(call=call)
    return subprocess.run([sys.executable, "-c", code, str(limit)], capture_output=True, text=True)


def sweep_file(tmp_path: Path, seeds=(0, 1)) -> Path:
    path = tmp_path / "s.csv"
    path.write_text("\n".join([HEADER, *(LINE.format(seed=s) for s in seeds)]) + "\n")
    return path


@pytest.mark.parametrize("room", [10, 0], ids=["short-write", "no-room"])
def test_an_append_that_does_not_fit_leaves_the_file_as_it_was(tmp_path, room):
    path = sweep_file(tmp_path)
    before = path.read_bytes()
    done = under_size_limit(len(before) + room, f"append_rows({str(path)!r}, [{ROW!r}])")
    assert done.returncode == 3, done.stderr
    assert done.stdout.startswith(f"{path}: could not append 1 row(s) (")
    assert done.stdout.rstrip().endswith("; it is as it was before")
    assert path.read_bytes() == before
    assert load_sweep(path)["seed"].tolist() == [0, 1]


def test_a_run_record_that_does_not_fit_leaves_the_sidecar_as_it_was(tmp_path):
    sidecar = tmp_path / "s.runs.jsonl"
    sidecar.write_text(json.dumps({"size": "60M", "seed": 0}) + "\n")
    before = sidecar.read_bytes()
    record = {"size": "60M", "variant": "highway", "seed": 1, "note": "x" * 200}
    done = under_size_limit(len(before) + 50, f"append_record({str(sidecar)!r}, {record!r})")
    assert done.returncode == 3, done.stderr
    assert done.stdout.startswith(f"{sidecar}: could not append the run record of 60M highway 1 (")
    assert sidecar.read_bytes() == before


# On a real, full tmpfs: the file ends 20 bytes before a page boundary, so the kernel writes 20 bytes of the
# row into the page it has and fails on the next: the short write that once left a torn `minutes` value.
TMPFS = """
import errno, os, sys
from rr_core.errors import RRError
from rr_core.sweepfile.dataset import append_rows, load_sweep
mnt, header, line, row = sys.argv[1], sys.argv[2], sys.argv[3], eval(sys.argv[4])
if os.system(f"mount -t tmpfs -o size=64k tmpfs {mnt}") != 0:
    sys.exit(77)
path = os.path.join(mnt, "s.csv")
text = header + "\\n" + line + "\\n"
with open(path, "w") as f:
    f.write(text + "\\n" * (4096 - 20 - len(text)))  # blank lines are tolerated
fill = os.open(os.path.join(mnt, "filler"), os.O_WRONLY | os.O_CREAT)
try:
    while os.write(fill, b"x" * 4096):
        pass
except OSError as e:
    assert e.errno == errno.ENOSPC
before = open(path, "rb").read()
try:
    append_rows(path, [row])
except RRError as e:
    print(e)
assert open(path, "rb").read() == before, "the file changed"
print(len(load_sweep(path)))
"""


def test_an_append_on_a_full_tmpfs_is_whole_or_absent(tmp_path):
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) for a private tmpfs mount")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    argv = [sys.executable, "-c", TMPFS, str(mnt), HEADER, LINE.format(seed=0), repr(ROW)]
    done = subprocess.run(["unshare", "-rm", *argv], capture_output=True, text=True)
    if done.returncode == 77 or "unshare failed" in done.stderr:
        pytest.skip(f"no private tmpfs mount here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    message, rows = done.stdout.splitlines()
    assert f"could not append 1 row(s) (only 20 of {len(format_row(ROW)) + 1} bytes fitted" in message
    assert rows == "1"


def test_rows_added_under_the_lock_are_removed_again_when_the_next_step_fails(tmp_path):
    path = sweep_file(tmp_path)
    before = path.read_bytes()

    def fail():
        raise OSError(28, "No space left on device")

    def record_fails():
        assert load_sweep(path)["seed"].tolist() == [0, 1, 9]  # the row is in while `then` runs
        fail()

    with pytest.raises(OSError, match="No space left"):
        append_rows(path, [ROW], then=record_fails)
    assert path.read_bytes() == before
    new = tmp_path / "new.csv"
    with pytest.raises(OSError, match="No space left"):
        append_rows(new, [ROW], then=fail)
    assert not new.exists()


def test_a_failed_write_names_the_file_meant_not_its_temporary_name(tmp_path):
    target = tmp_path / "fig.png"
    code = textwrap.dedent(f"""
        import resource
        from rr_core.files.replacing import atomic_write
        resource.setrlimit(resource.RLIMIT_FSIZE, (100, resource.RLIM_INFINITY))
        try:
            atomic_write({str(target)!r}, lambda f: f.write(b"x" * 1000))
        except OSError as e:
            print(e.filename, e.strerror)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout == f"{target} File too large\n", done.stderr
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------- a run that cannot write its row (issue 47)

TRAIN = ["train", "--size", "tiny", "--variant", "standard", "--corpus", "synthetic", "--steps", 2]


@pytest.mark.parametrize("link", ["out", "sidecar"])
def test_a_path_the_run_cannot_write_is_refused_before_it_trains(tmp_path, link, token_cache, monkeypatch):
    monkeypatch.setenv("RR_CACHE", str(token_cache))
    out, nowhere = tmp_path / "runs" / "x.csv", tmp_path / "gone" / "deeper"
    out.parent.mkdir()
    named = out if link == "out" else out.with_name("x.runs.jsonl")
    named.symlink_to(nowhere / named.name)  # a link whose target's folder, and its parent, do not exist
    result = rr(*TRAIN, "--out", out)
    # before issue 47: the run trained, then failed "No such file or directory" writing its row or record
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    said = {
        "out": f"--out {out} (a symbolic link to {nowhere / 'x.csv'}): {nowhere} is not a folder, and its parent "
        "is none either",
        "sidecar": f"--out {out}: its record cannot be written to {nowhere} (no such folder), so the run's result "
        "would be lost; nothing was trained",
    }
    assert result.stderr == f"rr: error: {said[link]}\n"
    assert sorted(p.name for p in out.parent.iterdir()) == [named.name]  # no metrics log, no checkpoint


def test_a_row_written_through_a_link_lands_in_its_target_and_the_link_stays(
    tmp_path, token_cache, monkeypatch
):
    monkeypatch.setenv("RR_CACHE", str(token_cache))
    out, target = tmp_path / "runs" / "x.csv", tmp_path / "elsewhere" / "y.csv"
    out.parent.mkdir(), target.parent.mkdir()
    out.symlink_to(target)  # the target does not exist yet: the first row creates it
    result = rr(*TRAIN, "--out", out)
    # before issue 47: trained, then "No such file or directory" (a hard link onto the link's name was refused)
    assert result.exit_code == 0, result.output
    assert out.is_symlink() and len(load_sweep(target)) == 1


def test_a_run_whose_row_cannot_be_written_keeps_its_final_weights_and_resume_writes_the_row(
    tmp_path, monkeypatch, token_cache
):
    from conftest import TINY_RUN

    from rr_core.errors import InputError
    from rr_core.sweepfile.provenance import read_records, sidecar_path
    from rr_model.checkpoint.state import load_weights
    from rr_model.config import TrainConfig
    from rr_model.run import results, trainer

    out, real = tmp_path / "x.csv", results.append_rows

    def folder_gone(path, rows, then=None):  # what a folder removed (or a disk filled) meanwhile answers
        raise FileNotFoundError(2, "No such file or directory", str(path))

    cfg = TrainConfig(**{**TINY_RUN, "steps": 2, "checkpoint_every": 0}, cache_dir=str(token_cache))
    monkeypatch.setattr(results, "append_rows", folder_gone)
    with pytest.raises(InputError) as err:
        trainer.train(cfg, out)
    final = out.parent / "x.checkpoints" / "tiny-standard-seed0.final.pt"
    assert str(err.value) == (
        f"{out}: No such file or directory: the run's row and record were not written. Once that is put right "
        "(space freed, the folder back), the same rr train command with --resume writes them from its final "
        f"weights, kept in {final}, without training"
    )  # before issue 47: the final weights were saved after the row, so they were lost with it
    assert final.exists() and not out.exists() and read_records(sidecar_path(out)) == []
    with pytest.raises(InputError, match="holds the final weights of this run, whose row is not in"):
        trainer.train(cfg, out)  # without --resume it would train again over them
    monkeypatch.setattr(results, "append_rows", real)
    log = out.parent / "x.metrics" / "tiny-standard-seed0.jsonl"
    trained = log.read_bytes()
    record = trainer.train(cfg, out, resume=True)
    assert log.read_bytes() == trained  # nothing trained (a resumed segment would log its start and steps)
    assert record == load_weights(final)[1].record
    assert load_sweep(out)["val_loss"].tolist() == [round(record["result"]["val_loss"], 4)]
    assert [r["run_id"] for r in read_records(sidecar_path(out))] == [record["run_id"]]
    assert sorted(p.name for p in final.parent.iterdir()) == [final.name, "tiny-standard-seed0.lock"]


# ------------------------------------------------------------------------------------------------ rr merge


def merge_inputs(tmp_path: Path, curve: int) -> list[Path]:
    """Two sweep files of one row each, the second with a run record whose loss curve has `curve` points."""
    from rr_core.sweepfile.provenance import append_record, sidecar_path

    a, b = sweep_file(tmp_path / "a", seeds=(0,)), sweep_file(tmp_path / "b", seeds=(1,))
    record = {"size": "60M", "variant": "review_neutral", "seed": 1, "loss_curve": [[1, 2.5]] * curve}
    append_record(sidecar_path(b), record)
    return [a, b]


@pytest.mark.parametrize("curve", [1, 400], ids=["csv-too-big", "sidecar-too-big"])
def test_a_merge_out_of_space_leaves_neither_file_and_the_rerun_succeeds(tmp_path, curve):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    inputs, out = merge_inputs(tmp_path, curve), tmp_path / "m.csv"
    sizes = {"csv": len(HEADER) + 2 * len(LINE) + 10, "sidecar": 30 + 10 * curve}
    limit = min(sizes.values()) + abs(sizes["csv"] - sizes["sidecar"]) // 2  # room for the smaller only
    call = f"from rr_core.sweepfile.merge import merge_sweeps; merge_sweeps({list(map(str, inputs))!r}, {str(out)!r})"
    code = LIMITED.format(call=call).replace("except RRError", "except OSError")
    done = subprocess.run([sys.executable, "-c", code, str(limit)], capture_output=True, text=True)
    assert done.returncode == 3 and "File too large" in done.stdout, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]
    from rr_core.sweepfile.merge import merge_sweeps

    assert merge_sweeps(inputs, out)["records"] == 1


# A merge in a child that SIGKILLs itself at one of its hard links (argv[3]: "before" the sidecar's, "after"
# the sidecar's, "after" the CSV's): the points between the files of its output, and just past the last.
KILLED_MERGE = """
import os, signal, sys
from rr_core.sweepfile.merge import merge_sweeps

real, (when, name) = os.link, sys.argv[3].split(":")

def link(src, dst, *args, **kwargs):
    if when == "before" and os.path.basename(dst) == name:
        os.kill(os.getpid(), signal.SIGKILL)
    real(src, dst, *args, **kwargs)
    if when == "after" and os.path.basename(dst) == name:
        os.kill(os.getpid(), signal.SIGKILL)

os.link = link
merge_sweeps(sys.argv[1].split(","), sys.argv[2])
"""


@pytest.mark.parametrize("at", ["before:m.runs.jsonl", "after:m.runs.jsonl", "after:m.csv"])
def test_a_merge_killed_between_its_files_leaves_nothing_in_the_way_of_its_rerun(tmp_path, at):
    import signal

    from rr_core.sweepfile.merge import merge_sweeps

    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir(), (tmp_path / "ref").mkdir(), (tmp_path / "m").mkdir()
    inputs, out = merge_inputs(tmp_path, 1), tmp_path / "m" / "m.csv"
    merge_sweeps(inputs, tmp_path / "ref" / "m.csv")  # what an uninterrupted merge writes
    args = [",".join(map(str, inputs)), str(out), at]
    done = subprocess.run([sys.executable, "-c", KILLED_MERGE, *args], capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL, done.stderr
    # before issue 47 the rerun was refused: "m.runs.jsonl exists; rr merge ... never overwrites one"
    assert merge_sweeps(inputs, out)["rows"] == 2
    for name in ("m.csv", "m.runs.jsonl"):
        assert (out.parent / name).read_bytes() == (tmp_path / "ref" / name).read_bytes()
    assert sorted(p.name for p in out.parent.iterdir()) == ["m.csv", "m.runs.jsonl"]  # no temporary file


def test_a_merge_reads_each_file_and_its_sidecar_under_the_file_lock(tmp_path, monkeypatch):
    """A trainer appends a row and its record under the row's lock; the merge reads both under it too."""
    import fcntl
    import os

    from rr_core.sweepfile import merge

    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    inputs = merge_inputs(tmp_path, 1)
    real, held = merge.read_records, []

    def between_rows_and_records(path):  # the point where a trainer's append once slipped in
        fd = os.open(inputs[len(held)], os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held.append(False)
        except BlockingIOError:
            held.append(True)
        finally:
            os.close(fd)
        return real(path)

    monkeypatch.setattr(merge, "read_records", between_rows_and_records)
    merge.merge_sweeps(inputs, tmp_path / "m.csv")
    assert held == [True, True]


def test_a_row_and_its_record_are_appended_under_the_row_lock(tmp_path):
    import fcntl
    import os

    from rr_core.sweepfile.provenance import append_record, read_records, sidecar_path

    path = sweep_file(tmp_path)
    held = []

    def record():
        fd = os.open(path, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        held.append(True)
        append_record(sidecar_path(path), {"size": "60M", "variant": "review_neutral", "seed": 9})

    append_rows(path, [ROW], then=record)
    assert held == [True] and [r["seed"] for r in read_records(sidecar_path(path))] == [9]


# ----------------------------------------------------------------------------------------------- rr report


@pytest.mark.slow
def test_a_file_saved_into_the_report_folder_during_the_build_is_never_deleted(tmp_path, monkeypatch):
    from rr_analysis import report
    from rr_analysis.report import write_report
    from rr_core.files.replacing import Foreign

    out = tmp_path / "rep"
    write_report(load_sweep(), out, dpi=20)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real = report.save_figure

    def user_saves_meanwhile(fig, path, **kwargs):  # the instant between rr's check and its swap
        (out / "notes.txt").write_text("mine")
        return real(fig, path, **kwargs)

    monkeypatch.setattr(report, "save_figure", user_saves_meanwhile)
    with pytest.raises(Foreign, match=f"{out} changed while rr was writing it: .*notes.txt"):
        write_report(load_sweep(), out, dpi=20)
    assert (out / "notes.txt").read_text() == "mine"
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.name != "notes.txt"} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]  # no temporary folder left


def test_atomic_dir_deletes_only_the_names_it_owns(tmp_path):
    from rr_core.files.replacing import atomic_dir

    out = tmp_path / "d"
    out.mkdir()
    (out / "a.png").write_text("old")
    atomic_dir(out, lambda folder: (folder / "a.png").write_text("new"), owned={"a.png"})
    assert [(p.name, p.read_text()) for p in out.iterdir()] == [("a.png", "new")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]


# ---------------------------------------------------------------------------------------- the dataset card


def test_an_edit_saved_into_the_card_while_rr_rewrites_it_is_kept(tmp_path, monkeypatch):
    from rr_analysis.stats.gap_tests import gap_table
    from rr_analysis.views import card_view
    from rr_core.files.replacing import Foreign

    card = tmp_path / "README.md"
    card.write_text(f"intro\n{card_view.CARD_BEGIN}\nold\n{card_view.CARD_END}\n")
    real = card_view.update_card

    def someone_edits_meanwhile(text, table):
        card.write_text(text.replace("intro", "intro, edited"))
        return real(text, table)

    monkeypatch.setattr(card_view, "update_card", someone_edits_meanwhile)
    with pytest.raises(Foreign, match="changed while rr was rewriting it"):
        card_view.write_card(card, gap_table(load_sweep()))
    assert card.read_text().startswith("intro, edited\n") and "\nold\n" in card.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["README.md"]


# --------------------------------------------------------------------------------- every other writer of rr

# Each writer replaces an old file with a bigger new one under a file-size limit that only the old one fits:
# the old file must stay whole, no temporary file may be left, and the error must name the file meant.
WRITERS = {
    "checkpoint": "from rr_model.checkpoint import state as checkpoint; import torch\n"
    "checkpoint.save(target, {'step': 1, 'w': torch.zeros(4096)})",
    "figure": "import matplotlib; matplotlib.use('Agg')\nfrom rr_analysis.figures import save_figure, scaling_figure\n"
    "from rr_core.sweepfile.dataset import load_sweep\nfig = scaling_figure(load_sweep())\n"
    "setrlimit()\nsave_figure(fig, target, dpi=60)",
    "sweep state": "from rr_model.sweep.jobs import add_jobs\n"
    "add_jobs(target.with_name('s.csv'), [{'job_id': str(i), 'note': 'x' * 100} for i in range(40)])",
}
WRITER = """
import resource, sys
from pathlib import Path
from rr_core.errors import RRError
target = Path(sys.argv[1])
def setrlimit():
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), resource.RLIM_INFINITY))
{imports}
try:
    if "setrlimit()" not in {code!r}:
        setrlimit()
    {call}
except (OSError, RRError) as e:
    print(e)
    sys.exit(3)
"""


@pytest.mark.parametrize("writer", WRITERS)
def test_a_write_that_does_not_fit_leaves_the_old_file_whole(tmp_path, writer):
    names = {"checkpoint": "run.pt", "figure": "fig.png", "sweep state": "s.sweep.json"}
    target = tmp_path / names[writer]
    old = b'{"jobs": []}\n' if writer == "sweep state" else b"the old file, whole"
    target.write_bytes(old)
    *imports, call = WRITERS[writer].replace("setrlimit()\n", "setrlimit(); ").split("\n")
    code = WRITER.format(imports="\n".join(imports), call=call, code=WRITERS[writer])
    done = subprocess.run([sys.executable, "-c", code, str(target), "2000"], capture_output=True, text=True)
    assert done.returncode == 3, done.stderr
    assert str(target) in done.stdout and "File too large" in done.stdout
    assert target.read_bytes() == old
    left = sorted(p.name for p in tmp_path.iterdir() if p.suffix != ".lock")  # the state file's lock stays
    assert left == [target.name]


def test_two_submitters_keep_both_their_entries_in_the_sweep_state(tmp_path, monkeypatch):
    """The second submitter runs at the exact point the first has read the state and not yet replaced it."""
    import os

    from rr_model.sweep import jobs

    out, real, second = tmp_path / "s.csv", jobs.atomic_write, []

    def between_read_and_replace(path, write):
        if not second:
            code = f"from rr_model.sweep.jobs import add_jobs; add_jobs({str(out)!r}, [{{'job_id': 'B'}}])"
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
            second.append(subprocess.Popen([sys.executable, "-c", code], env=env))
            with pytest.raises(BlockingIOError):  # it waits for this submitter's lock, whatever the timing
                import fcntl

                fd = os.open(jobs.state_path(out).with_name("s.sweep.json.lock"), os.O_RDONLY)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                finally:
                    os.close(fd)
        real(path, write)

    monkeypatch.setattr(jobs, "atomic_write", between_read_and_replace)
    jobs.add_jobs(out, [{"job_id": "A"}])
    assert second[0].wait() == 0
    assert [e["job_id"] for e in jobs.read_jobs(out)] == ["A", "B"]


# ------------------------------------------------------------------------- a torn last line (issue 35, 4)

TORN_RECORD = '{"size": "60M", "variant": "highway", "seed": 7, "status": "ok", "res'  # a write cut short


def test_a_record_appended_after_a_torn_line_starts_on_a_new_line_and_both_sides_stay_readable(tmp_path):
    from rr_core.errors import Note
    from rr_core.sweepfile.provenance import append_record, read_records, sidecar_path

    path = sweep_file(tmp_path)
    sidecar = sidecar_path(path)
    sidecar.write_text(
        json.dumps({"size": "60M", "variant": "review_neutral", "seed": 0}) + "\n" + TORN_RECORD
    )
    append_record(sidecar, {"size": "60M", "variant": "review_neutral", "seed": 1})
    assert sidecar.read_text().splitlines()[1:] == [
        TORN_RECORD,
        '{"seed": 1, "size": "60M", "variant": "review_neutral"}',
    ]
    with pytest.warns(Note, match=f"{sidecar}: line 2 is not a complete JSON record .*: skipped$") as noted:
        assert [r["seed"] for r in read_records(sidecar)] == [0, 1]
    assert not any(word in str(w.message) for w in noted for word in ("delete", "remove"))

    from conftest import rr

    result = rr("merge", path, "--out", tmp_path / "m.csv")  # refused the file before; now a note
    assert result.exit_code == 0, result.output
    assert (
        result.stderr
        == f"rr: note: {sidecar}: line 2 is not a complete JSON record (Unterminated string starting at), a write cut short: skipped\n"
    )


def test_a_row_appended_after_a_torn_row_starts_on_a_new_line_and_the_torn_row_is_skipped(tmp_path):
    from rr_core.errors import Note

    path = sweep_file(tmp_path)
    with path.open("a") as f:
        f.write("60M,review_neutral,2,59.4")  # a row cut short: no newline, 4 of 8 cells
    with pytest.warns(Note, match="line 4 has 4 of the header's 8 cells, a row cut short"):
        append_rows(path, [ROW])
    assert path.read_text().splitlines()[-2:] == ["60M,review_neutral,2,59.4", format_row(ROW)]
    with pytest.warns(Note, match="line 4 has 4 of the header's 8 cells"):
        assert load_sweep(path)["seed"].tolist() == [0, 1, 9]


def test_a_resumed_run_s_metrics_log_after_a_torn_line_still_plots(tmp_path):
    from rr_core.errors import Note
    from rr_core.sweepfile.metrics_log import load_curves
    from rr_model.metrics import Metrics

    log = tmp_path / "x.metrics" / "tiny-standard-seed0.jsonl"
    run = {"size": "tiny", "variant": "standard", "seed": 0}
    first = Metrics(log, run, step=0)
    first.log(4, loss=3.0, lr=1e-3)
    first.file.write('{"event": "train", "step": 8, "lo')  # killed mid-line: no newline
    first.file.close()
    second = Metrics(log, run, step=4, resumed=True)  # resumed from the checkpoint at step 4
    second.log(8, loss=2.5, lr=1e-3)
    second.close()
    with pytest.warns(Note, match="line 3 is not a complete JSON record"):
        curves = load_curves([log])
    assert curves[["step", "loss"]].values.tolist() == [[4, 3.0], [8, 2.5]]

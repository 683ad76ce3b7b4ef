"""rr_core.files: what a reader refuses, what a killed writer leaves, and how a file is named."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rr_core.files.reading import MAX_READ, Unreadable, read_regular, same_file
from rr_core.files.replacing import atomic_dir, atomic_write, create_new, temp_name


def test_read_regular_refuses_a_fifo_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    with pytest.raises(Unreadable, match="is a FIFO \\(named pipe\\), not a regular file"):
        read_regular(fifo)


def test_read_regular_refuses_devices_sockets_and_links_to_them(tmp_path):
    with pytest.raises(Unreadable, match="is a character device"):
        read_regular("/dev/zero")
    (tmp_path / "zero.csv").symlink_to("/dev/zero")
    with pytest.raises(Unreadable, match="is a character device"):
        read_regular(tmp_path / "zero.csv")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "s.csv"))
        with pytest.raises(Unreadable, match="is a socket"):
            read_regular(tmp_path / "s.csv")
    finally:
        sock.close()


def test_read_regular_caps_what_it_reads(tmp_path):
    small = tmp_path / "small"
    small.write_bytes(b"0123456789")
    assert read_regular(small, limit=10) == b"0123456789"
    with pytest.raises(Unreadable, match="is larger than 9 bytes"):
        read_regular(small, limit=9)
    huge = tmp_path / "huge.csv"
    with huge.open("wb") as f:
        f.truncate(MAX_READ + 1)  # sparse: no disk used, nothing read
    with pytest.raises(Unreadable, match="is larger than 1,073,741,824 bytes"):
        read_regular(huge)


def test_same_file_sees_through_hard_links_and_symlinks(tmp_path):
    a = tmp_path / "a"
    a.write_text("x")
    os.link(a, tmp_path / "hard")
    (tmp_path / "soft").symlink_to(a)
    b = tmp_path / "b"
    b.write_text("x")
    assert same_file(a, tmp_path / "hard") and same_file(a, tmp_path / "soft")
    assert not same_file(a, b) and not same_file(a, tmp_path / "absent")


def test_create_new_never_replaces_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "f.csv"
    assert create_new(path, lambda f: f.write(b"first\n"))
    assert not create_new(path, lambda f: f.write(b"second\n"))
    assert path.read_bytes() == b"first\n"
    assert [p.name for p in tmp_path.iterdir()] == ["f.csv"]


def test_create_new_without_hard_links_creates_exclusively(tmp_path, monkeypatch):
    def no_links(src, dst):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    path = tmp_path / "f.csv"
    assert create_new(path, lambda f: f.write(b"first\n"))
    assert not create_new(path, lambda f: f.write(b"second\n"))
    assert path.read_bytes() == b"first\n"


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_next_write_removes_what_killed_writers_left(tmp_path):
    path = tmp_path / "fig.png"
    dead, alive = temp_name(path, _dead_pid()), temp_name(path, os.getppid())
    dead.write_bytes(b"half a figure")
    alive.write_bytes(b"someone is still writing this")
    atomic_write(path, lambda f: f.write(b"whole"))
    assert path.read_bytes() == b"whole"
    assert not dead.exists() and alive.exists()


# A child that stalls forever at `obj.name` (after touching argv[2]); killed there, it is a writer killed
# at that point. argv[1] is the target path.
STALL = """
import os, sys, time
from pathlib import Path
import rr_core.sweepfile.dataset, rr_core.files
obj = {obj}

def stalled(*args, **kwargs):
    Path(sys.argv[2]).touch()
    time.sleep(3600)

setattr(obj, "{name}", stalled)
{call}
"""


def kill_midway(tmp_path: Path, obj: str, name: str, call: str, target: Path) -> None:
    """Run `call` in a child that stalls at `obj.name`, SIGKILL it there, and wait for it to end."""
    ready = tmp_path / "stalled"
    ready.unlink(missing_ok=True)
    code = STALL.format(obj=obj, name=name, call=call)
    proc = subprocess.Popen([sys.executable, "-c", code, str(target), str(ready)])
    while not ready.exists() and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert ready.exists(), "the child ended before it reached the point it stalls at"


def test_a_writer_killed_before_its_rename_leaves_a_temporary_file_the_next_write_removes(tmp_path):
    target = tmp_path / "fig.png"
    call = "rr_core.files.replacing.atomic_write(sys.argv[1], lambda f: f.write(b'half'))"
    kill_midway(tmp_path, "rr_core.files.replacing.os", "replace", call, target)
    leftovers = list(tmp_path.glob(".fig.png.*.rr-tmp"))
    assert len(leftovers) == 1 and not target.exists()
    atomic_write(target, lambda f: f.write(b"whole"))
    assert target.read_bytes() == b"whole" and not leftovers[0].exists()


ROW = {"size": "tiny", "variant": "standard", "seed": 0, "params_M": 1.13, "steps": 100, "val_loss": 2.2}


@pytest.mark.parametrize(
    "obj, name", [("rr_core.sweepfile.dataset", "create_new"), ("rr_core.files.replacing.os", "link")]
)
def test_first_append_killed_midway_leaves_no_file_and_the_next_one_succeeds(tmp_path, obj, name):
    from rr_core.sweepfile.dataset import append_rows, load_sweep

    target = tmp_path / "new.csv"
    kill_midway(tmp_path, obj, name, f"rr_core.sweepfile.dataset.append_rows(sys.argv[1], [{ROW!r}])", target)
    assert not target.exists()  # not an empty file that would block the next `rr train --out`
    append_rows(target, [ROW])
    assert load_sweep(target)["seed"].tolist() == [0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.csv", "stalled"]


def test_atomic_dir_swaps_a_whole_folder_in_and_keeps_the_old_one_until_then(tmp_path):
    out = tmp_path / "report"
    out.mkdir()
    (out / "old.txt").write_text("old")
    leftover = temp_name(out, _dead_pid())
    leftover.mkdir()

    def build(folder: Path) -> None:
        assert (out / "old.txt").read_text() == "old"  # readers still see the old folder whole
        (folder / "new.txt").write_text("new")

    atomic_dir(out, build)
    assert [p.name for p in out.iterdir()] == ["new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]  # old folder and leftover removed


KILLED_REPORT = """
import os, signal, sys
from pathlib import Path
from rr_core.files.replacing import atomic_dir, atomic_write

def build(folder):
    (folder / "report.md").write_text("# a report")
    def half_a_figure(f):  # SIGKILL while the figure is being written, as `rr report` saves its figures
        f.write(b"half a png")
        os.kill(os.getpid(), signal.SIGKILL)
    atomic_write(folder / "gaps.png", half_a_figure)

atomic_dir(Path(sys.argv[1]), build, owned={"report.md", "gaps.png"})
"""


def test_a_report_build_killed_while_it_saves_a_figure_is_removed_by_the_next_build(tmp_path):
    out = tmp_path / "report"
    done = subprocess.run([sys.executable, "-c", KILLED_REPORT, str(out)], capture_output=True)
    assert done.returncode == -signal.SIGKILL, done.stderr
    (left,) = tmp_path.iterdir()  # the killed build's folder, holding the figure's own temporary file
    assert left.name == f".report.{left.name.split('.')[2]}.rr-tmp" and any(
        p.name.startswith(".gaps.png.") for p in left.iterdir()
    )
    atomic_dir(
        out, lambda folder: (folder / "report.md").write_text("# again"), owned={"report.md", "gaps.png"}
    )
    assert [p.name for p in tmp_path.iterdir()] == ["report"]
    assert [p.name for p in out.iterdir()] == ["report.md"]


# Each owner of a file or folder rr keeps only while it works (issue 47, class 3), run in a child that
# SIGKILLs itself while the temporary exists (argv: the folder the owner works in, then "kill" or "again").
KILLED_OWNERS = {
    "pre-flight probe": """
import os, signal, sys
real = os.open
def open_(path, flags, *args, **kwargs):
    fd = real(path, flags, *args, **kwargs)
    if "rr-probe" in str(path) and sys.argv[2] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    return fd
os.open = open_
from rr_model.run.planning import preflight
preflight(os.path.join(sys.argv[1], "x.csv"))
""",
    "rr eval scratch folder": """
import os, signal, sys, tempfile
from dataclasses import asdict
from pathlib import Path
import lm_eval, torch
from rr_model.checkpoint import state as ckpt
from rr_model.config import TrainConfig
from rr_model.run.identity import result_config
from rr_model.model import GPT, GPTConfig
from rr_model.uses.downstream import task_scores
tempfile.tempdir = sys.argv[1]
config = GPTConfig(vocab_size=257, block_size=32, n_layer=1, n_head=2, d_model=16, variant="standard")
run = result_config(TrainConfig(size="tiny", variant="standard", data="synthetic", steps=1))
final = Path(sys.argv[1]).parent / "tiny-standard-seed0.final.pt"
ckpt.save(final, ckpt.Final(step=1, config=run, model=GPT(config).state_dict(), model_config=asdict(config)))
def scored(**kwargs):  # the export of the run is in the scratch folder now
    os.kill(os.getpid(), signal.SIGKILL) if sys.argv[2] == "kill" else sys.exit(0)
lm_eval.simple_evaluate = scored
task = Path(os.environ["RR_TESTS"]) / "lm_eval_task"
task_scores([final], ["rr_local_mc"], include_path=task, device="cpu")
""",
    "sharded run's shared-folder check": """
import os, signal, sys
import torch.distributed as dist
dist.init_process_group("gloo", init_method="file://" + os.path.join(sys.argv[1], "..", "rendezvous-" + sys.argv[2]),
                        rank=0, world_size=1)
if sys.argv[2] == "kill":
    dist.broadcast_object_list = lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGKILL)
from rr_model.checkpoint.sharded import check_shared
check_shared(os.path.join(sys.argv[1], "x.checkpoints", "tiny-standard-seed0.dcp"))
dist.destroy_process_group()
os._exit(0)  # torch's gloo threads can abort the interpreter's teardown (SIGABRT); the check is done
""",
}


@pytest.mark.parametrize(
    "owner",  # the sharded check (two gloo processes) and rr eval's (a trained run) are in the slow set
    [
        pytest.param(o, marks=pytest.mark.slow) if o.startswith(("sharded", "rr eval")) else o
        for o in KILLED_OWNERS
    ],
)
def test_a_temporary_a_killed_process_leaves_is_removed_by_the_next_run_of_its_owner(tmp_path, owner):
    work = tmp_path / "work"
    work.mkdir()
    code = KILLED_OWNERS[owner]
    env = {**os.environ, "RR_TESTS": str(Path(__file__).parent)}
    run = [sys.executable, "-c", code, str(work)]
    killed = subprocess.run([*run, "kill"], capture_output=True, text=True, env=env)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    left = [p for p in work.rglob("*") if p.name.startswith(".")]
    assert left, "the killed process left its temporary"  # what the next run must remove
    again = subprocess.run([*run, "again"], capture_output=True, text=True, env=env)
    assert again.returncode == 0, again.stderr
    # before issue 47: the pre-flight made no probe (os.access), the sharded check's `.shared-UUID` file
    # and rr eval's /tmp/rr-eval-XXXX folder (a whole export) stayed for good
    assert [p for p in work.rglob("*") if p.name.startswith(".") or p.name.startswith("rr-eval")] == []


def test_create_dir_publishes_a_folder_whole_with_its_sums_or_leaves_none(tmp_path):
    from rr_core.files.checksums import Damaged, verify_sums
    from rr_core.files.replacing import create_dir

    out = tmp_path / "out"

    def broken(folder):
        (folder / "a.bin").write_bytes(b"a")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        create_dir(out, broken)
    assert list(tmp_path.iterdir()) == []
    assert create_dir(out, lambda folder: (folder / "a.bin").write_bytes(b"a"))
    assert (out / "SHA256SUMS").read_text() == (
        "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  a.bin\n"  # sha256sum's own line
    )
    assert not create_dir(out, lambda folder: None)  # never onto a folder that holds files
    verify_sums(out, "do X")
    (out / "a.bin").write_bytes(b"b")
    with pytest.raises(Damaged, match="a.bin: damaged: its sha256 is not the one SHA256SUMS records"):
        verify_sums(out, "do X")

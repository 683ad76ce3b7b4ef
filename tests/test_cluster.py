"""`rr sweep --launcher slurm` through submitit, without a cluster.

The Slurm path runs for real against stand-in `srun`, `sbatch`, `sacct` and `scancel` scripts: the script
sbatch receives must ask for the requested resources (and be the one --dry-run shows), the pickled jobs must
be the planned runs, and --status/--cancel must read and stop them. submitit's LocalExecutor runs a job as
separate processes through the same pickling and requeue path: a job signalled as timed out mid-run is
requeued and finishes bitwise equal to an uninterrupted run.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import submitit
from conftest import rr
from submitit.core.utils import DelayedSubmission

from rr_core.sweepfile import provenance
from rr_core.sweepfile.dataset import append_rows, load_sweep
from rr_model.checkpoint import state as checkpoint
from rr_model.config import TrainConfig
from rr_model.run.trainer import train
from rr_model.sweep.jobs import read_jobs, state_path
from rr_model.sweep.sbatch import Resources, job_folder, sbatch_script
from rr_model.sweep.slurm import TrainJob, job_status, submit_runs


@pytest.fixture(autouse=True)
def offline_jobs(offline):
    """No hub, the session's token cache, and no job state left from another test."""
    submitit.SlurmJob.watcher.clear()  # the state cache submitit shares across jobs of a process


def finish(path, seed: int, val_loss: float) -> None:
    """The row a finished tiny run of 6 steps appends."""
    row = {"size": "tiny", "variant": "standard", "seed": seed, "params_M": 1.13, "steps": 6}
    append_rows(path, [{**row, "val_loss": val_loss, "ece": 0.1, "minutes": 0.1}])


def sbatch_lines(script: str) -> set[str]:
    return {line for line in script.splitlines() if line.startswith("#SBATCH")}


def test_the_sbatch_script_asks_for_the_requested_resources(tmp_path):
    resources = Resources(
        partition="gpu",
        account="lab",
        time_min=120,
        gpus=4,
        cpus=32,
        mem_gb=200,
        sbatch={"qos": "high", "exclusive": True},
        setup=("module load cuda",),
    )
    script = sbatch_script(tmp_path / "s.csv", resources, n_jobs=9)
    folder = tmp_path / "s.jobs"
    assert sbatch_lines(script) == {
        "#SBATCH --account=lab",
        "#SBATCH --array=0-8%9",  # one job array for the whole plan
        "#SBATCH --cpus-per-task=8",  # 32 cores per run over its 4 tasks
        f"#SBATCH --error={folder}/%A_%a/%A_%a_0_log.err",
        "#SBATCH --exclusive",
        "#SBATCH --gpus-per-node=4",
        "#SBATCH --job-name=rr-sweep",
        "#SBATCH --mem=200G",
        "#SBATCH --nodes=1",
        "#SBATCH --ntasks-per-node=4",  # one DDP task per GPU
        "#SBATCH --open-mode=append",
        f"#SBATCH --output={folder}/%A_%a/%A_%a_0_log.out",
        "#SBATCH --partition=gpu",
        "#SBATCH --qos=high",
        "#SBATCH --signal=USR2@120",  # submitit's checkpoint-and-requeue signal, 2 minutes before the limit
        "#SBATCH --time=120",
        "#SBATCH --wckey=submitit",
    }
    assert "\nmodule load cuda\n" in script and "srun --unbuffered" in script
    assert "-m submitit.core._submit" in script

    cpu = sbatch_lines(sbatch_script(tmp_path / "s.csv", Resources(gpus=0), n_jobs=1))
    assert "#SBATCH --ntasks-per-node=1" in cpu and not any("gpus" in x or "array" in x for x in cpu)


@pytest.fixture
def fake_slurm(tmp_path, monkeypatch):
    """srun, sbatch (job 4242), sacct (reads sacct.txt) and scancel (logs its arguments) on PATH."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    scripts = {
        "srun": "exit 0",
        "sbatch": f'cp "$1" {bin_}/submitted.sh; echo sbatch >> {bin_}/calls; echo "Submitted batch job 4242"',
        "sacct": f"cat {bin_}/sacct.txt",
        "scancel": f'echo "$@" >> {bin_}/scancel.log',
    }
    for name, body in scripts.items():
        path = bin_ / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")
    return bin_


def test_slurm_sweep_submits_one_array_and_status_and_cancel_follow_it(tmp_path, fake_slurm, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = Path("sweep.csv")
    args = ["sweep", "--launcher", "slurm", "--sizes", "tiny", "--seeds", "0,1", "--variant", "standard",
            "--corpus", "synthetic", "--steps", 6, "--out", out, "--gpus", 2, "--partition", "gpu",
            "--time", 30, "--sbatch", "qos=low"]  # fmt: skip
    dry = rr(*args, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert not (fake_slurm / "calls").exists() and not state_path(out).exists()

    result = rr(*args)
    assert result.exit_code == 0, result.output
    submitted = (fake_slurm / "submitted.sh").read_text()
    assert submitted in dry.stdout  # --dry-run shows the very script submitit submits
    assert {"#SBATCH --array=0-1%2", "#SBATCH --qos=low", "#SBATCH --gpus-per-node=2"} <= sbatch_lines(
        submitted
    )
    jobs = read_jobs(out)
    assert [(j["job_id"], j["seed"]) for j in jobs] == [("4242_0", 0), ("4242_1", 1)]
    pickled = DelayedSubmission.load(Path(jobs[1]["folder"].replace("%j", "4242_1")) / "4242_1_submitted.pkl")
    assert isinstance(pickled.function, TrainJob) and pickled.function.cfg.key == ("tiny", "standard", 1)
    assert pickled.function.cwd == str(tmp_path) and pickled.function.out == "sweep.csv"

    (fake_slurm / "sacct.txt").write_text("JobID|State|NodeList\n4242_0|RUNNING|n1\n4242_1|PENDING|None\n")
    checkpoint.save(checkpoint.checkpoint_path(out, "tiny", "standard", 1), {"step": 4})
    finish(out, seed=0, val_loss=2.9)
    status = rr("sweep", "--status", "--out", out)
    assert status.exit_code == 0, status.output
    rows = [line.split() for line in status.stdout.splitlines() if line.startswith("4242_")]
    assert [r[:6] for r in rows] == [
        ["4242_0", "tiny", "standard", "0", "DONE", "6"],
        ["4242_1", "tiny", "standard", "1", "PENDING", "4"],
    ]
    assert rows[1][6] == str(tmp_path / "sweep.jobs" / "4242_1" / "4242_1_0_log.out")

    again = rr(*args)
    assert "not submitted again" in again.stdout and (fake_slurm / "calls").read_text() == "sbatch\n"
    cancel = rr("sweep", "--cancel", "--out", out)
    assert cancel.exit_code == 0 and (fake_slurm / "scancel.log").read_text() == "4242_1\n"


def test_per_run_files_give_each_job_its_own_results_file_to_merge(tmp_path, fake_slurm, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["sweep", "--launcher", "slurm", "--sizes", "tiny", "--seeds", "0,1", "--variant", "standard",
            "--corpus", "synthetic", "--steps", 6, "--out", "sweep.csv", "--per-run-files"]  # fmt: skip
    assert rr(*args).exit_code == 0
    parts = [Path("sweep.parts/tiny-standard-seed0.csv"), Path("sweep.parts/tiny-standard-seed1.csv")]
    assert [Path(j["out"]) for j in read_jobs("sweep.csv")] == parts
    pickled = DelayedSubmission.load(tmp_path / "sweep.jobs" / "4242_1" / "4242_1_submitted.pkl")
    assert Path(pickled.function.out) == parts[1]
    parts[0].parent.mkdir()  # as the trainer makes it

    finish(parts[0], seed=0, val_loss=2.9)
    (fake_slurm / "sacct.txt").write_text("JobID|State|NodeList\n4242_0|COMPLETED|n1\n4242_1|FAILED|n2\n")
    torn = checkpoint.checkpoint_path(parts[1], "tiny", "standard", 1)
    torn.parent.mkdir()
    torn.write_bytes(b"not a checkpoint")
    states = [(r["job_id"], r["state"], r["step"]) for r in job_status("sweep.csv")]
    assert states == [("4242_0", "DONE", 6), ("4242_1", "FAILED", None)]  # None: shown as unreadable
    torn.unlink()
    assert rr(*args).exit_code == 0  # only the unfinished run is submitted again, as a single job
    assert (fake_slurm / "calls").read_text() == "sbatch\nsbatch\n"
    assert [(j["job_id"], j["seed"], j["out"]) for j in read_jobs("sweep.csv")][2:] == [
        ("4242", 1, str(parts[1]))
    ]
    assert "#SBATCH --array" not in (fake_slurm / "submitted.sh").read_text()

    finish(parts[1], seed=1, val_loss=2.8)
    assert rr("merge", *parts, "--out", "merged.csv").exit_code == 0
    assert load_sweep("merged.csv")["val_loss"].tolist() == [2.9, 2.8]


def test_slurm_needs_srun_and_bad_sbatch_items_are_clear(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no Slurm here
    args = ["sweep", "--launcher", "slurm", "--sizes", "tiny", "--seeds", "0", "--out", tmp_path / "x.csv"]
    result = rr(*args, "--corpus", "synthetic")
    assert result.exit_code == 2 and "needs Slurm here" in result.stderr and "--dry-run" in result.stderr
    result = rr(*args, "--sbatch", "=high")
    assert result.exit_code == 2 and "expected KEY=VALUE or KEY" in result.stderr
    result = rr(*args, "--nproc", 2)
    assert result.exit_code == 2 and "give --gpus per run" in result.stderr


def test_a_job_whose_run_is_already_in_the_file_returns_at_once(tmp_path, monkeypatch):
    monkeypatch.setenv("SUBMITIT_EXECUTOR", "local")  # inside a (local) submitit job
    out = tmp_path / "done.csv"
    finish(out, seed=0, val_loss=2.9)
    job = TrainJob(TrainConfig("tiny", "standard", 0, data="synthetic", steps=6), out)
    assert job() is None and len(load_sweep(out)) == 1
    requeued = job.checkpoint()
    assert requeued.function is job and not requeued.args and not requeued.kwargs


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc)."""
    found = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat_file.parent.name))
    return found


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the job's task process through /proc")
def test_a_job_signalled_out_of_time_is_requeued_and_resumes_bitwise(tmp_path):
    cfg = TrainConfig("tiny", "standard", data="synthetic", steps=12, checkpoint_every=2)
    whole = train(cfg, tmp_path / "whole.csv")

    out = tmp_path / "job.csv"
    executor = submitit.LocalExecutor(job_folder(out), max_num_timeout=3)
    executor.update_parameters(timeout_min=60)
    (entry,) = submit_runs([cfg], out, executor)
    controller = int(entry["job_id"])  # a local job's id is its controller's pid, a child of this process
    ckpt = checkpoint.checkpoint_path(out, *cfg.key)
    while not ckpt.exists():  # the trainer's first checkpoint (step 2 of 12)
        assert os.waitpid(controller, os.WNOHANG) == (0, 0), "the job ended before its first checkpoint"
        time.sleep(0.02)
    (task,) = _children(controller)
    # what Slurm sends before the time limit: submitit's own signal, which has no public name
    os.kill(task, submitit.JobEnvironment._usr_sig())  # noqa: SLF001
    os.waitpid(controller, 0)  # the controller restarts the requeued task and ends with it

    (record,) = provenance.read_records(provenance.sidecar_path(out))
    assert record["status"] == "ok" and len(record["resumed_at"]) == 1 and record["resumed_at"][0] >= 2
    assert record["result"]["val_loss"] == whole["result"]["val_loss"]  # bitwise, not approximately
    assert record["result"]["ece"] == whole["result"]["ece"]
    assert record["loss_curve"] == whole["loss_curve"]
    log = Path(entry["log"]).read_text()
    assert "interrupted; requeued to resume" in log and "Requeued job" in log
    assert job_status(out)[0]["state"] == "DONE" and not ckpt.exists()
    same = ["size", "variant", "seed", "params_M", "steps", "val_loss", "ece"]  # minutes: wall-clock
    assert load_sweep(out)[same].equals(load_sweep(tmp_path / "whole.csv")[same])


@pytest.mark.slow
def test_a_job_with_two_tasks_trains_one_run_data_parallel(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # two processes on a small machine
    cfg = TrainConfig("tiny", "standard", data="synthetic", steps=6)
    one = train(cfg, tmp_path / "one.csv")

    out = tmp_path / "two.csv"
    executor = submitit.LocalExecutor(job_folder(out))
    executor.update_parameters(timeout_min=60, tasks_per_node=2)  # what --gpus 2 asks of Slurm
    (entry,) = submit_runs([cfg], out, executor)
    os.waitpid(int(entry["job_id"]), 0)

    (two,) = provenance.read_records(provenance.sidecar_path(out))  # rank 0 alone writes
    assert two["world_size"] == 2 and len(load_sweep(out)) == 1
    assert two["result"]["val_loss"] == pytest.approx(one["result"]["val_loss"], abs=1e-5)
    assert two["result"]["ece"] == pytest.approx(one["result"]["ece"], abs=1e-5)


def test_a_slurm_dry_run_needs_neither_submitit_nor_torch(tmp_path):
    """The jobs and rr's #SBATCH options, where submitit is absent: each of them is in submitit's script."""
    code = (
        "import sys; sys.modules['submitit'] = sys.modules['torch'] = None; sys.argv[0] = 'rr'\n"
        "from cli.main import main; main()"
    )
    args = ["sweep", "--launcher", "slurm", "--dry-run", "--sizes", "60M", "--seeds", "3", "--gpus", "4",
            "--cpus", "32", "--sbatch", "qos=high", "--setup", "module load cuda", "--out", str(tmp_path / "s.csv")]  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "rr sweep: 3 job(s) would be submitted" in done.stdout
    assert "# pip install 'rr-toolkit[cluster]'" in done.stdout and "\nmodule load cuda\n" in done.stdout
    resources = Resources(gpus=4, cpus=32, sbatch={"qos": "high"}, setup=("module load cuda",))
    full = sbatch_lines(sbatch_script(tmp_path / "s.csv", resources, n_jobs=3))
    own = sbatch_lines(done.stdout)
    assert "#SBATCH --array=0-2" in own and own - {"#SBATCH --array=0-2"} <= full
    assert len(own) == 9  # array, cpus, gpus, job name, nodes, tasks, qos, signal, time


def test_a_run_over_nodes_asks_for_them_and_plans_the_memory_of_all_its_gpus(tmp_path):
    lines = sbatch_lines(sbatch_script(tmp_path / "s.csv", Resources(gpus=8, nodes=2), n_jobs=1))
    assert {"#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=8", "#SBATCH --gpus-per-node=8"} <= lines
    args = ["sweep", "--sizes", "1B", "--seeds", "3", "--variant", "standard", "--shard", "fsdp",
            "--gpu-memory", "80", "--dry-run", "--out", tmp_path / "s.csv"]  # fmt: skip
    dry = rr(*args, "--launcher", "slurm", "--nodes", "2", "--gpus", "8")
    assert dry.exit_code == 0, dry.output
    assert "#SBATCH --nodes=2" in dry.stdout and "Memory per GPU (GiB) on 16 GPU(s)" in dry.stdout
    here = rr(*args, "--nodes", "2")
    assert here.exit_code == 2 and "--nodes is the Slurm launcher's" in here.stderr


@pytest.mark.parametrize(
    "option, value, shown",
    [
        ("--partition", "gpu\n#SBATCH --time=99999", "--partition 'gpu\\n#SBATCH --time=99999'"),
        ("--account", "lab\rrm -rf ~", "--account 'lab\\rrm -rf ~'"),
        ("--sbatch", "qos=high\ntouch pwned", "--sbatch 'qos=high\\ntouch pwned'"),
        ("--setup", "module load cuda\nrm -rf ~", "--setup (a shell line, run as written) 'module load cuda"),
    ],
    ids=["partition", "account", "sbatch", "setup"],
)
def test_a_line_break_in_a_slurm_option_is_refused_before_any_script_is_written(
    tmp_path, option, value, shown
):
    args = [
        "sweep",
        "--launcher",
        "slurm",
        "--dry-run",
        "--sizes",
        "tiny",
        "--seeds",
        "0",
        "--out",
        tmp_path / "x.csv",
    ]
    result = rr(*args, "--corpus", "synthetic", option, value)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.output
    assert result.stderr.startswith(f"rr: error: {shown}") and "#SBATCH" not in result.stdout
    assert "a line break or control character (U+000" in result.stderr
    assert "in every job's sbatch script" in result.stderr


def test_a_config_file_s_sbatch_and_an_out_path_are_checked_as_the_options_are(tmp_path):
    config = tmp_path / "run.toml"
    config.write_text('sbatch = ["qos=high\\ntouch pwned"]\n')
    args = [
        "sweep",
        "--launcher",
        "slurm",
        "--dry-run",
        "--sizes",
        "tiny",
        "--seeds",
        "0",
        "--corpus",
        "synthetic",
    ]
    result = rr(*args, "--out", tmp_path / "x.csv", "--config", config)
    assert result.exit_code == 2 and result.stderr.startswith("rr: error: --sbatch 'qos=high\\ntouch pwned'")
    folder = tmp_path / "a\nb"
    folder.mkdir()
    result = rr(*args, "--out", folder / "x.csv")
    assert result.exit_code == 2 and result.stderr.startswith("rr: error: --out ")
    assert "U+000A" in result.stderr and "its job folder" in result.stderr
    assert Resources(setup=("module load cuda && export X=1 | tee y",)).setup  # shell, on one line: as given

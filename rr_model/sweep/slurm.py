"""Sweeps on a Slurm cluster through submitit: one job per run, one job array per sweep, each job requeued
from its last checkpoint when it is preempted or reaches its time limit.

A job is a `TrainJob`, a submitit `helpers.Checkpointable`. submitit pickles it into the job folder and runs
it on a node (`python -m submitit.core._submit`). Slurm signals the job (USR2, `signal_delay_s` before the
time limit; on preemption too where the cluster sets SlurmctldParameters=preempt_send_user_signal); submitit
then calls `checkpoint()` on task 0, saves the `DelayedSubmission` it returns as the job's new pickle and
requeues the job (`scontrol requeue`), at most `max_timeouts` times for time limits. The requeued job calls
the trainer with resume=True, which continues from the last checkpoint the trainer wrote (every
`checkpoint_every` steps; the steps since then are redone), bitwise as a run resumed locally. A job whose run
is already in the dataset (it finished just before the signal) returns at once.

With several GPUs per run the job has one task per GPU, on one node or on `--nodes` of them; each task
sets torch.distributed's environment (MASTER_ADDR: the job's first node, MASTER_PORT, RANK, WORLD_SIZE,
LOCAL_RANK, LOCAL_WORLD_SIZE) from Slurm's with submitit's `helpers.TorchDistributedEnvironment`, and the
trainer joins the process group as it does under torchrun. A sharded run's processes all write their
pieces into its checkpoint folder beside the dataset, so the dataset's folder must be on a filesystem
every node sees (the trainer checks it before training); a requeued job resumes from that folder.
Imports torch only inside a job and in `job_status` (to read a checkpoint's step).
"""

from __future__ import annotations

import os
import signal
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import submitit
from submitit.helpers import Checkpointable, DelayedSubmission, TorchDistributedEnvironment

from rr_core.errors import InputError
from rr_core.files.locks import Held, pid_alive
from rr_core.plugins import ENV
from rr_core.sweepfile.schema import record_key
from rr_model.config import TrainConfig
from rr_model.run.output_file import preflight, read_output
from rr_model.run.planning import families
from rr_model.sweep.child import train_planned
from rr_model.sweep.jobs import add_jobs, read_jobs
from rr_model.sweep.sbatch import Resources, job_folder, part_path

__all__ = [
    "TrainJob",
    "slurm_executor",
    "submit_runs",
    "job_status",
    "active_keys",
    "cancel_jobs",
]

# Slurm states (sacct) of a job that may still train its run; UNKNOWN too, so that a failed sacct call never
# leads to a second job for the same run.
ACTIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD",
          "REQUEUE_FED", "RESIZING", "PREEMPTED", "UNKNOWN"}  # fmt: skip


class TrainJob(Checkpointable):
    """One run as a submitit job: trains `cfg` into `out`, resuming from its checkpoint if there is one.

    Returns the trainer's provenance record, or None when the run was already in `out` or another job is
    training it (a sweep submitted twice: that job holds the run's claim and writes its row). The working
    directory of the submitter is kept, so a relative `out` means the same file inside the job.
    """

    def __init__(self, cfg: TrainConfig, out: str | os.PathLike, then: tuple[TrainConfig, ...] = ()):
        self.cfg = cfg
        self.then = tuple(then)  # cooldown branches of `cfg`, trained after it (`planning.families`)
        self.out = str(out)
        self.cwd = os.getcwd()
        self.plugins = os.environ.get(ENV)  # the submitter's plugins: the job finds the same rules

    def __call__(self) -> dict[str, Any] | None:
        os.chdir(self.cwd)
        if self.plugins is not None:
            os.environ[ENV] = self.plugins
        if submitit.JobEnvironment().num_tasks > 1:
            TorchDistributedEnvironment().export(set_cuda_visible_devices=False, overwrite=True)
        try:
            record = train_planned(self.cfg, self.out)
            for branch in self.then:  # each from the state the run saved where its cooldown starts
                train_planned(branch, self.out)
            return record
        except Held as e:  # another job trains this run now (a sweep submitted twice): it writes the row
            print(f"rr: skip: {e}", flush=True)
            return None

    def checkpoint(self) -> DelayedSubmission:
        """Requeue this same job: the trainer's own checkpoint on disk holds the state, not this object."""
        print(f"rr: {' '.join(map(str, self.cfg.key))} interrupted; requeued to resume", flush=True)
        return DelayedSubmission(self)


def slurm_executor(out: str | os.PathLike, resources: Resources) -> submitit.SlurmExecutor:
    """submitit's SlurmExecutor for the jobs of `out`, with `resources` set; needs Slurm's `srun` here."""
    try:
        executor = submitit.SlurmExecutor(job_folder(out), max_num_timeout=resources.max_timeouts)
    except RuntimeError as e:
        raise InputError(
            f"--launcher slurm needs Slurm here ({e}); run it on the cluster's login node, or use --dry-run "
            "to see the jobs and their sbatch script anywhere"
        ) from None
    executor.update_parameters(**resources.slurm_parameters())
    return executor


def submit_runs(
    runs: list[TrainConfig], out: str | os.PathLike, executor: submitit.Executor, per_run_files: bool = False
) -> list[dict]:
    """Submit one `TrainJob` per run (a job array on Slurm) and record them in the state file of `out`.

    Each job appends its row to `out`, or with `per_run_files` to its own `part_path` (no file is shared, so
    no lock has to hold across hosts; `rr merge` joins them). A run with cooldown branches among `runs` is one
    job that trains them after it (`rr_model.run.planning.families`), into the same file. Returns the state entries, in the order of
    `runs` (see `rr_model.sweep.jobs`). A default dataset that starts as the published rows is created
    here, before any job runs, so no job reads it half-written.
    """
    groups = families(runs)  # a run with cooldown branches is one job, which trains them after it
    runs = [lead for lead, *_ in groups]
    targets = [part_path(out, cfg.stem) if per_run_files else Path(out) for cfg in runs]
    preflight(out).start()
    jobs = executor.submit_array(
        [TrainJob(lead, target, then) for (lead, *then), target in zip(groups, targets, strict=True)]
    )
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    entries = [
        {
            "job_id": job.job_id,
            "executor": executor.name(),
            "folder": str(executor.folder),
            **cfg.named,
            "steps": cfg.steps,
            "out": str(target),
            "log": str(job.paths.stdout),
            "submitted": now,
        }
        for cfg, job, target in zip(runs, jobs, targets, strict=True)
    ]
    add_jobs(out, entries)
    return entries


def _scheduler_state(entry: dict[str, Any], slurm: dict[str, submitit.SlurmJob]) -> str:
    """Slurm's state of a job (its first word: "CANCELLED by 42" -> CANCELLED), or a local job's."""
    if entry["executor"] == "slurm":
        return (slurm[entry["job_id"]].state.split() or ["UNKNOWN"])[0]
    return "RUNNING" if pid_alive(int(entry["job_id"])) else "ENDED"  # the id of a local job is its pid


def job_status(out: str | os.PathLike) -> list[dict[str, Any]]:
    """Each recorded job of `out`: job_id, size, variant, seed, state, step and log.

    state is DONE when the run's row is in the file its job writes (`out`, or its own part file), else the
    scheduler's: Slurm's (from one `sacct` call; UNKNOWN where it cannot say) or, for submitit's local
    executor, RUNNING or ENDED. step is the run's steps when done, else the step of its checkpoint (0 when
    it has none yet, None when it cannot be read).
    """
    from rr_model.checkpoint.state import current, saved_step  # torch: to read a checkpoint file's step

    entries = read_jobs(out)
    done = {target: read_output(target) for target in {e["out"] for e in entries}}
    slurm = {
        e["job_id"]: submitit.SlurmJob(e["folder"], e["job_id"]) for e in entries if e["executor"] == "slurm"
    }
    rows = []
    for e in entries:
        stem = {k: e[k] for k in ("size", "variant", "seed", "lr") if e.get(k) is not None}
        stem |= {"steps": e["steps"]} if e.get("budget") else {}  # one of several budgets: its steps name it
        family = tuple(v for k, v in stem.items() if k != "steps")
        held = done[e["out"]]
        if (*family, e["steps"]) in held.budget_keys if e.get("budget") else record_key(e) in held.keys:
            state, step = "DONE", e["steps"]
        else:
            state = _scheduler_state(e, slurm)
            found = current(e["out"], **stem)
            step = 0 if found is None else saved_step(found)
        budget = {"budget": e["budget"]} if e.get("budget") else {}
        rows.append({"job_id": e["job_id"], **stem, **budget, "state": state, "step": step, "log": e["log"]})
    return rows


def active_keys(status: list[dict[str, Any]]) -> set[tuple[str, str, int]]:
    """The runs that have a job still pending or running (or of unknown state) in `job_status`'s rows."""
    return {record_key(r) for r in status if r["state"] in ACTIVE}


def cancel_jobs(out: str | os.PathLike) -> list[str]:
    """Cancel every recorded job of `out` that may still run (`scancel`; SIGINT for local ones).

    Returns the ids of the jobs asked to stop.
    """
    status = {r["job_id"]: r for r in job_status(out)}
    cancelled = []
    for e in read_jobs(out):
        if status[e["job_id"]]["state"] not in ACTIVE:
            continue
        if e["executor"] == "slurm":
            submitit.SlurmJob(e["folder"], e["job_id"]).cancel(check=False)
        else:
            os.kill(int(e["job_id"]), signal.SIGINT)  # submitit's local controller stops its tasks on it
        cancelled.append(e["job_id"])
    return cancelled

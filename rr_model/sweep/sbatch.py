"""What a Slurm sweep asks for, without submitit or torch: the resources of each run, where its jobs and
per-run files live, and the sbatch script, so `rr sweep --launcher slurm --dry-run` works anywhere.

`sbatch_script` is submitit's own script where submitit is installed (the exact text it would submit);
where it is not, the `#SBATCH` options rr itself asks for (`Resources.slurm_parameters`), the lines
submitit adds (output and error paths, its wckey, the srun command) left out and said so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rr_core.lines import check_line
from rr_core.sweepfile.schema import run_stem

__all__ = ["Resources", "job_folder", "part_path", "sbatch_script"]


@dataclass(frozen=True)
class Resources:
    """What each run of a Slurm sweep asks for. The job array shares them.

    `gpus` per node, one task (training process) per GPU (0: one CPU task); `nodes` per run (its tasks span
    them: `gpus` x `nodes` processes); `cpus` per node, split over its tasks; `time_min` the time limit of
    one attempt; `sbatch` any further `#SBATCH --key=value` lines (True: a
    bare `--key`); `setup` shell lines run before the job (module load, ...); `max_timeouts` how often a job
    is requeued after reaching its time limit.

    Every text here goes into the job script, so each is checked when the resources are made
    (`rr_core.lines.check_line`): a line break or control character in the partition, the account or an
    sbatch option is refused, as it would end its `#SBATCH` line and run the rest as a shell command. A
    setup line is shell on purpose, and refused only for a line break (give one --setup per line).
    """

    partition: str | None = None
    account: str | None = None
    time_min: int = 60
    gpus: int = 1
    cpus: int | None = None
    mem_gb: int | None = None
    sbatch: dict[str, str | bool] = field(default_factory=dict)
    setup: tuple[str, ...] = ()
    max_timeouts: int = 3
    signal_delay_s: int = 120  # the USR2 comes this long before the limit: time to leave cleanly
    nodes: int = 1

    def __post_init__(self) -> None:
        script = "every job's sbatch script"
        for option, value in (("--partition", self.partition), ("--account", self.account)):
            if value is not None:
                check_line(value, option, script)
        for key, value in self.sbatch.items():
            check_line(key if value is True else f"{key}={value}", "--sbatch", script)
        for line in self.setup:
            check_line(line, "--setup (a shell line, run as written)", script)

    def slurm_parameters(self) -> dict[str, Any]:
        """The parameters of submitit's SlurmExecutor (sbatch names) for these resources."""
        tasks = max(1, self.gpus)
        params: dict[str, Any] = {"job_name": "rr-sweep", "time": self.time_min, "nodes": self.nodes}
        params |= {"ntasks_per_node": tasks, "signal_delay_s": self.signal_delay_s}
        optional = {
            "gpus_per_node": self.gpus or None,
            "partition": self.partition,
            "account": self.account,
            "cpus_per_task": max(1, self.cpus // tasks) if self.cpus else None,
            "mem": f"{self.mem_gb}G" if self.mem_gb else None,
            "additional_parameters": dict(self.sbatch) or None,
            "setup": list(self.setup) or None,
        }
        return params | {k: v for k, v in optional.items() if v is not None}


def job_folder(out: str | os.PathLike) -> Path:
    """submitit's folder pattern for the jobs of a dataset: `data/scaling_v8.jobs/%j` (one folder per job).

    The folder goes into the job script (its --output and --error lines), so a path that cannot stand in
    one line is refused (`rr_core.lines.check_line`)."""
    out = Path(out)
    folder = out.parent.absolute() / f"{out.stem}.jobs" / "%j"
    check_line(str(folder), "--out", "every job's sbatch script (its job folder)")
    return folder


def part_path(out: str | os.PathLike, stem: Mapping[str, Any]) -> Path:
    """The results file of one run when each job writes its own: `data/scaling_v8.parts/1B-highway-seed3.csv`
    (`stem`: the run's names, `TrainConfig.stem`)."""
    out = Path(out)
    return out.parent / f"{out.stem}.parts" / f"{run_stem(**stem)}.csv"


def sbatch_script(out: str | os.PathLike, resources: Resources, n_jobs: int) -> str:
    """The sbatch script submitit submits for `n_jobs` runs of `out` (a job array when n_jobs > 1).

    Without submitit, the `#SBATCH` options rr asks for, in sbatch's spelling, with a comment naming what
    submitit would add and the extra that installs it.
    """
    try:
        import submitit
    except ModuleNotFoundError:
        return _own_options(resources, n_jobs)

    class ScriptOnly(submitit.SlurmExecutor):  # writes scripts only: no Slurm needed to show one
        @classmethod
        def affinity(cls) -> int:
            return 2

    executor = ScriptOnly(job_folder(out), max_num_timeout=resources.max_timeouts)
    executor.update_parameters(**resources.slurm_parameters())
    if n_jobs > 1:
        executor.parameters["map_count"] = n_jobs  # as submitit's own array submission sets it
    return executor._make_submission_file_text(executor._submitit_command_str, "dry-run")


def _own_options(resources: Resources, n_jobs: int) -> str:
    """rr's `#SBATCH` lines for `resources` (sorted, as submitit writes them) and the setup lines."""
    params = resources.slurm_parameters()
    setup = params.pop("setup", [])
    params |= params.pop("additional_parameters", {})
    params["signal"] = f"USR2@{params.pop('signal_delay_s')}"
    if n_jobs > 1:
        params["array"] = f"0-{n_jobs - 1}"
    lines = [
        "#!/bin/bash",
        "# The options rr asks for. submitit is not installed here, so the script it would",
        "# submit (these plus its --output, --error, --open-mode and srun lines) cannot be shown:",
        "# pip install 'rr-toolkit[cluster]'",
    ]
    for key in sorted(params):
        flag = f"--{key.replace('_', '-')}"
        lines.append(f"#SBATCH {flag}" if params[key] is True else f"#SBATCH {flag}={params[key]}")
    return "\n".join([*lines, *(["", "# setup", *setup] if setup else [])]) + "\n"

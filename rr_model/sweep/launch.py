"""Where a sweep's runs train, as one documented value: `Launch` (here, one process per run, or on Slurm as
one submitit job per run), whose fields are `rr sweep`'s and `rr tune`'s launcher options
(`rr_core.options`), and what it asks of a Slurm job (`Launch.resources`).

Light to import (the Slurm modules load inside the calls), so the command line reads these declarations at
start-up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from rr_core.errors import InputError
from rr_core.options import option

if TYPE_CHECKING:
    from rr_model.sweep.sbatch import Resources

__all__ = ["Launch", "SLURM"]

SLURM = "Slurm (--launcher slurm)"  # the help panel of the Slurm launcher's options
_SBATCH_KEY = re.compile(r"[a-z][a-z0-9_-]*")


def _slurm(help: str, **how: object) -> dict:
    return option(help, panel=SLURM, **how)


@dataclass(frozen=True)
class Launch:
    """Where each run of a sweep trains, and with what. The defaults train here, one process per run."""

    nproc: int = field(default=1, metadata=option("Processes (GPUs) per run, launched with torchrun.", min=1))
    launcher: Literal["local", "slurm"] = field(
        default="local",
        metadata=option(
            "local: one process per run here, in turn. slurm: one submitit job per run (one job array), "
            "requeued from its checkpoint when preempted or out of time."
        ),
    )
    partition: str | None = field(default=None, metadata=_slurm("Slurm partition."))
    account: str | None = field(default=None, metadata=_slurm("Slurm account to charge."))
    time: int = field(
        default=60, metadata=_slurm("Time limit of one attempt, minutes; requeued past it.", min=1)
    )
    gpus: int = field(
        default=1, metadata=_slurm("GPUs per node of a run, one training process each (0: CPU).", min=0)
    )
    cpus: int | None = field(default=None, metadata=_slurm("CPU cores per node of a run.", min=1))
    mem_gb: int | None = field(default=None, metadata=_slurm("Memory per node of a run, GB.", min=1))
    sbatch: tuple[str, ...] = field(
        default=(),
        metadata=_slurm("A further sbatch option, KEY=VALUE or KEY (repeatable), e.g. --sbatch qos=high."),
    )
    setup: tuple[str, ...] = field(
        default=(),
        metadata=_slurm(
            "A shell line run before each job, as written: it is shell (repeatable: one line each)."
        ),
    )
    max_timeouts: int = field(
        default=3, metadata=_slurm("Requeues allowed after time limits, per job.", min=0)
    )
    per_run_files: bool = field(
        default=False,
        metadata=_slurm(
            "Each job appends its row to its own file, OUT's .parts/SIZE-VARIANT-seedN.csv, not to OUT: for "
            "filesystems whose locks do not hold across hosts. Join them with rr merge."
        ),
    )
    nodes: int = field(
        default=1,
        metadata=_slurm(
            "Nodes per run: its --gpus processes on each, one process group (the dataset's folder must be on a "
            "filesystem every node sees).",
            min=1,
        ),
    )

    def check(self) -> None:
        """Refuse the options of one launcher given to the other."""
        if self.launcher == "local" and self.nodes > 1:
            raise InputError("--nodes is the Slurm launcher's; here one run spans --nproc processes")
        if self.launcher == "slurm" and self.nproc > 1:
            raise InputError(
                "--nproc is the local launcher's; with --launcher slurm give --gpus per run (per node with --nodes)"
            )

    @property
    def world(self) -> int:
        """The processes one Slurm run spans: --gpus on each of --nodes (one on CPU)."""
        return self.nodes * max(1, self.gpus)

    def resources(self) -> Resources:
        """What each job of a Slurm sweep asks for (`rr_model.sweep.sbatch.Resources`)."""
        from rr_model.sweep.sbatch import Resources

        return Resources(
            partition=self.partition,
            account=self.account,
            gpus=self.gpus,
            cpus=self.cpus,
            max_timeouts=self.max_timeouts,
            nodes=self.nodes,
            time_min=self.time,
            mem_gb=self.mem_gb,
            sbatch=_sbatch(self.sbatch),
            setup=tuple(self.setup),
        )


def _sbatch(given: tuple[str, ...]) -> dict[str, str | bool]:
    """--sbatch KEY=VALUE / KEY items as submitit's additional_parameters ({key: value or True})."""
    found: dict[str, str | bool] = {}
    for item in given:
        key, eq, value = item.removeprefix("--").partition("=")
        if not _SBATCH_KEY.fullmatch(key) or (eq and not value):
            raise InputError(f"--sbatch {item!r}: expected KEY=VALUE or KEY, e.g. qos=high or exclusive")
        found[key] = value if eq else True
    return found

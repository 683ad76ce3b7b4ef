"""What a sharded run does when one process runs out of memory: every process stops, one line says which
ran out and how to go on, and the last checkpoint stays as it was.

Data parallel retries the step in more micro-batches on every process together (`rr_model.run.retry.step_with_retry`),
which works because no collective runs inside its forward and backward passes. A sharded model gathers
its parameters inside them: a process that runs out mid-forward leaves the others waiting in a gather it
will never join, and no process can rejoin a collective half done. So the process that ran out writes a
small record beside the run's checkpoint (`record_path`, whole or not at all; the first to write it wins)
and leaves; its peers' collectives then fail at once (gloo and NCCL notice the closed connection, and
torchrun stops the other processes when one exits with an error; the process group's timeout,
`rr_model.run.step.COLLECTIVE_TIMEOUT`, bounds the rest). A peer whose collective fails finds the record and
stops without a message of its own (`rr_core.errors.StoppedElsewhere`), so the run ends with one line.
Nothing here writes to the checkpoint, which is only ever replaced whole.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

from rr_core.errors import RRError, StoppedElsewhere
from rr_core.files.replacing import create_new

__all__ = ["OutOfMemoryStop", "record_path", "stop", "stopped_elsewhere"]


class OutOfMemoryStop(RRError):
    """A process of a sharded run ran out of memory; the run stopped on every process.

    `facts` holds the record (rank, world, host, device, step, micro_batches, sequences, checkpoint,
    checkpoint_step); `micro_batches` is the count to resume with (None when a micro-batch is one sequence
    already). `resume_with(command)` is the same error naming the exact command to run.
    """

    def __init__(self, facts: dict[str, Any], how: str | None = None):
        self.facts = facts
        f = facts
        sequences = f["sequences"]
        halved = sequences % 2 == 0 and sequences > 1
        self.micro_batches = f["micro_batches"] * 2 if halved else None
        kept = (
            f"its last checkpoint ({f['checkpoint']}, step {f['checkpoint_step']}) is intact"
            if f["checkpoint"]
            else "it had no checkpoint yet, so it starts over"
        )
        if self.micro_batches is None:
            advice = (
                "its micro-batches are one sequence already: give it more GPUs or --activation-checkpointing"
            )
        else:
            advice = how or (
                f"go on with --micro-batches {self.micro_batches} added to the same command (rr train and rr "
                "reproduce with --resume too; rr sweep resumes by itself)"
            )
        super().__init__(
            f"process {f['rank']} of {f['world']} ({f['host']}, {f['device']}) ran out of memory at step "
            f"{f['step']} with {f['micro_batches']} micro-batch(es) of {sequences} sequence(s) per process; "
            f"every process of the run stopped and {kept}: {advice}"
        )

    def resume_with(self, command: str) -> OutOfMemoryStop:
        """The same error, naming `command` as the one to run (where the caller knows its command line)."""
        return OutOfMemoryStop(self.facts, f"resume with {command}" if self.micro_batches else None)


def record_path(checkpoint: str | os.PathLike) -> Path:
    """The record of a run's out-of-memory stop, beside its checkpoint: ``SIZE-VARIANT-seedS.oom.json``."""
    return Path(checkpoint).with_suffix(".oom.json")


def stop(record: Path, facts: dict[str, Any]) -> RRError:
    """Record that this process ran out of memory (unless another did first) and return the error to raise:
    its message where this process wrote the record, else a silent `StoppedElsewhere`."""
    facts = {"host": platform.node(), **facts}
    record.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(facts, sort_keys=True).encode("utf-8")
    if not create_new(record, lambda f: f.write(text)):
        return StoppedElsewhere(f"another process of the run ran out of memory first ({record})")
    return OutOfMemoryStop(facts)


def stopped_elsewhere(record: Path) -> StoppedElsewhere | None:
    """After a collective failed: the silent error to stop with when another process ran out of memory
    (its record is there), None when something else went wrong."""
    if not record.exists():
        return None
    return StoppedElsewhere(f"a process of the run ran out of memory ({record} says which)")

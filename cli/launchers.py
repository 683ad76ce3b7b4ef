"""What `rr sweep` and `rr tune` show of a launch (`rr_model.sweep.launch.launch`: their runs trained here, one
process each, or on Slurm as one job array through submitit, or under --dry-run planned).

Standard library and typer at import (as every command module); the library loads inside the calls.
"""

from __future__ import annotations

from pathlib import Path

import typer

from cli.records import Format, echo_records
from cli.run_options import RESULT_FORMATS, echo_dry_run
from rr_analysis.numbers import BLANK

__all__ = ["show_launched"]


def show_launched(done, out: Path, dry_run: bool, command: str) -> None:
    """What a launch did (`rr_model.sweep.launch.Launched`): the plan (dry run) or each run's summary here,
    the jobs and their sbatch script (dry run) or the jobs submitted on Slurm."""
    from rr_model.sweep.sbatch import job_folder

    if done.busy:
        typer.echo(f"rr {command}: runs with a pending or running job are not submitted again (see --status)")
    if dry_run and done.plan is not None:
        if done.jobs is not None:
            title = f"rr {command}: {len(done.jobs)} job(s) would be submitted"
            echo_records(done.jobs, Format.text, title=title, formats={"branch_at": lambda b: b or BLANK})
            typer.echo(f"\nsbatch script (submitit writes it under {job_folder(out)}):\n")
            typer.echo(done.script)
        echo_dry_run(done.plan, f"rr {command}: plan for {out}")
    elif done.summary:
        echo_records(done.summary, Format.text, title=f"rr {command}: {out}", formats=RESULT_FORMATS)
    elif done.entries:
        e = done.entries
        keys = ("job_id", "size", "variant", "seed", *(("lr",) if "lr" in e[0] else ()), "out", "log")
        echo_records([{k: r[k] for k in keys} for r in e], Format.text, title=f"rr {command}: submitted")
        typer.echo(f"rr {command}: follow them with rr sweep --status --out {out}; stop them with --cancel")

"""What `rr train`, `rr reproduce`, `rr sweep` and `rr tune` share: the help panel of their training options,
the plan and results tables, and what `rr train` and `rr reproduce` show around their one library call (say
what is skipped, then show the plan or the results of `rr_model.run.entry.train_command` or
`reproduce_command`). Their run config file's option (`--config`) is `cli.config_file`'s.

No option is declared here: the training options are the fields of `rr_model.config.TrainConfig`, which
`cli.fields.dataclass_options` turns into a command's options, in the help panel `PANEL` (or the one a field
names); each command's own are the fields of the value its library call takes (`rr_model.run.entry.Training`,
`rr_model.sweep.local.Sweep`, `rr_model.sweep.tuning_runs.Tuning`). A new option is a new field there (the
module `rr_core.options` says how) and no line here.

Standard library, typer and those declarations (torch-free and light) at import, so `rr --help` stays light;
the library loads inside the calls.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import typer

from cli.errors import known_errors
from cli.records import Format, echo_records
from rr_analysis.numbers import BLANK, duration, fixed, significant
from rr_core.sweepfile import DECIMALS

PANEL = "Training run"  # the help panel of the options that set TrainConfig fields


def _decimals(decimals: int, grouped: bool = False) -> Callable[[object], str]:
    """A column's cells with fixed decimals (`rr_analysis.numbers.fixed`); a value a run lacks is BLANK."""
    return lambda v: fixed(v, decimals, grouped=grouped, none=BLANK)


PLAN_FORMATS = {"params": _decimals(0, True), "tokens": _decimals(0, True), "est_minutes": _decimals(1)}
RESULT_FORMATS = {name: _decimals(places) for name, places in DECIMALS.items()}  # as the row is written


def echo_plan(plan: list[dict], title: str) -> None:
    """The plan table of `describe_runs` and its total."""
    table = [{k: v for k, v in r.items() if k != "assumed"} for r in plan]
    echo_records(table, Format.text, title=title, formats=PLAN_FORMATS)
    took = duration(sum(r["est_minutes"] for r in plan))
    typer.echo(
        f"{len(plan)} run(s), {fixed(sum(r['tokens'] for r in plan), 0, grouped=True)} tokens, about {took} "
        f"(training FLOPs at the rate assumed for {plan[0]['assumed']}; a rough figure)"
    )


# A budget's columns (`rr_core.budget.Budget`, with passes over the corpus where known)
BUDGET_FORMATS: dict[str, Callable[[object], str]] = {
    "params": _decimals(0, True),
    "steps": _decimals(0, True),
    "tokens": _decimals(0, True),
    "tokens_per_param": lambda v: significant(v, 3),
    "flops": lambda v: significant(v, 3, scientific=True),
    "passes": lambda v: fixed(v, 2, none=BLANK),
}


def echo_budget(rows: list[dict], title: str, fmt: Format = Format.text) -> None:
    """A table of budgets (`rr_core.budget.budget_table`, `rr_model.run.planning.budget_plan`) and, in text,
    how its FLOPs are counted and which budgets pass over their corpus more than once."""
    from rr_core.budget import FLOPS_FORMULA

    echo_records(rows, fmt, title=title, formats=BUDGET_FORMATS)
    if fmt is not Format.text:
        return
    notes = [f"params: the reference's, exact; tokens per parameter and FLOPs of it; {FLOPS_FORMULA}."]
    if any("passes" in r for r in rows):
        notes.append("passes: tokens over the corpus's training tokens (- where it is not tokenized yet).")
    if over := [
        f"{r['size']} at {fixed(r['steps'], 0, grouped=True)} steps ({fixed(r['passes'], 2)})"
        for r in rows
        if (r.get("passes") or 0) > 1
    ]:
        notes.append(f"past one pass over the corpus, so windows repeat: {', '.join(over)}.")
    typer.echo("\n".join(notes))


GIB = 2**30


def _gib(b: int | None) -> str:
    return fixed(None if b is None else b / GIB, 2, none=BLANK)


# The memory plan's columns (`rr_model.parallel.memory.memory_plan`): bytes shown as GiB, fits as yes/no
MEMORY_FORMATS: dict[str, Callable[[object], str]] = {
    **dict.fromkeys(("params", "grads", "optimizer", "gathered", "activations", "eval", "total"), _gib),
    "fits": lambda f: {True: "yes", False: "no"}.get(f, BLANK),
}


def echo_memory(records: list[dict], source: str, world: int) -> None:
    """The memory plan of `rr_model.run.planning.memory_plans`: GiB per GPU, and what it was checked against."""
    from rr_analysis.numbers import percent
    from rr_model.parallel.memory import FIT_SHARE

    if not records:
        return
    typer.echo("")
    echo_records(
        records,
        Format.text,
        title=f"Memory per GPU (GiB) on {world} GPU(s), against {source} (* the runs' own setting)",
        formats=MEMORY_FORMATS,
    )
    typer.echo(
        "state (params, grads, AdamW optimizer) exact; gathered (fsdp: whole units in flight), activations "
        "per micro-batch and eval (the final evaluation's whole batch) estimated (docs/training.md, Past one "
        f"GPU); fits: total <= {percent(FIT_SHARE)} of the GPU's memory, at the micro-batches shown."
    )


def echo_dry_run(plan, title: str | None) -> None:
    """What a dry run shows (`rr_model.run.planning.DryRun`): the plan table under `title` (where the plan
    describes its runs), what cooldown branches train themselves, the budget of each size and step count
    (of the reference) and the memory plan."""
    if plan.runs is not None:
        echo_plan(plan.runs, title)
    if plan.branch_note is not None:
        typer.echo(plan.branch_note)
    typer.echo("")
    echo_budget(plan.budget, "Budget per size and steps (of the reference)")
    echo_memory(plan.memory, plan.gpu, plan.world)


def report_training(command: str, out: Path, train: Callable[..., object]) -> None:
    """`rr train` and `rr reproduce` around their one library call `train` (`rr_model.run.entry.train_command`
    or `reproduce_command`, given all but `planned`): say which runs are skipped, then show the dry run's plan
    or the results; exit 1 if a run diverged."""
    from rr_model.run.entry import lead_process

    def skipped(runs) -> None:
        for cfg in runs.skipped:
            if lead_process():  # under torchrun, one process reports
                typer.echo(f"skip: {' '.join(map(str, cfg.key))} is already in {out}")

    with known_errors():
        done = train(planned=skipped)
        if done.dry_run is not None:
            echo_dry_run(done.dry_run, f"rr {command}: plan for {out}")
    if not done.records:
        return
    from rr_model.run.trainer import summarize

    if lead_process():
        echo_records(
            summarize(done.records), Format.text, title=f"rr {command}: {out}", formats=RESULT_FORMATS
        )
    if any(r["status"] != "ok" for r in done.records):
        raise typer.Exit(1)

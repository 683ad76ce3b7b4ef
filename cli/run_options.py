"""What `rr train`, `rr reproduce` and `rr sweep` share: their training options, the plan and results tables,
the tail of a command that trains (skip what is there, check the data, show the plan or train and report)
and the run config file (`--config`).

The training options are not declared here: each is a field of `rr_model.config.TrainConfig`, whose
type, default and metadata (help, commands, bound, flag) `training_options` turns into a command's typer
options, in a help panel of their own (or the one a field names), and `run_options` turns back into TrainConfig fields. A new
training option is a new field there (that module's docstring says how) and no line here.

Standard library, typer and those declarations (`rr_model.config`, torch-free and light) at import, so
`rr --help` stays light; the library loads inside the calls.
"""

from __future__ import annotations

import inspect
import json
import os
import shlex
import sys
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any, TypeVar, get_args, get_origin

import typer

from cli.errors import fail, known_errors
from cli.records import Format, echo_records
from rr_analysis.numbers import BLANK, fixed, significant
from rr_core.sweepfile import DECIMALS
from rr_model.config import Declared, choices, declared_options

F = TypeVar("F", bound=Callable[..., Any])
PANEL = "Training run"  # the help panel of the options that set TrainConfig fields

# Options of the training commands that are not TrainConfig fields.
VARIANT = typer.Option(
    None,
    "--variant",
    help="Train only this variant (repeatable). Default: the three compared variants, a pairable block.",
    show_default=False,
)
OUT = typer.Option(
    None,
    "--out",
    help="Dataset to append the rows to. Default: data/scaling_v8.csv here, started from the published rows "
    "if missing.",  # the default is rr_model.config.DEFAULT_OUT
    show_default=False,
)
DRY_RUN = typer.Option(
    False, "--dry-run", help="Print the plan, an estimate of time and the memory plan; train nothing."
)


def _cli_type(name: str, kind: Any) -> Any:
    """The type typer parses a field of type `kind` as: a Literal's values become a str Enum (typer's choices,
    shown as <a|b|c>), a tuple a list (a repeatable option); an optional stays optional."""
    allowed, many = choices(kind)
    if allowed:
        chosen = Enum(name, [(v, v) for v in allowed], type=str)
        return list[chosen] if many else chosen | None if type(None) in get_args(kind) else chosen
    if get_origin(kind) is tuple:
        return list[get_args(kind)[0]]
    return kind


def _plain(value: Any) -> Any:
    """A parsed option's value as TrainConfig takes it: an Enum's value, a list as a tuple (None: empty)."""
    if isinstance(value, list | tuple):
        return tuple(_plain(v) for v in value)
    return value.value if isinstance(value, Enum) else value


def run_option(name: str, panel: str | None = None) -> Any:
    """TrainConfig's field `name` as a typer option: its flag, default, help and bound from the field."""
    (declared,) = (d for d in declared_options() if d.name == name)
    how = declared.option
    default = None if declared.default == () else declared.default  # a repeatable option: none given
    return typer.Option(default, declared.flag, help=how.help, min=how.min, rich_help_panel=panel)


def option_type(name: str) -> Any:
    """The type typer parses TrainConfig's field `name` as: for a command that offers one of the training
    options on its own (`run_option`), such as `rr sizes --precision`, so it takes the same values."""
    (declared,) = (d for d in declared_options() if d.name == name)
    return _cli_type(name, declared.type)


def renamed(new: str, old: str, why: str, panel: str | None = None) -> Any:
    """A hidden option `old` that still sets what `new` sets, saying so in one line on stderr when given."""

    def note(ctx: typer.Context, value: object) -> object:
        if value is not None and not ctx.resilient_parsing:
            typer.echo(
                f"rr: warning: {old} is deprecated on rr {ctx.command.name}: use {new} ({why})", err=True
            )
        return value

    return typer.Option(None, old, hidden=True, callback=note, rich_help_panel=panel)


def either(new: str, old: str, new_value: Any, old_value: Any, new_given: bool) -> Any:
    """The value of an option given by its new flag `new` or its old one `old` (`renamed`), not both."""
    if old_value is None:
        return new_value
    if new_given:
        raise fail(f"{new} and {old} name the same thing: give {new} only")
    return old_value


def _renamed_name(declared: Declared) -> str:
    return f"{declared.name}_as_{declared.option.renamed[0].removeprefix('--').replace('-', '_')}"


def _parameters(declared: Declared) -> list[inspect.Parameter]:
    """The keyword parameters of a command function that make `declared`'s option (and its old flag), in
    its help panel (`RunOption.panel`, else `PANEL`)."""
    kind, panel = _cli_type(declared.name, declared.type), declared.option.panel or PANEL
    if declared.option.comma:  # each given as a comma-separated list, or repeated: parsed by `_comma_items`
        kind = list[str]
    made = [
        inspect.Parameter(
            declared.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=run_option(declared.name, panel),
            annotation=kind,
        )
    ]
    if declared.option.renamed:
        old, why = declared.option.renamed
        option = renamed(declared.flag, old, why, panel)
        made.append(
            inspect.Parameter(
                _renamed_name(declared), inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind
            )
        )
    return made


def training_options(command: str) -> Callable[[F], F]:
    """Give a command function the training options `command` offers (`declared_options`) in place of its
    ``**run`` parameter; the function reads them with `run_options(ctx)`.

    The function's signature, as typer reads it (``__signature__``), is its own parameters followed by one
    keyword parameter per option, named as its TrainConfig field; typer calls it with their values in ``run``.
    """

    def add(func: F) -> F:
        signature = inspect.signature(func)
        own = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        made = [p for declared in declared_options(command) for p in _parameters(declared)]
        func.__signature__ = signature.replace(parameters=[*own, *made])
        return func

    return add


def run_options(ctx: typer.Context) -> dict:
    """The TrainConfig fields this command's training options give (`training_options`), and its effective
    `--config`. An option given by its old flag (`RunOption.renamed`) counts as given by its new one."""
    options = {}
    for declared in declared_options(ctx.command.name):
        value = ctx.params.get(declared.name)
        if declared.option.renamed:
            new, old = (
                declared.option.flag or "--" + declared.name.replace("_", "-"),
                declared.option.renamed[0],
            )
            given = ctx.get_parameter_source(declared.name).name == "COMMANDLINE"
            value = either(new, old, value, ctx.params.get(_renamed_name(declared)), given)
        if declared.option.comma:
            value = _comma_items(declared, value)
        options[declared.name] = _plain(value) if value is not None or not choices(declared.type)[1] else ()
    if "config" in ctx.params:
        options["run_config"] = effective_config(ctx)
    return options


def _comma_items(declared: Declared, given: list[str] | None) -> tuple:
    """A comma-separated option's items (`RunOption.comma`: --branch-at 100,200, or repeated), each of the
    field's item type; () when not given."""
    kind = get_args(declared.type)[0]
    texts = [t.strip() for text in given or () for t in text.split(",") if t.strip()]
    try:
        return tuple(kind(t) for t in texts)
    except ValueError:
        raise fail(
            f"{declared.flag} {','.join(given)!r}: expected comma-separated {kind.__name__}s, e.g. 100,200"
        ) from None


def _decimals(decimals: int, grouped: bool = False) -> Callable[[object], str]:
    """A column's cells with fixed decimals (`rr_analysis.numbers.fixed`); a value a run lacks is BLANK."""
    return lambda v: fixed(v, decimals, grouped=grouped, none=BLANK)


PLAN_FORMATS = {"params": _decimals(0, True), "tokens": _decimals(0, True), "est_minutes": _decimals(1)}
RESULT_FORMATS = {name: _decimals(places) for name, places in DECIMALS.items()}  # as the row is written


def duration(minutes: float) -> str:
    """Minutes in the unit a reader plans with: seconds under a minute (a tiny run's "about 0.0 minutes"
    said nothing), minutes up to 90, hours up to two days, then days."""
    if minutes < 1:
        seconds = round(minutes * 60)
        return f"{seconds} seconds" if seconds >= 1 else "under a second"
    if minutes < 90:
        return f"{fixed(minutes, 1)} minutes"
    if minutes < 48 * 60:
        return f"{fixed(minutes / 60, 1)} hours"
    return f"{fixed(minutes / 1440, 1, grouped=True)} days"


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
    if over := [f"{r['size']} at {fixed(r['steps'], 0, grouped=True)} steps ({fixed(r['passes'], 2)})"
                for r in rows if (r.get("passes") or 0) > 1]:  # fmt: skip
        notes.append(f"past one pass over the corpus, so windows repeat: {', '.join(over)}.")
    typer.echo("\n".join(notes))


def echo_budget_plan(todo: list) -> None:
    """Every dry run's budget of each size and step count it plans (`rr_model.run.planning.budget_plan`),
    after what its cooldown branches train themselves (`branch_note`)."""
    from rr_model.run.planning import branch_note, budget_plan

    if (note := branch_note(todo)) is not None:
        typer.echo(note)
    typer.echo("")
    echo_budget(budget_plan(todo), "Budget per size and steps (of the reference)")


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


def world_size() -> int:
    """The processes `rr train` runs on: torchrun's WORLD_SIZE, else 1."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def train_and_report(command: str, runs, out: Path, *, resume: bool, dry_run: bool) -> None:
    """The tail of `rr train` and `rr reproduce` once the runs are planned (`rr_model.run.planning.Runs`): say
    which are skipped, make every run's checks (`Runs.check`: what the trainer refuses, refused here before
    any run trains or any file is made), then show the plan and the memory plan (`dry_run`) or train the
    runs to do and show their results; exit 1 if one diverged."""
    from rr_model.run.planning import describe_runs, memory_plans

    lead = os.environ.get("RANK", "0") == "0"  # under torchrun, one process reports
    with known_errors():
        for cfg in runs.skipped:
            if lead:
                typer.echo(f"skip: {' '.join(map(str, cfg.key))} is already in {out}")
        if not runs.todo:
            return
        runs.check(world_size(), resume)
        if dry_run:
            echo_plan(describe_runs(runs.todo), f"rr {command}: plan for {out}")
            echo_budget_plan(runs.todo)
            echo_memory(*memory_plans(runs.todo, world_size()), world_size())
            return
        records = _train(runs, out, resume)
    from rr_model.run.trainer import summarize

    if lead:
        echo_records(summarize(records), Format.text, title=f"rr {command}: {out}", formats=RESULT_FORMATS)
    if any(r["status"] != "ok" for r in records):
        raise typer.Exit(1)


def _train(runs, out: Path, resume: bool) -> list[dict]:
    """Train the runs to do, on the plan's reading of `out`; on Ctrl-C, say what was kept and how to
    continue (exit 130); a sharded run out of memory names the command to resume with."""
    from rr_model.checkpoint.state import current
    from rr_model.parallel.out_of_memory import OutOfMemoryStop
    from rr_model.run.trainer import train_runs  # torch: only when training

    todo = runs.todo
    try:
        return train_runs(todo, out, resume=resume, plan=runs.output)
    except OutOfMemoryStop as e:
        raise e.resume_with(resume_command(e.micro_batches)) from None
    except KeyboardInterrupt:
        saved = [str(p) for cfg in todo if (p := current(out, **cfg.stem)) is not None]
        every = todo[0].checkpoint_every
        kept = f"no checkpoint was written yet (one every {every} steps): the run starts over"
        if saved:
            kept = f"the interrupted run continues from its checkpoint {', '.join(saved)}"
        elif not every:
            kept = "the run starts over (checkpoints were off: --checkpoint-every 0)"
        rows = (
            f"Rows already written stay in {out}"
            if out.exists()
            else f"No row was written ({out} is not made)"
        )
        typer.echo(
            f"rr: interrupted. {rows}. Run the same command with --resume to go on: finished runs are "
            f"skipped, and {kept}.",
            err=True,
        )
        raise SystemExit(130) from None


def resume_command(micro_batches: int | None) -> str:
    """This command line again with --resume and --micro-batches `micro_batches` (replacing any given), under
    the same torchrun layout where torchrun started it: what a sharded run that ran out of memory names."""
    args, skip = [], False
    for arg in sys.argv[1:]:
        if skip:
            skip = False
        elif arg == "--micro-batches":
            skip = True
        elif arg != "--resume" and not arg.startswith("--micro-batches="):
            args.append(arg)
    args += ["--resume", "--micro-batches", str(micro_batches)]
    launch = "rr"
    if world_size() > 1:
        local = int(os.environ.get("LOCAL_WORLD_SIZE", world_size()))
        nodes = world_size() // local
        where = f"--nnodes {nodes} (and the same rendezvous options)" if nodes > 1 else "--standalone"
        launch = f"torchrun {where} --nproc_per_node {local} -m cli.main"
    return " ".join([launch, *map(shlex.quote, args)])


# ------------------------------------------------------------------------------------ the run config file


def _option_keys(command) -> dict:
    """The keys a run config file may hold for `command`: each option's long name, dashes as underscores."""
    keys = {}
    for p in command.params:
        if p.param_type_name == "option" and p.name != "config":
            for opt in p.opts:
                if opt.startswith("--"):
                    keys[opt[2:].replace("-", "_")] = p
    return keys


def _expected(param) -> tuple[tuple[type, ...], str]:
    """The TOML value types an option takes, and their name for an error."""
    annotation = param.type_descriptor.annotation
    if param.is_flag:
        return (bool,), "true or false"
    if param.multiple:
        return (str,), "a string or a list of strings"
    if annotation is int:
        return (int,), "an integer"
    if annotation is float:
        return (int, float), "a number"
    return (str,), "a string"


def _config_value(path: Path, key: str, param, value: object, ctx: typer.Context) -> object:
    """`value` for `param` as the file holds it, refused (one `rr: error:`) unless its type is the option's
    and the option takes it (its range, its choices)."""
    types, kind = _expected(param)
    items = value if param.multiple and isinstance(value, list) else [value]
    for item in items:
        if not isinstance(item, types) or (isinstance(item, bool) and bool not in types):
            raise fail(
                f"{path}: key {key!r} must be {kind} (as --{key.replace('_', '-')} takes), not {item!r}"
            )
    value = items if param.multiple else value
    try:
        param.process_value(ctx, value)  # the flag's own checks: its range, its choices
    except typer.BadParameter as e:
        raise fail(f"{path}: key {key!r}: {e.message}") from None
    return value


def read_config(ctx: typer.Context, path: Path | None) -> Path | None:
    """`--config FILE`'s callback: the file's options become the command's defaults (`ctx.default_map`), so a
    flag given on the command line overrides them and the file overrides rr's defaults. Runs first (eager).

    An unknown key, or a value of the wrong type, is one `rr: error:` naming the file, the key and (for an
    unknown key) the nearest valid one and every valid one.
    """
    from rr_core.errors import InputError, did_you_mean, nearest
    from rr_core.files.reading import read_toml

    if path is None or ctx.resilient_parsing:
        return path
    try:
        table = read_toml(path, f"--config {path}")
    except OSError as e:
        raise fail(f"--config {path}: {e.strerror or e}") from None
    except InputError as e:
        raise fail(str(e)) from None
    keys, found = _option_keys(ctx.command), {}
    for key, value in table.items():
        param = keys.get(key.replace("-", "_"))
        if param is None:
            valid = sorted(k for k, p in keys.items() if not p.hidden)
            hint = did_you_mean(nearest(key.replace("-", "_"), valid))
            raise fail(
                f"{path}: unknown key {key!r} for rr {ctx.command.name}{hint}; valid keys: {', '.join(valid)}"
            )
        found[param.name] = _config_value(path, key, param, value, ctx)
    ctx.default_map = {**(ctx.default_map or {}), **found}
    return path


CONFIG = typer.Option(
    None,
    "--config",
    is_eager=True,
    callback=read_config,
    help='A TOML file of this command\'s options (keys: the option names, e.g. size = "tiny", '
    'checkpoint-every = 4, variant = ["standard"]); flags given here override it. --dry-run prints the '
    "effective options, and each run's provenance record keeps them.",
    show_default=False,
)


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(getattr(value, "value", value)))  # a TOML basic string; an Enum by its value


def effective_config(ctx: typer.Context) -> str | None:
    """The options the command runs with, as TOML (flag over file over default), when they came from
    `--config` (None otherwise): what each run's provenance record keeps, printed here under --dry-run."""
    path = ctx.params.get("config")
    if path is None:
        return None
    lines = [f"# rr {ctx.command.name}: the effective options (--config {path}, overridden by flags)"]
    names: dict[str, str] = {}
    for key, param in _option_keys(ctx.command).items():
        if not param.hidden:  # an old flag (`renamed`) is shown as its new one
            names.setdefault(param.name, key.replace("_", "-"))  # one line per option, by its first long name
    for name, key in names.items():
        if name == "dry_run":
            continue  # an action, not a setting
        value = ctx.params[name]
        lines.append(f"# {key} is unset (its default)" if value is None else f"{key} = {_toml(value)}")
    text = "\n".join(lines) + "\n"
    if ctx.params.get("dry_run"):
        typer.echo(text)
    return text

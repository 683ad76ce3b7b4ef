"""What `rr train`, `rr reproduce` and `rr sweep` share: their options, the plan and results tables, and the
tail of a command that trains (skip what is there, check the data, show the plan or train and report).

Standard library and typer only at import, so `rr --help` stays light; the library loads inside the calls.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer

from cli.errors import fail, known_errors
from cli.records import Format, echo_records

# Options of the training commands.
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
    "if missing.",  # the default is rr_model.run_config.DEFAULT_OUT
    show_default=False,
)
DATA = typer.Option(
    "tinystories",
    "--data",
    help="tinystories (published), synthetic (offline demo), a local .txt/.jsonl/.parquet file or a folder "
    "of them, a token cache folder, or hf:NAME[:SPLIT] (a Hugging Face dataset through `datasets`).",
)
TEXT_FIELD = typer.Option("text", "--text-field", help="The text field of a .jsonl, .parquet or hf: corpus.")
TOKENIZER = typer.Option(
    None, "--tokenizer", help="gpt2 (published) or bytes. Default: the data's own (bytes for synthetic)."
)
PRECISION = typer.Option("tf32", "--precision", help="tf32 (published), bf16 autocast or fp32.")
COMPILE = typer.Option(False, "--compile", help="torch.compile the model.")
STEPS = typer.Option(
    None, "--steps", min=1, help="Override the size's step count (off-recipe).", show_default=False
)
DEVICE = typer.Option("auto", "--device", help="auto (cuda, then mps, then cpu), cuda, mps or cpu.")
CHECKPOINT_EVERY = typer.Option(
    None,
    "--checkpoint-every",
    min=0,
    help="Optimiser steps between checkpoints (0: none). Default: a fifth of the run, at most 1000 (tiny: 20).",
    show_default=False,
)
LOG = typer.Option(
    None,
    "--log",
    help="Also log metrics to tensorboard or wandb (repeatable; the 'logging' extra). Every run writes "
    "OUT.metrics/RUN.jsonl anyway. W&B runs offline unless WANDB_API_KEY or WANDB_MODE says otherwise.",
    show_default=False,
)
DETERMINISTIC = typer.Option(
    False,
    "--deterministic",
    help="Bitwise-repeatable runs on one GPU and software stack: torch's deterministic algorithms, cuDNN "
    "without autotuning and, on CUDA, a fixed cuBLAS workspace (docs/training.md). It costs speed on GPU (slower "
    "deterministic kernels for index and embedding backward and matmul reductions; an op with no "
    "deterministic kernel stops the run with an error); on CPU it changes nothing measurable. Recorded in "
    "the provenance record.",
)
DRY_RUN = typer.Option(False, "--dry-run", help="Print the plan and an estimate of time; train nothing.")
LADDER = typer.Option(
    None,
    "--ladder",
    help="A TOML file of your own sizes (one table per size: d_model, n_layer, n_head, steps, seeds, and any "
    "recipe override such as batch_size, lr, warmup_steps, block_size), used instead of rr's ladder. Rows go "
    "to data/FILE-STEM.csv unless --out says otherwise.",
    show_default=False,
)

PLAN_FORMATS = {"params": "{:,}".format, "tokens": "{:,}".format, "est_minutes": "{:.1f}".format}


def _num(spec: str):
    return lambda v: "-" if v is None else spec.format(v)


RESULT_FORMATS = {"params_M": _num("{:.2f}"), "val_loss": _num("{:.4f}"), "ece": _num("{:.4f}")}
RESULT_FORMATS["minutes"] = _num("{:.1f}")


def duration(minutes: float) -> str:
    """Minutes in the unit a reader plans with: minutes up to 90, hours up to two days, then days."""
    if minutes < 90:
        return f"{minutes:.1f} minutes"
    if minutes < 48 * 60:
        return f"{minutes / 60:.1f} hours"
    return f"{minutes / 1440:,.1f} days"


def echo_plan(plan: list[dict], title: str) -> None:
    """The plan table of `describe_runs` and its total."""
    table = [{k: v for k, v in r.items() if k != "assumed"} for r in plan]
    echo_records(table, Format.text, title=title, formats=PLAN_FORMATS)
    took = duration(sum(r["est_minutes"] for r in plan))
    typer.echo(
        f"{len(plan)} run(s), {sum(r['tokens'] for r in plan):,} tokens, about {took} "
        f"(training FLOPs at the rate assumed for {plan[0]['assumed']}; a rough figure)"
    )


def train_and_report(command: str, runs, out: Path, *, resume: bool, dry_run: bool) -> None:
    """The tail of `rr train` and `rr reproduce` once the runs are planned (`rr_model.planning.Runs`): say
    which are skipped, check the data, then show the plan (`dry_run`) or train the runs to do and show
    their results; exit 1 if one diverged."""
    from rr_model.data.token_cache import check_data
    from rr_model.planning import describe_runs

    lead = os.environ.get("RANK", "0") == "0"  # under torchrun, one process reports
    with known_errors():
        for cfg in runs.skipped:
            if lead:
                typer.echo(f"skip: {' '.join(map(str, cfg.key))} is already in {out}")
        if not runs.todo:
            return
        check_data(runs.todo[0].data, runs.todo[0].tokenizer)
        if dry_run:
            echo_plan(describe_runs(runs.todo), f"rr {command}: plan for {out}")
            return
        records = _train(runs, out, resume)
    from rr_model.trainer import summarize

    if lead:
        echo_records(summarize(records), Format.text, title=f"rr {command}: {out}", formats=RESULT_FORMATS)
    if any(r["status"] != "ok" for r in records):
        raise typer.Exit(1)


def _train(runs, out: Path, resume: bool) -> list[dict]:
    """Train the runs to do, on the plan's reading of `out`; on Ctrl-C, say what was kept and how to
    continue (exit 130)."""
    from rr_model.checkpoint import checkpoint_path
    from rr_model.trainer import train_runs  # torch: only when training

    todo = runs.todo
    try:
        return train_runs(todo, out, resume=resume, plan=runs.output)
    except KeyboardInterrupt:
        saved = [str(p) for cfg in todo if (p := checkpoint_path(out, *cfg.key)).exists()]
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
    unknown key) the nearest valid one.
    """
    import difflib

    from rr_core.errors import InputError
    from rr_core.files import read_toml

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
            near = difflib.get_close_matches(key.replace("-", "_"), keys, n=1)
            hint = (
                f"the nearest valid key is {near[0]!r}" if near else f"valid keys: {', '.join(sorted(keys))}"
            )
            raise fail(f"{path}: unknown key {key!r} for rr {ctx.command.name}; {hint}")
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


# The shared training options that set a TrainConfig field, by parameter name: the field is the name
# without a trailing "_" (`compile_` keeps clear of the builtin); `run_options` reads the ones a command has.
RUN_OPTIONS = (
    "data",
    "text_field",
    "tokenizer",
    "precision",
    "compile_",
    "steps",
    "device",
    "checkpoint_every",
    "ladder",
    "deterministic",
    "reproduce",
    "log",
)


def run_options(ctx: typer.Context) -> dict:
    """The TrainConfig fields this command's options give (`RUN_OPTIONS`), and its effective `--config`."""
    options = {name.removesuffix("_"): ctx.params[name] for name in RUN_OPTIONS if name in ctx.params}
    if "log" in options:
        options["log"] = tuple(options["log"] or ())
    if "config" in ctx.params:
        options["run_config"] = effective_config(ctx)
    return options


def effective_config(ctx: typer.Context) -> str | None:
    """The options the command runs with, as TOML (flag over file over default), when they came from
    `--config` (None otherwise): what each run's provenance record keeps, printed here under --dry-run."""
    path = ctx.params.get("config")
    if path is None:
        return None
    lines = [f"# rr {ctx.command.name}: the effective options (--config {path}, overridden by flags)"]
    names: dict[str, str] = {}
    for key, param in _option_keys(ctx.command).items():
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

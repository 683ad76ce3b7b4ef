"""What `rr train`, `rr reproduce` and `rr sweep` share (cli/run_options.py): their training options, made
from TrainConfig's field declarations (`cli.fields.dataclass_options`) (and --data, the corpus's old flag, still taken with a note), and the
run config file (`--config run.toml`: flag over file over default, unknown keys and wrong types refused, the
effective options shown by --dry-run and kept in the provenance record)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import pytest
import typer
from conftest import rr

from cli.run_options import PANEL
from rr_core import options
from rr_core.options import choices, option
from rr_core.sweepfile.dataset import load_sweep
from rr_core.sweepfile.provenance import read_records, sidecar_path
from rr_model.config import TRAINING, TrainConfig

pytestmark = pytest.mark.usefixtures("offline")  # no hub; the session's token cache

RUN = (
    'size = "tiny"\nvariant = ["standard"]\nseed = 5\nsteps = 6\ncorpus = "synthetic"\ncheckpoint-every = 0\n'
)


@pytest.mark.slow
def test_a_config_file_runs_a_tiny_run_and_a_flag_overrides_it(tmp_path):
    config, out = tmp_path / "run.toml", tmp_path / "o.csv"
    config.write_text(RUN)
    plan = rr("train", "--config", config, "--steps", 3, "--out", out, "--dry-run")
    assert plan.exit_code == 0, plan.output
    shown = plan.stdout.split("\n\nrr train: plan for")[0] + "\n"
    assert shown.startswith(f"# rr train: the effective options (--config {config}, overridden by flags)\n")
    assert 'size = "tiny"\nvariant = ["standard"]\nseed = 5\n' in shown and "\nsteps = 3\n" in shown
    assert "\ncheckpoint-every = 0\n" in shown and "# tokenizer is unset (its default)\n" in shown
    assert not out.exists()

    result = rr("train", "--config", config, "--steps", 3, "--out", out)
    assert result.exit_code == 0, result.output
    row = load_sweep(out).iloc[0]
    assert (row["size"], row["variant"], row["seed"], row["steps"]) == ("tiny", "standard", 5, 3)
    (record,) = read_records(sidecar_path(out))
    assert record["config"]["run_config"] == shown  # the options as run, as --dry-run showed them
    assert (record["config"]["seed"], record["config"]["steps"], record["config"]["checkpoint_every"]) == (
        5,
        3,
        0,
    )


def test_without_a_config_file_nothing_changes(tmp_path):
    plan = rr("train", "--size", "tiny", "--corpus", "synthetic", "--out", tmp_path / "o.csv", "--dry-run")
    assert plan.exit_code == 0 and plan.stdout.startswith("rr train: plan for"), plan.output


@pytest.mark.parametrize(
    "text, says",
    [
        (
            'size = "tiny"\nstpes = 6\n',
            "unknown key 'stpes' for rr train (did you mean steps?); valid keys: activation_checkpointing, "
            "branch_at, checkpoint_every, compile, ",
        ),
        ('size = "tiny"\ncheckpoint_evry = 6\n', "(did you mean checkpoint_every?)"),
        ('size = "tiny"\nsteps = "six"\n', "key 'steps' must be an integer (as --steps takes), not 'six'"),
        ('size = "tiny"\ncompile = 1\n', "key 'compile' must be true or false (as --compile takes), not 1"),
        ('size = "tiny"\nsteps = 0\n', "key 'steps': Input should be greater than or equal to 1"),
        ('size = "tiny"\nsteps = [6]\n', "key 'steps' must be an integer"),
        ("size = \n", "not a TOML file"),
    ],
)
def test_a_bad_config_file_is_one_error_naming_the_file_and_key(tmp_path, text, says):
    config = tmp_path / "run.toml"
    config.write_text(text)
    result = rr("train", "--config", config, "--out", tmp_path / "o.csv", "--dry-run")
    assert result.exit_code == 2 and result.stderr.startswith("rr: error: "), result.output
    assert str(config) in result.stderr and says in result.stderr and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1


def test_sweep_takes_a_config_file_and_checks_its_keys(tmp_path):
    config = tmp_path / "sweep.toml"
    config.write_text(
        'sizes = "tiny"\nseeds = "0,1"\nvariant = ["standard"]\ncorpus = "synthetic"\nsteps = 6\n'
    )
    plan = rr("sweep", "--config", config, "--seeds", "3", "--out", tmp_path / "s.csv", "--dry-run")
    assert plan.exit_code == 0, plan.output
    # the old spellings (sizes, seeds) still read, in the file and on the command line; shown as --size, --seed
    assert '\nseed = ["3"]\n' in plan.stdout and "rr sweep: 1 run(s) to train, 0 already in" in plan.stdout
    config.write_text('sizes = "tiny"\nlauncher = "slurmm"\n')
    bad = rr("sweep", "--config", config, "--dry-run")
    assert bad.exit_code == 2 and "key 'launcher'" in bad.stderr and "'slurmm' is not one of" in bad.stderr


@pytest.mark.slow
def test_deterministic_runs_record_it_and_change_nothing_on_cpu(tmp_path, monkeypatch):
    """--deterministic is on at every optimiser step and off after the run, it is recorded, and on CPU
    (where torch's kernels are already deterministic) the run's losses equal a run without it, as the
    option's help says."""
    import torch

    from rr_model.run import retry

    seen = []
    real = retry.apply_gradients

    def step(*args, **kwargs):  # the trainer's own optimiser step, noting the mode it runs in
        seen.append(torch.are_deterministic_algorithms_enabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(retry, "apply_gradients", step)
    args = ["train", "--size", "tiny", "--variant", "standard", "--corpus", "synthetic", "--steps", 3]
    records = {}
    for name, flag in (("a.csv", ["--deterministic"]), ("c.csv", [])):
        result = rr(*args, "--checkpoint-every", 0, *flag, "--out", tmp_path / name)
        assert result.exit_code == 0, result.output
        (records[name],) = read_records(sidecar_path(tmp_path / name))
    assert seen == [True] * 3 + [False] * 3 and not torch.are_deterministic_algorithms_enabled()
    on, off = records["a.csv"], records["c.csv"]
    assert on["config"]["deterministic"] is True
    assert (
        on["environment"]["deterministic_algorithms"] is True
        and on["environment"]["cudnn_benchmark"] is False
    )
    assert off["config"]["deterministic"] is False and off["environment"]["deterministic_algorithms"] is False
    assert on["loss_curve"] == off["loss_curve"] and on["result"]["val_loss"] == off["result"]["val_loss"]


@pytest.mark.slow
def test_sweep_children_get_the_config_file_and_determinism(tmp_path):
    config, out = tmp_path / "sweep.toml", tmp_path / "s.csv"
    config.write_text(
        'sizes = "tiny"\nseeds = "2"\nvariant = ["standard"]\ncorpus = "synthetic"\nsteps = 3\n'
    )
    result = rr("sweep", "--config", config, "--deterministic", "--checkpoint-every", 0, "--out", out)
    assert result.exit_code == 0, result.output
    assert sorted(load_sweep(out)["seed"]) == [2]
    (record,) = read_records(sidecar_path(out))  # written by the child process
    assert record["config"]["deterministic"] is True and record["environment"]["deterministic_algorithms"]
    assert record["config"]["run_config"].startswith("# rr sweep: the effective options (--config")
    assert "\ndeterministic = true\n" in record["config"]["run_config"]


# --- the options are TrainConfig's fields --------------------------------------------------------------


@pytest.mark.parametrize("command", TRAINING)
def test_a_training_command_s_options_are_trainconfig_s_declarations(command):
    """The options in a training command's panels are the fields `rr_core.options.declared` names for it: flag,
    default, help, bound and panel (`PANEL`, or the field's own) are the field's, and a value outside the
    field's choices is refused by them."""
    from typer.main import get_command

    from cli.main import app

    params = get_command(app).commands[command].params
    panels = {d.option.panel or PANEL for d in options.declared(TrainConfig, command)}
    shown = {p.name: p for p in params if p.rich_help_panel in panels and not p.hidden}
    assert list(shown) == [d.name for d in options.declared(TrainConfig, command)]
    for declared in options.declared(TrainConfig, command):
        p = shown[declared.name]
        assert p.opts == [declared.flag] and p.help == declared.option.help and p.min == declared.option.min
        assert p.rich_help_panel == (declared.option.panel or PANEL)
        assert p.default == (None if declared.default == () else declared.default)
        allowed, _ = choices(declared.type)
        if allowed:
            result = rr(command, declared.flag, "nonesuch", "--dry-run", env={"COLUMNS": "300"})
            listed = ", ".join(repr(v) for v in allowed)
            assert result.exit_code == 2 and f"is not one of {listed}" in " ".join(result.output.split())


@pytest.mark.parametrize("command", ["sweep", "tune"])
def test_the_launcher_options_are_launch_s_declarations(command):
    """rr sweep's and rr tune's launcher options are the fields of `rr_model.sweep.launch.Launch`, made by the
    same mechanism as the training options: flag, default, help, bound and panel from the field."""
    from typer.main import get_command

    from cli.main import app
    from rr_model.sweep.launch import Launch

    params = {p.name: p for p in get_command(app).commands[command].params}
    for declared in options.declared(Launch):
        p = params[declared.name]
        assert p.opts == [declared.flag] and p.help == declared.option.help and p.min == declared.option.min
        assert p.default == (None if declared.default == () else declared.default)
        assert p.rich_help_panel == declared.option.panel  # the Slurm options' panel, or the command's own


def test_a_new_field_is_an_option_of_the_commands_it_names():
    """The mechanism, shown with a dataclass of its own: a field declared once becomes a typed option with its
    choices, default and help on the commands it names, and its value comes back under the field's name."""
    from typer.testing import CliRunner

    from cli.fields import dataclass_options

    @dataclass(frozen=True)
    class Run:
        sharding: Literal["none", "fsdp"] = field(
            default="none", metadata=option("How to shard.", commands=("train",))
        )
        hidden: int = 0  # no option: not offered

    seen = []

    @dataclass_options(Run, "train", into="run", build=dict)
    def train(run: dict) -> None:
        seen.append(run)

    app = typer.Typer()
    app.command()(train)
    app.command()(lambda: None)  # two commands: `train` is named on the command line
    assert CliRunner().invoke(app, ["train", "--sharding", "fsdp"]).exit_code == 0
    assert CliRunner().invoke(app, ["train"]).exit_code == 0
    assert seen == [{"sharding": "fsdp"}, {"sharding": "none"}]
    bad = CliRunner().invoke(app, ["train", "--sharding", "ddp"], env={"COLUMNS": "300"})
    assert bad.exit_code == 2 and "is not one of 'none', 'fsdp'" in " ".join(bad.output.split())
    shown = " ".join(CliRunner().invoke(app, ["train", "--help"], env={"COLUMNS": "200"}).output.split())
    assert "How to shard." in shown and "[default: none]" in shown and "--hidden" not in shown


def test_a_field_s_second_spelling_its_neighbour_and_its_text_are_read_as_declared():
    """The mechanism's finer parts, with a dataclass of its own: a field taking one value or several
    (``str | tuple[str, ...]``) is a repeatable option, its hidden second spelling (`Option.spelling`) joins
    its values, split at commas; a union with text (``str | tuple[float, ...]``) is one text option, left for
    the dataclass's function to read; an option of the command's own is listed after the field `place`
    names; the help shows the declared flags only, in that order."""
    from typer.main import get_command
    from typer.testing import CliRunner

    from cli.fields import dataclass_options

    @dataclass(frozen=True)
    class Plan:
        size: str | tuple[str, ...] = field(metadata=option("The size.", spelling="--sizes"))
        lrs: str | tuple[float, ...] = field(default="1e-3", metadata=option("The rates.", flag="--lr"))
        seeds: str | tuple[int | str, ...] = field(default=(), metadata=option("A seed.", flag="--seed"))

    seen = []

    @dataclass_options(Plan, into="plan", place={"extra": "size"})
    def go(plan: Plan, extra: int = typer.Option(0, "--extra", help="Its own.")) -> None:
        seen.append((plan, extra))

    app = typer.Typer()
    app.command()(go)
    app.command()(lambda: None)  # two commands: `go` is named on the command line
    given = ["go", "--size", "a", "--sizes", "b,c", "--extra", "2", "--lr", "1e-4,2e-4", "--seed", "3,4"]
    assert CliRunner().invoke(app, [*given, "--seed", "5"]).exit_code == 0
    assert CliRunner().invoke(app, ["go", "--sizes", "d"]).exit_code == 0  # the required option, spelt so
    assert seen == [(Plan(("a", "b", "c"), "1e-4,2e-4", ("3,4", "5")), 2), (Plan(("d",)), 0)]
    params = [p for p in get_command(app).commands["go"].params if not p.hidden]
    assert [(p.opts, p.multiple) for p in params] == [
        (["--size"], True),
        (["--extra"], False),
        (["--lr"], False),
        (["--seed"], True),
    ]
    shown = " ".join(CliRunner().invoke(app, ["go", "--help"], env={"COLUMNS": "200"}).output.split())
    assert shown.index("--size") < shown.index("--extra") < shown.index("--lr") and "--sizes" not in shown


def test_a_sweep_or_tuning_refuses_a_value_in_the_words_of_its_library_value(tmp_path):
    """rr sweep and rr tune hand their options to `Sweep` and `Tuning` as given: a bad value is refused
    by the library's reading of it, in the same words from the command line as from a notebook."""
    from rr_core.errors import InputError
    from rr_model.sweep.local import Sweep, sweep_runs
    from rr_model.sweep.tuning_runs import Tuning, tune

    out = tmp_path / "o.csv"
    for command, value in (
        (["sweep", "--budgets", "1,x", "--seed", "0"], Sweep(budgets="1,x", seeds="0", out=out)),
        (["sweep", "--at", "3B", "--size", "60M"], Sweep(("60M",), at="3B", out=out)),
        (
            ["tune", "--size", "tiny", "--lr", "1e-3,0", "--select-seeds", "0", "--seed", "1"],
            Tuning("tiny", "1e-3,0", "0", ("1",), out=out),
        ),
        (
            ["tune", "--size", "tiny", "--lr", "1e-3", "--select-seeds", "0", "--seeds", "0"],
            Tuning("tiny", "1e-3", "0", "0", out=out),
        ),
    ):
        with pytest.raises(InputError) as refused:
            sweep_runs(value) if isinstance(value, Sweep) else tune(value)
        result = rr(*command, "--out", out, "--dry-run", env={"COLUMNS": "300"})
        assert result.exit_code == 2 and result.stderr == f"rr: error: {refused.value}\n", result.output


def test_the_old_data_flag_still_sets_the_corpus_with_a_one_line_note(tmp_path):
    out = tmp_path / "o.csv"
    old = rr("train", "--size", "tiny", "--data", "synthetic", "--out", out, "--dry-run")
    new = rr("train", "--size", "tiny", "--corpus", "synthetic", "--out", out, "--dry-run")
    assert old.exit_code == 0 and old.stdout.split("about")[0] == new.stdout.split("about")[0]
    assert old.stderr == (
        "rr: warning: --data is deprecated on rr train: use --corpus (--data names a sweep file on rr's "
        "other commands)\n"
    )
    assert new.stderr == ""
    both = rr("train", "--size", "tiny", "--corpus", "synthetic", "--data", "synthetic", "--dry-run")
    assert both.exit_code == 2 and "give --corpus only" in both.stderr


# --- one spelling of the size and the seed (issue 49 item 10) ----------------------------------------------


def _planned(result) -> list[list[str]]:
    """The plan table's rows of a dry run, without their time estimate (it follows the machine's speed)."""
    assert result.exit_code == 0, result.output
    table = result.stdout.split(" run(s), ")[0]  # up to the plan's total line
    return [line.split()[:-1] for line in table.splitlines() if line.startswith("tiny ")]


@pytest.mark.parametrize(
    "command, shown, other, rows",
    [
        ("train", ["--size", "tiny", "--seed", "3"], ["--sizes", "tiny", "--seeds", "3"], 1),
        ("sweep", ["--size", "tiny", "--seed", "0", "--seed", "1"], ["--sizes", "tiny", "--seeds", "0,1"], 2),
        (
            "sweep",
            ["--size", "tiny", "--seed", "0,1"],
            ["--seeds", "0", "--sizes", "tiny", "--seeds", "1"],
            2,
        ),
        (
            "tune",
            ["--size", "tiny", "--lr", "1e-3,2e-3", "--select-seeds", "0", "--seed", "1", "--seed", "2"],
            ["--sizes", "tiny", "--lr", "1e-3,2e-3", "--select-seeds", "0", "--seeds", "1,2"],
            2,
        ),
    ],
)
def test_size_and_seed_have_one_spelling_and_the_other_still_works(tmp_path, command, shown, other, rows):
    """rr train, rr tune and rr sweep show --size and --seed (repeatable, or comma lists where a command takes
    several); --sizes and --seeds, each command's old spelling, are hidden and plan the same runs."""
    from typer.main import get_command

    from cli.main import app

    common = ["--corpus", "synthetic", "--steps", 3, "--variant", "standard", "--out", tmp_path / "o.csv"]
    plan = _planned(rr(command, *shown, *common, "--dry-run"))
    assert len(plan) == rows and plan == _planned(rr(command, *other, *common, "--dry-run"))
    flags = {o for p in get_command(app).commands[command].params if not p.hidden for o in p.opts}
    assert {"--size", "--seed"} <= flags and not {"--sizes", "--seeds"} & flags


@pytest.mark.parametrize(
    "given",
    [["--size", "tiny", "--size", "60M"], ["--size", "tiny,60M"], ["--size", "tiny", "--sizes", "60M,tiny"]],
)
def test_train_plans_every_size_given_not_the_last(tmp_path, given):
    """rr train --size A --size B (or A,B, or the old spelling beside the new) plans each size in the order
    given, a size named twice once; the dry run's plan and budget show both."""
    common = ["--corpus", "synthetic", "--steps", 3, "--variant", "standard", "--out", tmp_path / "o.csv"]
    result = rr("train", *given, *common, "--dry-run")
    assert result.exit_code == 0, result.output
    plan = result.stdout.split(" run(s), ")[0]
    rows = [line.split()[:3] for line in plan.splitlines() if line.startswith(("tiny ", "60M "))]
    assert rows == [["tiny", "standard", "0"], ["60M", "standard", "0"]]
    assert "\n2 run(s), " in result.stdout
    budget = result.stdout.split("Budget per size and steps")[1].split("Memory per GPU")[0]
    assert [line.split()[0] for line in budget.splitlines() if line.startswith(("tiny ", "60M "))] == [
        "tiny",
        "60M",
    ]


# --- the training entry, from Python ---------------------------------------------------------------------


def test_the_library_plans_from_a_run_config_file_and_says_what_a_ctrl_c_kept(tmp_path, monkeypatch):
    """What `rr train --config` does, as library calls a notebook makes: the file read and checked
    (`read_run_config`), then the runs planned, checked and trained in one call (`train_command`, here its
    dry run); a Ctrl-C while training is an `Interrupted` naming what was kept."""
    from rr_core.errors import InputError, Interrupted
    from rr_model.run import trainer
    from rr_model.run.config_file import Key, read_run_config
    from rr_model.run.entry import Training, train_command

    config, out = tmp_path / "run.toml", tmp_path / "o.csv"
    config.write_text('size = "tiny"\nsteps = 3\ncorpus = "synthetic"\ncheckpoint-every = 0\n')
    at_least_one = lambda v: None if v >= 1 else "must be >= 1"  # noqa: E731
    keys = {
        "size": Key("size", "str"),
        "steps": Key("steps", "int", check=at_least_one),
        "corpus": Key("data", "str"),
        "checkpoint_every": Key("checkpoint_every", "int"),
    }
    given = read_run_config(config, keys, "train")
    assert given == {"size": "tiny", "steps": 3, "data": "synthetic", "checkpoint_every": 0}
    done = train_command(Training(given.pop("size"), ("standard",), 0, out, dry_run=True), **given)
    assert [c.key for c in done.runs.todo] == [("tiny", "standard", 0)] and done.records == []
    (row,) = done.dry_run.runs
    assert (row["steps"], row["tokens"]) == (3, 3 * 8 * 256) and not out.exists()  # tiny: 8 x 256 a step

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(trainer, "train_runs", interrupted)
        with pytest.raises(
            Interrupted, match=r"No row was written .* the run starts over \(checkpoints were off"
        ):
            train_command(Training("tiny", ("standard",), 0, out), **given)
    assert not out.exists()  # rr train trains through the same call

    config.write_text("size = 'tiny'\nstep = 3\n")
    said = r"key 'step' for rr train \(did you mean steps\?\); valid keys: checkpoint_every, corpus, size, steps$"
    with pytest.raises(InputError, match=said):
        read_run_config(config, keys, "train")
    config.write_text("steps = 0\n")
    with pytest.raises(InputError, match="key 'steps': must be >= 1"):
        read_run_config(config, keys, "train")


def test_train_command_plans_each_size_at_its_own_next_seed(published_copy):
    """`train_command` with several sizes (one named twice, one spelled in lower case): each size's next
    seed is its own, from the rows the file holds (the published 60M has seeds 0-2, 320M 0-1), and the dry
    run's budget has one row per size: 8,000 steps of 64 x 256 tokens each (the published recipe)."""
    from rr_model.run.entry import Training, train_command

    seen = []
    done = train_command(
        Training(("60M", "320m", "60M"), out=published_copy, dry_run=True), planned=seen.append
    )
    compared = ("review_neutral", "highway", "standard")
    assert [c.key for c in done.runs.todo] == [("60M", v, 3) for v in compared] + [
        ("320M", v, 2) for v in compared
    ]
    assert seen == [done.runs] and done.records == [] and not done.runs.skipped
    assert [(r["size"], r["steps"], r["tokens"]) for r in done.dry_run.budget] == [
        ("60M", 8000, 8000 * 64 * 256),
        ("320M", 8000, 8000 * 64 * 256),
    ]
    assert [r["size"] for r in done.dry_run.runs] == ["60M"] * 3 + ["320M"] * 3 and done.dry_run.world == 1


@pytest.mark.parametrize(
    "command, where",
    [
        ("eval", "rr_model.uses.scoring.Scoring"),
        ("gates", "rr_model.uses.gate_reading.GateReading"),
        ("sample", "rr_model.uses.sampling.Sampling"),
        ("analyze", "rr_analysis.views.view_options.ViewOptions"),
        ("train", "rr_model.run.entry.Training"),
        ("reproduce", "rr_model.run.entry.Reproduction"),
        ("sweep", "rr_model.sweep.local.Sweep"),
        ("tune", "rr_model.sweep.tuning_runs.Tuning"),
    ],
)
def test_a_command_s_options_are_its_library_value_s_fields(command, where):
    """Issue 43.2/3: rr eval's, rr gates's, rr sample's and rr analyze's own options are the documented fields of the value
    their library call takes, made by the one mechanism: flag, help, bound and default from the field, and a
    field without a default is a required option."""
    import importlib
    from dataclasses import MISSING

    from typer.main import get_command

    from cli.main import app
    from rr_analysis.stats.equivalence import DEFAULT_MARGIN

    module, _, name = where.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    params = {p.name: p for p in get_command(app).commands[command].params}
    for declared in options.declared(cls):
        p = params[declared.name]
        help = declared.option.help.format(
            margin=DEFAULT_MARGIN
        )  # the margin's default, filled in when shown
        assert p.opts == [declared.flag] and p.help.format(margin=DEFAULT_MARGIN) == help
        assert p.min == declared.option.min and p.required == (declared.default is MISSING)
        if declared.default is not MISSING:
            assert p.default == (None if declared.default == () else declared.default)
    if command in ("eval", "sample"):
        assert params["checkpoint"].required  # the one field without a default

"""What `rr train`, `rr reproduce` and `rr sweep` share (cli/run_options.py): their training options, made
from TrainConfig's field declarations (and --data, the corpus's old flag, still taken with a note), and the
run config file (`--config run.toml`: flag over file over default, unknown keys and wrong types refused, the
effective options shown by --dry-run and kept in the provenance record)."""

from __future__ import annotations

from typing import Literal

import pytest
import typer
from conftest import rr

from cli.run_options import PANEL
from rr_core.sweepfile.dataset import load_sweep
from rr_core.sweepfile.provenance import read_records, sidecar_path
from rr_model.config import TRAINING, Declared, RunOption, choices, declared_options

pytestmark = pytest.mark.usefixtures("offline")  # no hub; the session's token cache

RUN = (
    'size = "tiny"\nvariant = ["standard"]\nseed = 5\nsteps = 6\ncorpus = "synthetic"\ncheckpoint-every = 0\n'
)


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
    assert '\nseeds = "3"\n' in plan.stdout and "rr sweep: 1 run(s) to train, 0 already in" in plan.stdout
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
    """The options in a training command's panels are the fields `declared_options` names for it: flag,
    default, help, bound and panel (`PANEL`, or the field's own) are the field's, and a value outside the
    field's choices is refused by them."""
    from typer.main import get_command

    from cli.main import app

    params = get_command(app).commands[command].params
    panels = {d.option.panel or PANEL for d in declared_options(command)}
    shown = {p.name: p for p in params if p.rich_help_panel in panels and not p.hidden}
    assert list(shown) == [d.name for d in declared_options(command)]
    for declared in declared_options(command):
        p = shown[declared.name]
        assert p.opts == [declared.flag] and p.help == declared.option.help and p.min == declared.option.min
        assert p.rich_help_panel == (declared.option.panel or PANEL)
        assert p.default == (None if declared.default == () else declared.default)
        allowed, _ = choices(declared.type)
        if allowed:
            result = rr(command, declared.flag, "nonesuch", "--dry-run", env={"COLUMNS": "300"})
            listed = ", ".join(repr(v) for v in allowed)
            assert result.exit_code == 2 and f"is not one of {listed}" in " ".join(result.output.split())


def test_a_new_field_is_an_option_of_the_commands_it_names(monkeypatch):
    """The mechanism, shown with a field TrainConfig does not have: declared once, it becomes a typed option
    with its choices, default and help, and its value comes back under the field's name."""
    from typer.testing import CliRunner

    from cli import run_options as cli_run_options

    extra = Declared(
        "sharding", Literal["none", "fsdp"], "none", RunOption("How to shard.", commands=("train",))
    )
    monkeypatch.setattr(cli_run_options, "declared_options", lambda command=None: (extra,))
    seen = []

    @cli_run_options.training_options("train")
    def train(ctx: typer.Context, **run) -> None:
        seen.append(cli_run_options.run_options(ctx))

    app = typer.Typer()
    app.command()(train)
    app.command()(lambda: None)  # two commands: `train` is named on the command line
    assert CliRunner().invoke(app, ["train", "--sharding", "fsdp"]).exit_code == 0
    assert CliRunner().invoke(app, ["train"]).exit_code == 0
    assert seen == [{"sharding": "fsdp"}, {"sharding": "none"}]
    bad = CliRunner().invoke(app, ["train", "--sharding", "ddp"], env={"COLUMNS": "300"})
    assert bad.exit_code == 2 and "is not one of 'none', 'fsdp'" in " ".join(bad.output.split())
    shown = " ".join(CliRunner().invoke(app, ["train", "--help"], env={"COLUMNS": "200"}).output.split())
    assert "How to shard." in shown and "[default: none]" in shown


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

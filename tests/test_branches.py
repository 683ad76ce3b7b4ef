"""Cooldown branches (issue 45.3): one wsd run's stable phase trained once, a branch at each budget, each a
row, record, checkpoint and metrics log of its own, equal bit for bit on CPU to a straight wsd run of its
steps; resumed mid-stable-phase and mid-branch; planned by `rr train --branch-at` and `rr sweep --budgets`.

The runs are a small size of a ladder file (2 layers of 64, 4 sequences of 64 tokens, 2 evaluation batches),
so a run of 20 steps trains in seconds on CPU.
"""

from __future__ import annotations

import json

import pytest
import torch
from conftest import rr

from rr_core.sweepfile import provenance
from rr_core.sweepfile.dataset import load_sweep
from rr_core.sweepfile.metrics_log import metrics_path, read_metrics
from rr_model.checkpoint import state as checkpoint
from rr_model.config import TrainConfig
from rr_model.run.planning import plan_runs
from rr_model.run.step import lr_at
from rr_model.run.trainer import train, train_runs
from rr_model.sweep.local import plan_sweep

pytestmark = pytest.mark.usefixtures("offline")

LADDER = """[1M]
d_model = 64
n_layer = 2
n_head = 2
steps = 20
seeds = 1
batch_size = 4
block_size = 64
warmup_steps = 4
lr = 1e-3
eval_batches = 2
"""
STEM = {"size": "1M", "variant": "standard", "seed": 0}


@pytest.fixture(scope="module")
def ladder(tmp_path_factory):
    path = tmp_path_factory.mktemp("ladder") / "small.toml"
    path.write_text(LADDER)
    return path


def cli_args(ladder, out) -> list:
    """`rr train`'s arguments for the ladder's 1M standard model, seed 0, wsd, on the synthetic corpus."""
    args = ["--ladder", ladder, "--size", "1M", "--variant", "standard", "--seed", 0, "--corpus", "synthetic"]
    return [*args, "--schedule", "wsd", "--out", out]


def cli(ladder, out, *extra):
    return rr("train", *cli_args(ladder, out), *extra)


def family_plan(ladder, out, **extra) -> list:
    """The library's plan of `cli_args`' run at 20 steps with a branch at 10: the run, then its branch."""
    options = dict(ladder=str(ladder), data="synthetic", schedule="wsd", steps=20, branch_at=(10,))
    return plan_runs(out, "1M", ("standard",), 0, **options, **extra).todo


@pytest.fixture(scope="module")
def trained(ladder, tmp_path_factory, token_cache):
    """A 20-step wsd run with a branch at 10 (its cooldown from step 8), and a straight wsd run of 10 steps."""
    folder = tmp_path_factory.mktemp("branches")
    family, straight = folder / "family.csv", folder / "straight.csv"
    outputs = []
    for out, extra in ((family, ["--steps", 20, "--branch-at", 10]), (straight, ["--steps", 10])):
        result = rr("train", *cli_args(ladder, out), *extra, env={"RR_CACHE": str(token_cache)})
        assert result.exit_code == 0, result.output
        outputs.append(result.stdout)
    return {"family": family, "straight": straight, "stdout": outputs}


def weights(out, **stem):
    return checkpoint.load_weights(checkpoint.final_path(out, **{**STEM, **stem}))[1]


def test_a_branch_equals_a_straight_wsd_run_of_its_steps_bit_for_bit(trained):
    family, straight = trained["family"], trained["straight"]
    branch, alone = weights(family, steps=10), weights(straight)
    assert branch.model.keys() == alone.model.keys()
    assert all(torch.equal(branch.model[k], alone.model[k]) for k in alone.model)  # every bit
    rows = load_sweep(family)
    assert rows[["steps", "tokens"]].values.tolist() == [[20, 20 * 256], [10, 10 * 256]]
    (row,) = load_sweep(straight).to_dict("records")
    assert (rows["val_loss"].iloc[1], rows["ece"].iloc[1]) == (row["val_loss"], row["ece"])
    assert "tokens" not in row  # a straight run of steps writes the row it always wrote
    main, cooled = provenance.read_records(provenance.sidecar_path(family))
    assert (main["budget"], main["steps"], cooled["budget"], cooled["steps"]) == ("main", 20, "branch", 10)
    assert (cooled["branch_of"], cooled["branched_at"], cooled["resumed_at"]) == (20, 8, [])
    assert cooled["config"]["schedule"] == "wsd" and cooled["tokens"] == 2560
    (alone_record,) = provenance.read_records(provenance.sidecar_path(straight))
    assert cooled["result"]["val_loss"] == alone_record["result"]["val_loss"]
    assert provenance.join(rows)["record_agrees"].tolist() == [True, True]  # each row finds its own record
    summary = [line.split()[:5] for line in trained["stdout"][0].splitlines()[1:]]
    assert summary[0] == ["size", "variant", "seed", "steps", "status"] and summary[2][3] == "20"
    assert trained["stdout"][1].splitlines()[1].split()[3] == "status"  # one budget: the table as before


def test_each_branch_has_its_own_files_and_its_log_continues_the_stable_phase(trained, ladder):
    family = trained["family"]
    folder = family.parent / "family.checkpoints"
    assert sorted(p.name for p in folder.glob("*.pt")) == [
        "1M-standard-seed0-steps10.final.pt",
        "1M-standard-seed0-steps20.final.pt",
    ]  # no checkpoint is left: the rows supersede them
    log = read_metrics(metrics_path(family, **STEM, steps=10))
    train_events = {e["step"]: e for e in log if e["event"] == "train"}
    assert [e["step"] for e in log if e["event"] == "start"] == [0, 8]  # the run's segment, then the branch's
    recipe = TrainConfig("1M", ladder=str(ladder)).recipe
    for step, event in train_events.items():  # the lr of each reading's last step, by the wsd schedule of 10
        assert event["lr"] == pytest.approx(lr_at(step - 1, 10, recipe, "wsd"), rel=1e-12)
    assert [e["step"] for e in log if e["event"] == "eval"] == [10]
    assert train_events[8]["lr"] == 1e-3 and train_events[10]["lr"] == pytest.approx(1e-3 * (0.1 + 0.9 / 2))


class Killed(BaseException):
    """Stands for SIGKILL: nothing in the trainer catches it."""


def test_a_run_killed_mid_stable_phase_and_its_branch_killed_mid_cooldown_resume_to_the_same_bits(
    trained, ladder, tmp_path, monkeypatch
):
    out = tmp_path / "killed.csv"
    runs = family_plan(ladder, out, checkpoint_every=3)
    save, kills = checkpoint.save, {("1M-standard-seed0-steps20.pt", 12), ("1M-standard-seed0-steps10.pt", 9)}

    def save_then_die(path, state):
        save(path, state)
        if (path.name, getattr(state, "step", None)) in kills:
            kills.discard((path.name, state.step))
            raise Killed

    monkeypatch.setattr(checkpoint, "save", save_then_die)
    with pytest.raises(Killed):  # the run at its checkpoint of step 12; its branch's start (8) is saved
        train_runs(runs, out)
    assert checkpoint.saved_step(checkpoint.checkpoint_path(out, **STEM, steps=10)) == 8
    with pytest.raises(Killed):  # resumed: the run finishes, its branch stops at its checkpoint of step 9
        train_runs(runs, out, resume=True)
    assert load_sweep(out)["steps"].tolist() == [20]
    monkeypatch.undo()
    (record,) = train_runs(runs[1:], out, resume=True)  # the same command again trains what is left
    assert (record["resumed_at"], record["branched_at"]) == ([9], 8)
    for steps, reference in ((20, weights(trained["family"], steps=20)), (10, weights(trained["straight"]))):
        resumed = weights(out, steps=steps)
        assert all(torch.equal(resumed.model[k], reference.model[k]) for k in reference.model)
    main = provenance.read_records(provenance.sidecar_path(out))[0]
    assert main["resumed_at"] == [12] and main["steps"] == 20


def test_a_branch_without_its_start_trains_from_step_0_to_the_same_bits(trained, ladder, tmp_path):
    out = tmp_path / "alone.csv"
    (branch,) = family_plan(ladder, out)[1:]
    record = train(branch, out)  # its run never saved its start: it trains as a run of its steps
    assert record["branched_at"] is None and record["branch_of"] == 20
    alone = weights(trained["straight"])
    assert all(torch.equal(weights(out, steps=10).model[k], alone.model[k]) for k in alone.model)


def test_a_planned_family_lists_each_budget_and_skips_those_in_the_file(trained, ladder):
    family = trained["family"]
    again = cli(ladder, family, "--steps", 20, "--branch-at", 10)
    assert again.exit_code == 0, again.output
    assert "skip: 1M standard 0 20 is already in" in again.stdout
    assert "skip: 1M standard 0 10 is already in" in again.stdout
    options = dict(ladder=str(ladder), data="synthetic", schedule="wsd", steps=20, branch_at=(5, 10))
    todo, skipped, _ = plan_runs(family, "1M", ("standard",), **options)  # the next seed holds none of them
    assert [c.key for c in todo] == [("1M", "standard", 0, 5)] and len(skipped) == 2  # seed 0 is incomplete
    dry = cli(ladder, family.with_name("new.csv"), "--steps", 20, "--branch-at", "5,10", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert (
        "2 cooldown branch(es) continue from the state their run saves where their cooldown starts: they "
        "train 3 of their 15 steps" in " ".join(dry.stdout.split())
    )
    plan = dry.stdout.split("Budget per size and steps")[1]
    assert [line.split()[2] for line in plan.splitlines()[3:6]] == ["20", "5", "10"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(steps=20, branch_at=(10,)), "branch_at 10: cooldown branches need the wsd schedule"),
        (
            dict(schedule="wsd", steps=20, branch_at=(20,)),
            "give increasing steps, each > 0 and below the run's 20",
        ),
        (dict(schedule="wsd", steps=20, branch_at=(10, 5)), "give increasing steps"),
        (dict(schedule="wsd", steps=10, branch_of=10), "each branch must be shorter than its run"),
    ],
)
def test_branches_a_run_cannot_train_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig("tiny", **options)


def test_a_sweep_plans_its_budgets_as_branches_of_the_largest(tmp_path):
    runs = plan_sweep(
        tmp_path / "s.csv", ["tiny"], [0], ("standard",), data="synthetic", schedule="wsd", budgets=(1, 2, 4)
    ).todo
    assert [(c.steps, c.branch_at, c.branch_of) for c in runs] == [
        (400, (100, 200), None),
        (100, (), 400),
        (200, (), 400),
    ]
    by_tokens = plan_sweep(
        tmp_path / "s.csv",
        ["tiny"],
        [0],
        ("standard",),
        data="synthetic",
        schedule="wsd",
        tokens_per_param=1,
        budgets=(1, 4),
    ).todo
    n = 1_121_024  # the tiny reference at the byte vocabulary (tests/test_budget.py counts it by hand)
    assert [c.steps for c in by_tokens] == [round(4 * n / 2048), round(n / 2048)]
    with pytest.raises(ValueError, match="--budgets trains cooldown branches: give --schedule wsd"):
        plan_sweep(tmp_path / "s.csv", ["tiny"], [0], data="synthetic", budgets=(1, 2))
    with pytest.raises(ValueError, match="--budgets 1,1"):
        plan_sweep(tmp_path / "s.csv", ["tiny"], [0], data="synthetic", schedule="wsd", budgets=(1, 1))


def test_sweep_budgets_dry_run_here_and_on_slurm(tmp_path):
    args = ["sweep", "--sizes", "tiny", "--seeds", 0, "--variant", "standard", "--corpus", "synthetic",
            "--schedule", "wsd", "--budgets", "1,2,4", "--out", tmp_path / "s.csv", "--dry-run"]  # fmt: skip
    here = rr(*args)
    assert here.exit_code == 0, here.output
    assert "3 run(s) to train, 0 already in" in here.stdout
    assert "they train 60 of their 300 steps" in " ".join(here.stdout.split())
    slurm = rr(*args, "--launcher", "slurm")
    assert slurm.exit_code == 0, slurm.output
    jobs = slurm.stdout.split("job(s) would be submitted")[1].splitlines()
    assert "1 job(s) would be submitted" in slurm.stdout  # one job trains the run, then its branches
    header = jobs[1].split()
    row = dict(zip(header, jobs[3].split(), strict=True))
    assert (row["steps"], row["branch_at"]) == ("400", "100,200")
    assert json.loads(json.dumps(row))  # plain text cells

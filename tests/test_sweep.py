"""`rr sweep`: the plan (published by default, biggest first, skipping present rows), one process per run,
resumability, and a crashed run that does not stop the sweep."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import rr

from rr_analysis.comparison import Comparison
from rr_analysis.stats.power import seed_plan, seeds_for_effect
from rr_core.comma_lists import items, seed_list
from rr_core.errors import InputError
from rr_core.shapes import model_config
from rr_core.sweepfile.dataset import append_rows, load_sweep, next_seeds
from rr_core.sweepfile.provenance import read_records, sidecar_path
from rr_core.variants import compared
from rr_model.config import TrainConfig
from rr_model.sweep.child import config_from_json
from rr_model.sweep.local import (
    Sweep,
    budget_multiples,
    default_sweep_out,
    plan_sweep,
    sweep_runs,
    train_command,
)

pytestmark = pytest.mark.usefixtures("offline")  # no hub; the session's token cache


def test_default_plan_is_the_published_sweep_biggest_first(tmp_path, published_copy):
    todo, skipped, _ = plan_sweep(tmp_path / "new.csv")
    assert len(todo) == 42 and not skipped
    assert [c.size for c in todo[::3]] == ["1B"] * 3 + ["590M"] * 3 + ["320M"] * 2 + ["150M"] * 3 + [
        "60M"
    ] * 3
    assert [c.key for c in todo[:3]] == [("1B", v, 0) for v in ("review_neutral", "highway", "standard")]

    published = published_copy
    todo, skipped, _ = plan_sweep(published)
    assert not todo and len(skipped) == 42
    todo, *_ = plan_sweep(published, ["60M", "1B"], [3, 4])
    assert [(c.size, c.seed) for c in todo[::3]] == [("1B", 3), ("1B", 4), ("60M", 3), ("60M", 4)]
    with pytest.raises(ValueError, match="tiny has no published seeds"):
        plan_sweep(published, ["tiny"])


def test_the_sweep_s_plan_from_its_options_as_the_command_line_gives_them(tmp_path):
    """`sweep_runs` is rr sweep's plan without the command line (a `Sweep`): seeds as text, the reference's
    compared block by default, --at's sizes from a ladder file, --effect's seeds from the function passed in."""
    out = tmp_path / "new.csv"
    runs = sweep_runs(Sweep(("60M",), seeds="3, 4", out=out), reference="highway")  # highway: standard only
    assert [c.key for c in runs.todo] == [("60M", v, s) for s in (3, 4) for v in ("highway", "standard")]
    next_rungs = Path(__file__).parents[1] / "docs" / "extending" / "next.toml"
    at = sweep_runs(Sweep(at="3B, 7B", seeds=(0,), variants=("standard",), out=out), ladder=str(next_rungs))
    assert [c.key for c in at.todo] == [("7B", "standard", 0), ("3B", "standard", 0)]  # biggest first
    heard = []

    def effect(sizes, variants):
        heard.append((sizes, variants))
        return {"60M": [5]}

    planned = sweep_runs(Sweep(("60M", "150M"), out=out), effect_seeds=effect)
    assert heard == [(["60M", "150M"], ("review_neutral", "highway", "standard"))]
    assert [c.key for c in planned.todo] == [("60M", v, 5) for v in ("review_neutral", "highway", "standard")]
    refused = {
        "--at names sizes past the published ladder, --size any size: give one, not both": (
            Sweep(("60M",), at="3B"),
            {},
        ),
        "--at 60M: 60M is a published size; train more of its seeds with --size 60M": (Sweep(at="60M"), {}),
        "--effect plans the seeds itself: give --effect or --seed, not both": (
            Sweep(seeds="3"),
            dict(effect_seeds=effect),
        ),
        "--seed '3,x': expected comma-separated integers >= 0, e.g. 3,4": (Sweep(seeds="3,x"), {}),
        "--budgets '1,x': expected comma-separated multiples > 0, e.g. 1,2,4": (
            Sweep(seeds="0", budgets="1,x"),
            {},
        ),
        "60M standard seed 9 is not a published run, so there is nothing to reproduce": (
            Sweep(("60M",), seeds="9", variants=("standard",)),
            dict(reproduce=True),
        ),
    }
    for said, (sweep, given) in refused.items():
        with pytest.raises(InputError, match=re.escape(said)):
            sweep_runs(replace(sweep, out=out), **given)
    assert len(heard) == 1  # --effect with --seed is refused before its seeds are planned
    assert default_sweep_out() == Path("data/scaling_v8.csv")
    assert default_sweep_out(reproduce=True) == Path("data/reproduction.csv")
    assert default_sweep_out(ladder="x/pilot.toml") == Path("data/pilot.csv")


def test_comma_separated_seeds_and_budgets_are_read_or_refused_in_the_command_line_s_words():
    assert items(" 3B, 7B,,") == ["3B", "7B"] and items("") is None and items(None) is None
    assert seed_list("3,4", "--seed") == [3, 4] and seed_list(["5", 6], "--seed") == [5, 6]
    assert seed_list(None, "--seed") is None and seed_list(",", "--seed") == [] == items(",")
    for bad in ("-1", "1.5", "x", "3,,y"):
        with pytest.raises(
            InputError, match=re.escape(f"--select-seeds {bad!r}: expected comma-separated integers")
        ):
            seed_list(bad, "--select-seeds")
    assert budget_multiples("1, 2,0.5") == [1.0, 2.0, 0.5] and budget_multiples(None) is None
    for bad in ("0", "-1", "inf", "nan", ",,", "1,x"):
        with pytest.raises(
            InputError, match=re.escape(f"--budgets {bad!r}: expected comma-separated multiples > 0")
        ):
            budget_multiples(bad)


def test_train_command_runs_the_library_child_with_the_whole_config(tmp_path):
    cfg = TrainConfig("tiny", "highway", 2, data="synthetic", steps=5, compile=True, text_field="body")
    cmd = train_command(cfg, tmp_path / "x.csv")
    assert cmd[:4] == [sys.executable, "-m", "rr_model.sweep.child", str(tmp_path / "x.csv")]
    assert "cli.main" not in cmd and config_from_json(cmd[4]) == cfg  # every field, not only the flags
    assert train_command(cfg, tmp_path / "x.csv", nproc=4)[1:5] == [
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=4",
    ]


@pytest.mark.slow
def test_sweep_trains_each_run_in_its_own_process_and_resumes(tmp_path):
    out = tmp_path / "sweep.csv"
    args = ["sweep", "--sizes", "tiny", "--seeds", "0,1", "--variant", "standard", "--corpus", "synthetic"]
    args += ["--steps", 6, "--out", out]
    result = rr(*args, "--log", "tensorboard")
    assert result.exit_code == 0, result.output
    assert "2 run(s) to train, 0 already in" in result.stdout
    assert sorted(load_sweep(out)["seed"]) == [0, 1]
    for seed in (0, 1):  # --log reaches each child: its TensorBoard events beside its JSONL log
        assert list(
            (tmp_path / "sweep.metrics" / "tensorboard" / f"tiny-standard-seed{seed}").glob("events.*")
        )
    # the closing table renders in-process; without review_neutral it says why in one line
    assert "no closing table (no review_neutral runs" in result.output and "Traceback" not in result.output
    again = rr(*args)
    assert again.exit_code == 0 and "0 run(s) to train, 2 already in" in again.stdout


def test_a_crashed_run_is_reported_and_the_sweep_goes_on(tmp_path):
    out = tmp_path / "sweep.csv"
    result = rr("sweep", "--sizes", "tiny", "--seeds", "0", "--variant", "standard", "--variant", "highway",
                "--corpus", "synthetic", "--steps", 4, "--device", "cuda", "--out", out)  # fmt: skip
    assert result.exit_code == 1
    rows = [line.split() for line in result.stdout.splitlines() if line.startswith("tiny ")]
    assert [(r[1], r[3]) for r in rows] == [("standard", "crashed"), ("highway", "crashed")]
    assert not out.exists()


def test_bad_seeds_are_one_clear_error(tmp_path):
    result = rr("sweep", "--seeds", "3,x", "--out", tmp_path / "x.csv")
    assert result.exit_code == 2 and "expected comma-separated integers" in result.stderr


def test_next_seeds_completes_a_crashed_block_first():
    keys = {("1B", v, s) for v in ("review_neutral", "highway", "standard") for s in (0, 1, 2)}
    keys -= {("1B", "highway", 1)}
    assert next_seeds(keys, "1B", 3) == [1, 3, 4]
    assert next_seeds(keys, "60M", 2) == [0, 1] and next_seeds(keys, "1B", 0) == []


def test_effect_plans_the_seeds_the_power_analysis_asks_for(published_copy):
    published = published_copy
    need = seed_plan(load_sweep(published), 0.003).set_index("size")["seeds_needed"]
    result = rr("sweep", "--effect", 0.003, "--sizes", "1B,320M", "--out", published, "--dry-run")
    assert result.exit_code == 0, result.output
    assert need["1B"] > 3 and need["320M"] > 2  # 3 and 2 published seeds are too few for 0.003
    power_table = result.stdout.split("run(s) to train")[0].splitlines()
    row = {line.split()[0]: line.split() for line in power_table if line.split()[:1] in (["1B"], ["320M"])}
    assert row["1B"][4] == ",".join(map(str, range(3, need["1B"])))  # the seeds after the published ones
    assert row["320M"][4] == ",".join(map(str, range(2, need["320M"])))
    runs = 3 * (need["1B"] - 3 + need["320M"] - 2)
    assert f"rr sweep: {runs} run(s) to train, 0 already in" in result.stdout

    both = rr("sweep", "--effect", 0.003, "--seeds", "3", "--out", published, "--dry-run")
    # --seeds is --seed's other spelling; the message names the one help shows
    assert both.exit_code == 2 and "give --effect or --seed, not both" in both.stderr


def test_effect_plans_the_power_of_the_sweeps_own_reference(tmp_path, published_copy):
    # issue 36.3: --reference NAME sweeps compare against NAME, so --effect plans the power of that comparison;
    # it planned Review's, and refused a file without Review runs
    published = load_sweep(published_copy)
    # runs of one's own, seeds 10-12 (a file of published runs refuses a sweep under another reference)
    own = published[published["variant"] != "review_neutral"].assign(seed=lambda d: d["seed"] + 10)
    own["params_M"] = [
        round(model_config(s, v, reference="highway").n_params / 1e6, 2)
        for s, v in zip(own["size"], own["variant"], strict=True)
    ]
    no_review = tmp_path / "no_review.csv"
    own.to_csv(no_review, index=False)
    result = rr(
        "sweep", "--effect", 0.003, "--sizes", "1B", "--reference", "highway", "--out", no_review, "--dry-run"
    )
    assert result.exit_code == 0, result.output
    plan = seeds_for_effect(
        load_sweep(no_review), 0.003, ["1B"], compared("highway"), Comparison("highway")
    ).iloc[0]
    printed = next(line.split() for line in result.stdout.splitlines() if line.startswith("1B "))
    assert printed[1:5] == [
        str(plan.seeds_present),
        str(plan.seeds_needed),
        str(plan.seeds_to_add),
        ",".join(map(str, plan.new_seeds)),
    ]
    assert plan.seeds_present == 3 and plan.reference == "highway"


def test_at_trains_a_size_past_the_published_ladder_from_a_ladder_file(tmp_path):
    ladder = tmp_path / "next.toml"
    ladder.write_text('["3B"]\nd_model = 2560\nn_layer = 32\nn_head = 20\nsteps = 6000\nseeds = 3\n')
    out = tmp_path / "next.csv"
    # its jobs run on machines with GPUs (a local sweep of 3B on a machine without one is refused: it cannot
    # hold the model, issue 47)
    args = ("--at", "3B", "--seeds", "0,1", "--ladder", ladder, "--launcher", "slurm", "--gpus", 1)
    result = rr("sweep", *args, "--out", out, "--dry-run")
    assert result.exit_code == 0, result.output
    assert "rr sweep: 6 run(s) to train, 0 already in" in result.stdout and not out.exists()
    for args, says in (
        (("--at", "3B"), "rr's ladder has no 3B; give its shape in a ladder file"),
        (
            ("--at", "1B", "--ladder", ladder),
            "1B is a published size; train more of its seeds with --size 1B",
        ),
        (("--at", "3B", "--sizes", "1B", "--ladder", ladder), "give one, not both"),
    ):
        bad = rr("sweep", *args, "--out", out, "--dry-run")
        assert bad.exit_code == 2 and says in bad.stderr, bad.output


@pytest.mark.parametrize("launcher", ["local", "slurm"])
def test_a_sweep_refuses_what_its_runs_would_refuse_before_any_starts(tmp_path, monkeypatch, launcher):
    # issue 36.5: the plan went ahead (or its jobs were submitted), and each run then refused on its own
    monkeypatch.chdir(tmp_path)
    for dry in (["--dry-run"], []):
        args = ("sweep", "--sizes", "60M", "--seeds", 3, "--corpus", "synthetic", "--launcher", launcher)
        result = rr(*args, *dry)
        assert result.exit_code == 2, result.output
        assert "holds published rows, and this run is off the published recipe of 60M" in result.stderr
        assert list(tmp_path.iterdir()) == []


def test_seeds_for_effect_plans_what_rr_sweep_effect_planned(sweep):
    """The seeds `rr sweep --effect ... --dry-run` printed before the planning moved to rr_analysis.stats.power."""
    published = sweep
    plan = seeds_for_effect(published, 0.003)
    assert dict(zip(plan["size"], plan["new_seeds"], strict=True)) == {
        "60M": [3, 4, 5, 6, 7],
        "150M": [3, 4, 5, 6, 7],
        "320M": [2, 3, 4, 5, 6, 7],
        "590M": [3, 4, 5, 6, 7],
        "1B": [3, 4, 5, 6, 7],
    }
    assert plan["seeds_needed"].tolist() == [8, 8, 8, 8, 8]
    plan = seeds_for_effect(published, 0.01)
    assert dict(zip(plan["size"], plan["new_seeds"], strict=True)) == {
        "60M": [],
        "150M": [],
        "320M": [2],
        "590M": [],
        "1B": [],
    }
    # a block a crash left incomplete (1B highway seed 1 missing) is completed first
    gap = published[
        ~((published["size"] == "1B") & (published["variant"] == "highway") & (published["seed"] == 1))
    ]
    plan = seeds_for_effect(gap, 0.004, ["1B", "60M"])
    assert dict(zip(plan["size"], plan["new_seeds"], strict=True)) == {"60M": [3, 4, 5], "1B": [1, 3, 4, 5]}
    assert plan["seeds_to_add"].tolist() == [3, 4]


def test_a_sweep_child_refuses_as_rr_train_did(tmp_path, capsys):
    from rr_model.sweep.child import config_json, main

    cfg = TrainConfig("tiny", "standard", 0, data="synthetic", steps=2, reproduce=True)
    assert main([str(tmp_path / "repro.csv"), config_json(cfg)]) == 2  # the reproduction file's recipe guard
    err = capsys.readouterr().err
    assert err.startswith("rr: error: ") and "is a reproduction file" in err and "Traceback" not in err
    assert not (tmp_path / "repro.csv").exists()


def test_an_interrupted_sweep_child_says_what_it_kept(tmp_path, capsys, monkeypatch):
    from rr_model.run import trainer
    from rr_model.sweep.child import config_json, main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(trainer, "train_runs", interrupted)
    cfg = TrainConfig("tiny", "standard", 0, data="synthetic", steps=2)
    assert main([str(tmp_path / "s.csv"), config_json(cfg)]) == 130
    err = capsys.readouterr().err
    assert (
        err
        == "rr: interrupted: tiny standard 0 had no checkpoint yet, so the same sweep run again trains it from the start\n"
    )


def test_a_run_another_process_trains_is_refused_before_anything_is_read_or_written(tmp_path):
    from rr_core.files.locks import Held, claim
    from rr_model.checkpoint.state import claim_path
    from rr_model.config import TrainConfig
    from rr_model.run.trainer import train

    out = tmp_path / "x.csv"
    cfg = TrainConfig("tiny", "standard", 0, data="synthetic", steps=2)
    path = claim_path(out, *cfg.key)
    path.parent.mkdir()
    with claim(path, "the other trainer's run"), pytest.raises(Held) as err:
        train(cfg, out)  # a second trainer of the run, as a second sweep of the same plan starts it
    assert str(err.value) == (
        f"tiny standard 0 of {out} is claimed by pid {os.getpid()} on {socket.gethostname()} (the lock "
        f"{path}), which is making it now"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.checkpoints"]  # no metrics log, row or record
    assert [p.name for p in path.parent.iterdir()] == [path.name]


@pytest.mark.slow  # three child processes, each loading torch: ~50 s on a shared 2-core machine
def test_two_sweeps_of_one_plan_train_each_run_once_and_both_end_with_every_row(tmp_path, monkeypatch, capfd):
    from rr_core.files.locks import claim
    from rr_model.checkpoint.state import claim_path
    from rr_model.sweep import local
    from rr_model.sweep.local import plan_sweep, run_sweep

    out = tmp_path / "s.csv"
    todo = plan_sweep(out, ["tiny"], [0, 1], ("standard",), data="synthetic", steps=2).todo
    other = todo[0]  # seed 0: the other sweep is training it when this one starts
    path = claim_path(out, *other.key)
    path.parent.mkdir()
    held = contextlib.ExitStack()
    held.enter_context(claim(path, "the other sweep's run"))
    real = local.locked

    def other_sweep_finishes(lock):  # this sweep waits for the claim: the other sweep's run ends there
        append_rows(
            out,
            [
                {
                    "size": "tiny",
                    "variant": "standard",
                    "seed": 0,
                    "params_M": 1.13,
                    "steps": 2,
                    "val_loss": 5.0,
                    "ece": 0.1,
                    "minutes": 0.1,
                }
            ],
        )
        held.close()
        return real(lock)

    monkeypatch.setattr(local, "locked", other_sweep_finishes)
    summary = run_sweep(todo, out)
    said = capfd.readouterr().out
    assert [(r["seed"], r["status"], r["exit"]) for r in summary] == [(0, "in file", 0), (1, "ok", 0)]
    assert "skip for now: tiny standard 0 of" in said and "waiting for tiny standard 0" in said
    assert f"skip: tiny standard 0 is already in {out}" in said
    rows = load_sweep(out).set_index("seed")["val_loss"]
    assert rows[0] == 5.0 and len(rows) == 2  # the other sweep's row of seed 0: not trained again here
    records = read_records(sidecar_path(out))
    assert [(r["seed"], r["status"]) for r in records] == [(1, "ok")]


def test_the_closing_table_fits_the_terminal(published_copy, monkeypatch, capsys):
    """Issue 49.10: the sweep's closing table was rendered at no width (every column, 150-odd characters);
    it is now drawn at the terminal's width as `rr analyze` draws it, naming the columns it leaves out, and
    with the reference `rr sweep` compared against."""
    from cli.sweep import _closing_table

    monkeypatch.setenv("COLUMNS", "80")
    _closing_table(published_copy, "highway")
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 80
    assert lines[0].startswith("Highway vs each baseline")
    assert any(line.startswith("not shown at width 80: ") for line in lines)
    rows = [line.split() for line in lines if line.startswith(("60M", "1B"))]
    want = [["60M", "Standard"], ["60M", "Review"], ["1B", "Standard"], ["1B", "Review"]]  # registry order
    assert [r[:2] for r in rows] == want


class _InterruptedChild:
    """A child process as `subprocess.Popen` gives it, interrupted by Ctrl-C with its parent: the parent's
    first wait is interrupted, the child then ends as rr's child does (`exit`, after saying its line)."""

    def __init__(self, exit: int):
        self.exit, self.waits = exit, 0

    def __call__(self, command):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def wait(self):
        self.waits += 1
        if self.waits == 1:
            raise KeyboardInterrupt
        return self.exit


@pytest.mark.parametrize("exit", [130, 2])
def test_ctrl_c_on_a_sweep_is_one_line_said_by_the_child_that_knows_what_it_keeps(
    tmp_path, monkeypatch, exit
):
    """Issue 49.10: the child said `rr: interrupted: ... had no checkpoint yet, ...` and the sweep then said
    `rr: interrupted` again. The sweep now waits for the child and, when it stopped on the interrupt (130),
    stops saying nothing more; a child that ended otherwise leaves the sweep's own line."""
    import subprocess

    import typer

    from cli.errors import known_errors
    from rr_core.errors import InterruptSaid
    from rr_model.sweep import local

    monkeypatch.setattr(subprocess, "Popen", _InterruptedChild(exit))
    cfg = TrainConfig(size="tiny", variant="standard", data="synthetic")
    with pytest.raises(KeyboardInterrupt) as stopped:
        local.run_sweep([cfg], tmp_path / "x.csv")
    assert isinstance(stopped.value, InterruptSaid) == (exit == 130)
    said = []
    monkeypatch.setattr(typer, "echo", lambda message, err=False: said.append(message))
    with pytest.raises(SystemExit) as code, known_errors():
        raise stopped.value
    assert code.value.code == 130 and said == ([] if exit == 130 else ["rr: interrupted"])

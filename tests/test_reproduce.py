"""`rr reproduce` and `rr sweep --reproduce`: which runs a reproduction trains, where they may go, the recipe
guard on a reproduction file, the child command of a sweep, and the provenance that can make a re-run
differ. Nothing here trains 60M: the plan is read through --dry-run, the trainer's side through a tiny run
refused by the guard before its first step."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import rr, stub_tokens

from rr_core.errors import InputError, RecipeError
from rr_core.sweepfile.dataset import append_rows, bundled_path, load_sweep
from rr_core.sweepfile.provenance import environment
from rr_model.config import TrainConfig
from rr_model.run.output_file import preflight
from rr_model.run.reproduce import DEFAULT_REPRODUCTION, check_reproducible, plan_reproduction
from rr_model.sweep.child import config_from_json
from rr_model.sweep.local import train_command


def test_dry_run_plans_the_published_run_into_its_own_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = rr("reproduce", "--size", "60M", "--variant", "review_neutral", "--seed", "0", "--dry-run")
    assert out.exit_code == 0, out.output
    assert f"plan for {DEFAULT_REPRODUCTION}" in out.output and "1 run(s), 131,072,000 tokens" in out.output
    assert not (tmp_path / "data").exists()  # a dry run creates nothing
    every = rr("reproduce", "--size", "60M", "--seed", "0", "--dry-run", "--out", "r.csv")
    assert every.exit_code == 0 and "3 run(s)" in every.output  # all three variants of the seed


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--size", "60M", "--seed", "7"], "60M review_neutral seed 7 is not a published run"),
        (["--size", "320M", "--seed", "2"], "the published runs of 320M review_neutral are seeds 0, 1"),
        (["--size", "tiny", "--seed", "0"], "the published runs of tiny review_neutral do not exist"),
        (["--size", "60M", "--seed", "0", "--out", "data/scaling_v8.csv"], "never to the published dataset"),
        (["--size", "60M", "--seed", "0", "--out", str(bundled_path())], "never to the published dataset"),
    ],
)
def test_what_is_not_a_reproduction_is_a_sentence(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    out = rr("reproduce", *args, "--dry-run")
    assert out.exit_code == 2 and message in out.output and "Traceback" not in out.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--steps", "5"], "--steps 5: a reproduction trains the published recipe (--steps 8000 for 60M)"),
        (["--precision", "bf16"], "--precision bf16: a reproduction trains the published recipe"),
        (["--tokenizer", "bytes"], "--tokenizer bytes: a reproduction trains the published recipe"),
    ],
)
def test_sweep_reproduce_refuses_an_off_recipe_option_when_it_plans(tmp_path, monkeypatch, args, message):
    """rr reproduce has no --steps, --precision or --tokenizer; rr sweep --reproduce refuses them in one
    line before anything runs, instead of every child's trainer refusing its run after loading data."""
    monkeypatch.chdir(tmp_path)
    out = rr("sweep", "--reproduce", "--sizes", "60M", *args, "--dry-run")
    assert out.exit_code == 2 and message in " ".join(out.output.split()), out.output
    assert "Traceback" not in out.output and not (tmp_path / "data").exists()


def test_plan_through_the_published_seam_and_skips_present_rows(tmp_path):
    """tiny has no published rows: a frame that says it has is the public seam of the plan."""
    row = dict(
        size="tiny", variant="standard", seed=0, params_M=1.0, steps=12, val_loss=3.0, ece=0.01, minutes=0.1
    )
    published = pd.DataFrame([row, {**row, "variant": "review_neutral"}])
    out = tmp_path / "repro.csv"
    todo, skipped, _ = plan_reproduction(out, "tiny", 0, published=published, data="synthetic")
    assert [c.key for c in todo] == [("tiny", "review_neutral", 0), ("tiny", "standard", 0)]  # published ones
    assert all(c.reproduce for c in todo) and not skipped
    append_rows(out, [{**row, "val_loss": 3.1}])  # a re-run already in the reproduction file
    todo, skipped, _ = plan_reproduction(out, "tiny", 0, published=published, data="synthetic")
    assert [c.key for c in skipped] == [("tiny", "standard", 0)] and len(todo) == 1
    with pytest.raises(InputError, match="tiny highway seed 0 is not a published run"):
        plan_reproduction(out, "tiny", 0, ("highway",), published=published)


def test_the_recipe_guard_holds_on_a_reproduction_file(tmp_path):
    plan = preflight(tmp_path / "new.csv", reproduction=True)
    assert plan.published  # a new, empty reproduction file is guarded
    plan.guard(TrainConfig("60M", reproduce=True), stub_tokens())  # the published recipe passes
    with pytest.raises(RecipeError, match="is a reproduction file, and this run is off the published recipe"):
        plan.guard(TrainConfig("60M", precision="bf16", reproduce=True), stub_tokens())
    assert not preflight(tmp_path / "new.csv").published  # the same new file, not a reproduction


def test_the_trainer_refuses_an_off_recipe_reproduction_before_training(offline, tmp_path):
    from rr_model.run.trainer import train

    out = tmp_path / "repro.csv"
    with pytest.raises(RecipeError, match="repro.csv is a reproduction file.*data synthetic"):
        train(TrainConfig("tiny", "standard", 0, data="synthetic", steps=2, reproduce=True), out)
    assert not out.exists()


def test_sweep_reproduce_plans_published_seeds_and_its_children_reproduce(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = rr("sweep", "--reproduce", "--sizes", "320M", "--dry-run")
    assert out.exit_code == 0, out.output
    assert f"6 run(s) to train, 0 already in {DEFAULT_REPRODUCTION}" in out.output  # 2 published seeds x 3
    bad = rr("sweep", "--reproduce", "--sizes", "60M", "--seeds", "5", "--dry-run")
    assert bad.exit_code == 2 and "60M review_neutral seed 5 is not a published run" in bad.output
    cfg = TrainConfig("60M", "highway", 1, reproduce=True, compile=True)
    cmd = train_command(cfg, "r.csv")
    assert cmd[2] == "rr_model.sweep.child" and config_from_json(cmd[-1]) == cfg  # a reproduction, compiled
    check_reproducible([cfg], "r.csv")  # a published key, a file of its own


def test_provenance_says_what_can_make_a_rerun_differ():
    env = environment("cpu")
    for key in (
        "torch",
        "cuda",
        "cudnn",
        "device_name",
        "toolkit",
        "git_commit",
        "git_dirty",
        "deterministic_algorithms",
        "cudnn_deterministic",
        "cudnn_benchmark",
        "float32_matmul_precision",
    ):
        assert key in env, key
    assert env["git_dirty"] in (None, True, False)
    assert isinstance(env["deterministic_algorithms"], bool)


def test_published_keys_are_the_packaged_rows():
    df = load_sweep(bundled_path())
    todo, *_ = plan_reproduction("x.csv", "1B", 2)
    assert {c.key for c in todo} == {
        k for k in zip(df["size"], df["variant"], df["seed"], strict=True) if k[0] == "1B" and k[2] == 2
    }

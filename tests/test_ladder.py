"""Ladder files (--ladder): your own sizes, loaded and checked, never taken for the published ones."""

from __future__ import annotations

import re
import shutil

import pytest
from conftest import rr, stub_tokens

from rr_core.errors import InputError, RecipeError
from rr_core.ladder import RECIPE, Recipe, get_size, load_ladder
from rr_core.shapes import model_config, size_table
from rr_core.sweepfile.dataset import bundled_path
from rr_model.config import TrainConfig, default_out
from rr_model.run.identity import recipe_differences, result_config
from rr_model.run.output_file import preflight
from rr_model.sweep.child import config_from_json
from rr_model.sweep.local import plan_sweep, train_command

PILOT = """
["0.05M"]
d_model = 32
n_layer = 2
n_head = 2
steps = 30
seeds = 3
batch_size = 8
lr = 1e-3
block_size = 64
warmup_steps = 3

[60M]
d_model = 64
n_layer = 2
n_head = 4
steps = 8000
seeds = 2
"""


@pytest.fixture
def pilot(tmp_path):
    path = tmp_path / "pilot.toml"
    path.write_text(PILOT)
    return path


def test_a_ladder_file_gives_its_sizes_their_shape_seeds_and_recipe(pilot):
    sizes = load_ladder(pilot)
    assert list(sizes) == ["0.05M", "60M"]
    small = sizes["0.05M"]
    assert (small.d_model, small.n_layer, small.n_head, small.steps, small.sweep_seeds) == (32, 2, 2, 30, 3)
    assert (small.recipe.batch_size, small.recipe.lr, small.recipe.block_size) == (8, 1e-3, 64)
    assert (
        small.recipe.warmup_steps == 3 and small.recipe.weight_decay == RECIPE.weight_decay
    )  # the rest: published
    assert small.ladder == str(pilot)
    assert not sizes["60M"].published and sizes["60M"].d_model == 64  # not the published 60M
    assert get_size("0.05m", pilot) is not None and get_size("60M").d_model == 512


def test_counts_and_widths_of_a_ladder_file_are_exact(pilot):
    review, standard = (model_config("0.05M", v, 257, pilot) for v in ("review_neutral", "standard"))
    d, V, T = 32, 257, 64
    block = 12 * d * d + 11 * d + 2 * (2 * d * d + d)
    assert review.n_params == (V + T) * d + 2 * block + d
    assert standard.d_model > d and (standard.d_model - d) % 2 == 0 and standard.n_params >= review.n_params
    rows = size_table(257, pilot)
    assert {r["size"] for r in rows} == {"0.05M", "60M"} and rows[0]["params"] == review.n_params


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[2M]\nd_model = 64\n", "[2M]: missing n_layer, n_head, steps, seeds"),
        (
            "[2M]\nd_model = 64\nn_layer = 2\nn_head = 3\nsteps = 5\nseeds = 1\n",
            "must be a multiple of n_head",
        ),
        ("[2M]\nd_modle = 64\n", "unknown key 'd_modle' (did you mean d_model?)"),
        ("[2M]\nd_model = -4\n", "d_model = -4 must be an integer > 0"),
        ("[2M]\nlr = 'fast'\n", "lr = 'fast' must be a number"),
        ("[pilot]\nd_model = 64\n", "[pilot]: a size label must be a ladder size or a <number><K|M|B>"),
        ("[2M\n", "not a TOML file"),
        ("", "no sizes"),
        ("seeds = 3\n", "seeds = 3 is not a table"),
    ],
)
def test_a_bad_ladder_file_is_one_sentence_naming_the_table_and_key(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=re.escape(message)):
        load_ladder(path)


def test_a_sweep_of_a_ladder_file_plans_its_sizes_and_seeds_into_its_own_file(pilot, tmp_path):
    out = default_out(pilot)
    assert out.as_posix() == "data/pilot.csv"
    todo, done, _ = plan_sweep(tmp_path / "p.csv", None, None, ("review_neutral",), ladder=str(pilot))
    assert [(r.size, r.seed) for r in todo] == [
        ("60M", 0),
        ("60M", 1),
        ("0.05M", 0),
        ("0.05M", 1),
        ("0.05M", 2),
    ]
    assert done == [] and todo[0].ladder == str(pilot) and todo[-1].steps == 30
    assert config_from_json(train_command(todo[0], "p.csv")[-1]).ladder == str(pilot)
    assert result_config(todo[0])["ladder"] == {"file": str(pilot), "d_model": 64, "n_layer": 2, "n_head": 4}
    assert "ladder" not in result_config(TrainConfig("tiny"))


def test_a_ladder_size_with_a_published_label_is_refused_beside_the_published_rows(pilot, tmp_path):
    out = tmp_path / "scaling_v8.csv"
    shutil.copy(bundled_path(), out)
    cfg = TrainConfig("60M", ladder=str(pilot))
    diffs = recipe_differences(cfg, stub_tokens())
    assert diffs[0] == (
        f"shape d_model 64, n_layer 2, n_head 4 from the ladder file {pilot} "
        "(published: d_model 512, n_layer 8, n_head 8)"
    )
    with pytest.raises(RecipeError, match="holds published rows"):
        preflight(out).guard(cfg, stub_tokens())
    assert recipe_differences(TrainConfig("60M"), stub_tokens()) == []


def test_sizes_train_and_sweep_take_a_ladder_file(pilot):
    result = rr("sizes", "--ladder", str(pilot), "--vocab", "257")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Ladder file {pilot} (your sizes, not the published ladder) x variant")
    result = rr("train", "--ladder", str(pilot), "--size", "0.05M", "--corpus", "synthetic", "--dry-run")  # fmt: skip
    assert result.exit_code == 0 and "rr train: plan for data/pilot.csv" in result.output
    result = rr("sweep", "--ladder", str(pilot), "--corpus", "synthetic", "--dry-run")
    assert result.exit_code == 0 and "15 run(s) to train, 0 already in data/pilot.csv" in result.output
    result = rr("sizes", "--ladder", str(pilot.with_name("none.toml")))
    assert result.exit_code == 2 and "rr: error:" in result.output and "none.toml" in result.output


LR_RULE = "(0, 1] (AdamW moves each weight by about lr a step, and weights start near 0.02)"
SHAPE = "[1M]\nd_model = 32\nn_layer = 1\nn_head = 2\nsteps = 2\nseeds = 1\nwarmup_steps = 1\n"


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        ("lr = nan", f"lr = nan must be a finite number in {LR_RULE}"),
        ("lr = inf", f"lr = inf must be a finite number in {LR_RULE}"),
        (
            "lr = 2.0",
            f"lr = 2.0 must be a finite number in {LR_RULE}",
        ),  # before issue 47.4: trained, diverged
        ("beta1 = 1.5", "beta1 = 1.5 must be a number in [0, 1) (AdamW's first-moment decay)"),
        (
            "min_lr_frac = nan",
            "min_lr_frac = nan must be a number in [0, 1] (the cosine's floor, a fraction of lr)",
        ),
        ("val_frac = nan", "val_frac = nan must be a number in (0, 1) (the share of the tokens held out)"),
        ("beta2 = 1.0", "beta2 = 1.0 must be a number in [0, 1) (AdamW's second-moment decay)"),  # not named
        ("grad_clip = 0.0", "grad_clip = 0.0 must be a finite number > 0 (the gradient norm it clips to)"),
    ],
)
def test_a_recipe_number_outside_its_range_is_refused_before_anything_trains(tmp_path, line, rule):
    path = tmp_path / "l.toml"
    path.write_text(f"{SHAPE}{line}\n")
    result = rr(
        "train", "--ladder", path, "--size", "1M", "--corpus", "synthetic", "--out", tmp_path / "x.csv"
    )
    assert result.exit_code == 2 and result.stderr == f"rr: error: --ladder {path}, [1M]: {rule}\n"
    assert list(tmp_path.iterdir()) == [path]
    name, value = line.split(" = ")
    with pytest.raises(InputError, match=re.escape(rule)):  # a config read back from JSON: the same rule
        Recipe(**{name: float(value)})


def test_a_val_frac_override_is_the_split_the_run_trains_and_validates_on(tmp_path, offline):
    from rr_model.run.trainer import train

    path = tmp_path / "l.toml"
    path.write_text(f"{SHAPE}batch_size = 2\nblock_size = 32\neval_batches = 2\nval_frac = 0.5\n")
    record = train(TrainConfig("1M", "standard", 0, data="synthetic", ladder=str(path)), tmp_path / "x.csv")
    data = record["data"]
    n = data["train_tokens"] + data["val_tokens"]
    assert data["train_tokens"] == n // 2 and record["config"]["recipe"]["val_frac"] == 0.5

"""The warmup-stable-decay schedule (issue 45.2): its values against the formulas written out by hand and
against Hägele et al.'s definition, and a wsd run off the published recipe for the guard and the pool check."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from conftest import rr, stub_tokens

from rr_analysis.stats.pooling import row_flags
from rr_core.errors import InputError
from rr_core.ladder import RECIPE, get_size
from rr_model.config import TrainConfig, decay_start
from rr_model.run.identity import recipe_differences, result_config
from rr_model.run.step import lr_at

TINY = get_size("tiny").recipe  # warmup 15, peak 1e-3, floor a tenth of it


def factor(step, steps, shape="linear", frac=0.2, recipe=TINY):
    return lr_at(step, steps, recipe, "wsd", frac, shape) / recipe.lr


@pytest.mark.parametrize(
    ("step", "linear", "sqrt"),
    [
        (0, 1 / 15, 1 / 15),  # warmup: (step + 1) / 15
        (14, 1.0, 1.0),
        (50, 1.0, 1.0),  # the peak, held
        (79, 1.0, 1.0),
        (80, 1.0, 1.0),  # the cooldown's first step: p = 0
        (90, 0.1 + 0.9 * 0.5, 0.1 + 0.9 * (1 - math.sqrt(0.5))),  # p = 10/20
        (95, 0.1 + 0.9 * 0.25, 0.1 + 0.9 * (1 - math.sqrt(0.75))),
        (99, 0.1 + 0.9 / 20, 0.1 + 0.9 * (1 - math.sqrt(19 / 20))),  # the floor one step after the last
    ],
)
def test_wsd_is_warmup_then_the_peak_then_a_cooldown_over_the_last_fifth(step, linear, sqrt):
    assert factor(step, 100, "linear") == pytest.approx(linear, rel=1e-12)
    assert factor(step, 100, "1-sqrt") == pytest.approx(sqrt, rel=1e-12)


def hagele(t, n, final, frac, shape):
    """The cooldown as Hägele et al. 2024 (arXiv 2405.18392) define it in epfml/schedules-and-scaling
    (src/optim/utils.py, wsd_schedule), written out here: int(frac n) cooldown steps at the end; over them
    final + (1 - final)(1 - u) with u = (t - hold) / cooldown for "linear", sqrt(u) for their "sqrt" (the
    paper's 1-sqrt); 1 before. Their warmup starts from a tenth of a percent, not the recipe's (t + 1) / w,
    so only steps past the warmup are compared."""
    cool = int(frac * n)
    hold = n - cool
    if t < hold:
        return 1.0
    u = (t - hold) / cool
    return final + (1 - final) * (1 - (u if shape == "linear" else math.sqrt(u)))


@pytest.mark.parametrize("steps", [100, 250, 1000])
@pytest.mark.parametrize("frac", [0.1, 0.2, 0.5])
@pytest.mark.parametrize("shape", ["linear", "1-sqrt"])
def test_wsd_past_the_warmup_is_hagele_et_al_s_cooldown(steps, frac, shape):
    for t in range(TINY.warmup_steps, steps):
        assert factor(t, steps, shape, frac) == pytest.approx(hagele(t, steps, 0.1, frac, shape), abs=1e-12)


def test_the_stable_phase_is_every_shorter_run_s_and_a_short_cooldown_never_exceeds_the_warmup():
    # what lets a cooldown branch at B equal a run of B steps: before B's cooldown, the lr ignores the steps
    for short, long in ((50, 100), (20, 400), (100, 101)):
        assert all(factor(t, short) == factor(t, long) for t in range(decay_start(short, 0.2)))
    assert [decay_start(s, 0.2) for s in (100, 10, 3, 1)] == [80, 8, 2, 0]
    # 10 steps under a 15-step warmup: the cooldown starts at step 8, below both lines
    assert factor(8, 10) == pytest.approx(9 / 15) and factor(9, 10) == pytest.approx(0.1 + 0.9 * 0.5)
    assert lr_at(7999, 8000, RECIPE) == lr_at(7999, 8000, RECIPE, "cosine")  # the default: the published


def test_a_wsd_run_is_off_the_published_recipe_and_its_identity_says_which_schedule():
    cfg = TrainConfig("60M", schedule="wsd", decay_shape="1-sqrt")
    assert recipe_differences(cfg, stub_tokens()) == [
        "schedule wsd: warmup 500, constant, then a 1-sqrt cooldown to 2e-05 over the last 1600 steps (0.2 of "
        "8000, from step 6400) (published: cosine)"
    ]
    assert result_config(cfg) == {
        **result_config(TrainConfig("60M")),
        "schedule": "wsd",
        "decay_frac": 0.2,
        "decay_shape": "1-sqrt",
    }
    assert "schedule" not in result_config(TrainConfig("60M"))  # a cosine checkpoint keeps its identity
    row = pd.Series({"size": "60M", "steps": 8000})
    record = {
        "config": {"precision": "tf32", "data": "tinystories", "schedule": "wsd"},
        "environment": {"device_name": "NVIDIA B200"},
    }
    assert row_flags(row, record) == ["schedule wsd (published: cosine)"]
    assert row_flags(row, {**record, "config": {**record["config"], "schedule": "cosine"}}) == []


def test_cooldown_settings_need_the_wsd_schedule_and_a_share_in_range(tmp_path):
    with pytest.raises(InputError, match="decay_frac 0.3 and decay_shape linear shape a wsd cooldown"):
        TrainConfig("tiny", decay_frac=0.3)
    for bad in (0, 1.5):
        with pytest.raises(InputError, match=r"decay_frac .* must be in \(0, 1\]"):
            TrainConfig("tiny", schedule="wsd", decay_frac=bad)
    args = ["train", "--size", "tiny", "--corpus", "synthetic", "--out", tmp_path / "x.csv", "--dry-run"]
    assert rr(*args, "--decay-shape", "1-sqrt").exit_code == 2
    result = rr(*args, "--schedule", "wsd", "--decay-shape", "1-sqrt", "--decay-frac", 0.5)
    assert result.exit_code == 0, result.output
    assert rr(*args, "--schedule", "linear").exit_code == 2

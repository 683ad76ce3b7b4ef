"""GPTConfig and parameter matching: the published counts, exactly, by arithmetic and without torch."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest

from rr_core.errors import InputError
from rr_core.ladder import LADDER, PUBLISHED_SIZES
from rr_core.shapes import GPTConfig, model_config, size_table
from rr_core.sweepfile.dataset import load_sweep
from rr_core.variants import NAMES, REFERENCE, VARIANTS


def test_every_published_cell_has_its_published_parameter_count():
    cells = load_sweep().groupby(["size", "variant"]).params_M.unique()
    assert len(cells) == 15
    for (size, variant), published in cells.items():
        assert [round(model_config(size, variant).n_params / 1e6, 2)] == list(published), (size, variant)


@pytest.mark.parametrize(
    ("size", "variant", "d_model", "n_params"),
    [
        ("60M", "review_neutral", 512, 59_470_848),
        ("60M", "highway", 544, 60_681_024),
        ("60M", "standard", 568, 59_713_840),
        ("1B", "standard", 1776, 998_584_416),
    ],
)
def test_exact_counts_and_widths(size, variant, d_model, n_params):
    config = model_config(size, variant)
    assert (config.d_model, config.n_params) == (d_model, n_params)


@pytest.mark.parametrize("vocab_size", [50257, 257])
@pytest.mark.parametrize("size", list(LADDER))
def test_baselines_are_the_narrowest_width_that_reaches_review(size, vocab_size):
    ladder = LADDER[size]
    review = model_config(size, REFERENCE, vocab_size).n_params
    for variant in NAMES:
        config = model_config(size, variant, vocab_size)
        assert (config.n_layer, config.n_head, config.vocab_size) == (
            ladder.n_layer,
            ladder.n_head,
            vocab_size,
        )
        if VARIANTS[variant].matched:
            assert (config.d_model - ladder.d_model) % ladder.n_head == 0
            assert config.n_params >= review
            narrower = replace(config, d_model=config.d_model - ladder.n_head)
            assert config.d_model == ladder.d_model or narrower.n_params < review
        else:
            assert config.d_model == ladder.d_model


def test_size_table_covers_the_ladder_in_order():
    rows = size_table()
    assert [(r["size"], r["variant"]) for r in rows] == [(s, v) for s in LADDER for v in NAMES]
    assert set(PUBLISHED_SIZES) < {r["size"] for r in rows}
    row = rows[2]
    assert row == {
        "size": "60M",
        "variant": "standard",
        "d_model": 568,
        "n_layer": 8,
        "n_head": 8,
        "head_dim": 71,
        "params": 59_713_840,
        "params_M": 59.71,
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"d_model": 100, "n_head": 8}, "must be a multiple of n_head"),
        ({"variant": "bogus"}, "unknown variant 'bogus'; registered: review_neutral"),
        ({"n_layer": 0}, "n_layer must be a positive integer"),
    ],
)
def test_config_rejects_bad_shapes(kwargs, message):
    with pytest.raises(ValueError, match=message):
        GPTConfig(**kwargs)


def test_unknown_size_lists_the_ladder():
    with pytest.raises(InputError, match="the ladder has 60M"):
        model_config("7B", "standard")


def test_defaults_are_the_published_60m_review_model():
    assert GPTConfig() == model_config("60M", REFERENCE)


def test_counting_does_not_import_torch():
    code = "import sys, rr_core.shapes as c; c.size_table(); assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("variant", NAMES)
def test_param_shapes_are_the_models_parameters_and_sum_to_its_count(variant):
    import math

    import torch

    from rr_core.shapes import param_shapes
    from rr_model.model import GPT

    cfg = GPTConfig(vocab_size=257, block_size=64, n_layer=2, n_head=2, d_model=8, variant=variant)
    with torch.device("meta"):
        built = [(name, tuple(p.shape)) for name, p in GPT(cfg).named_parameters()]
    assert param_shapes(cfg) == built
    assert sum(math.prod(shape) for _, shape in built) == cfg.n_params


def test_the_readme_says_what_review_s_gates_cost_as_the_model_counts_it():
    # issue 36.10: `rms(h)` read as a scalar; the README now says W is d x 2d plus a bias, and what it costs
    from pathlib import Path

    from rr_core.rule_shapes import rule_params

    readme = " ".join(
        (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8").split()
    )
    assert (
        "each sublayer (two per block) has its own d x 2d matrix `W` and d-vector `b`, 2d^2 + d parameters"
        in readme
    )
    assert rule_params(REFERENCE, 8) == 2 * 8 * 8 + 8

    def cost(size: str) -> tuple[str, str, str]:
        c = model_config(size, REFERENCE)
        gates = 2 * c.n_layer * rule_params(REFERENCE, c.d_model)  # two sublayers a block
        return f"{gates / 1e6:.1f}M", f"{c.n_params / 1e6:.1f}M", f"{100 * gates / c.n_params:.1f}%"

    (g60, n60, p60), (g150, n150, p150), (g1b, n1b, p1b) = map(cost, ("60M", "150M", "1B"))
    assert (
        f"Over the model that is {g60} of the 60M size's {n60} parameters ({p60}), {g150} of 150M's {n150} "
        f"({p150}) and {g1b} of 1B's {n1b} ({p1b})"
    ) in readme

"""Review's four ablations (`review_half`, `gate_bias`, `review_state`, `review_update`): their exact sizes, an
initial forward pass that is Review's bit for bit, the maths each docstring states, their gates watched, a run.

Each changes one thing about Review's gate at Review's width: the gate held at 0.5, a gate that reads nothing,
one that reads only the stream, one that reads only the update.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from rr_core.ladder import get_size
from rr_core.rule_shapes import rule_params
from rr_core.shapes import GPTConfig, model_config, param_shapes
from rr_core.variants import REFERENCE, VARIANTS
from rr_model.model import GPT
from rr_model.run.gate_watch import GateWatch, gated

ABLATIONS = ("review_half", "gate_bias", "review_state", "review_update")
SHAPE = {"vocab_size": 61, "block_size": 16, "n_layer": 2, "n_head": 2, "d_model": 16}


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# The counts the ablations must have, by hand: the standard residual at Review's width (60M: d 512, 8 blocks;
# 1B: d 1536, 24 blocks; GPT-2's vocabulary and 256 positions), plus per sublayer (two a block) nothing, d,
# d^2 + d, d^2 + d.
def by_hand(d: int, n_layer: int, per_rule: int) -> int:
    return (50257 + 256) * d + n_layer * (12 * d * d + 11 * d + 2 * per_rule) + d


COUNTS = {
    "60M": (51_074_048, 51_082_240, 55_276_544, 55_276_544),
    "1B": (757_472_256, 757_545_984, 870_792_192, 870_792_192),
}


@pytest.mark.parametrize("size", list(COUNTS))
def test_rr_sizes_counts_them_at_review_s_width_exactly(size):
    d, n_layer = get_size(size).d_model, get_size(size).n_layer
    for variant, count, per_rule in zip(ABLATIONS, COUNTS[size], (0, d, d * d + d, d * d + d), strict=True):
        config = model_config(size, variant)
        assert not VARIANTS[variant].matched and config.d_model == model_config(size, REFERENCE).d_model
        assert config.n_params == count == by_hand(d, n_layer, per_rule), (size, variant)
        assert rule_params(variant, d) == per_rule


@pytest.mark.parametrize("size", list(COUNTS))
@pytest.mark.parametrize("variant", ABLATIONS)
def test_the_model_holds_exactly_the_counted_parameters(variant, size):
    config = model_config(size, variant)
    with torch.device("meta"):  # the real shapes, no memory
        model = GPT(config)
    built = [(name, tuple(p.shape)) for name, p in model.named_parameters()]
    assert sum(math.prod(shape) for _, shape in built) == config.n_params
    assert built == param_shapes(config)


def build(variant: str, seed: int, **overrides) -> tuple[GPT, torch.Tensor]:
    """The model of `variant` at `seed`, and torch's CPU random state after building it."""
    torch.manual_seed(seed)
    model = GPT(GPTConfig(variant=variant, **{**SHAPE, **overrides}))
    return model, torch.get_rng_state()


@pytest.mark.parametrize("overrides", [{}, {"n_layer": 3, "n_head": 3, "d_model": 24}])
@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("variant", ABLATIONS)
def test_the_initial_forward_pass_is_review_s_bit_for_bit(variant, seed, overrides):
    review, review_rng = build(REFERENCE, seed, **overrides)
    model, rng = build(variant, seed, **overrides)
    assert torch.equal(rng, review_rng)  # the stream consumed as Review's init consumes it
    ours, theirs = model.state_dict(), review.state_dict()
    shared = [name for name in theirs if ".res_" not in name]  # every weight but the residual rules'
    assert shared and all(torch.equal(ours[name], theirs[name]) for name in shared)
    own = [name for name in ours if ".res_" in name]
    assert all(not ours[name].any() for name in own)  # b = 0 and W = 0: r = 0.5 exactly
    assert len(own) == {"review_half": 0, "gate_bias": 1}.get(variant, 2) * 2 * model.config.n_layer
    idx = torch.randint(0, 61, (3, 16), generator=torch.Generator().manual_seed(seed + 1))
    with torch.no_grad():
        (logits, loss), (expected, expected_loss) = model(idx, idx), review(idx, idx)
    assert torch.equal(logits, expected) and torch.equal(loss, expected_loss)


def test_each_rule_computes_its_formula():
    """Each rule on h and u with its parameters set away from zero, against its docstring's formula in numpy."""
    from rr_model.ablations import GateBias, ReviewHalf, ReviewState, ReviewUpdate

    d = 6
    g = np.random.default_rng(0)
    h, u = g.normal(size=(2, 5, d)), g.normal(size=(2, 5, d))
    W, b = g.normal(size=(d, d)), g.normal(size=d)

    def sigmoid(x):
        return 1 / (1 + np.exp(-x))

    def rms(x):
        return x / np.sqrt((x**2).mean(-1, keepdims=True) + 1e-5)

    rules = {ReviewHalf: h + 0.5 * u, GateBias: h + sigmoid(b) * u}
    rules |= {ReviewState: h + sigmoid(rms(h) @ W.T + b) * u, ReviewUpdate: h + sigmoid(rms(u) @ W.T + b) * u}
    for rule, expected in rules.items():
        module = rule(d)
        with torch.no_grad():
            if rule is GateBias:
                module.bias.copy_(torch.from_numpy(b))
            elif rule is not ReviewHalf:
                module.gate.weight.copy_(torch.from_numpy(W))
                module.gate.bias.copy_(torch.from_numpy(b))
            got = module(*(torch.from_numpy(x).float() for x in (h, u))).double().numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=rule.__name__)


def read_r(rules: list, model: GPT, x: torch.Tensor) -> list[torch.Tensor]:
    """r of each rule of `rules` in a forward pass of `model` on `x`, from the rule's class method."""
    found = []
    hooks = [m.register_forward_hook(lambda m, a, o: found.append(type(m).r(m, *a))) for m in rules]
    with torch.no_grad():
        model(x)
    for hook in hooks:
        hook.remove()
    return found


def test_the_gate_watch_follows_every_gate_but_the_fixed_half():
    """gate_bias, review_state and review_update have a gate r per sublayer, read as the watch reads it;
    review_half holds r at 0.5 and has none to follow."""
    x = torch.randint(0, 61, (2, 16), generator=torch.Generator().manual_seed(1))
    assert gated(build("review_half", 0)[0]) == []
    for variant in ("gate_bias", "review_state", "review_update"):
        model, _ = build(variant, 0)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if ".res_" in name:
                    p.normal_(0, 0.5, generator=torch.Generator().manual_seed(p.numel()))
        watch = GateWatch(model, "cpu")
        assert watch.sites == [(i, s) for i in range(2) for s in ("attn", "mlp")]
        found = read_r(watch.rules, model, x)
        got = watch.stats(watch.sums.flatten().tolist())
        for reading, r in zip(got, found, strict=True):
            r = r.expand(2, 16, 16).double()
            assert reading["mean"] == pytest.approx(r.mean().item(), rel=1e-6)
            assert reading["std"] == pytest.approx(r.std(unbiased=False).item(), rel=1e-5)
        if variant == "gate_bias":  # r is sigmoid(b) whatever the token
            assert got[0]["mean"] == pytest.approx(
                torch.sigmoid(model.transformer.h[0].res_attn.bias).mean().item()
            )
        watch.close()


@pytest.mark.parametrize("variant", ["gate_bias", "review_update"])
def test_they_train_with_the_trainer_and_log_their_gates(variant, token_cache, tmp_path):
    from rr_core.sweepfile.metrics_log import metrics_path, read_metrics
    from rr_model.config import TrainConfig
    from rr_model.run.trainer import train

    recipe = replace(get_size("tiny").recipe, block_size=32, eval_batches=2)
    cfg = TrainConfig(
        "tiny", variant, data="synthetic", steps=3, log_every=1, recipe=recipe, cache_dir=str(token_cache)
    )
    record = train(cfg, tmp_path / "runs.csv")
    assert (
        record["status"] == "ok"
        and record["result"]["params"] == replace(model_config("tiny", variant, 257), block_size=32).n_params
    )
    logs = [
        r
        for r in read_metrics(metrics_path(tmp_path / "runs.csv", "tiny", variant, 0))
        if r["event"] == "train"
    ]
    assert logs[0]["gates"] == [
        {"layer": i, "sublayer": s, "mean": 0.5, "std": 0.0} for i in range(4) for s in ("attn", "mlp")
    ]
    assert all(g["std"] > 0 for g in logs[-1]["gates"])  # the gates have learned to differ

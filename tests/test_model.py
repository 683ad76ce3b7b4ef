"""The reference GPT: shapes, causality, published init, the neutral gate, training, the optimiser."""

from __future__ import annotations

import math

import pytest
import torch

from rr_model.ladder import RECIPE
from rr_model.model import GPT, RESIDUALS, GPTConfig
from rr_model.variants import NAMES

GATED = ("review_neutral", "highway", "review_convex")


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def small(variant: str, **overrides) -> GPT:
    torch.manual_seed(0)
    shape = {"vocab_size": 61, "block_size": 16, "n_layer": 2, "n_head": 2, "d_model": 16, **overrides}
    return GPT(GPTConfig(variant=variant, **shape))


def tokens(batch: int = 2, length: int = 16, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, 61, (batch, length), generator=torch.Generator().manual_seed(seed))


def test_residual_rules_cover_the_variant_registry():
    assert set(RESIDUALS) == set(NAMES)


@pytest.mark.parametrize("variant", NAMES)
def test_arithmetic_count_equals_the_module(variant):
    for overrides in ({}, {"n_layer": 3, "n_head": 3, "d_model": 24}):
        model = small(variant, **overrides)
        assert sum(p.numel() for p in model.parameters()) == model.config.n_params
    assert model.lm_head.weight is model.transformer.wte.weight


@pytest.mark.parametrize("variant", NAMES)
def test_shapes_and_initial_loss(variant):
    model = small(variant)
    idx = tokens()
    logits, loss = model(idx, tokens(seed=2))
    assert logits.shape == (2, 16, 61)
    assert loss.shape == ()
    assert loss.item() == pytest.approx(math.log(61), abs=0.05)  # near-uniform predictions at init
    logits_only, no_loss = model(idx[:, :5])
    assert logits_only.shape == (2, 5, 61) and no_loss is None


@pytest.mark.parametrize("variant", NAMES)
def test_a_future_token_never_changes_an_earlier_logit(variant):
    model = small(variant)
    for p in model.parameters():  # move off the init so every gate and scale is active
        p.data.add_(0.05 * torch.randn_like(p))
    idx = tokens()
    changed = idx.clone()
    changed[:, 9] = (changed[:, 9] + 1) % 61
    before, _ = model(idx)
    after, _ = model(changed)
    torch.testing.assert_close(after[:, :9], before[:, :9], rtol=0, atol=0)
    assert not torch.allclose(after[:, 9:], before[:, 9:])


@pytest.mark.parametrize("variant", ["review_neutral", "review_convex"])
def test_review_gate_is_exactly_one_half_at_init(variant):
    model = small(variant)
    for block in model.transformer.h:
        for rule in (block.res_attn, block.res_mlp):
            assert not rule.gate.weight.any() and not rule.gate.bias.any()
            h, u = torch.randn(2, 16, 16), torch.randn(2, 16, 16)
            assert torch.equal(rule.r(h, u), torch.full_like(h, 0.5))
    for stat in model.gate_stats(tokens()):
        assert (stat["mean"], stat["std"], stat["frac_open"], stat["frac_closed"]) == (0.5, 0.0, 0.0, 0.0)


def test_published_init():
    model = small("layerscale", n_layer=4, d_model=64)
    block = model.transformer.h[0]
    assert block.mlp.c_fc.weight.std().item() == pytest.approx(0.02, rel=0.05)
    assert model.transformer.wpe.weight.std().item() == pytest.approx(0.02, rel=0.05)
    residual_std = 0.02 / math.sqrt(2 * 4)  # GPT-2 residual scaling
    assert block.mlp.c_proj.weight.std().item() == pytest.approx(residual_std, rel=0.05)
    assert block.attn.c_proj.weight.std().item() == pytest.approx(residual_std, rel=0.05)
    biases = [p for name, p in model.named_parameters() if name.endswith("bias")]
    assert len(biases) == 4 * 4 and not any(b.any() for b in biases)
    assert torch.equal(block.ln_1.weight, torch.ones(64)) and torch.equal(
        model.transformer.ln_f.weight, torch.ones(64)
    )
    assert torch.equal(block.res_mlp.scale, torch.full((64,), 0.1))
    assert small("rezero").transformer.h[1].res_attn.alpha.item() == 0.0
    highway = small("highway", d_model=64).transformer.h[0].res_attn.gate
    assert highway.weight.std().item() == pytest.approx(0.02, rel=0.05) and not highway.bias.any()


@pytest.mark.parametrize("variant", NAMES)
def test_each_variant_learns_a_fixed_batch(variant):
    model = small(variant)
    optimizer = model.configure_optimizers(lr=1e-2)
    idx = tokens(4, 17)
    losses = []
    for _ in range(25):
        _, loss = model(idx[:, :-1], idx[:, 1:])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses


def test_optimizer_decays_matrices_only():
    model = small("review_neutral")
    optimizer = model.configure_optimizers()
    decay, no_decay = optimizer.param_groups
    assert decay["weight_decay"] == RECIPE.weight_decay and no_decay["weight_decay"] == 0.0
    assert all(p.dim() >= 2 for p in decay["params"]) and all(p.dim() < 2 for p in no_decay["params"])
    assert sum(p.numel() for g in (decay, no_decay) for p in g["params"]) == model.config.n_params
    assert decay["lr"] == RECIPE.lr and decay["betas"] == (RECIPE.beta1, RECIPE.beta2)
    assert not optimizer.defaults["fused"]  # fused only on CUDA


@pytest.mark.parametrize("variant", NAMES)
def test_gate_stats_one_record_per_gated_sublayer(variant):
    model = small(variant, n_layer=3)
    for p in model.parameters():
        p.data.add_(torch.randn_like(p))
    stats = model.gate_stats(tokens())
    if variant not in GATED:
        assert stats == []
        return
    assert [(s["layer"], s["sublayer"]) for s in stats] == [(i, n) for i in range(3) for n in ("attn", "mlp")]
    for s in stats:
        assert 0 < s["mean"] < 1 and s["std"] > 0 and 0 <= s["frac_open"] <= 1 and 0 <= s["frac_closed"] <= 1
    assert not model._forward_hooks and not any(m._forward_hooks for m in model.modules())


@pytest.mark.slow
@pytest.mark.parametrize("variant", NAMES)
def test_torch_compile_matches_eager_on_cpu(variant):
    model = small(variant)
    idx = tokens()
    compiled = torch.compile(model)
    logits, loss = compiled(idx, idx)
    loss.backward()
    eager_logits, eager_loss = model(idx, idx)
    torch.testing.assert_close(logits, eager_logits, rtol=1e-4, atol=1e-5)
    assert model.transformer.wte.weight.grad is not None

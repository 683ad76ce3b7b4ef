"""The stream seam and the field's rivals on it: hyper-connections, DenseFormer, Attention Residuals.

Exact counts by arithmetic against a build, the papers' init identities (bit for bit where the paper's
init is the standard residual), the seam's refusal of a rule that asks for more than it gives, training,
and two gloo processes under FSDP against one.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

from rr_core.errors import InputError
from rr_core.ladder import get_size
from rr_core.shapes import GPTConfig, model_config, param_shapes
from rr_core.variants import VARIANTS, register_residual
from rr_model.config import TrainConfig
from rr_model.model import GPT
from rr_model.run.gate_watch import gated
from rr_model.run.trainer import train
from rr_model.streams import AttnRes

STREAMS = ("hyper_connections", "hyper_connections_static", "denseformer", "attn_res", "attn_res_block")
IDENTICAL_AT_INIT = ("hyper_connections", "hyper_connections_static", "denseformer")


def shape(variant: str, n_layer: int = 3, d_model: int = 16) -> GPTConfig:
    return GPTConfig(
        vocab_size=97, block_size=16, n_layer=n_layer, n_head=2, d_model=d_model, variant=variant
    )


def built(cfg: GPTConfig, seed: int = 0) -> GPT:
    torch.manual_seed(seed)
    return GPT(cfg)


def by_hand(variant: str, n_layer: int, d: int) -> int:
    """Parameters the rules of `variant` add to a model of n_layer blocks at width d, from the papers."""
    sites, n = 2 * n_layer, 4
    static = n * (n + 1) + n  # [A_m A_r] and B
    return {
        "hyper_connections_static": sites * static,
        "hyper_connections": sites * (static + (n + 1) * d + d + 2 + d),  # dynamic matrices, 2 scales, norm
        "denseformer": n_layer * (n_layer + 3) // 2,  # block i averages i + 2 outputs
        "attn_res": (sites + 1) * d,  # a pseudo-query per sublayer and one for the final norm's input
        "attn_res_block": (sites + 1) * d,
    }[variant]


@pytest.mark.parametrize("variant", STREAMS)
@pytest.mark.parametrize(("n_layer", "d_model"), [(1, 8), (3, 16), (5, 24)])
def test_exact_count_by_arithmetic_equals_the_build_and_the_papers(variant, n_layer, d_model):
    cfg = shape(variant, n_layer, d_model)
    model = built(cfg)
    standard = shape("standard", n_layer, d_model).n_params
    assert cfg.n_params == sum(p.numel() for p in model.parameters())
    assert cfg.n_params - standard == by_hand(variant, n_layer, d_model)
    assert param_shapes(cfg) == [(n, tuple(p.shape)) for n, p in model.named_parameters()]


@pytest.mark.parametrize("variant", STREAMS)
def test_matched_up_to_review_as_the_baselines_are(variant):
    cfg, review = model_config("60M", variant), model_config("60M", "review_neutral")
    narrower = replace(cfg, d_model=cfg.d_model - cfg.n_head)
    assert narrower.n_params < review.n_params <= cfg.n_params


@pytest.mark.parametrize("variant", IDENTICAL_AT_INIT)
def test_static_and_dynamic_hyper_connections_and_denseformer_start_as_the_standard_residual_bitwise(variant):
    idx = torch.randint(0, 97, (2, 16), generator=torch.Generator().manual_seed(1))
    standard = built(shape("standard"), seed=3)
    rival = built(shape(variant), seed=3)
    same = {n: p for n, p in standard.named_parameters()}
    for name, p in rival.named_parameters():  # the same draws: every shared weight equal
        if name in same:
            assert torch.equal(p, same[name]), name
    assert torch.equal(rival(idx)[0], standard(idx)[0])


def test_the_hyper_connections_init_is_the_papers():
    model = built(shape("hyper_connections", n_layer=3))
    rules = [r for b in model.transformer.h for r in (b.res_attn, b.res_mlp)]
    for site, rule in enumerate(rules):
        expected = torch.zeros(4, 5)
        expected[site % 4, 0] = 1.0  # A_m = e_(site mod n)
        expected[:, 1:] = torch.eye(4)  # A_r = I
        assert torch.equal(rule.static_alpha, expected)
        assert torch.equal(rule.static_beta, torch.ones(4))
        assert not rule.dynamic_alpha.any() and not rule.dynamic_beta.any()
        assert rule.scale_alpha.item() == pytest.approx(0.01) and rule.scale_beta.item() == pytest.approx(
            0.01
        )


def test_attn_res_starts_reading_the_mean_of_the_earlier_outputs():
    sources = tuple(
        torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(i)) * (i + 1) for i in range(4)
    )
    mean = torch.stack(sources).mean(0)
    torch.testing.assert_close(AttnRes.attend(torch.zeros(8), sources), mean, rtol=1e-6, atol=1e-6)
    # a query along one source's direction weights it by softmax of q . rms(v_i), computed by hand
    q = torch.randn(8)
    logits = torch.stack([(v / v.pow(2).mean(-1, keepdim=True).add(1e-5).sqrt()) @ q for v in sources], -1)
    w = torch.softmax(logits, -1)
    torch.testing.assert_close(
        AttnRes.attend(q, sources), sum(w[..., i : i + 1] * v for i, v in enumerate(sources))
    )


@pytest.mark.parametrize(("variant", "sources"), [("attn_res", 1 + 16 + 1), ("attn_res_block", 1 + 8 + 1)])
def test_attn_res_keeps_every_output_and_the_block_form_one_per_block(variant, sources):
    model = built(shape(variant, n_layer=8))  # 16 sublayers: 8 blocks of 2
    kept = []
    model.transformer.h[-1].register_forward_hook(lambda m, args, out: kept.append(len(out)))
    model(torch.zeros(1, 4, dtype=torch.long))
    assert kept == [sources]  # the embeddings, the sources, the final norm's input


def test_denseformer_keeps_the_embeddings_and_every_block_output():
    model = built(shape("denseformer", n_layer=3))
    kept = []
    model.transformer.h[-1].register_forward_hook(lambda m, args, out: kept.append(len(out)))
    model(torch.zeros(1, 4, dtype=torch.long))
    assert kept == [1 + 3 + 1]  # B_0..B_3 and the stream the final norm reads


@pytest.mark.parametrize("variant", STREAMS)
def test_no_gate_to_watch_and_a_few_steps_lower_the_loss(variant):
    cfg = shape(variant)
    model = built(cfg)
    assert gated(model) == []
    opt = model.configure_optimizers(lr=3e-3)
    idx = torch.randint(0, 97, (4, 16), generator=torch.Generator().manual_seed(0))
    losses = []
    for _ in range(8):
        _, loss = model(idx[:, :-1], idx[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 0.1
    assert all(p.grad is not None for p in model.parameters())  # every stream parameter is trained


@pytest.mark.parametrize("variant", ["denseformer", "attn_res"])
def test_the_states_of_several_outputs_trace_in_one_graph_and_one_step_equals_eager(variant):
    """DenseFormer's list and Attention Residuals' tuple of kept outputs pass through the stream seam under
    torch.compile without a graph break (fullgraph=True refuses one), and one optimiser step of the traced
    model is bit for bit the eager step. Dynamo's own backend ("eager"): the tracing is what this checks, in a
    second or two; tests/test_model.py's slow torch.compile test runs inductor's code on every variant."""
    compiled, eager = built(shape(variant)), built(shape(variant))
    traced = torch.compile(compiled, fullgraph=True, backend="eager")
    idx = torch.randint(0, 97, (2, 16), generator=torch.Generator().manual_seed(0))
    for model, run in ((compiled, traced), (eager, eager)):
        opt = model.configure_optimizers(lr=3e-3)
        _, loss = run(idx[:, :-1], idx[:, 1:])
        loss.backward()
        opt.step()
    for a, b in zip(compiled.parameters(), eager.parameters(), strict=True):
        assert torch.equal(a, b)


class AsksForHeads(nn.Module):
    def __init__(self, d_model: int, n_head: int):
        super().__init__()

    def forward(self, h, u):
        return h + u


class AsksForTheEmbeddings(nn.Module):
    def __init__(self, d_model: int):
        super().__init__()

    def forward(self, h, u, x0):
        return h + u + x0


@pytest.mark.parametrize(
    ("rule", "what"),
    [(AsksForHeads, "its constructor asks for n_head"), (AsksForTheEmbeddings, "its forward takes 3 inputs")],
)
def test_a_rule_that_needs_an_input_the_seam_does_not_give_is_refused_when_it_registers(rule, what):
    with pytest.raises(InputError, match=what) as refused:
        register_residual("needy", rule)
    assert "needy" not in VARIANTS
    assert "\n" not in str(refused.value)


def test_a_plugin_rule_on_several_streams_registers_through_the_same_call():
    class TwoStreams(nn.Module):
        """Two streams: the sublayer reads their sum, the update goes to the first."""

        def __init__(self, d_model: int, site: int):
            super().__init__()
            self.site = site

        def enter(self, x):
            return (x, torch.zeros_like(x))

        def read(self, state):
            return state[0] + state[1]

        def forward(self, state, u):
            return (state[0] + u, state[1]) if self.site % 2 else (state[0], state[1] + u)

        def leave(self, state):
            return state[0] + state[1]

    register_residual("two_streams_test", TwoStreams, params=lambda d: [])
    try:
        cfg = shape("two_streams_test")
        # a sum of two streams written alternately is the standard stream, up to rounding
        torch.testing.assert_close(
            built(cfg, 5)(torch.ones(1, 4, dtype=torch.long))[0],
            built(shape("standard"), 5)(torch.ones(1, 4, dtype=torch.long))[0],
        )
    finally:
        del VARIANTS["two_streams_test"]


# ----------------------------------------------------------------------------------- training, sharded

RECIPE = replace(get_size("tiny").recipe, block_size=64, eval_batches=4)
RUN = {"size": "tiny", "data": "synthetic", "steps": 20, "log_every": 1, "recipe": RECIPE}
SHARDED = {**RUN, "shard": "fsdp", "activation_checkpointing": "every:2"}
SHARDED_VARIANTS = ("hyper_connections", "denseformer", "attn_res")


def _two_processes(rank: int, folder: Path) -> None:
    torch.set_num_threads(1)
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2")
    dist.init_process_group("gloo", init_method=f"file://{folder / 'store'}", rank=rank, world_size=2)
    found = {v: train(TrainConfig(**SHARDED, variant=v), folder / f"{v}.csv") for v in SHARDED_VARIANTS}
    (folder / f"rank{rank}.json").write_text(json.dumps(found, default=str))


@pytest.mark.slow
def test_two_sharded_processes_train_each_rival_as_one_process(offline, tmp_path):
    one = {v: train(TrainConfig(**RUN, variant=v), tmp_path / f"one-{v}.csv") for v in SHARDED_VARIANTS}
    (tmp_path / "two").mkdir()
    mp.spawn(_two_processes, args=(tmp_path / "two",), nprocs=2)
    two = json.loads((tmp_path / "two" / "rank0.json").read_text())
    for v in SHARDED_VARIANTS:
        assert len(one[v]["loss_curve"]) == 20
        for (_, x), (_, y) in zip(two[v]["loss_curve"], one[v]["loss_curve"], strict=True):
            assert x == pytest.approx(y, abs=1e-5)
        assert two[v]["result"]["val_loss"] == pytest.approx(one[v]["result"]["val_loss"], abs=1e-5)


def test_the_documented_two_stream_plugin_registers_and_trains():
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "docs" / "extending" / "twostreams.py"
    spec = importlib.util.spec_from_file_location("twostreams_doc", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        model = built(shape("twostreams"))
        _, loss = model(torch.zeros(2, 8, dtype=torch.long), torch.ones(2, 8, dtype=torch.long))
        loss.backward()
        assert torch.isfinite(loss) and model.transformer.wte.weight.grad is not None
    finally:
        VARIANTS.pop("twostreams", None)

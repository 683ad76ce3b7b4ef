"""The gates watched while a run trains (`rr_model.run.gate_watch`): the metrics log's r per layer and sublayer is
a direct reading of the model at that step (Review's exactly 0.5, spread 0, at the first), the trained numbers
are the same bits as unwatched, a rule without a gate logs nothing more, and `rr plot gates` draws the logs.

The runs here use tiny's shape with a 64-token context and 4 validation batches, 3 steps logged at each: a
few seconds each, shared by the module's tests.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace

import numpy as np
import pytest
import torch
from conftest import rr

from rr_analysis.figures.curves import gates_figure
from rr_core.errors import InputError
from rr_core.ladder import get_size
from rr_core.shapes import model_config
from rr_core.sweepfile.metrics_log import GATE_COLUMNS, load_gates, metrics_path, read_metrics
from rr_model.config import TrainConfig
from rr_model.data.token_cache import load_tokens
from rr_model.data.windows import sample_batch
from rr_model.model import GPT
from rr_model.run import gate_watch
from rr_model.run.gate_watch import GateWatch, gated
from rr_model.run.step import train_step
from rr_model.run.trainer import train

RECIPE = replace(get_size("tiny").recipe, block_size=64, eval_batches=4)
RUN = {"size": "tiny", "data": "synthetic", "steps": 3, "log_every": 1, "recipe": RECIPE}
SITES = [(layer, sublayer) for layer in range(4) for sublayer in ("attn", "mlp")]  # tiny: 4 blocks


def direct(model: GPT, x: torch.Tensor) -> list[tuple[float, float]]:
    """(mean, population std) of each gated sublayer's r on `x`, computed in float64 with numpy from r itself
    (the rule's class method, under forward hooks): what the log should hold for a step on `x`."""
    found = []

    def read(rule, args, output):
        r = type(rule).r(rule, *args).detach().double().numpy()
        found.append((float(r.mean()), float(r.std())))

    hooks = [rule.register_forward_hook(read) for _, _, rule in gated(model)]
    with torch.no_grad():
        model(x)
    for hook in hooks:
        hook.remove()
    return found


def readings(records: list[dict]) -> list[tuple[float, float]]:
    return [(g["mean"], g["std"]) for g in records]


@pytest.mark.parametrize(("variant", "recompute"), [("review_neutral", 0), ("highway", 1)])
def test_watched_r_is_a_direct_reading_and_the_steps_are_the_same_bits(variant, recompute):
    losses = {}
    for watched in (False, True):
        torch.manual_seed(0)
        model = GPT(model_config("tiny", variant, 257))
        model.checkpoint_activations(
            recompute
        )  # 1: every block recomputed in the backward pass, counted twice
        optimizer = model.configure_optimizers()
        watch = GateWatch(model, "cpu") if watched else None
        batches, losses[watched] = torch.Generator().manual_seed(1), []
        for step in range(3):
            x = torch.randint(0, 257, (4, 32), generator=batches)
            if watch is not None:
                expected = direct(model, x)  # the weights the step's forward pass sees
                watch.sums.zero_()  # the direct pass went through the watch too
            loss, _ = train_step(model, optimizer, x, x, 1, 1.0, torch.autocast("cpu", enabled=False))
            losses[watched].append(loss.item())
            if watch is not None:
                got = watch.stats(watch.sums.flatten().tolist())
                assert [(g["layer"], g["sublayer"]) for g in got] == SITES
                assert readings(got) == [pytest.approx(e, rel=1e-5, abs=1e-7) for e in expected]
                if variant == "review_neutral" and step == 0:
                    assert readings(got) == [(0.5, 0.0)] * 8  # W = 0: r = sigmoid(0) = 0.5 everywhere
    assert losses[True] == losses[False]  # bitwise
    watch.close()
    assert all("r" not in vars(rule) for _, _, rule in gated(model))  # the class's r again


class InlineGate(torch.nn.Module):
    """A plugin-style rule whose forward computes its gate without calling its own r."""

    def __init__(self, d_model: int):
        super().__init__()
        self.gate = torch.nn.Linear(d_model, d_model)

    def r(self, h, u):
        return torch.sigmoid(self.gate(h))

    def forward(self, h, u):
        return h + torch.sigmoid(self.gate(h)) * u


class ScalarNamedR(torch.nn.Module):
    """h + r u with a learned scalar named r: no gate, though the rule has an attribute r."""

    def __init__(self, d_model: int):
        super().__init__()
        self.r = torch.nn.Parameter(torch.ones(()))

    def forward(self, h, u):
        return h + self.r * u


def test_a_rule_that_never_calls_its_r_reads_none_and_a_parameter_named_r_is_no_gate():
    torch.manual_seed(0)
    model = GPT(model_config("tiny", "review_neutral", 257))
    model.transformer.h[0].res_attn = InlineGate(128)
    model.transformer.h[1].res_mlp = ScalarNamedR(128)
    watch = GateWatch(model, "cpu")
    assert [(layer, sublayer) for layer, sublayer in watch.sites] == [s for s in SITES if s != (1, "mlp")]
    model(torch.randint(0, 257, (2, 16)))
    got = watch.stats(watch.sums.flatten().tolist())
    assert (got[0]["mean"], got[0]["std"]) == (None, None)  # (0, attn): never counted
    assert readings(got[1:]) == [(0.5, 0.0)] * 6  # Review's own, still at W = 0
    watch.close()
    assert isinstance(model.transformer.h[1].res_mlp.r, torch.nn.Parameter)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, token_cache) -> dict:
    """Review and Highway trained watched into one dataset, and Highway again with the watch off (no rule
    found gated) into another; each run's provenance record."""
    folder = tmp_path_factory.mktemp("gates")
    found = {}
    for variant in ("review_neutral", "highway"):
        found[variant] = train(
            TrainConfig(**RUN, variant=variant, cache_dir=str(token_cache)), folder / "runs.csv"
        )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gate_watch, "gated", lambda model: [])
        cfg = TrainConfig(**RUN, variant="highway", cache_dir=str(token_cache))
        found["unwatched"] = train(cfg, folder / "unwatched.csv")
    return {**found, "out": folder / "runs.csv", "unwatched_out": folder / "unwatched.csv"}


def train_records(out, variant: str) -> list[dict]:
    return [r for r in read_metrics(metrics_path(out, "tiny", variant, 0)) if r["event"] == "train"]


def test_the_log_carries_r_per_layer_and_sublayer_at_every_log_point(runs, token_cache):
    review = train_records(runs["out"], "review_neutral")
    assert [r["step"] for r in review] == [1, 2, 3]
    assert review[0]["gates"] == [{"layer": i, "sublayer": s, "mean": 0.5, "std": 0.0} for i, s in SITES]
    assert all(g["std"] > 0 for g in review[-1]["gates"])  # the gates have learned to differ

    # Highway's first reading: the run's initial weights on its first batch, both drawn as the trainer does
    cfg = TrainConfig(**RUN, variant="highway", cache_dir=str(token_cache))
    tokens = load_tokens(
        cfg.data,
        n_text=RECIPE.n_text,
        cache_dir=cfg.cache_dir,
        tokenizer=cfg.tokenizer,
        text_field=cfg.text_field,
        val_frac=RECIPE.val_frac,
    )
    torch.manual_seed(0)
    model = GPT(replace(model_config("tiny", "highway", tokens.vocab_size), block_size=RECIPE.block_size))
    x, _ = sample_batch(tokens.train, np.random.RandomState(0), RECIPE.batch_size, RECIPE.block_size)
    first = train_records(runs["out"], "highway")[0]["gates"]
    assert readings(first) == [pytest.approx(e, rel=1e-5) for e in direct(model, torch.from_numpy(x))]


def test_watching_leaves_the_run_bitwise_and_an_ungated_run_logs_nothing_more(runs, tiny_run):
    watched, unwatched = runs["highway"], runs["unwatched"]
    assert watched["loss_curve"] == unwatched["loss_curve"]
    assert watched["result"]["val_loss"] == unwatched["result"]["val_loss"]
    assert all("gates" not in r for r in train_records(runs["unwatched_out"], "highway"))
    assert all("gates" not in r for r in train_records(tiny_run["out"], "standard"))  # standard: no gate


def test_load_gates_reads_the_logs_and_the_figure_draws_them(runs, tiny_run, tmp_path):
    gates = load_gates([runs["out"]])
    assert list(gates.columns) == list(GATE_COLUMNS) and len(gates) == 2 * 3 * 8
    for variant in ("review_neutral", "highway"):
        logged = train_records(runs["out"], variant)
        rows = gates[gates["variant"] == variant]
        assert rows[["mean", "std"]].values.tolist() == [
            [g["mean"], g["std"]] for r in logged for g in r["gates"]
        ]
    fig = gates_figure(gates)
    lines = {line.get_gid(): line for ax in fig.axes for line in ax.get_lines()}
    assert len(lines) == 2 * 8  # a line per run, layer and sublayer
    x, y = lines["r:tiny:highway:0:2:mlp"].get_data()
    one = gates[(gates["variant"] == "highway") & (gates["layer"] == 2) & (gates["sublayer"] == "mlp")]
    assert list(x) == one["step"].tolist() and list(y) == one["mean"].tolist()
    assert [ax.get_title() for ax in fig.axes[:4]] == [
        "tiny Review: attention",
        "tiny Review: MLP",
        "tiny Highway: attention",
        "tiny Highway: MLP",
    ]

    with pytest.raises(InputError, match="no gate readings in .*whole.csv: runs of a variant with a gate"):
        load_gates([tiny_run["out"]])
    out = tmp_path / "gates.png"
    result = rr("plot", "gates", "--data", runs["out"], "--out", out)
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(out) and out.read_bytes()[:4] == b"\x89PNG"
    ungated = rr("plot", "gates", "--data", tiny_run["out"], "--out", out)
    assert ungated.exit_code == 2 and "rr: error: no gate readings in" in ungated.output


@pytest.mark.slow
def test_a_compiled_run_logs_the_same_gates_and_trains_the_same_bits(
    runs, token_cache, tmp_path, monkeypatch
):
    cfg = TrainConfig(**RUN, variant="highway", cache_dir=str(token_cache), compile=True)
    compiled = train(cfg, tmp_path / "compiled.csv")
    monkeypatch.setattr(gate_watch, "gated", lambda model: [])
    plain = train(cfg, tmp_path / "plain.csv")
    assert compiled["loss_curve"] == plain["loss_curve"]  # compiled, watched or not: the same bits
    eager = [readings(r["gates"]) for r in train_records(runs["out"], "highway")]
    got = [readings(r["gates"]) for r in train_records(tmp_path / "compiled.csv", "highway")]
    assert got == [[pytest.approx(g, rel=1e-4) for g in step] for step in eager]


def _two_sharded(rank: int, folder, cache: str) -> None:
    """One of two gloo processes training the sharded Highway run."""
    import torch.distributed as dist

    torch.set_num_threads(1)
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2")
    dist.init_process_group("gloo", init_method=f"file://{folder / 'store'}", rank=rank, world_size=2)
    record = train(
        TrainConfig(**RUN, variant="highway", cache_dir=cache, shard="fsdp"), folder / "sharded.csv"
    )
    (folder / f"rank{rank}.json").write_text(json.dumps(record["loss_curve"]))


@pytest.mark.slow
def test_two_sharded_processes_log_the_gates_of_the_whole_batch(runs, token_cache, tmp_path):
    import torch.multiprocessing as mp

    mp.spawn(_two_sharded, args=(tmp_path, str(token_cache)), nprocs=2)
    one = [readings(r["gates"]) for r in train_records(runs["out"], "highway")]
    two = [readings(r["gates"]) for r in train_records(tmp_path / "sharded.csv", "highway")]
    # each process sees half the batch; their sums, all-reduced with the loss, pool to the whole batch's
    assert two == [[pytest.approx(g, rel=1e-4) for g in step] for step in one]

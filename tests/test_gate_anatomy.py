"""Gate anatomy (`rr gates --anatomy`, `rr_model.uses.anatomy`): mean r, token_share, the split of Review's gate
logit and the freeze test, against numpy on a model whose gates are set by hand; exact zeros where r does not
depend on the token; a run's held-out text in bytes and through a GPT-2-style tokenizer; every format; the plot.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import rr

from cli.choices import Format
from rr_core.ladder import RECIPE
from rr_core.shapes import GPTConfig
from rr_model.checkpoint import state as checkpoint
from rr_model.model import GPT
from rr_model.run.gate_watch import gated
from rr_model.uses.anatomy import ANATOMY_COLUMNS, Anatomy, anatomy, gate_anatomy
from rr_model.uses.inference import heldout_windows

SHAPE = {"vocab_size": 257, "block_size": 16, "n_layer": 2, "n_head": 2, "d_model": 16}


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def by_hand(variant: str = "review_neutral", **shape) -> GPT:
    """A model of `variant` whose weights are GPT-2's draws and whose gates are set by hand, sublayer by
    sublayer (Review): W_u = 0 (the logit reads the stream alone), W_h = 0 (the update alone), W = 0 with a
    bias (r fixed per channel), and both halves of W drawn. A gate bias: b drawn."""
    torch.manual_seed(0)
    model = GPT(GPTConfig(variant=variant, **{**SHAPE, **shape}))
    g = torch.Generator().manual_seed(1)
    rules = [rule for _, _, rule in gated(model)]
    with torch.no_grad():
        if variant == "gate_bias":
            for rule in rules:
                rule.bias.copy_(torch.randn(rule.bias.shape, generator=g))
            return model
        d = model.config.d_model
        for i, rule in enumerate(rules):
            w = torch.randn(d, 2 * d, generator=g) * 0.6
            w[:, d:] *= i % 4 != 0  # 0: no update half
            w[:, :d] *= i % 4 != 1  # 1: no state half
            w *= i % 4 != 2  # 2: no W at all, a bias alone
            rule.gate.weight.copy_(w)
            rule.gate.bias.copy_(torch.randn(d, generator=g))
    return model


def token_windows(n: int = 6, block: int = 16, seed: int = 2) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 257, size=(n, block + 1)).astype(np.int64)


class Fixed(torch.nn.Module):
    """h + m u, m fixed per channel: a gate frozen at `m`, written apart from the code under test."""

    def __init__(self, m: np.ndarray):
        super().__init__()
        self.m = torch.from_numpy(m).float()

    def forward(self, h, u):
        return h + self.m * u


def loss_of(model: GPT, windows: np.ndarray) -> float:
    w = torch.from_numpy(windows)
    with torch.no_grad():
        logits, _ = model(w[:, :-1])
    return F.cross_entropy(logits.flatten(0, 1).double(), w[:, 1:].flatten()).item()


def numpy_anatomy(model: GPT, windows: np.ndarray) -> list[dict]:
    """Every column of the anatomy, in numpy float64 from each gated rule's inputs h and u (captured by hooks)
    and its weights: r, its per-channel means, the variances by their definitions (np.var), and the loss
    with the rule swapped for `Fixed` at the per-channel mean."""
    inputs = {}
    sites = gated(model)
    hooks = [
        rule.register_forward_pre_hook(
            lambda m, args: inputs.__setitem__(m, [a.double().numpy() for a in args])
        )
        for _, _, rule in sites
    ]
    base = loss_of(model, windows)
    for hook in hooks:
        hook.remove()

    def rms(x):
        return x / np.sqrt((x**2).mean(-1, keepdims=True) + 1e-5)

    rows = []
    for layer, sublayer, rule in sites:
        h, u = (x.reshape(-1, x.shape[-1]) for x in inputs[rule])
        d = h.shape[1]
        row = {"layer": layer, "sublayer": sublayer}
        if hasattr(rule, "gate"):
            w, b = rule.gate.weight.detach().double().numpy(), rule.gate.bias.detach().double().numpy()
            a, e = rms(h) @ w[:, :d].T, rms(u) @ w[:, d:].T
            r = 1 / (1 + np.exp(-(a + e + b)))
            cov = ((a - a.mean(0)) * (e - e.mean(0))).mean(0)
            state, update, cov2 = a.var(0).mean(), e.var(0).mean(), 2 * cov.mean()
            total = state + update + cov2
            row["logit_var"] = total
            if total > 0:  # else nothing to split (a bias alone)
                row |= {
                    "state_share": state / total,
                    "update_share": update / total,
                    "cov_share": cov2 / total,
                }
        else:  # the gate bias
            r = np.broadcast_to(1 / (1 + np.exp(-rule.bias.detach().double().numpy())), h.shape)
        m = r.mean(0)
        row |= {"mean": r.mean(), "std": r.std(), "token_share": r.var(0).mean() / r.var()}
        block = model.transformer.h[layer]
        name = "res_attn" if sublayer == "attn" else "res_mlp"
        setattr(block, name, Fixed(m))
        row["freeze_delta"] = loss_of(model, windows) - base
        setattr(block, name, rule)
        rows.append(row)
    return rows


def test_each_column_is_numpy_s_on_gates_set_by_hand():
    model, windows = by_hand(), token_windows()
    table, loss = gate_anatomy(model, windows, batch=4)
    assert list(table.columns) == list(ANATOMY_COLUMNS) and len(table) == 4
    assert loss == pytest.approx(loss_of(model, windows), abs=1e-6)
    got = table.to_dict("records")
    for row, expected in zip(got, numpy_anatomy(model, windows), strict=True):
        where = (row["layer"], row["sublayer"])
        for key, value in expected.items():
            if key in ("layer", "sublayer"):
                assert row[key] == value
            elif key == "freeze_delta":
                assert row[key] == pytest.approx(value, abs=2e-6), (where, key)
            else:
                assert row[key] == pytest.approx(value, rel=1e-5, abs=1e-9), (where, key)
    no_update, no_state, bias_only, both = got
    assert (no_update["state_share"], no_update["update_share"], no_update["cov_share"]) == (1.0, 0.0, 0.0)
    assert (no_state["state_share"], no_state["update_share"], no_state["cov_share"]) == (0.0, 1.0, 0.0)
    assert bias_only["token_share"] == 0.0 and bias_only["freeze_delta"] == 0.0  # exactly: r is its own mean
    assert bias_only["logit_var"] == 0.0 and math.isnan(bias_only["state_share"])  # nothing to split
    assert 0 < both["token_share"] < 1 and both["freeze_delta"] != 0.0
    assert both["state_share"] + both["update_share"] + both["cov_share"] == pytest.approx(1.0)


def test_the_gate_bias_depends_on_no_token_exactly():
    model, windows = by_hand("gate_bias"), token_windows()
    table, loss = gate_anatomy(model, windows, batch=4)
    assert (table["token_share"] == 0.0).all() and (table["freeze_delta"] == 0.0).all()
    assert table[["logit_var", "state_share", "update_share", "cov_share"]].isna().all().all()
    for row, (_, _, rule) in zip(table.itertuples(), gated(model), strict=True):
        r = torch.sigmoid(rule.bias.detach()).double().numpy()
        assert row.mean == pytest.approx(r.mean(), rel=1e-12) and row.std == pytest.approx(r.std(), rel=1e-9)
    assert loss == pytest.approx(loss_of(model, windows), abs=1e-6)


def test_an_untrained_review_has_no_spread_to_share_and_the_batch_is_memory_only():
    torch.manual_seed(0)
    fresh = GPT(GPTConfig(**SHAPE))
    table, _ = gate_anatomy(fresh, token_windows())
    assert (table["mean"] == 0.5).all() and (table["std"] == 0.0).all() and table["token_share"].isna().all()
    assert (table["freeze_delta"] == 0.0).all()
    model, windows = by_hand(), token_windows()
    one, two = gate_anatomy(model, windows, batch=1)[0], gate_anatomy(model, windows, batch=6)[0]
    for column in ANATOMY_COLUMNS[2:]:
        np.testing.assert_allclose(one[column], two[column], rtol=1e-5, atol=1e-7, err_msg=column)
    assert all("r" not in vars(rule) for _, _, rule in gated(model))  # the class's r again


# -------------------------------------------------------------------------- a run's held-out text, the CLI


def final_weights(folder, model: GPT, data: str, tokenizer: str, sha256: str | None = None):
    """`model` saved as a finished run's final weights, trained (it says) on `data` with `tokenizer`."""
    config = {
        "size": "tiny",
        "variant": model.config.variant,
        "seed": 0,
        "data": data,
        "tokenizer": tokenizer,
        "recipe": {"n_text": RECIPE.n_text, "val_frac": RECIPE.val_frac},
    }
    path = checkpoint.final_path(folder, "tiny", model.config.variant, 0)
    shape = {
        k: getattr(model.config, k) for k in ("vocab_size", "block_size", "n_layer", "n_head", "d_model")
    }
    final = checkpoint.Final(
        step=1,
        config=config,
        model=model.state_dict(),
        model_config={**shape, "variant": model.config.variant},
        data={"source": data, "tokenizer": tokenizer, "sha256": sha256},
    )
    checkpoint.save(path, final)
    return path


def test_a_byte_run_is_read_on_its_corpus_s_held_out_windows_in_every_format(offline, tmp_path):
    from rr_model.data.token_cache import load_tokens

    model = by_hand()
    path = final_weights(tmp_path / "run.csv", model, "synthetic", "bytes")
    val = load_tokens("synthetic", tokenizer="bytes", cache_dir=offline).val
    windows = heldout_windows(val, 16, 5, 3)
    expected, loss = gate_anatomy(model, windows)
    said = rr("gates", "--checkpoint", path, "--anatomy", "--windows", 5, "--seed", 3, "--format", "json")
    records = json.loads(said.output)
    # issue 46.3: `rr gates --checkpoint RUN [--corpus C]` is the anatomy; --anatomy says so, as before
    plain = rr("gates", "--checkpoint", path, "--windows", 5, "--seed", 3, "--format", "json")
    assert plain.exit_code == 0 and plain.output == said.output
    assert [list(r) for r in records] == [list(ANATOMY_COLUMNS)] * 4
    for got, row in zip(records, expected.to_dict("records"), strict=True):
        assert (got.pop("layer"), got.pop("sublayer")) == (row.pop("layer"), row.pop("sublayer"))
        missing = {key for key, value in row.items() if math.isnan(value)}  # JSON null
        assert {key for key, value in got.items() if value is None} == missing
        assert {k: got[k] for k in row.keys() - missing} == pytest.approx(
            {k: row[k] for k in row.keys() - missing}
        )
    outputs = {fmt: rr("gates", "--checkpoint", path, "--anatomy", "--windows", 5, "--seed", 3,
                       "--format", fmt.value) for fmt in Format}  # fmt: skip
    assert all(result.exit_code == 0 for result in outputs.values())
    title = f"5 held-out windows of synthetic (80 tokens, bytes, seed 3), loss {loss:.4f}"
    assert title in outputs[Format.text].output.splitlines()[0]
    assert outputs[Format.text].output.splitlines()[1].split() == list(ANATOMY_COLUMNS)
    rows = list(csv.DictReader(io.StringIO(outputs[Format.csv].output)))
    assert [r["sublayer"] for r in rows] == ["attn", "mlp"] * 2 and rows[2]["token_share"] == "0.0"
    assert "| layer | sublayer | mean |" in outputs[Format.markdown].output
    assert (
        r"\begin{table}" in outputs[Format.latex].output and "token\\_share" in outputs[Format.latex].output
    )


def test_a_gpt2_vocabulary_run_is_read_with_its_own_tokenizer(gpt2, tmp_path):
    """A run of GPT-2's tokenizer (a local stand-in of 400 ids, as the hub would serve it) on a text corpus:
    its validation part is tokenized by that tokenizer, not as bytes."""
    from rr_model.data import synthetic
    from rr_model.data.token_cache import load_tokens

    corpus = tmp_path / "stories.txt"
    corpus.write_text("\n\n".join(synthetic.stories(300)) + "\n", encoding="utf-8")
    model = by_hand(vocab_size=gpt2.get_vocab_size())
    path = final_weights(tmp_path / "run.csv", model, str(corpus), "gpt2")
    found = anatomy(path, windows=4, cache_dir=tmp_path / "cache")
    val = load_tokens(str(corpus), tokenizer="gpt2", cache_dir=tmp_path / "other").val
    assert val.max() >= 257  # BPE ids: text read as bytes could not give these
    table, loss = gate_anatomy(model, heldout_windows(val, 16, 4, 0))
    assert (found.tokenizer, found.corpus, found.tokens) == ("gpt2", str(corpus), 64)
    assert found.loss == pytest.approx(loss, rel=1e-9)
    np.testing.assert_allclose(found.table["token_share"], table["token_share"], rtol=1e-9)


def test_a_changed_corpus_or_no_gate_is_one_line(offline, tmp_path):
    path = final_weights(tmp_path / "run.csv", by_hand(), "synthetic", "bytes", sha256="0" * 64)
    said = rr("gates", "--checkpoint", path, "--anatomy")
    assert said.exit_code == 2 and "the run's corpus has changed since it trained" in said.output
    assert "Traceback" not in said.output
    assert (
        rr("gates", "--checkpoint", path, "--anatomy", "--corpus", "synthetic", "--windows", 2).exit_code == 0
    )
    torch.manual_seed(0)
    standard = final_weights(
        tmp_path / "std.csv", GPT(GPTConfig(**{**SHAPE, "variant": "standard"})), "synthetic", "bytes"
    )
    said = rr("gates", "--checkpoint", standard, "--anatomy")
    assert said.exit_code == 2 and "standard has no gate to read" in said.output
    assert "--corpus and --windows choose the held-out text of a run's gate anatomy: give --checkpoint" in (
        rr("gates", "--windows", 3).output
    )
    assert "--anatomy reads a run's gate anatomy: give --checkpoint" in rr("gates", "--anatomy").output
    both = rr("gates", "--checkpoint", path, "--stories", "--corpus", "synthetic")
    assert both.exit_code == 2 and "give one or the other" in both.stderr


def test_rr_plot_gates_draws_the_anatomy_by_layer(offline, tmp_path):
    path = final_weights(tmp_path / "run.csv", by_hand(), "synthetic", "bytes")
    out = tmp_path / "anatomy.png"
    result = rr("plot", "gates", "--checkpoint", path, "--windows", 3, "--out", out)
    assert result.exit_code == 0, result.output
    assert out.read_bytes().startswith(b"\x89PNG")
    both = rr("plot", "gates", str(tmp_path), "--checkpoint", path, "--out", out)
    assert both.exit_code == 2 and "either" in both.output


def test_the_figure_draws_each_measure_by_layer_and_the_split_where_there_is_one():
    from rr_analysis.figures.gate_layers import anatomy_figure, anatomy_plot

    table, _ = gate_anatomy(by_hand(), token_windows())
    lines = {line.get_gid(): line for ax in anatomy_figure(table).axes for line in ax.lines if line.get_gid()}
    measures = ("mean", "token_share", "freeze_delta", "state_share", "update_share", "cov_share")
    assert set(lines) == {f"{m}:{s}" for m in measures for s in ("attn", "mlp")}
    for gid, line in lines.items():
        measure, sublayer = gid.split(":")
        part = table[table["sublayer"] == sublayer].sort_values("layer")
        np.testing.assert_array_equal(line.get_xdata(), part["layer"])
        np.testing.assert_array_equal(line.get_ydata(), part[measure], err_msg=gid)
    bias, _ = gate_anatomy(by_hand("gate_bias"), token_windows())
    assert len(anatomy_figure(bias).axes) == 3  # no logit to split
    # `rr plot gates --checkpoint`'s one call: by default titled with the weights and the text read
    found = Anatomy(table, 1.0, "synthetic", "bytes", windows=3, tokens=96, path=Path("out/run.final.pt"))
    default = "Gate anatomy by layer: run.final.pt, 3 held-out windows of synthetic"
    assert anatomy_plot(found).get_suptitle() == default
    assert anatomy_plot(found, title="Mine").get_suptitle() == "Mine"

"""Training budgets in tokens (issue 45.1): steps from tokens or tokens per parameter of the reference, the
FLOPs and passes `rr sizes --budget` and every dry run show, and the tokens a run's row and record keep."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import numpy as np
import pytest
from conftest import rr

from rr_core.budget import budget, budget_table, passes, steps_for
from rr_core.errors import InputError
from rr_core.ladder import RECIPE, get_size, load_ladder
from rr_core.sweepfile import provenance
from rr_core.sweepfile.dataset import load_sweep
from rr_model.config import TrainConfig
from rr_model.data.token_cache import known_train_tokens
from rr_model.run.planning import size_budgets
from rr_model.sweep.child import config_from_json, config_json

pytestmark = pytest.mark.usefixtures("offline")

TINY = get_size("tiny").recipe  # 8 sequences of 256 tokens a step: 2,048 tokens
# The tiny reference (review_neutral) at the byte vocabulary, counted by hand: embeddings (257 + 256) x 128,
# four blocks of 12 d^2 + 11 d plus two Review rules of 2 d^2 + d each, and the final norm's 128.
TINY_BYTES_PARAMS = 513 * 128 + 4 * (12 * 128**2 + 11 * 128 + 2 * (2 * 128**2 + 128)) + 128


def test_the_published_budgets_fall_in_tokens_per_parameter_as_issue_44_states():
    rows = {r["size"]: r for r in budget_table()}
    # issue 44: 131M tokens for 60M-320M, 115M at 590M, 98M at 1B; 2.20, 0.86, 0.41, 0.19, 0.10 per parameter
    expected = {"60M": 2.20, "150M": 0.86, "320M": 0.41, "590M": 0.19, "1B": 0.10}
    published = load_sweep()
    for size, per_param in expected.items():
        row = rows[size]
        assert row["tokens"] == row["steps"] * 64 * 256 == get_size(size).steps * 16_384
        assert row["tokens_per_param"] == pytest.approx(per_param, abs=0.005)
        reference = published[(published["size"] == size) & (published["variant"] == "review_neutral")]
        assert round(row["params"] / 1e6, 2) == reference["params_M"].iloc[0]  # the published count


def test_training_flops_are_six_n_d_plus_the_attention_term():
    b = budget("60M")
    n_prime = 59_470_848 - 256 * 512  # the reference's parameters but its position embedding
    per_token = 6 * n_prime + 12 * 8 * 512 * 256  # L = 8 layers of d = 512, context T = 256
    assert b.flops == pytest.approx(per_token * 131_072_000, rel=1e-12)
    assert b.flops == pytest.approx(4.83e16, rel=1e-3)


@pytest.mark.parametrize(
    ("tokens", "steps"),
    [(2.5 * 2048, 2), (3.5 * 2048, 4), (7.4 * 2048, 7), (7.6 * 2048, 8), (100, 1), (1, 1)],
)
def test_a_token_budget_rounds_to_the_nearest_step_at_least_one(tokens, steps):
    assert steps_for(tokens, TINY) == steps  # halves to even, as Python's round


def test_tokens_per_parameter_count_the_reference_so_every_arm_trains_the_same_steps():
    runs = [
        TrainConfig("tiny", v, data="synthetic", tokens_per_param=2)
        for v in ("review_neutral", "highway", "standard")
    ]
    assert {c.steps for c in runs} == {round(2 * TINY_BYTES_PARAMS / 2048)} == {1095}
    assert runs[0].trained_tokens == 1095 * 2048 and all(c.token_budget for c in runs)
    # the tokens of a budget in tokens, the published tokenizer's count for a GPT-2 corpus
    assert TrainConfig("tiny", tokens=20_480).steps == 10
    assert TrainConfig("60M", tokens_per_param=20).steps == round(20 * 59_470_848 / 16_384)
    # another reference is another count: the standard model at the ladder's width
    standard = TrainConfig("tiny", data="synthetic", tokens_per_param=2, reference="standard")
    assert standard.steps != 1095 and not TrainConfig("tiny").token_budget


def test_two_budgets_that_disagree_are_refused_and_a_config_reads_back():
    with pytest.raises(InputError, match="tokens 5 and tokens_per_param 2: give one of steps, tokens"):
        TrainConfig("tiny", tokens=5, tokens_per_param=2)
    with pytest.raises(InputError, match=re.escape("steps 5 and tokens 20480 (which train 10 steps)")):
        TrainConfig("tiny", steps=5, tokens=20_480)
    for bad in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(InputError, match="tokens_per_param .* must be a finite number > 0"):
            TrainConfig("tiny", tokens_per_param=bad)
    cfg = TrainConfig("tiny", "highway", 1, data="synthetic", tokens_per_param=2)
    assert config_from_json(config_json(cfg)) == cfg  # steps beside the budget they derive from


LADDER = "[1M]\nd_model = 32\nn_layer = 1\nn_head = 2\nseeds = 1\nbatch_size = 2\nblock_size = 32\n"


def test_a_ladder_file_may_state_a_size_s_budget_in_tokens(tmp_path):
    path = tmp_path / "l.toml"
    path.write_text(LADDER + "tokens_per_param = 4\n")
    size = load_ladder(path)["1M"]
    assert size.budget == ("tokens_per_param", 4.0) and size.steps is None
    n = (257 + 32) * 32 + (12 * 32**2 + 11 * 32 + 2 * (2 * 32**2 + 32)) + 32  # bytes, by hand
    cfg = TrainConfig("1M", data="synthetic", ladder=str(path))
    assert cfg.steps == round(4 * n / 64) and cfg.token_budget
    path.write_text(LADDER + "tokens = 640\n")
    assert TrainConfig("1M", ladder=str(path)).steps == 10
    for text, message in (
        (LADDER + "tokens = 640\nsteps = 3\n", "steps and tokens: give one budget, steps or tokens or "),
        (LADDER + "tokens_per_param = nan\n", "tokens_per_param = nan must be a finite number > 0"),
        (LADDER + "tokens = 1.5\n", "tokens = 1.5 must be an integer > 0"),
        (
            LADDER,
            "missing steps (a size has d_model, n_layer, n_head, steps, seeds; tokens or tokens_per_param",
        ),
    ):
        path.write_text(text)
        with pytest.raises(InputError, match=re.escape(message)):
            load_ladder(path)


def hand_cache(folder, n=20_000):
    """A byte-level token cache written by hand: n tokens, 97% of them train."""
    folder.mkdir()
    tokens = np.random.RandomState(5).randint(0, 256, size=n).astype("<u2")
    (folder / "tokens.bin").write_bytes(tokens.tobytes())
    meta = dict(format=1, key="hand", source="hand", tokenizer="bytes", n_text=1, vocab_size=257, eos_id=256)
    (folder / "meta.json").write_text(json.dumps({**meta, "n_tokens": n, "n_train": int(0.97 * n)}))
    return folder


def test_passes_over_a_known_corpus_and_a_vocabulary_the_budget_did_not_count(tmp_path):
    cache = hand_cache(tmp_path / "cache")
    assert known_train_tokens(str(cache)) == 19_400 and known_train_tokens(str(tmp_path / "none.txt")) is None
    assert passes(38_800, 19_400) == 2.0
    out = tmp_path / "x.csv"
    result = rr("train", "--size", "tiny", "--corpus", cache, "--tokens", 40_960, "--out", out, "--dry-run")
    assert result.exit_code == 0, result.output
    (line,) = budget_lines(result.stdout)
    assert line.split()[2:4] + line.split()[-1:] == ["20", "40,960", "2.11"]  # 40,960 / 19,400
    assert "past one pass over the corpus, so windows repeat: tiny at 20 steps (2.11)" in result.stdout
    # tokens per parameter count the GPT-2 model unless the tokenizer is named: the cache's bytes differ
    result = rr(
        "train", "--size", "tiny", "--corpus", cache, "--tokens-per-param", 1, "--out", out, "--dry-run"
    )
    assert result.exit_code == 2 and "give --tokenizer bytes" in result.stderr, result.output
    good = rr("train", "--size", "tiny", "--corpus", cache, "--tokenizer", "bytes", "--tokens-per-param", 1,
              "--out", out, "--dry-run")  # fmt: skip
    assert good.exit_code == 0, good.output


def budget_lines(stdout: str) -> list[str]:
    """The rows of a dry run's budget table: after its title and header, up to its notes."""
    lines = stdout.split("Budget per size and steps (of the reference)\n")[1].splitlines()[2:]
    return lines[: next(i for i, line in enumerate(lines) if line.startswith("params: "))]


def test_size_budgets_count_passes_over_a_tokenized_corpus_and_refuse_one_that_is_not(tmp_path):
    """`size_budgets` (rr sizes --budget): every size at the stated budget, passes over the corpus's 19,400
    training tokens (hand_cache); a corpus not tokenized yet refused."""
    cache = str(hand_cache(tmp_path / "cache"))
    rows = {r["size"]: r for r in size_budgets(257, corpus=cache, steps=10, tokens=None)}
    assert list(rows) == ["60M", "150M", "320M", "590M", "1B", "tiny"]
    assert rows["tiny"]["tokens"] == 10 * 8 * 256 and rows["60M"]["tokens"] == 10 * 64 * 256
    assert rows["tiny"]["passes"] == pytest.approx(20_480 / 19_400, rel=1e-12)
    assert "passes" not in size_budgets(257)[0]  # no corpus, no passes
    fresh = tmp_path / "stories.txt"  # a corpus no run has tokenized (the shared cache may hold synthetic's)
    fresh.write_text(
        f"Once upon a time in {tmp_path.name}.\n", encoding="utf-8"
    )  # its own key, whatever the key holds
    with pytest.raises(
        InputError, match=re.escape(f"--corpus {fresh}: not tokenized yet, so its size is unknown")
    ):
        size_budgets(257, corpus=str(fresh))


def test_sizes_show_each_budget_in_every_format():
    text = rr("sizes", "--budget")
    assert text.exit_code == 0, text.output
    assert text.stdout.splitlines()[0] == "Budget per size, vocabulary 50,257: as the ladder states it"
    line = next(line for line in text.stdout.splitlines() if line.startswith("60M"))
    assert line.split() == ["60M", "59,470,848", "8,000", "131,072,000", "2.2", "4.83e+16"]
    assert "training FLOPs = (6 N' + 12 L d T) x tokens" in text.stdout
    rows = json.loads(rr("sizes", "--tokens-per-param", 20, "--format", "json").stdout)
    assert [r["size"] for r in rows] == ["60M", "150M", "320M", "590M", "1B", "tiny"]
    assert all(r["tokens_per_param"] == pytest.approx(20, abs=0.001) for r in rows[:5])
    for fmt in ("csv", "markdown", "latex"):
        assert "72596" in rr("sizes", "--budget", "--tokens-per-param", 20, "--format", fmt).stdout.replace(
            ",", ""
        )


def test_every_dry_run_shows_the_budget_of_each_size(tmp_path):
    result = rr("train", "--size", "1B", "--dry-run", "--out", tmp_path / "x.csv")
    assert result.exit_code == 0, result.output
    assert "Budget per size and steps (of the reference)" in result.stdout
    (line,) = budget_lines(result.stdout)
    assert line.split() == ["1B", "984,038,400", "6,000", "98,304,000", "0.0999", "5.91e+17", "-"]
    sweep = rr("sweep", "--sizes", "tiny", "--seeds", 0, "--corpus", "synthetic", "--tokens", 20_480,
               "--out", tmp_path / "s.csv", "--dry-run")  # fmt: skip
    assert sweep.exit_code == 0 and "Budget per size and steps" in sweep.stdout, sweep.output


def test_a_token_budget_s_row_and_record_keep_the_tokens_it_trained(tmp_path, tiny_run):
    from rr_model.run.trainer import train

    out = tmp_path / "t.csv"
    recipe = replace(TINY, eval_batches=2)  # the row, not the evaluation, is tested
    record = train(TrainConfig("tiny", "standard", data="synthetic", tokens=8192, recipe=recipe), out)
    row = load_sweep(out).iloc[0]
    assert (row["steps"], row["tokens"]) == (4, 4 * 2048)
    assert "steps,val_loss,ece,minutes,tokens" in out.read_text().splitlines()[0]
    (kept,) = provenance.read_records(provenance.sidecar_path(out))
    assert kept["run_id"] == record["run_id"] and kept["tokens"] == 8192
    assert record["tokens"] == 8192 and record["tokens_per_param"] == pytest.approx(8192 / TINY_BYTES_PARAMS)
    assert record["config"]["tokens"] == 8192
    # a run of steps writes the row it always wrote, and its record says what it trained on
    assert "tokens" not in tiny_run["out"].read_text().splitlines()[0]
    assert tiny_run["tokens"] == 12 * 2048 and RECIPE.batch_size == 64

"""The trainer: recipe and schedule, data order, planning, the guard, end-to-end `rr train`, concurrency,
failures.

Every run is the `tiny` size on the synthetic corpus (or a small local corpus or token cache) for a few
steps, on CPU, offline; token caches live in the session's folder ($RR_CACHE, tests/conftest.py).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import RR, TINY_RUN, refuse_files_in, rr, stub_tokens

from rr_core.errors import InputError, RecipeError
from rr_core.ladder import RECIPE, get_size
from rr_core.shapes import model_config
from rr_core.sweepfile import provenance
from rr_core.sweepfile.dataset import append_rows, bundled_path, load_sweep
from rr_model.config import DEFAULT_OUT, TrainConfig
from rr_model.data import synthetic
from rr_model.data.windows import sample_batch
from rr_model.model import GPT
from rr_model.run.identity import recipe_differences
from rr_model.run.output_file import preflight
from rr_model.run.planning import plan_runs
from rr_model.run.step import lr_at
from rr_model.run.trainer import train
from rr_model.run.validation import ece_from_bins, evaluate

pytestmark = pytest.mark.usefixtures("offline")


def tiny(**overrides) -> TrainConfig:
    return TrainConfig(
        **{"size": "tiny", "data": "synthetic", "steps": 12, "checkpoint_every": 0, **overrides}
    )


def tiny_args(out, variant="standard", steps=8, *extra) -> list:
    """`rr train` arguments for a short tiny run on the synthetic corpus."""
    return [
        "train",
        "--size",
        "tiny",
        "--variant",
        variant,
        "--corpus",
        "synthetic",
        "--steps",
        steps,
        "--out",
        out,
        *extra,
    ]


def rr_subprocess(*args, **popen):
    return subprocess.Popen(
        [RR, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen
    )


def records(out):
    return provenance.read_records(provenance.sidecar_path(out))


# ------------------------------------------------------------------------------------------ recipe


def test_defaults_are_the_published_recipe():
    cfg = TrainConfig("150M")
    assert (cfg.steps, cfg.recipe, cfg.data, cfg.tokenizer, cfg.precision) == (
        8000,
        RECIPE,
        "tinystories",
        None,
        "tf32",
    )
    assert (cfg.recipe.batch_size, cfg.recipe.block_size, cfg.recipe.lr, cfg.recipe.warmup_steps) == (
        64,
        256,
        2e-4,
        500,
    )
    assert cfg.log_every == 50 and TrainConfig("tiny").log_every == 10
    with pytest.raises(ValueError, match="precision 'fp16' must be one of tf32, bf16, fp32"):
        TrainConfig("150M", precision="fp16")
    with pytest.raises(ValueError, match="steps 0 must be >= 1"):
        TrainConfig("150M", steps=0)
    with pytest.raises(InputError, match="unknown size '2B'"):
        TrainConfig("2B")


def test_checkpoint_interval_and_seed_range():
    assert TrainConfig("150M").checkpoint_every == 1000 and TrainConfig("tiny").checkpoint_every == 20
    assert (
        TrainConfig("tiny", steps=30).checkpoint_every == 6
        and TrainConfig("tiny", steps=3).checkpoint_every == 1
    )
    with pytest.raises(InputError, match=r"seed 4294967296 must be in 0 .. 2\*\*32 - 1"):
        TrainConfig("tiny", seed=2**32)  # numpy's RandomState takes no larger seed


def published_lr(step: int, steps: int = 8000, warmup: int = 500) -> float:
    """The published schedule, written out as the issue states it."""
    if step < warmup:
        factor = (step + 1) / warmup
    else:
        factor = 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1, (step - warmup) / max(1, steps - warmup))))
    return 2e-4 * factor


def test_lr_schedule_is_the_published_formula_under_lambdalr():
    for step, expected in ((0, 4e-7), (499, 2e-4), (500, 2e-4), (7999, 2e-5)):
        assert lr_at(step, 8000, RECIPE) == published_lr(step) == pytest.approx(expected, rel=1e-6)
    assert lr_at(7999, 8000, RECIPE) != 2e-5  # the cosine ends one step after the last: min(1, 7499/7500)
    # torch's LambdaLR, read before each step, gives the same floats
    optimizer = torch.optim.AdamW([torch.zeros(1, requires_grad=True)], lr=2e-4)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: published_lr(s) / 2e-4)
    lambda_lr = []
    for _ in range(8000):
        lambda_lr.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    assert [lr_at(s, 8000, RECIPE) for s in (0, 499, 500, 4250, 7999)] == pytest.approx(
        [lambda_lr[s] for s in (0, 499, 500, 4250, 7999)], rel=1e-15
    )


def token_cache(folder: Path, n: int = 20_000) -> Path:
    """A token cache written by hand (tokens.bin + meta.json): n byte-level tokens, 97% of them train."""
    folder.mkdir()
    tokens = np.random.RandomState(123).randint(0, 256, size=n).astype("<u2")
    (folder / "tokens.bin").write_bytes(tokens.tobytes())
    meta = dict(format=1, key="hand", source="hand", tokenizer="bytes", n_text=1, vocab_size=257, eos_id=256)
    (folder / "meta.json").write_text(json.dumps({**meta, "n_tokens": n, "n_train": int(0.97 * n)}))
    return folder


# First window starts of the training batch (8 sequences of 256 over 19,400 train tokens) and of the first
# validation batch after 2 training steps (over 600 validation tokens), from the published script's draws:
# numpy.random.RandomState(seed).randint(0, n - 257, size=8), one call per batch, one stream.
FIRST_STARTS = {
    0: ([2732, 10799, 9845, 13123, 9225, 14116, 14935, 15430], [165, 25, 333, 72, 265, 115, 243, 197]),
    3: ([5994, 1688, 11513, 15288, 6400, 11261, 19091, 11115], [316, 129, 69, 110, 97, 106, 152, 318]),
}


@pytest.mark.parametrize("seed", [0, 3])
def test_data_order_is_the_published_stream_from_a_token_cache(tmp_path, monkeypatch, seed):
    from rr_model.run import trainer as train_module
    from rr_model.run import validation as evaluate_module

    cache = token_cache(tmp_path / "tokens")
    starts = []

    def spy(data, rng, batch, block):  # records where each window starts, found by its content
        x, y = sample_batch(data, rng, batch, block)
        windows = np.lib.stride_tricks.sliding_window_view(data, block)
        starts.append((len(data), [int(np.flatnonzero((windows == row).all(axis=1))[0]) for row in x]))
        return x, y

    monkeypatch.setattr(train_module, "sample_batch", spy)
    monkeypatch.setattr(evaluate_module, "sample_batch", spy)
    recipe = replace(get_size("tiny").recipe, eval_batches=2)
    cfg = TrainConfig("tiny", "standard", seed, data=str(cache), steps=2, recipe=recipe, checkpoint_every=0)
    rec = train(cfg, tmp_path / "x.csv")  # the library entry point, on a token cache as the published one
    assert rec["status"] == "ok" and rec["data"]["train_tokens"] == 19_400
    assert [n for n, _ in starts] == [19_400, 19_400, 600, 600]
    assert (starts[0][1], starts[2][1]) == FIRST_STARTS[seed]


def test_recipe_differences_name_each_departure():
    assert recipe_differences(TrainConfig("60M"), stub_tokens()) == []
    cfg = TrainConfig("60M", steps=100, precision="bf16")
    synthetic_data = stub_tokens(source="synthetic", tokenizer="bytes", n_text=10000)
    assert recipe_differences(cfg, synthetic_data) == [
        "steps 100 (published: 8000)",
        "precision bf16 (published: tf32)",
        "data synthetic (published: roneneldan/TinyStories)",
        "tokenizer bytes (published: gpt2)",
        "n_text 10000 (published: 400000)",
    ]


# ------------------------------------------------------------------------------------------- planning


def test_plan_takes_the_next_unused_seed_and_skips_present_runs(published_copy):
    out = published_copy
    todo, skipped, _ = plan_runs(out, "60M")
    assert [c.key for c in todo] == [("60M", v, 3) for v in ("review_neutral", "highway", "standard")]
    assert not skipped
    assert {c.seed for c in plan_runs(out, "320M")[0]} == {2}  # published with two seeds
    row = dict(size="tiny", variant="review_neutral", seed=0, params_M=1.12, steps=12, val_loss=3.0, ece=0.01)
    append_rows(out, [{**row, "minutes": 0.1}])
    todo, skipped, _ = plan_runs(out, "tiny", data="synthetic")  # a crash left seed 0 incomplete: finish it
    assert [c.key for c in todo] == [("tiny", "highway", 0), ("tiny", "standard", 0)]
    assert [c.key for c in skipped] == [("tiny", "review_neutral", 0)]
    assert [c.key for c in plan_runs(out, "tiny", ("review_neutral",))[0]] == [("tiny", "review_neutral", 1)]


def test_dry_run_prints_widths_params_tokens_and_estimate(tmp_path):
    result = rr("train", "--size", "1B", "--dry-run", "--out", tmp_path / "x.csv")
    assert result.exit_code == 0, result.output
    for text in ("1536", "1648", "1776", "984,038,400", "98,304,000", "est_minutes"):
        assert text in result.stdout
    assert not (tmp_path / "x.csv").exists()


# ------------------------------------------------------------------------------------------- end to end


def test_the_shared_run_learns_and_records_itself(tiny_run):
    df = load_sweep(tiny_run["out"])
    assert df[["size", "variant", "seed", "params_M", "steps"]].values.tolist() == [
        ["tiny", "standard", 0, 1.13, 12]
    ]
    curve = [loss for _, loss in tiny_run["loss_curve"]]
    assert tiny_run["status"] == "ok" and curve[0] > 5.0 and curve[-1] < curve[0] - 1.0, curve
    assert tiny_run["result"]["val_loss"] == pytest.approx(df["val_loss"][0], abs=5e-5)
    assert tiny_run["environment"]["torch"] == torch.__version__ and tiny_run["config"]["steps"] == 12
    assert provenance.join(df)["record_agrees"].tolist() == [True]


def test_rr_train_appends_a_row_into_a_new_folder_and_skips_it_after(tmp_path):
    out = tmp_path / "new" / "tmp.csv"  # a missing folder is made: its parent exists
    result = rr(*tiny_args(out, "review_neutral", 4))
    assert result.exit_code == 0, result.output
    assert load_sweep(out)[["variant", "params_M", "steps"]].values.tolist() == [["review_neutral", 1.12, 4]]
    assert "step 4/4 | loss" in result.stderr and "review_neutral" in result.stdout  # progress, then the row
    assert (
        " x 8 sequences, " in result.stderr and " CPU thread(s) " in result.stderr
    )  # the start line's threads
    before = out.read_bytes()
    again = rr(*tiny_args(out, "review_neutral", 4, "--seed", 0))
    assert again.exit_code == 0 and "skip: tiny review_neutral 0 is already in" in again.stdout
    assert out.read_bytes() == before and len(records(out)) == 1


def test_ctrl_c_says_how_to_resume(tmp_path, monkeypatch):
    from rr_model.checkpoint import state as checkpoint
    from rr_model.run import trainer as train_module

    def interrupted(runs, out, resume=False, plan=None):
        ckpt = checkpoint.checkpoint_path(out, *runs[0].key)
        ckpt.parent.mkdir(exist_ok=True)
        ckpt.write_bytes(b"")
        raise KeyboardInterrupt

    monkeypatch.setattr(train_module, "train_runs", interrupted)
    result = rr(*tiny_args(tmp_path / "x.csv"))
    message = " ".join(result.stderr.split())
    assert result.exit_code == 130 and "Run the same command with --resume" in message
    assert "x.checkpoints/tiny-standard-seed0.pt" in message
    assert f"No row was written ({tmp_path / 'x.csv'} is not made)" in message
    append_rows(
        tmp_path / "x.csv",
        [
            dict(
                size="tiny",
                variant="highway",
                seed=0,
                params_M=1.1,
                steps=8,
                val_loss=3.0,
                ece=0.1,
                minutes=0.1,
            )
        ],
    )
    # as the message says: --resume (without it, the checkpoint is refused before anything trains)
    message = " ".join(rr(*tiny_args(tmp_path / "x.csv"), "--resume").stderr.split())
    assert f"Rows already written stay in {tmp_path / 'x.csv'}" in message


def test_an_unwritable_out_is_refused_before_training(tmp_path, monkeypatch):
    out = tmp_path / "x.csv"
    refuse_files_in(tmp_path, monkeypatch)  # as the kernel answers a user without write permission
    result = rr(*tiny_args(out))
    assert (
        result.exit_code == 2
        and "(Permission denied), so the run's result would be lost; nothing was trained" in result.stderr
    )
    assert not out.exists() and not provenance.sidecar_path(out).exists()
    (tmp_path / "dir.csv").mkdir()
    result = rr(*tiny_args(tmp_path / "dir.csv"))
    assert result.exit_code == 2 and "dir.csv: is a directory" in result.stderr


@pytest.mark.slow  # the console script trains by default in test_checkpoint's SIGKILL test, the output in-process here
def test_entry_point_subprocess(tmp_path):
    out = tmp_path / "tmp.csv"
    stdout, stderr = (proc := rr_subprocess(*tiny_args(out, "standard", 10))).communicate()
    assert proc.returncode == 0, stderr
    assert "step 10/10 | loss" in stderr and "standard" in stdout
    assert load_sweep(out)["variant"].tolist() == ["standard"]


def test_two_processes_appending_at_once_leave_every_row_intact(tmp_path):
    """The lock behind every row a trainer writes: two processes append 20 rows each, one at a time, into
    one new file at the same moment; the file holds one header and all 40 rows, each whole."""
    out, go = tmp_path / "shared.csv", tmp_path / "go"
    code = (
        "import sys, time, pathlib\n"
        "from rr_core.sweepfile.dataset import append_rows\n"
        "while not pathlib.Path(sys.argv[2]).exists(): time.sleep(0.01)\n"
        "for seed in range(int(sys.argv[3]), int(sys.argv[3]) + 20):\n"
        "    append_rows(sys.argv[1], [dict(size='tiny', variant='standard', seed=seed, params_M=1.13,\n"
        "                                   steps=8, val_loss=3.0, ece=0.01, minutes=0.1)])\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(out), str(go), str(first)], stderr=subprocess.PIPE)
        for first in (0, 100)
    ]
    go.touch()
    for p in procs:
        assert p.wait() == 0, p.stderr.read()
    assert sorted(load_sweep(out)["seed"]) == [*range(20), *range(100, 120)]
    lines = out.read_text().splitlines()
    assert len(lines) == 41 and all(line.count(",") == 7 for line in lines)


@pytest.mark.slow
def test_two_concurrent_trainers_append_intact_rows(tmp_path):
    out = tmp_path / "shared.csv"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # a core each: oversubscribed OpenMP threads crawl
    procs = [rr_subprocess(*tiny_args(out, "standard", 8, "--seed", seed), env=env) for seed in (0, 1)]
    for p in procs:
        _, stderr = p.communicate()
        assert p.returncode == 0, stderr
    assert sorted(load_sweep(out)["seed"]) == [0, 1]
    lines = out.read_text().splitlines()
    assert len(lines) == 3 and all(line.count(",") == 7 for line in lines)
    assert sorted(r["seed"] for r in records(out)) == [0, 1]


@pytest.mark.slow
def test_local_corpus(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join(synthetic.stories(300)) + "\n", encoding="utf-8")
    out = tmp_path / "local.csv"
    args = tiny_args(out, "highway", 8, "--tokenizer", "bytes")
    args[args.index("synthetic")] = corpus
    result = rr(*args)
    assert result.exit_code == 0, result.output
    (rec,) = records(out)
    assert [rec["data"][k] for k in ("source", "tokenizer", "n_text")] == [str(corpus), "bytes", 300]
    assert len(load_sweep(out)) == 1


# ------------------------------------------------------------------------------- before and after training


def test_dry_run_validates_data_and_out_and_loads_no_torch(tmp_path):
    out = tmp_path / "x.csv"
    result = rr("train", "--size", "tiny", "--corpus", tmp_path / "missing.txt", "--out", out, "--dry-run")
    assert result.exit_code == 2 and "--corpus" in result.stderr and "missing.txt" in result.stderr
    deep = tmp_path / "no" / "such" / "x.csv"
    result = rr("train", "--size", "tiny", "--corpus", "synthetic", "--out", deep, "--dry-run")
    assert result.exit_code == 2 and "is not a folder, and its parent is none either" in result.stderr
    args = ["train", "--size", "tiny", "--corpus", "synthetic", "--out", str(tmp_path / "new" / "x.csv")]
    script = (
        f"import sys\nfrom cli.main import app\nsys.argv[1:] = {[*args, '--dry-run']!r}\n"
        "try:\n    app()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "assert 'torch' not in sys.modules, 'rr train --dry-run imported torch'\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "est_minutes" in proc.stdout and not (tmp_path / "new").exists()  # a dry run creates nothing


# ------------------------------------------------------------------------------------------ CPU threads


@pytest.mark.parametrize(
    ("cores", "load", "own", "explicit", "threads"),
    [
        (2, 3.5, 0.1, None, 1),  # the demo on two shared cores: torch's 2 threads ran 4-7x slower than 1
        (2, 0.2, 0.1, None, 2),  # idle: a thread per core
        (2, 1.1, 1.0, None, 2),  # this process's own load is not other work
        (16, 4.2, 0.9, None, 13),
        (2, 3.5, 0.1, "3", 3),  # OMP_NUM_THREADS is kept
        (2, 3.5, 0.1, "0", 1),  # ... where it names a count
        (4, 0.0, 0.0, "many", 4),
    ],
)
def test_cpu_threads_are_the_cores_other_work_leaves_free(cores, load, own, explicit, threads):
    from rr_model.run.numerics import cpu_threads

    chosen, said = cpu_threads(cores, load, own, explicit)
    assert chosen == threads
    assert said.startswith(f"{threads} CPU thread(s) ")
    assert ("(OMP_NUM_THREADS)" in said) == (explicit == "3")


def test_a_cpu_run_computes_with_the_threads_chosen_and_puts_torch_s_back(monkeypatch):
    # issue 36.10: the demo ran at torch's default, a thread per core, however busy the cores were (a run's
    # start line says the choice: test_rr_train_appends_a_row_into_a_new_folder_and_skips_it_after)
    from rr_model.run import numerics

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    numerics.chosen_threads.cache_clear()  # chosen once a process: here, under this environment
    found = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with numerics.numerics(torch.device("cpu"), "tf32") as said:
            assert torch.get_num_threads() == 1 and said == "1 CPU thread(s) (OMP_NUM_THREADS)"
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(found)
        numerics.chosen_threads.cache_clear()


# ------------------------------------------------------------------------------------------ refusals


def test_recipe_guard_refuses_off_recipe_runs_for_the_published_file(tmp_path):
    out = tmp_path / "scaling_v8.csv"
    shutil.copy(bundled_path(), out)
    before = out.read_bytes()
    result = rr("train", "--size", "tiny", "--corpus", "synthetic", "--steps", 20, "--out", out)
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    for text in (
        "holds published rows",
        "steps 20 (published: 100)",
        "data synthetic (published: roneneldan/TinyStories)",
        "tokenizer bytes (published: gpt2)",
        "--out other.csv",
    ):
        assert text in message, message
    assert out.read_bytes() == before and not provenance.sidecar_path(out).exists()


def test_a_dry_run_refuses_what_the_run_refuses_and_a_refused_run_leaves_no_file(tmp_path, monkeypatch):
    # issue 36.5: the dry run planned seed 3 into the default dataset; the run then made it (42 published
    # rows) and a claim lock, and only then refused the synthetic corpus for a file of published rows
    monkeypatch.chdir(tmp_path)
    for dry in (["--dry-run"], []):
        result = rr("train", "--size", "60M", "--corpus", "synthetic", *dry)
        assert result.exit_code == 2, result.output
        message = " ".join(result.stderr.split())
        assert message.startswith(
            "rr: error: data/scaling_v8.csv holds published rows, and this run is off the published recipe "
            "of 60M: data synthetic (published: roneneldan/TinyStories); tokenizer bytes (published: gpt2)"
        ), message
        assert "est_minutes" not in result.stdout and list(tmp_path.iterdir()) == []
    with pytest.raises(RecipeError, match="holds published rows"):
        train(TrainConfig("60M", data="synthetic"), DEFAULT_OUT)  # the trainer itself: a sweep's child, a job
    assert list(tmp_path.iterdir()) == []


def test_a_dry_run_refuses_a_checkpoint_the_run_would_not_continue(tmp_path):
    from rr_model.checkpoint.paths import checkpoint_path

    out = tmp_path / "x.csv"
    found = checkpoint_path(out, "tiny", "standard", 0)
    found.parent.mkdir()
    found.write_bytes(b"")  # what it holds is read by the trainer on --resume; here only that it is there
    dry = [*tiny_args(out), "--dry-run"]
    refused = rr(*dry)
    assert refused.exit_code == 2, refused.output
    assert f"{found} holds a checkpoint of this run: pass --resume to continue it" in refused.stderr
    assert rr(*dry, "--resume").exit_code == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            ["--size", "1B", "--gpu-memory", 1],
            "not training 1B review_neutral 0: the memory plan says it does not fit in 90% of 1 GiB per GPU",
        ),
        (
            ["--size", "tiny", "--micro-batches", 3],
            "--micro-batches 3 does not split each process's 8 sequences",
        ),
    ],
)
def test_a_dry_run_makes_the_checks_the_trainer_makes_before_its_first_step(tmp_path, options, message):
    out = tmp_path / "x.csv"
    for dry in (["--dry-run"], []):
        result = rr("train", *options, "--corpus", "synthetic", "--out", out, *dry)
        assert result.exit_code == 2 and message in " ".join(result.stderr.split()), result.output
        assert list(tmp_path.iterdir()) == []


def test_a_row_the_file_would_refuse_is_refused_before_training(tmp_path):
    out = tmp_path / "x.csv"
    row = dict(size="tiny", variant="standard", seed=0, params_M=1.13, steps=8, val_loss=3.0, ece=0.1)
    append_rows(out, [{**row, "minutes": 0.1}])
    result = rr(*tiny_args(out, "standard", 9, "--seed", 1))
    assert result.exit_code == 2 and "not training tiny standard 1: its row would be refused" in result.stderr
    assert "steps must be the same in every row of a (size, variant)" in result.stderr
    assert not provenance.sidecar_path(out).exists()


def test_the_packaged_copy_is_never_a_target():
    with pytest.raises(ValueError, match="reference copy"):
        train(tiny(), bundled_path())


def test_hub_unreachable_says_how_to_use_data(tmp_path):
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "RR_CACHE": str(tmp_path / "rr")}
    env["HF_HUB_OFFLINE"] = "1"  # no network at test time: the hub's offline mode, said at once
    proc = rr_subprocess(
        "train", "--size", "tiny", "--out", tmp_path / "x.csv", env=env
    )  # tinystories: default
    _, stderr = proc.communicate()
    assert proc.returncode == 2
    assert stderr.startswith("rr: error: cannot load") and "--corpus" in stderr and "Traceback" not in stderr
    assert not (tmp_path / "x.csv").exists()


def test_diverged_run_records_a_failure_and_no_row(tmp_path, monkeypatch):
    forward = GPT.forward

    def nan_loss(self, idx, targets=None):
        logits, loss = forward(self, idx, targets)
        return logits, loss * float("nan") if torch.is_grad_enabled() else loss

    monkeypatch.setattr(GPT, "forward", nan_loss)
    out = tmp_path / "x.csv"
    result = rr(*tiny_args(out))
    assert result.exit_code == 1
    assert "diverged" in result.stderr and "failed" in result.stdout
    (rec,) = records(out)
    assert rec["status"] == "failed" and "non-finite" in rec["error"] and rec["result"] is None
    assert not out.exists()


@pytest.mark.slow
def test_cuda_oom_switches_to_gradient_accumulation_with_the_same_batch(tmp_path, monkeypatch, tiny_run):
    forward = GPT.forward

    def small_memory(self, idx, targets=None):
        if torch.is_grad_enabled() and idx.shape[0] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return forward(self, idx, targets)

    monkeypatch.setattr(GPT, "forward", small_memory)
    rec = train(TrainConfig(**TINY_RUN), tmp_path / "b.csv")
    assert rec["grad_accum"] == 4  # 8 sequences as 4 micro-batches of 2
    assert rec["result"]["val_loss"] == pytest.approx(tiny_run["result"]["val_loss"], abs=1e-5)


def test_out_of_memory_with_one_sequence_per_micro_batch_stops_the_run(tmp_path, monkeypatch):
    calls = []

    def no_memory(self, idx, targets=None):
        calls.append(idx.shape[0])
        raise torch.OutOfMemoryError("CUDA out of memory (simulated)")

    monkeypatch.setattr(GPT, "forward", no_memory)
    with pytest.raises(torch.OutOfMemoryError, match="at step 0 with micro-batches of one sequence: CUDA"):
        train(TrainConfig(**TINY_RUN), tmp_path / "b.csv")
    assert calls == [8, 4, 2, 1]
    assert not (tmp_path / "b.csv").exists()


def test_out_of_memory_in_the_optimiser_step_is_not_retried(tmp_path, monkeypatch):
    forward, calls = GPT.forward, []

    def counted(self, idx, targets=None):
        calls.append(idx.shape[0])
        return forward(self, idx, targets)

    def no_memory(self, closure=None):
        raise torch.OutOfMemoryError("CUDA out of memory (simulated, optimiser)")

    monkeypatch.setattr(GPT, "forward", counted)
    monkeypatch.setattr(torch.optim.AdamW, "step", no_memory)  # more micro-batches would not shrink it
    with pytest.raises(torch.OutOfMemoryError, match=r"^CUDA out of memory \(simulated, optimiser\)$"):
        train(TrainConfig(**TINY_RUN), tmp_path / "b.csv")
    assert calls == [8]  # one forward of the whole batch: the step was not taken again


# ------------------------------------------------------------------------------------------ evaluation


def test_ece_from_bins():
    bins = torch.tensor([[2, 1, 3], [1.8, 0.5, 2.4], [1, 1, 3]])  # rows: count, sum conf, sum correct
    assert ece_from_bins(bins) == pytest.approx((0.8 + 0.5 + 0.6) / 6)


def test_evaluate_equals_a_direct_computation():
    torch.manual_seed(0)
    model = GPT(model_config("tiny", "standard", 257)).eval()
    val = np.random.default_rng(1).integers(0, 257, 5000).astype(np.uint16)
    loss, ece = evaluate(
        model,
        val,
        rng=np.random.RandomState(3),
        n_batches=3,
        batch_size=4,
        block_size=256,
        n_bins=15,
        device=torch.device("cpu"),
    )
    rng, losses, conf, correct = np.random.RandomState(3), [], [], []
    with torch.no_grad():
        for _ in range(3):
            x, y = map(torch.from_numpy, sample_batch(val, rng, 4, 256))
            logits, batch_loss = model(x, y)
            p = torch.softmax(logits.double(), -1)
            losses.append(batch_loss.item())
            conf.append(p.max(-1).values.flatten().numpy())
            correct.append((p.argmax(-1) == y).flatten().numpy())
    conf, correct = np.concatenate(conf), np.concatenate(correct)
    bin_of = np.ceil(conf * 15).astype(int) - 1  # bins (lo, hi]
    direct = sum(abs(conf[bin_of == b].sum() - correct[bin_of == b].sum()) for b in range(15)) / len(conf)
    assert loss == pytest.approx(np.mean(losses), abs=1e-6)
    assert ece == pytest.approx(direct, abs=1e-6)


@pytest.mark.slow
def test_tiny_demo_trains_every_variant_and_each_learns(tmp_path):
    """The README's demo: three variants, 100 steps each; its time is measured with `time`, not here."""
    result = rr("train", "--size", "tiny", "--corpus", "synthetic", "--out", tmp_path / "demo.csv")
    assert result.exit_code == 0, result.output
    assert all(r["loss_curve"][-1][1] < r["loss_curve"][0][1] - 2 for r in records(tmp_path / "demo.csv"))


def test_the_default_dataset_behaves_alike_missing_or_present(tmp_path, monkeypatch):
    """Issue 49.5: from the clone's root the tiny demo into data/scaling_v8.csv was refused (off-recipe rows
    beside published ones), from an empty folder the same command made that file with the tiny row alone;
    --help says the file starts from the published rows: both folders now refuse it, naming --out."""
    monkeypatch.chdir(tmp_path)
    result = rr("train", "--size", "tiny", "--corpus", "synthetic", "--steps", "2")
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert message.startswith("rr: error: data/scaling_v8.csv holds published rows, and this run is off the")
    assert "--out other.csv" in message and list(tmp_path.iterdir()) == []


def test_a_new_default_dataset_extends_the_published_sweep(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    todo, skipped, _ = plan_runs(DEFAULT_OUT, "150M")
    assert [r.seed for r in todo] == [3, 3, 3] and not skipped  # seeds 0-2 are published
    assert not DEFAULT_OUT.exists()  # planning writes nothing
    assert [r.seed for r in plan_runs(DEFAULT_OUT, "320M")[0]] == [2, 2, 2]
    assert [r.seed for r in plan_runs(Path("elsewhere.csv"), "150M")[0]] == [0, 0, 0]
    assert [r.seed for r in plan_runs(DEFAULT_OUT, "tiny")[0]] == [0, 0, 0]  # no published tiny seed
    assert not DEFAULT_OUT.exists()
    plan = preflight(DEFAULT_OUT)
    assert plan.from_published and plan.published and len(plan.keys) == 42
    plan.start()
    assert DEFAULT_OUT.read_bytes() == bundled_path().read_bytes()
    DEFAULT_OUT.write_text("kept")  # an existing file is never replaced
    plan.start()
    assert DEFAULT_OUT.read_text() == "kept"

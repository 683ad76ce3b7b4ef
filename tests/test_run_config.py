"""The pre-flight of a run's output file (`rr_model.run.output_file.preflight`): one reading answers every question
the trainer and `rr train` ask of it, and each refusal keeps its sentence."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import refuse_files_in, rr, stub_tokens

from rr_core.errors import InputError, RecipeError
from rr_core.ladder import get_size
from rr_core.sweepfile import csv_text
from rr_core.sweepfile.csv_text import DataError
from rr_core.sweepfile.dataset import append_rows, bundled_path, load_sweep
from rr_model.config import TrainConfig
from rr_model.run.identity import recipe_differences
from rr_model.run.output_file import preflight
from rr_model.run.planning import plan_runs

ROW = dict(
    size="tiny", variant="standard", seed=0, params_M=1.13, steps=8, val_loss=3.0, ece=0.1, minutes=0.1
)


@pytest.fixture
def reads(monkeypatch) -> list[Path]:
    """Every sweep file the loader reads from now on (by name, `rr_core.files.reading.read_regular`, or through
    a writer's open descriptor, `rr_core.files.reading.read_open`)."""
    seen: list[Path] = []

    def spy(read, named):  # the argument that names the file
        def reading(*args, **kwargs):
            seen.append(Path(args[named]))
            return read(*args, **kwargs)

        return reading

    for name, named in (("read_regular", 0), ("read_open", 1)):
        monkeypatch.setattr(csv_text, name, spy(getattr(csv_text, name), named))
    return seen


def test_one_reading_answers_every_question(tmp_path, reads):
    out = tmp_path / "x.csv"
    append_rows(out, [ROW])
    reads.clear()
    plan = preflight(out)
    cfg = TrainConfig("tiny", "standard", 1, data="synthetic", steps=8)
    assert plan.keys == {("tiny", "standard", 0)} and not plan.published and not plan.from_published
    plan.guard(cfg, stub_tokens(source="synthetic"))  # a file of its own: any recipe
    plan.check_fits(cfg, 1_130_000)
    assert plan_runs(out, "tiny", ("standard",))[0][0].seed == 1  # the CLI's plan: one more reading
    assert [p for p in reads if p == out] == [out, out]  # (published: the reference copy, for the guard)


def test_the_trainer_reads_its_output_once_before_training_and_once_to_append(tmp_path, reads, offline):
    from rr_model.run.trainer import train

    out = tmp_path / "x.csv"
    append_rows(out, [ROW])
    reads.clear()
    recipe = replace(get_size("tiny").recipe, eval_batches=1)
    cfg = TrainConfig("tiny", "highway", 0, data="synthetic", steps=2, recipe=recipe, checkpoint_every=0)
    assert train(cfg, out)["status"] == "ok"
    assert [p for p in reads if p == out] == [out, out]  # preflight, then append_rows under its lock


def test_each_refusal_keeps_its_sentence(tmp_path, monkeypatch, published_copy):
    with pytest.raises(DataError, match="is the reference copy of the published sweep installed with rr"):
        preflight(bundled_path())
    (tmp_path / "dir.csv").mkdir()
    with pytest.raises(DataError, match="dir.csv: is a directory"):
        preflight(tmp_path / "dir.csv")
    with pytest.raises(InputError, match="is not a folder, and its parent is none either"):
        preflight(tmp_path / "no" / "such" / "x.csv")
    published = published_copy
    plan = preflight(published)
    assert plan.published
    with pytest.raises(
        RecipeError, match=r"holds published rows.*steps 20 \(published: 8000\).*--out other.csv"
    ):
        plan.guard(TrainConfig("60M", steps=20), stub_tokens())
    plan.guard(TrainConfig("60M"), stub_tokens())  # the published recipe passes
    with pytest.raises(InputError, match="not training 60M standard 0: its row would be refused") as e:
        plan.check_fits(TrainConfig("60M", "standard", 0), 52_000_000)
    assert "new row 1, column size,variant,seed" in str(e.value) and "duplicate run" in str(e.value)
    own = tmp_path / "own.csv"
    append_rows(own, [ROW])
    with pytest.raises(InputError, match="steps must be the same in every row of a \\(size, variant\\)"):
        preflight(own).check_fits(TrainConfig("tiny", "standard", 1, steps=9), 1_130_000)
    refuse_files_in(tmp_path, monkeypatch)  # as the kernel answers a user without write permission
    with pytest.raises(
        InputError, match="cannot be written to .* \\(Permission denied\\), so the run's result would be lost"
    ):
        preflight(tmp_path / "new.csv")


PILOT = "[1M]\nd_model = 32\nn_layer = 1\nn_head = 2\nsteps = 2\nseeds = 1\nbatch_size = 2\nblock_size = 16\nwarmup_steps = 1\n"


@pytest.fixture
def opens(monkeypatch) -> dict[Path, int]:
    """How often each file is opened from now on, to read or to write: every read rr makes of a sweep, ladder
    or run config file (`rr_core.files.reading.read_regular`) and every append under a lock
    (`rr_core.files.locks.locked`) has one primitive, `os.open`."""
    seen: dict[Path, int] = {}
    real = os.open

    def spy(path, flags, *args, **kwargs):
        seen[Path(path)] = seen.get(Path(path), 0) + 1
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    return seen


@pytest.fixture
def checks(monkeypatch) -> dict[str, int]:
    """How often a run's checks run from now on: `check_run` and `check_data`, wherever they are called
    from (`Runs.check`, the trainer)."""
    from rr_model.data import token_cache
    from rr_model.run import planning, trainer

    calls = {"check_run": 0, "check_data": 0}

    def counted(name, real):
        def spy(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)

        return spy

    for name, real in (("check_run", planning.check_run), ("check_data", token_cache.check_data)):
        for module in (planning, trainer):
            monkeypatch.setattr(module, name, counted(name, real))
    return calls


def test_a_command_reads_its_output_and_ladder_files_once(tmp_path, opens, checks, offline):
    """A 3-run `rr train` opens its output file once to plan and once per row it appends (read under the
    row's lock through that opening), its ladder file once, checks each run once and its corpus once (issue
    43.4: before, 8 openings of the file, 9 `check_run` and 4 `check_data`); a dry run opens the output file
    once and the ladder file, already parsed in this process, not at all; an edited ladder file is read
    again."""
    ladder, out = tmp_path / "pilot.toml", tmp_path / "o.csv"
    ladder.write_text(PILOT)
    append_rows(out, [{**ROW, "size": "1M", "variant": "rezero", "steps": 2, "params_M": 0.01}])
    args = ["train", "--size", "1M", "--ladder", ladder, "--corpus", "synthetic", "--out", out]
    opens.clear()
    result = rr(*args, "--checkpoint-every", 0)
    assert result.exit_code == 0, result.output
    assert (opens.get(out), opens.get(ladder)) == (1 + 3, 1)  # the plan's reading, then one per append
    assert checks == {"check_run": 3, "check_data": 1}
    assert len(load_sweep(out)) == 4
    opens.clear()
    plan = rr(*args, "--seed", 1, "--dry-run")
    assert plan.exit_code == 0 and "3 run(s)" in plan.stdout, plan.output
    assert (opens.get(out), opens.get(ladder, 0)) == (1, 0)  # the ladder: parsed once per process
    ladder.write_text(PILOT.replace("steps = 2", "steps = 3") + "\n")
    assert get_size("1M", str(ladder)).steps == 3 and opens[ladder] == 1  # edited: read again


def test_a_plan_reads_its_file_again_only_where_another_process_wrote_to_it(tmp_path, reads):
    """`refresh` (what the trainer calls once it has claimed a run) is one stat while the file holds only what
    the plan knows, its own appends included; a row another process appended before one of ours is seen."""
    from rr_core.files.reading import stamp

    out = tmp_path / "x.csv"
    append_rows(out, [ROW])
    plan = preflight(out)
    ours = append_rows(out, [{**ROW, "seed": 1}])
    plan.extend(ours, stamp(out))
    reads.clear()
    plan.refresh()
    assert reads == [] and plan.keys == {("tiny", "standard", 0), ("tiny", "standard", 1)}
    append_rows(out, [{**ROW, "seed": 2}])  # another process's row, then ours after it
    ours = append_rows(out, [{**ROW, "seed": 3}])
    plan.extend(ours, stamp(out))
    assert ("tiny", "standard", 2) not in plan.keys
    reads.clear()
    plan.refresh()
    assert reads == [out] and {seed for _, _, seed in plan.keys} == {0, 1, 2, 3}


def test_a_run_claimed_after_another_process_wrote_its_row_is_not_trained_again(tmp_path, offline):
    """Two commands planned the run; the other one trained it and let its claim go before this one claimed
    it: this one sees the row (the plan is read again after the claim) and trains nothing."""
    from rr_model.run.trainer import train

    out = tmp_path / "x.csv"
    append_rows(out, [ROW])
    cfg = TrainConfig("tiny", "highway", 0, data="synthetic", steps=2, checkpoint_every=0)
    plan = preflight(out)  # this command's one reading: the run is not in the file yet
    append_rows(out, [{**ROW, "variant": "highway", "params_M": 1.14, "steps": 2}])  # the other's row
    with pytest.raises(InputError, match="not training tiny highway 0: its row would be refused"):
        train(cfg, out, plan=plan)
    assert not (tmp_path / "x.metrics").exists()  # refused before it trained a step


def test_a_matched_baseline_widened_to_another_reference_is_off_the_published_recipe():
    # issue 36.3(a): its shape is not the published one of its name, so its row may not join the published
    assert recipe_differences(TrainConfig("60M", "highway", reference="standard"), stub_tokens()) == [
        "reference standard (published: review_neutral)"
    ]
    assert recipe_differences(TrainConfig("60M", "review_neutral", reference="standard"), stub_tokens()) == []
    assert recipe_differences(TrainConfig("60M", "highway"), stub_tokens()) == []


# ------------------------------------------------------- every number checked before work starts (issue 47)

LADDER_SIZE = {"d_model": 32, "n_layer": 1, "n_head": 2, "steps": 4, "seeds": 1, "warmup_steps": 1}

# A number (from an option, a ladder file) that, before issue 47, trained (to a crash, a wasted schedule or a
# run refused after its steps) or ended in a traceback; each now refused in one line before anything is made:
# (the ladder file's values, flags, the rule named). The later rows are asked of the dry run (which checks as
# the run does), so that without their rule the test fails at once rather than trains for ever.
NUMBERS = {
    "gpu-memory-inf": (
        {},
        ["--gpu-memory", "inf"],
        "gpu_memory inf must be > 0 and at most 1048576",
    ),  # JSON traceback
    "checkpoint-interval-past-the-steps": (  # never checkpointed
        {},
        ["--checkpoint-every", 100],
        "checkpoint_every 100 must be 0 (no checkpoints) or at most the run's 4 steps",
    ),
    "warmup-past-the-steps": (  # trained its whole schedule inside the published 500-step warmup
        {"warmup_steps": 500},
        [],
        "warmup_steps = 500 must be below the size's steps (4)",
    ),
    "lr-times-weight-decay": (  # diverged after training its first steps
        {"lr": 0.5, "weight_decay": 4.0},
        [],
        "lr = 0.5 and weight_decay = 4.0 must multiply to less than 1",
    ),
    "lr-past-one": (  # without weight decay, lr = 1e6 trained to a diverged, failed record
        {"lr": 1e6, "weight_decay": 0.0},
        ["--dry-run"],
        "lr = 1000000.0 must be a finite number in (0, 1]",
    ),
    "steps-past-any-run": (  # 13 billion days in the dry run's plan; 10**26 a traceback formatting it
        {},
        ["--steps", 10**26, "--dry-run"],
        "steps 100,000,000,000,000,000,000,000,000 trains 1,638,400,000,000,000,000,000,000,000,000 tokens",
    ),
    "tokens-per-param-past-any-run": (
        {},
        ["--tokens-per-param", "1e12", "--dry-run"],
        "more than the 1,000,000,000,000,000 any run may read",
    ),
    "eval-batches-past-any-run": (  # an evaluation of 10**11 batches: its time, after training
        {"eval_batches": 10**11},
        ["--dry-run"],
        "eval_batches = 100000000000 has the final evaluation score 1,638,400,000,000,000 tokens",
    ),
    "seeds-past-any-sweep": (  # rr sweep planned 10**10 seeds per variant to a MemoryError traceback
        {"seeds": 10**10},
        ["--dry-run"],
        "seeds = 10000000000 must be at most 10,000 (rr_core.ladder.MAX_SEEDS)",
    ),
    "gpu-memory-past-any-gpu": (  # the memory plan's check switched off by a slip
        {},
        ["--gpu-memory", "1e30", "--dry-run"],
        "gpu_memory 1e+30 must be > 0 and at most 1048576 (GiB per GPU, 1 PiB)",
    ),
    "ece-bins-past-the-predictions": (  # trained, then scored into bins mostly left empty
        {"ece_bins": 2_000_000},
        [],
        "ece_bins = 2000000 must be at most the predictions",
    ),
    "d-model-past-this-machine": (  # the allocator's RuntimeError traceback when the model was built
        {"d_model": 4_000_000},
        [],
        "not training 1M standard 0: ",
    ),
}


@pytest.mark.parametrize("case", list(NUMBERS))
def test_a_number_is_checked_before_the_first_step_in_one_line(tmp_path, offline, case):
    values, flags, rule = NUMBERS[case]
    ladder = tmp_path / "l.toml"
    ladder.write_text("[1M]\n" + "".join(f"{k} = {v!r}\n" for k, v in (LADDER_SIZE | values).items()))
    out = tmp_path / "x.csv"
    args = ["--ladder", ladder, "--size", "1M", "--variant", "standard", "--corpus", "synthetic"]
    result = rr("train", *args, "--device", "cpu", *flags, "--out", out)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("rr: error:")]
    assert len(errors) == 1 and rule in errors[0], result.stderr
    assert "Traceback" not in result.output and sorted(p.name for p in tmp_path.iterdir()) == ["l.toml"]


def _short_txt(folder: Path) -> str:
    path = folder / "short.txt"
    path.write_text("Once upon a time there was a cat. " * 20)  # 680 tokens: 21 of them for validation
    return str(path)


def _empty_strings(folder: Path) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"text": ["", "", ""]}), folder / "empty.parquet")  # three end-of-document tokens
    return str(folder / "empty.parquet")


@pytest.mark.parametrize(
    ("make", "rule"),
    [
        (
            _short_txt,
            "its 680 tokens (1 documents) leave 21 for validation (val_frac 0.03), fewer than one window",
        ),
        (
            _empty_strings,
            "its 3 tokens (3 documents) leave 2 for training (val_frac 0.03), fewer than one window",
        ),
    ],
)
def test_a_corpus_too_short_for_its_windows_is_refused_before_the_first_step(tmp_path, offline, make, rule):
    corpus = make(tmp_path)
    out = tmp_path / "runs" / "x.csv"
    args = ["--size", "tiny", "--variant", "standard", "--tokenizer", "bytes", "--steps", 2]
    result = rr("train", *args, "--corpus", corpus, "--out", out)
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"rr: error: --corpus {corpus}: {rule} of block_size 256 needs (258); give a longer corpus, or a "
        "smaller block_size in a ladder file\n"
    )
    # before issue 47 both trained their steps and failed at the evaluation; now no step runs: no metrics
    # log, no checkpoint, no row (the run's claim, a lock file, is all it made)
    made = sorted(p.relative_to(out.parent).as_posix() for p in out.parent.rglob("*"))
    assert made == ["x.checkpoints", "x.checkpoints/tiny-standard-seed0.lock"]


@pytest.mark.parametrize("name", ["x.metrics", "x.checkpoints"])
def test_a_file_where_a_run_s_folder_goes_is_refused_by_the_pre_flight(tmp_path, name):
    (tmp_path / name).write_text("")  # before issue 47 the dry run passed; the run failed at mkdir
    with pytest.raises(InputError, match=f"cannot be written to {tmp_path / name} \\(not a folder\\)"):
        preflight(tmp_path / "x.csv")


def test_steps_inside_the_warmup_are_said_before_the_first_step_and_absurd_eval_windows_refused(
    tmp_path, offline
):
    """Issue 49.10: `--steps` below the warmup passed silently (a ladder's size is refused for it, a run's
    --steps was not checked); issue 47 class 4: --eval-windows 10^11 reached the allocator after training began."""
    args = ["train", "--size", "tiny", "--variant", "standard", "--corpus", "synthetic", "--dry-run"]
    short = rr(*args, "--steps", 3, "--out", tmp_path / "a.csv")
    assert short.exit_code == 0 and short.stderr == (
        "rr: note: the run's 3 steps end inside the warmup of 15 steps: the learning rate rises to 0.0002 (20% "
        "of its peak 0.001) and never decays; train more than 15 steps, or set a shorter warmup_steps in a "
        "ladder file (--ladder)\n"
    )
    assert rr(*args, "--steps", 16, "--out", tmp_path / "b.csv").stderr == ""
    windows = rr(*args, "--eval-every", 5, "--eval-windows", 10**11, "--out", tmp_path / "c.csv")
    assert windows.exit_code == 2 and windows.stderr.startswith(
        "rr: error: --eval-windows 100,000,000,000: 100,000,000,000 windows of 257 tokens need "
    )

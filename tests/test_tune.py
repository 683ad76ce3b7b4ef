"""`rr tune`: the lr and role columns a sweep file may carry, a tuning run's key (its lr), the rate each
variant's selection runs pick (`rr_core.lr_choice.choose_rate`), and the two phases planned against a constructed
file (no training: the fast suite). docs/extending.md's tuning pilot trains one end to end (slow)."""

from __future__ import annotations

import re

import pytest
from conftest import rr

from rr_core.errors import InputError
from rr_core.lr_choice import choose_rate
from rr_core.sweepfile.csv_text import DataError
from rr_core.sweepfile.dataset import append_rows, load_sweep, run_keys
from rr_model.checkpoint.state import checkpoint_path
from rr_model.config import TrainConfig
from rr_model.run.identity import recipe_differences
from rr_model.run.output_file import dataset_row
from rr_model.sweep.child import config_from_json, config_json
from rr_model.sweep.tuning_runs import Tuning, choices, comparison_runs, one_size, rates, selection_runs, tune

HEADER = "size,variant,seed,params_M,steps,val_loss,ece,minutes,lr,role\n"


def _selection(path, losses: dict[tuple[str, float], list[float]]):
    """A tuning file of selection rows: {(variant, lr): [val_loss of seed 0, seed 1, ...]}."""
    params = {"review_neutral": 1.12, "highway": 1.18}
    lines = [
        f"tiny,{v},{seed},{params[v]},4,{loss},,,{lr!r},selection\n"
        for (v, lr), values in losses.items()
        for seed, loss in enumerate(values)
    ]
    path.write_text(HEADER + "".join(lines))
    return path


def test_a_file_may_record_lr_and_role_and_a_run_is_then_keyed_by_its_lr(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(
        HEADER
        + "tiny,review_neutral,0,1.12,4,3.5,,,0.0002,selection\n"
        + "tiny,review_neutral,0,1.12,4,3.4,,,0.0004,selection\n"
        + "tiny,review_neutral,1,1.12,4,3.4,,,,\n"
    )
    df = load_sweep(path)
    assert list(df.columns[-2:]) == ["lr", "role"]
    assert run_keys(df) == {
        ("tiny", "review_neutral", 0, 2e-4),
        ("tiny", "review_neutral", 0, 4e-4),
        ("tiny", "review_neutral", 1, None),
    }
    path.write_text(
        HEADER
        + "tiny,review_neutral,0,1.12,4,3.5,,,0.0004,selection\n"
        + "tiny,review_neutral,0,1.12,4,3.4,,,0.0004,comparison\n"
        + "tiny,review_neutral,1,1.12,4,3.4,,,-1,chosen\n"
    )
    with pytest.raises(DataError) as e:
        load_sweep(path)
    said = str(e.value)
    assert (
        "line 3, column size,variant,seed,lr: ('tiny', 'review_neutral', 0, 0.0004) - duplicate run" in said
    )
    assert "line 4, column lr: -1.0 - must be a finite number > 0 or empty (the recipe's)" in said
    assert "line 4, column role: 'chosen' - must be selection or comparison, or empty" in said


def test_the_published_file_keeps_its_columns_and_keys():
    df = load_sweep()
    assert "lr" not in df.columns and "role" not in df.columns
    assert all(len(k) == 3 for k in run_keys(df))


def test_a_tuning_run_records_its_lr_and_role_and_has_its_own_files(tmp_path):
    plain = TrainConfig("tiny", "highway", 2, data="synthetic", steps=4)
    tuned = selection_runs(
        tmp_path / "t.csv", "tiny", ["highway"], [4e-4], [2], data="synthetic", steps=4
    ).todo[0]
    assert plain.key == ("tiny", "highway", 2) and tuned.key == ("tiny", "highway", 2, 4e-4)
    assert tuned.recipe.lr == 4e-4 and tuned.role == "selection"
    assert config_from_json(config_json(tuned)) == tuned  # a sweep child trains the same run
    row = dataset_row(tuned, {"params": 1e6, "val_loss": 3.0, "ece": None, "minutes": None})
    assert (row["lr"], row["role"]) == (4e-4, "selection") and "lr" not in dataset_row(
        plain, {"params": 1e6, "val_loss": 3.0, "ece": None, "minutes": None}
    )
    assert checkpoint_path(tmp_path / "t.csv", *tuned.key).name == "tiny-highway-seed2-lr0.0004.pt"
    assert checkpoint_path(tmp_path / "t.csv", *plain.key).name == "tiny-highway-seed2.pt"
    append_rows(tmp_path / "t.csv", [row])  # a new file gets the recipe columns
    assert (tmp_path / "t.csv").read_text().splitlines()[0].endswith(",lr,role")


def test_an_lr_off_the_recipe_is_off_recipe_so_the_published_file_refuses_it(published_copy):
    from conftest import stub_tokens  # the published corpus's description

    from rr_core.errors import RecipeError
    from rr_model.run.output_file import preflight

    tuned = selection_runs(published_copy.parent / "x.csv", "60M", ["highway"], [4e-4, 2e-4], [0]).todo
    tuned.sort(key=lambda c: -c.recipe.lr)  # the grid is planned lowest rate first
    assert recipe_differences(tuned[0], stub_tokens()) == ["lr 0.0004 (published: 0.0002)"]
    assert recipe_differences(tuned[1], stub_tokens()) == []  # the recipe's own rate is on it
    with pytest.raises(RecipeError, match="holds published rows, and this run is off the published recipe"):
        preflight(published_copy).guard(tuned[0], stub_tokens())
    row = dataset_row(tuned[1], {"params": 1e6, "val_loss": 3.0, "ece": None, "minutes": None})
    with pytest.raises(DataError, match="the file has no such column"):
        append_rows(published_copy, [row])  # the published file's columns stay its own


def test_choose_rate_takes_the_lowest_mean_among_complete_rates_and_flags_the_edge():
    c = choose_rate({1e-4: [3.2, 3.3], 2e-4: [3.0, 3.1], 4e-4: [3.04, 3.1], 8e-4: [2.5]}, seeds=2)
    assert (c.lr, c.edge, c.incomplete) == (
        2e-4,
        None,
        (8e-4,),
    )  # 8e-4's mean is lowest, but a seed is missing
    assert c.means == pytest.approx({1e-4: 3.25, 2e-4: 3.05, 4e-4: 3.07})
    top = choose_rate({1e-4: [3.2], 2e-4: [3.0]})
    assert top.edge == "highest" and "add 0.0004 to --lr" in top.advice
    assert choose_rate({1e-4: [3.0], 2e-4: [3.0]}).lr == 1e-4  # a tie goes to the smaller rate
    assert choose_rate({1e-4: [], 2e-4: []}) is None


def test_the_comparison_is_planned_at_each_variants_chosen_rate_from_the_file(tmp_path):
    path = _selection(
        tmp_path / "t.csv",
        {
            ("review_neutral", 5e-4): [4.9, 4.8],
            ("review_neutral", 1e-3): [4.7, 4.75],
            ("review_neutral", 2e-3): [4.72, 4.74],
            ("highway", 5e-4): [4.6, 4.7],
            ("highway", 1e-3): [4.8, 4.9],
            ("highway", 2e-3): [4.9, 5.0],
        },
    )
    first = selection_runs(path, "tiny", ["review_neutral", "highway"], [5e-4, 1e-3, 2e-3], [0, 1])
    assert not first.todo and len(first.skipped) == 12  # every selection row is there: nothing retrained
    picked = choices(first.output, "tiny", ["review_neutral", "highway"], [5e-4, 1e-3, 2e-3], [0, 1])
    assert picked["review_neutral"].lr == 1e-3 and picked["review_neutral"].edge is None
    assert picked["highway"].lr == 5e-4 and picked["highway"].edge == "lowest"
    second = comparison_runs(first.output, "tiny", {v: c.lr for v, c in picked.items()}, [2, 3])
    assert [c.key for c in second.todo] == [
        ("tiny", "review_neutral", 2, 1e-3),
        ("tiny", "highway", 2, 5e-4),
        ("tiny", "review_neutral", 3, 1e-3),
        ("tiny", "highway", 3, 5e-4),
    ]
    assert {c.role for c in second.todo} == {"comparison"}

    result = rr("tune", "--size", "tiny", "--variant", "review_neutral", "--variant", "highway",
                "--lr", "5e-4,1e-3,2e-3", "--select-seeds", "0,1", "--seeds", "2,3", "--corpus", "synthetic", "--steps", "4",
                "--out", path, "--dry-run")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "rr tune: selection: 0 run(s) to train, 12 already in" in result.output
    assert "rr tune: comparison: 4 run(s) to train, 0 already in" in result.output
    assert "the best rate 0.0005 is the grid's lowest" in result.output
    plan = [line.split() for line in result.output.splitlines() if line.startswith("tiny ")][
        :4
    ]  # then memory
    assert [(p[1], p[2], p[3]) for p in plan] == [
        ("review_neutral", "2", "0.001"),
        ("highway", "2", "0.0005"),
        ("review_neutral", "3", "0.001"),
        ("highway", "3", "0.0005"),
    ]


def test_a_fresh_tuning_dry_run_plans_the_grid_and_defers_the_comparison(tmp_path):
    result = rr("tune", "--size", "tiny", "--variant", "review_neutral", "--variant", "highway",
                "--lr", "1e-3,2e-3", "--select-seeds", "0", "--seeds", "1,2", "--corpus", "synthetic",
                "--out", tmp_path / "t.csv", "--dry-run")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "rr tune: selection: 4 run(s) to train, 0 already in" in result.output
    assert "planned once every selection row is in" in result.output
    assert not (tmp_path / "t.csv").exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--lr", "1e-3,abc"], "'abc' is not a learning rate"),
        (["--lr", "1e-3,0"], "'0' is not a learning rate"),
        (["--lr", "1e-3,1e-3"], "a rate is given twice"),
        (["--lr", "1e-3", "--select-seeds", "0,1", "--seeds", "1,2"], "seed(s) 1 are in both"),
    ],
)
def test_a_grid_or_seed_sets_a_tuning_cannot_use_are_one_error(tmp_path, args, said):
    given = {"--lr": "1e-3", "--select-seeds": "0", "--seeds": "1"} | dict(
        zip(args[::2], args[1::2], strict=True)
    )
    result = rr("tune", "--size", "tiny", "--corpus", "synthetic", "--out", tmp_path / "t.csv", "--dry-run",
                *[x for kv in given.items() for x in kv])  # fmt: skip
    assert result.exit_code == 2 and said in result.output and "Traceback" not in result.output


def test_each_row_of_one_seed_at_two_rates_joins_its_own_run_record(tmp_path):
    from rr_core.sweepfile.provenance import append_record, join, sidecar_path

    path = tmp_path / "t.csv"
    path.write_text(
        HEADER
        + "tiny,highway,0,1.18,4,3.5,0.1,,0.0002,selection\n"
        + "tiny,highway,0,1.18,4,3.4,0.1,,0.0004,selection\n"
    )
    for run, (lr, loss) in enumerate(((2e-4, 3.5), (4e-4, 3.4))):
        append_record(
            sidecar_path(path),
            {
                "run_id": f"r{run}",
                "size": "tiny",
                "variant": "highway",
                "seed": 0,
                "lr": lr,
                "role": "selection",
                "status": "ok",
                "environment": {"toolkit": "x", "git_commit": None, "device_name": "cpu"},
                "config": {"precision": "tf32"},
                "started": "s",
                "ended": "e",
                "result": {"val_loss": loss, "ece": 0.1},
            },
        )
    joined = join(load_sweep(path))
    assert joined["run_id"].tolist() == ["r0", "r1"] and joined["record_agrees"].tolist() == [True, True]


def test_part_files_of_one_seed_at_two_rates_merge_as_two_runs(tmp_path):
    """`rr tune --launcher slurm --per-run-files` writes a part file per run; rr merge joins them."""
    from rr_core.sweepfile.merge import merge_sweeps

    parts = []
    for lr, loss in ((2e-4, 3.5), (4e-4, 3.4), (4e-4, 3.4)):  # the last a copy of the second
        parts.append(tmp_path / f"p{len(parts)}.csv")
        parts[-1].write_text(HEADER + f"tiny,highway,0,1.18,4,{loss},,,{lr!r},selection\n")
    summary = merge_sweeps(parts, tmp_path / "merged.csv")
    merged = load_sweep(tmp_path / "merged.csv")
    assert (summary["rows"], summary["copies"]) == (2, 1)
    assert merged["lr"].tolist() == [2e-4, 4e-4] and merged["role"].tolist() == ["selection"] * 2


def test_a_slurm_dry_run_lists_each_job_with_its_rate(tmp_path):
    result = rr("tune", "--size", "tiny", "--variant", "highway", "--lr", "1e-3,2e-3", "--select-seeds", "0",
                "--seeds", "1", "--corpus", "synthetic", "--out", tmp_path / "t.csv", "--launcher", "slurm",
                "--dry-run")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "rr tune: 2 job(s) would be submitted" in result.output and "#SBATCH" in result.output
    jobs = [line.split() for line in result.output.splitlines() if line.lstrip().startswith(("0 ", "1 "))]
    assert [(j[2], j[4]) for j in jobs[:2]] == [("highway", "0.001"), ("highway", "0.002")]


def test_the_library_tunes_in_one_call_and_says_each_step_when_it_happens(tmp_path):
    """`tune` from Python (no command line): with every selection row in the file, its dry run picks each
    variant's rate and plans the comparison at it, telling its `Watch` each step in order; on a fresh file
    it plans the grid and says why the comparison waits."""
    from rr_model.sweep.tuning_runs import Watch

    path = _selection(
        tmp_path / "t.csv",
        {("highway", 5e-4): [4.6, 4.7], ("highway", 1e-3): [4.8, 4.9], ("highway", 2e-3): [4.9, 5.0]},
    )
    heard = []

    class Listen(Watch):
        def starting(self, phase, runs):
            heard.append(("starting", phase, len(runs.todo), len(runs.skipped)))

        def launched(self, phase, done):
            heard.append(("launched", phase, len(done.todo)))

        def chosen(self, size, picked):
            heard.append(("chosen", size, {v: c.lr for v, c in picked.items()}))

    options = {"data": "synthetic", "steps": 4}
    plan = Tuning("tiny", (5e-4, 1e-3, 2e-3), (0, 1), (2, 3), ("highway",), out=path, dry_run=True)
    done = tune(plan, watch=Listen(), **options)
    assert heard == [
        ("starting", "selection", 0, 6),
        ("launched", "selection", 0),
        ("chosen", "tiny", {"highway": 5e-4}),  # means 4.65, 4.85, 4.95: the lowest mean
        ("starting", "comparison", 2, 0),
        ("launched", "comparison", 2),
    ]
    assert done.waiting is None and not done.crashed and done.comparison.summary == []
    assert [c.key for c in done.comparison.todo] == [
        ("tiny", "highway", 2, 5e-4),
        ("tiny", "highway", 3, 5e-4),
    ]

    fresh = tune(
        Tuning("tiny", (1e-3, 2e-3), (0,), (1, 2), ("highway",), tmp_path / "new.csv", True), **options
    )
    assert len(fresh.selection.todo) == 2 and fresh.comparison is None and fresh.picked is None
    assert fresh.waiting.startswith("the comparison runs (2 seed(s) x 1 variant(s), each at its chosen rate)")
    assert not (tmp_path / "new.csv").exists()


@pytest.mark.parametrize("sizes", [["--size", "tiny", "--size", "60M"], ["--size", "tiny,60M"]])
def test_two_sizes_are_refused_naming_both_never_the_last_tuned(tmp_path, sizes):
    result = rr("tune", *sizes, "--lr", "1e-3,2e-3", "--select-seeds", "0", "--seed", "1", "--corpus", "synthetic",
                "--out", tmp_path / "t.csv", "--dry-run")  # fmt: skip
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "rr: error: --size tiny, 60M: rr tune tunes one size at a time" in result.stderr
    assert "rr tune: selection" not in result.stdout and not (tmp_path / "t.csv").exists()


def test_the_library_reads_the_grid_seeds_and_size_as_the_command_line_gives_them(tmp_path):
    """`rates`, `one_size` and `tune` take rr tune's text as given, or numbers from Python, and refuse a
    value that is not one in the command line's words."""
    assert rates("1e-4, 2e-4,,8e-4") == pytest.approx([1e-4, 2e-4, 8e-4], rel=1e-12)
    assert rates([4e-4, 1e-3]) == pytest.approx([4e-4, 1e-3], rel=1e-12)
    for given, item in (
        ("1e-3,abc", "'abc'"),
        ("1e-3,0", "'0'"),
        ("-2e-4", "'-2e-4'"),
        ("inf", "'inf'"),
        ([1e-3, float("nan")], "'nan'"),
    ):
        with pytest.raises(
            InputError, match=re.escape(f"{item} is not a learning rate (a finite number > 0")
        ):
            rates(given)
    assert one_size("tiny") == "tiny" and one_size(["60M", "60M"]) == "60M"
    with pytest.raises(InputError, match=re.escape("--size tiny, 60M: rr tune tunes one size at a time")):
        one_size(["tiny", "60M"])
    out = tmp_path / "t.csv"
    texts = tune(Tuning("tiny", "2e-3, 1e-3", "0", "1,2", ("highway",), out, True), data="synthetic")
    numbers = tune(Tuning(("tiny",), (1e-3, 2e-3), (0,), (1, 2), ("highway",), out, True), data="synthetic")
    assert [c.key for c in texts.selection.todo] == [
        ("tiny", "highway", 0, 1e-3),
        ("tiny", "highway", 0, 2e-3),
    ]
    assert [c.key for c in numbers.selection.todo] == [c.key for c in texts.selection.todo]
    with pytest.raises(InputError, match=re.escape("--seed '1,y': expected comma-separated integers >= 0")):
        tune(Tuning("tiny", "1e-3", "0", "1,y", out=out, dry_run=True), data="synthetic")

"""Separate seeds (`--init-seed`, `--data-seed`): each defaults to `--seed`, so a run is unchanged bit for bit;
given, the initial weights and the data order follow them, the record and the row keep them (the optional
columns init_seed and data_seed), and the analysis pairs arms on the data seed (`rr_analysis.comparison.PAIR`).

The runs here use tiny's shape with a 64-token context and 4 validation batches, 3 steps.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import rr
from statsmodels.stats.weightstats import ttost_paired

from rr_analysis.comparison import STAMP
from rr_analysis.stats.equivalence import equivalence
from rr_analysis.stats.gap_tests import paired_table
from rr_analysis.stats.mixed import mixed_table
from rr_analysis.stats.seeds import SEED_COLUMNS, crossed_reml, seed_components
from rr_core.errors import InputError
from rr_core.ladder import get_size
from rr_core.shapes import model_config
from rr_core.sweepfile.csv_text import FIELDS, DataError
from rr_core.sweepfile.dataset import load_sweep, read_sweep_text, write_sweep
from rr_core.sweepfile.integrity import check_integrity
from rr_core.sweepfile.metrics_log import load_evals, metrics_path, read_metrics
from rr_model.config import TrainConfig
from rr_model.data.token_cache import load_tokens
from rr_model.data.windows import sample_batch
from rr_model.model import GPT
from rr_model.run.identity import result_config
from rr_model.run.trainer import train

pytestmark = pytest.mark.usefixtures("offline")

RECIPE = replace(get_size("tiny").recipe, block_size=64, eval_batches=4)
RUN = {
    "size": "tiny",
    "variant": "review_neutral",
    "data": "synthetic",
    "steps": 3,
    "log_every": 1,
    "checkpoint_every": 0,
    "recipe": RECIPE,
}


@pytest.fixture(scope="module")
def runs(token_cache, tmp_path_factory):
    """seed 0 as published (plain.csv); seed 0 naming its own seeds 0 and 0, and seed 5 with init seed 0 and
    data seed 1, read at its last step (both in own.csv, the first creating its columns)."""
    folder = tmp_path_factory.mktemp("seeds")
    found = {}
    for name, out, seeds in (
        ("plain", "plain.csv", {}),
        ("named", "own.csv", {"init_seed": 0, "data_seed": 0}),
        ("apart", "own.csv", {"seed": 5, "init_seed": 0, "data_seed": 1, "eval_every": 3, "eval_windows": 8}),
    ):
        cfg = TrainConfig(**{**RUN, **seeds}, cache_dir=str(token_cache))
        found[name] = {**train(cfg, folder / out), "out": folder / out}
    return found


def test_the_seeds_default_to_the_seed_and_are_checked():
    assert TrainConfig("tiny", seed=3).seeds == (3, 3) and not TrainConfig("tiny", seed=3).own_seeds
    cfg = TrainConfig("tiny", seed=3, data_seed=5)
    assert (cfg.seeds.init, cfg.seeds.data, cfg.own_seeds) == (3, 5, True)
    # a checkpoint's identity holds a seed only where it is not the run's seed: 0 given or not is one run
    assert "init_seed" not in result_config(TrainConfig("tiny", init_seed=0))
    assert result_config(cfg)["data_seed"] == 5 and "init_seed" not in result_config(cfg)
    with pytest.raises(InputError, match=r"data_seed 4294967296 must be in 0 \.\. 2\*\*32 - 1"):
        TrainConfig("tiny", data_seed=2**32)
    with pytest.raises(InputError, match="init_seed '1' must be an integer"):
        TrainConfig("tiny", init_seed="1")


def test_naming_the_seed_as_both_changes_no_bit(runs):
    plain, named = runs["plain"], runs["named"]
    assert (
        named["loss_curve"] == plain["loss_curve"]
        and named["result"]["val_loss"] == plain["result"]["val_loss"]
    )
    assert (plain["init_seed"], plain["data_seed"]) == (0, 0) == (named["init_seed"], named["data_seed"])
    # the default row and header are as ever; a run naming its seeds writes both columns
    assert plain["out"].read_text().splitlines()[0] == ",".join(FIELDS)
    own = load_sweep(named["out"])
    assert own[["seed", "init_seed", "data_seed"]].values.tolist() == [[0, 0, 0], [5, 0, 1]]
    assert own["val_loss"].iloc[0] == load_sweep(plain["out"])["val_loss"].iloc[0]
    start = read_metrics(metrics_path(named["out"], "tiny", "review_neutral", 5))[0]
    assert (start["event"], start["init_seed"], start["data_seed"]) == ("start", 0, 1)
    assert "init_seed" not in read_metrics(metrics_path(plain["out"], "tiny", "review_neutral", 0))[0]
    # the validation curve's reader names each run's seeds, to pair curves on the data seed
    evals = load_evals([named["out"]])
    assert evals[["seed", "init_seed", "data_seed", "step"]].values.tolist() == [[5, 0, 1, 3]]


def test_the_weights_follow_the_init_seed_and_the_batches_the_data_seed(runs, token_cache):
    apart = runs["apart"]
    assert (apart["seed"], apart["init_seed"], apart["data_seed"]) == (5, 0, 1)
    assert (
        apart["config"]["init_seed"] == 0 and apart["val_windows"]["seed"] == 1
    )  # the windows follow the data
    # its first reading is the loss of seed 0's initial weights on seed 1's first batch, drawn here by hand
    tokens = load_tokens("synthetic", n_text=RECIPE.n_text, cache_dir=token_cache, val_frac=RECIPE.val_frac)
    torch.manual_seed(0)
    model = GPT(replace(model_config("tiny", "review_neutral", tokens.vocab_size), block_size=64))
    x, y = sample_batch(tokens.train, np.random.RandomState(1), RECIPE.batch_size, RECIPE.block_size)
    with torch.no_grad():
        _, loss = model(torch.from_numpy(x), torch.from_numpy(y))
    assert apart["loss_curve"][0][1] == pytest.approx(loss.item(), rel=1e-6)
    assert apart["loss_curve"][0][1] != pytest.approx(runs["plain"]["loss_curve"][0][1], rel=1e-6)


def test_a_run_naming_its_seeds_is_refused_by_a_file_without_the_columns(runs):
    plain = runs["plain"]["out"]
    args = ["train", "--size", "tiny", "--corpus", "synthetic", "--variant", "standard", "--steps", 3]
    result = rr(*args, "--data-seed", 1, "--out", plain, "--dry-run")
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert (
        "its row would be refused" in message
        and "column data_seed" in message
        and "no such column" in message
    )


def test_the_seed_columns_read_empty_as_the_seed_and_refuse_what_is_not_a_seed(tmp_path):
    header = ",".join([*FIELDS, "init_seed", "data_seed"])
    text = f"{header}\ntiny,standard,0,1.1,10,3.0,,,,2\ntiny,standard,1,1.1,10,3.1,,,7,\n"
    df = read_sweep_text(text)
    assert df["init_seed"].isna().tolist() == [True, False] and df["data_seed"].tolist()[0] == 2
    write_sweep(df, tmp_path / "back.csv")
    assert (tmp_path / "back.csv").read_text() == text  # written back as integers, empty where empty
    bad = f"{header}\ntiny,standard,0,1.1,10,3.0,,,1.5,-1\ntiny,standard,1,1.1,10,3.1,,,4294967296,\n"
    with pytest.raises(DataError) as e:
        read_sweep_text(bad, "bad.csv")
    shown = [str(p) for p in e.value.problems]
    assert (
        shown[0] == "line 2, column data_seed: -1 - must be an integer in 0 .. 2^32 - 1 or empty (the seed)"
    )
    assert shown[1] == "line 2, column init_seed: '1.5' - is not an integer"
    assert shown[2].startswith("line 3, column init_seed: 4294967296 - must be an integer in 0 .. 2^32 - 1")


def test_a_row_of_other_seeds_is_not_the_published_run_of_its_key(sweep):
    rows = sweep.copy()
    rows["init_seed"], rows["data_seed"] = np.nan, np.nan
    rows.loc[0, "data_seed"] = rows.loc[0, "seed"] + 1
    rows.loc[0, "val_loss"] += 0.1
    report = check_integrity(rows)
    assert (report.present, report.added, report.changed) == (41, 1, [])


def _sweep(rows: list[tuple]) -> pd.DataFrame:
    """A sweep of one size from (variant, seed, data_seed or None, val_loss) rows."""
    df = pd.DataFrame(rows, columns=["variant", "seed", "data_seed", "val_loss"])
    df = df.assign(size="S1", params_M=10.0, steps=100, ece=np.nan, minutes=np.nan, init_seed=np.nan)
    df["data_seed"] = df["data_seed"].astype(float)
    df["size"] = pd.Categorical(df["size"], categories=["S1"], ordered=True)
    return df


def test_the_analysis_pairs_arms_on_the_data_seed():
    # the baseline's runs are labelled seeds 10..13 but trained on the reference's batches 0..3
    ref = [0.50, 0.40, 0.60, 0.45]
    gap = [0.010, 0.014, 0.008, 0.012]
    rows = [("review_neutral", s, None, y) for s, y in enumerate(ref)]
    rows += [("highway", 10 + s, s, y + g) for s, (y, g) in enumerate(zip(ref, gap, strict=True))]
    p = paired_table(_sweep(rows)).iloc[0]
    d = np.array(gap)
    assert p["n_pairs"] == 4 and p["paired_diff"] == pytest.approx(d.mean(), rel=1e-12)
    assert p["paired_t"] == pytest.approx(d.mean() / (d.std(ddof=1) / 2), rel=1e-9)
    # without the column, the seeds pair as labelled: none is shared
    assert paired_table(_sweep(rows).drop(columns="data_seed")).iloc[0]["n_pairs"] == 0
    m = mixed_table(_sweep(rows)).iloc[0]
    assert m["mixed_method"] == "closed form, complete seed blocks"
    assert m["mixed_coef"] == pytest.approx(d.mean(), rel=1e-9)  # complete blocks: the difference of means
    base = np.array(ref) + d
    tost = ttost_paired(base, np.array(ref), -0.05, 0.05)[0]  # statsmodels on the pairs by hand
    assert equivalence(_sweep(rows), margin=0.05).iloc[0]["paired_tost_p"] == pytest.approx(tost, rel=1e-9)


def test_an_arms_runs_of_one_data_seed_pair_as_their_mean():
    # two init seeds per data seed in each arm: four data seeds, each a pair of means
    ref = {0: (0.50, 0.52), 1: (0.40, 0.43), 2: (0.60, 0.58), 3: (0.45, 0.44)}
    base = {0: (0.51, 0.54), 1: (0.42, 0.44), 2: (0.61, 0.60), 3: (0.47, 0.45)}
    rows, label = [], 0
    for variant, arm in (("review_neutral", ref), ("highway", base)):
        for data, ys in arm.items():
            for y in ys:
                rows.append((variant, label, data, y))
                label += 1
    df = _sweep(rows)
    d = np.array([np.mean(base[k]) - np.mean(ref[k]) for k in range(4)])
    p = paired_table(df).iloc[0]
    assert p["n_pairs"] == 4 and p["paired_diff"] == pytest.approx(d.mean(), rel=1e-12)
    assert p["paired_se"] == pytest.approx(d.std(ddof=1) / 2, rel=1e-9)
    m = mixed_table(df).iloc[0]
    assert m["mixed_method"] == "REML, data-seed blocks, repeated runs"
    assert m["mixed_coef"] == pytest.approx(d.mean(), rel=1e-6)  # balanced: the difference of means


# ------------------------------------------------------------------------------------------ seed components


def test_a_component_below_zero_is_held_at_zero_and_pooled_into_the_residual():
    # 3 init x 2 data x 2 runs: the init seeds' means are nearly equal, so MS_init < MS_e
    y = np.array([[[1.00, 1.02], [1.10, 1.07]], [[1.01, 1.00], [1.09, 1.11]], [[0.99, 1.02], [1.10, 1.08]]])
    grand, rows, cols = y.mean(), y.mean(axis=(1, 2)), y.mean(axis=(0, 2))
    ss_a, ss_b = 4 * ((rows - grand) ** 2).sum(), 6 * ((cols - grand) ** 2).sum()
    ss_e = ((y - rows[:, None, None] - cols[None, :, None] + grand) ** 2).sum()
    assert ss_a / 2 < ss_e / 8  # the case: init's mean square under the residual's (8 = 12 - 3 - 2 + 1 df)
    fit = crossed_reml(y)
    pooled = (ss_e + ss_a) / 10
    assert fit["init_var"] == 0 and fit["resid_var"] == pytest.approx(pooled, rel=1e-12)
    assert fit["data_var"] == pytest.approx((ss_b - pooled) / 6, rel=1e-12)
    assert (fit["df_init"], fit["df_data"], fit["df_resid"]) == (2, 1, 8)


def test_seed_components_say_why_a_file_has_none(sweep):
    got = seed_components(sweep)
    assert len(got) == 15 and got["init_var"].isna().all() and got["mean"].notna().all()
    assert (
        got["note"]
        .str.startswith("init and data seeds not crossed evenly (each run's one seed set both")
        .all()
    )
    assert list(got.columns) == [*SEED_COLUMNS, *STAMP]


def test_rr_analyze_seeds_reads_a_crossed_file(tmp_path):
    rows = [
        dict(
            size="tiny",
            variant="standard",
            seed=2 * i + d,
            params_M=1.13,
            steps=100,
            val_loss=3.0 + 0.01 * i + 0.03 * d + 0.002 * (i == d),
            ece=None,
            minutes=None,
            init_seed=i,
            data_seed=d,
        )
        for i in (0, 1)
        for d in (0, 1)
    ]
    write_sweep(pd.DataFrame(rows), tmp_path / "pilot.csv")
    result = rr("analyze", "seeds", "--data", tmp_path / "pilot.csv", "--format", "json")
    assert result.exit_code == 0, result.output
    (got,) = json.loads(result.stdout)
    # by hand: MS_init = 1e-4, MS_data = 9e-4, MS_e = 4e-6, each on one df
    assert got["init_var"] == pytest.approx((1e-4 - 4e-6) / 2, rel=1e-6)
    assert got["data_var"] == pytest.approx((9e-4 - 4e-6) / 2, rel=1e-6)
    assert got["resid_var"] == pytest.approx(4e-6, rel=1e-6) and got["note"] == ""
    text = rr("analyze", "seeds", "--data", tmp_path / "pilot.csv").stdout
    assert "Seed components" in text and "2 x 2" in text


@pytest.mark.slow  # four tiny runs of 100 steps: a few minutes on two shared cores
def test_a_two_by_two_pilot_gives_the_components_of_init_and_data(tmp_path, token_cache):
    out = tmp_path / "pilot.csv"
    for i in (0, 1):
        for d in (0, 1):
            cfg = TrainConfig(
                "tiny", data="synthetic", seed=2 * i + d, init_seed=i, data_seed=d, cache_dir=str(token_cache)
            )
            train(cfg, out)
    df = load_sweep(out)
    got = seed_components(df).iloc[0]
    y = df.set_index(["init_seed", "data_seed"])["val_loss"]
    y = np.array([[y[(i, d)] for d in (0.0, 1.0)] for i in (0.0, 1.0)])
    ms = {"init": 2 * y.mean(axis=1).var(ddof=1), "data": 2 * y.mean(axis=0).var(ddof=1)}  # one df each
    pooled, df_e = (y[0, 0] - y[0, 1] - y[1, 0] + y[1, 1]) ** 2 / 4, 1  # the interaction contrast: residual
    zero = set()
    for name in sorted(ms, key=ms.get):  # a mean square under the residual's is a component at 0, pooled
        if ms[name] < pooled:
            pooled, df_e = (pooled * df_e + ms[name]) / (df_e + 1), df_e + 1
            zero.add(name)
    assert (got["n_init"], got["n_data"], got["replicates"]) == (2, 2, 1) and got["method"].startswith(
        "exact"
    )
    assert got["resid_var"] == pytest.approx(pooled, rel=1e-9)
    for name in ms:
        want = 0.0 if name in zero else (ms[name] - pooled) / 2
        assert got[f"{name}_var"] == pytest.approx(want, rel=1e-9, abs=1e-15)
    result = rr("analyze", "seeds", "--data", out)
    assert result.exit_code == 0 and "2 x 2" in result.stdout, result.output

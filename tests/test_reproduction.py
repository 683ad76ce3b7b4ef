"""`rr analyze reproduction`: each verdict on constructed reproduction files (an exact copy, a small offset,
one far-off row, published keys not re-run, a row that is no re-run), and the paired t-test and TOST over
all re-runs against scipy and statsmodels."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import rr
from scipy import stats
from statsmodels.stats.weightstats import ttost_paired

from rr_analysis.stats.reproduction import MARGIN_FRACTION, NOISE_FRACTION, reproduction
from rr_core.errors import InputError
from rr_core.sweepfile.dataset import load_sweep, write_sweep


@pytest.fixture(scope="module")
def sweep() -> pd.DataFrame:
    """The published rows as a frame built in code (no file behind it), which `reproduction` takes as
    re-runs; a file's rows are judged by their records (`test_the_published_rows_given_as_data_...`)."""
    df = load_sweep()
    df.attrs = {}
    return df


def offset(sweep: pd.DataFrame, sizes=("60M", "150M"), shift=0.0003, jitter=0.0002) -> pd.DataFrame:
    """Re-runs of `sizes`: the published values moved by `shift` plus Gaussian jitter, at 4 decimals."""
    rows = sweep[sweep["size"].isin(sizes)].copy()
    rng = np.random.default_rng(0)
    rows["val_loss"] = (rows["val_loss"] + shift + rng.normal(0, jitter, len(rows))).round(4)
    return rows


def test_exact_copy_is_reproduced_within_rounding(sweep):
    r = reproduction(sweep.copy())
    assert (r["verdict"] == "reproduced within rounding").all() and (r["diff"] == 0).all()
    assert r["pooling"].iloc[0] == "safe: every re-run equals its published row"
    assert np.isnan(r["t"].iloc[0]) and "no spread to test with" in r["test_note"].iloc[0]
    assert r["not_rerun"].iloc[0] == 0 and r["n"].iloc[0] == 42
    assert (r["rounding_high"] - r["published"]).round(10).eq(0.00005).all()


def test_small_offset_paired_t_and_tost_against_scipy_and_statsmodels(sweep):
    repro = offset(sweep)
    r = reproduction(repro)
    pairs = repro.merge(sweep, on=["size", "variant", "seed"], suffixes=("_r", "_p"))
    a, b = pairs["val_loss_r"].to_numpy(), pairs["val_loss_p"].to_numpy()
    res = stats.ttest_rel(a, b)
    top = r.iloc[0]
    assert top["t"] == pytest.approx(res.statistic, rel=1e-12) and top["p"] == pytest.approx(
        res.pvalue, rel=1e-12
    )
    assert top["df"] == len(a) - 1 and top["mean_offset"] == pytest.approx((a - b).mean())
    # the default margin: a tenth of the pooled published between-seed SD of the cells re-run
    sd = sweep[sweep["size"].isin(["60M", "150M"])].groupby(["size", "variant"])["val_loss"].std()
    margin = MARGIN_FRACTION * np.sqrt((sd**2).mean())
    assert top["margin"] == pytest.approx(margin)
    assert top["tost_p"] == pytest.approx(ttost_paired(a, b, -margin, margin)[0], rel=1e-12)
    # TOST by hand: the larger of the two one-sided p on n - 1 df
    d = a - b
    se = d.std(ddof=1) / np.sqrt(len(d))
    by_hand = max(
        stats.t.sf((d.mean() + margin) / se, len(d) - 1), stats.t.cdf((d.mean() - margin) / se, len(d) - 1)
    )
    assert top["tost_p"] == pytest.approx(by_hand, rel=1e-10)
    assert top["p"] < 0.05 and top["tost_p"] < 0.05  # a detectable offset, yet well inside the margin
    assert top["pooling"].startswith("safe: the mean offset is within")
    assert set(r["verdict"]) <= {"within same-seed noise", "reproduced within rounding"}
    assert top["not_rerun"] == 42 - 18


def test_one_far_off_row_is_outside_noise(sweep):
    repro = sweep.copy()
    far = (repro["size"] == "590M") & (repro["variant"] == "highway") & (repro["seed"] == 1)
    repro.loc[far, "val_loss"] += 0.05
    r = reproduction(repro).set_index(["size", "variant", "seed"])
    row = r.loc[("590M", "highway", 1)]
    assert row["verdict"] == "outside same-seed noise" and row["diff"] == pytest.approx(0.05)
    sd = sweep[(sweep["size"] == "590M") & (sweep["variant"] == "highway")]["val_loss"].std()
    assert row["diff_in_sd"] == pytest.approx(0.05 / sd) and row["noise"] == pytest.approx(
        NOISE_FRACTION * sd
    )
    assert (r["verdict"] == "reproduced within rounding").sum() == 41
    assert r["pooling"].iloc[0].startswith("not shown")  # one row far off: the offset is not shown small


def test_noise_and_margin_options_and_their_sources(sweep):
    r = reproduction(offset(sweep), noise=0.0001, margin=0.01)
    assert (r["noise"] == 0.0001).all() and r["noise_source"].iloc[0] == "--noise 0.0001"
    assert r["margin_source"].iloc[0] == "--margin 0.01"
    assert "outside same-seed noise" in set(r["verdict"])  # 0.0003 offsets are beyond 2 x 0.0001
    assert "assumed, not measured" in reproduction(sweep.copy())["noise_source"].iloc[0]
    with pytest.raises(InputError, match="--noise must be a number >= 0"):
        reproduction(sweep.copy(), noise=-1.0)


def test_two_reruns_measure_the_same_seed_noise(sweep):
    a, b = offset(sweep, shift=0.0), offset(sweep, shift=0.0, jitter=0.0003)
    r = reproduction(b, published=a)
    assert r["rms_offset"].iloc[0] == pytest.approx(
        np.sqrt(np.mean((b["val_loss"].to_numpy() - a["val_loss"].to_numpy()) ** 2))
    )


def test_a_row_that_is_no_rerun_is_a_sentence(sweep, tmp_path):
    new_seed = sweep.iloc[[0]].assign(seed=9)
    path = tmp_path / "repro.csv"
    write_sweep(pd.concat([sweep.iloc[:3], new_seed]), path)
    with pytest.raises(
        InputError, match="1 row\\(s\\) are not re-runs of a published run .*60M review_neutral seed 9"
    ):
        reproduction(load_sweep(path))
    out = rr("analyze", "reproduction", "--data", str(path))
    assert (
        out.exit_code == 2
        and "not re-runs of a published run" in out.output
        and "Traceback" not in out.output
    )


def test_cli_json_carries_every_number(sweep, tmp_path):
    path = tmp_path / "repro.csv"
    write_sweep(offset(sweep), path)
    out = rr("analyze", "reproduction", "--data", str(path), "--format", "json")
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert len(rows) == 18
    for key in (
        "published",
        "reproduced",
        "diff",
        "seed_sd",
        "diff_in_sd",
        "noise",
        "mean_offset",
        "t",
        "df",
        "p",
        "margin",
        "tost_p",
    ):
        assert isinstance(rows[0][key], float), key
    text = rr("analyze", "reproduction", "--data", str(path))
    assert (
        "rr: warning" not in text.output
        and "pooling is safe" in text.output
        and "same-seed noise: assumed" in text.output
    )


def test_the_published_rows_given_as_data_are_named_as_such_not_taken_as_reruns(published_copy):
    """Issue 49.4: `rr analyze reproduction --data` on the published rows themselves said "pooling is safe:
    every re-run equals its published row"; rows with the published value and no run record are no re-runs."""
    from rr_analysis.stats.reproduction import ITSELF

    r = reproduction(load_sweep(published_copy))
    assert (r["verdict"] == ITSELF).all() and r["n"].iloc[0] == 0
    assert r["pooling"].iloc[0].startswith("not judged: the file holds the published rows themselves")
    out = rr("analyze", "reproduction", "--data", str(published_copy), "--format", "json")
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert {row["verdict"] for row in rows} == {ITSELF} and "safe" not in rows[0]["pooling"]

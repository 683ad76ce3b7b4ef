"""The gap over training (`rr analyze curves`, `rr plot curves --gap`: rr_analysis.stats.training_gap): the
seed-paired gap at each logged step, its trend over the last half and the tokens to target, against scipy
and arithmetic on metrics logs written here; and on a real tiny sweep (slow)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import rr
from scipy import stats

from rr_analysis.comparison import Comparison
from rr_analysis.stats.training_gap import gap_slopes, steps_to_reach, training_gap
from rr_core.errors import InputError
from rr_core.ladder import get_size

STEPS = np.arange(5, 45, 5)  # logged every 5 steps of 40
VAL_STEPS = np.arange(10, 50, 10)  # periodic validation every 10
TOKENS_PER_STEP = get_size("tiny").recipe.batch_size * get_size("tiny").recipe.block_size  # 8 x 256
DATA_SEEDS = {
    "review_neutral": [0, 1, 2, 3],
    "standard": [1, 0, 3, 2],
}  # standard's seed s read data seed ...
EFFECTS = {  # the baseline's excess loss at step t: a gap that shrinks, holds or grows over training
    "shrinks": lambda t: 0.05 + 0.4 / t,
    "holds": lambda t: 0.05 + 0 * t,
    "grows": lambda t: 0.05 + 0.001 * t,
}


def _losses(effect: str, steps: np.ndarray, offset: int) -> dict[tuple[str, int], np.ndarray]:
    """Each run's loss at `steps`: a shared curve, the baseline's effect, noise of its data seed (the same
    batches for both arms: it cancels in the pair), a per-run offset and a little per-reading noise."""
    rng = np.random.default_rng(7 + offset)
    batch = {d: rng.normal(0, 0.05, len(steps)) for d in range(4)}
    out = {}
    for variant, data_seeds in DATA_SEEDS.items():
        for seed, d in enumerate(data_seeds):
            extra = EFFECTS[effect](steps) if variant == "standard" else 0.0
            out[variant, seed] = (
                3
                + 6 / np.sqrt(steps)
                + extra
                + batch[d]
                + rng.normal(0, 0.005)
                + rng.normal(0, 5e-4, len(steps))
            )
    return out


def _sweep(folder, effect: str = "shrinks", *, drop_log: tuple | None = None) -> tuple:
    """A sweep file of 4 seeds of review_neutral and standard (tiny, 40 steps, a data_seed column), its sidecar
    and the runs' metrics logs in the trainer's format, with periodic validation; returns (path, train losses,
    val losses) by (variant, seed)."""
    train, val = _losses(effect, STEPS, 0), _losses(effect, VAL_STEPS, 1)
    rows, records = ["size,variant,seed,params_M,steps,val_loss,ece,minutes,data_seed"], []
    (folder / "s.metrics").mkdir()
    for (variant, seed), loss in train.items():
        rows.append(
            f"tiny,{variant},{seed},1.12,40,{val[variant, seed][-1]:.6f},,,{DATA_SEEDS[variant][seed]}"
        )
        records.append(
            {"size": "tiny", "variant": variant, "seed": seed, "status": "ok", "config": {"steps": 40}}
        )
        if (variant, seed) == drop_log:
            continue
        events = [
            {"event": "start", "step": 0, "size": "tiny", "variant": variant, "seed": seed, "resumed": False}
        ]
        events += [
            {"event": "train", "step": int(s), "loss": float(v), "lr": 1e-3}
            for s, v in zip(STEPS, loss, strict=True)
        ]
        events += [
            {
                "event": "eval",
                "step": int(s),
                "tokens": int(s) * TOKENS_PER_STEP,
                "val_loss": float(v),
                "periodic": True,
            }
            for s, v in zip(VAL_STEPS, val[variant, seed], strict=True)
        ]
        events.append({"event": "eval", "step": 40, "val_loss": float(val[variant, seed][-1]), "ece": 0.1})
        log = folder / "s.metrics" / f"tiny-{variant}-seed{seed}.jsonl"
        log.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    (folder / "s.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (folder / "s.runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return folder / "s.csv", train, val


def _pairs(losses: dict, pair_on_data_seed: bool = True) -> np.ndarray:
    """Seeds x steps of standard - review_neutral, standard's runs matched to Review's by data seed."""
    by_data = (
        {DATA_SEEDS["standard"][s]: s for s in range(4)} if pair_on_data_seed else {s: s for s in range(4)}
    )
    return np.array([losses["standard", by_data[d]] - losses["review_neutral", d] for d in range(4)])


def _ema(steps: np.ndarray, x: np.ndarray, h: float) -> np.ndarray:
    """The debiased EMA by step distance, written out: sum_j 2^(-(t_i - t_j)/h) x_j / sum_j 2^(-(t_i - t_j)/h)."""
    w = np.tril(2.0 ** (-(steps[:, None] - steps[None, :]) / h))
    return (w @ x) / w.sum(axis=1)


def _first_at_or_below(steps: np.ndarray, curve: np.ndarray, target: float) -> float:
    k = next(i for i, v in enumerate(curve) if v <= target)
    return steps[k - 1] + (curve[k - 1] - target) / (curve[k - 1] - curve[k]) * (steps[k] - steps[k - 1])


def _records(path) -> list[dict]:
    result = rr("analyze", "curves", "--data", path, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_gap_at_each_step_is_the_paired_mean_and_t_interval_over_data_seeds(tmp_path):
    path, train, val = _sweep(tmp_path)
    got = pd.DataFrame(_records(path))
    assert got["pair_on"].unique().tolist() == ["data_seed"] and set(got["baseline"]) == {"standard"}
    for series, losses, steps in (("train", train, STEPS), ("val", val, VAL_STEPS)):
        rows = got[got["series"] == series]
        d = _pairs(losses)
        ci = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
        assert rows["step"].tolist() == steps.tolist() and (rows["n"] == 4).all()
        assert rows["tokens"].tolist() == (steps * 2048).tolist()
        assert rows["gap"].to_numpy() == pytest.approx(d.mean(axis=0), rel=1e-9)
        assert rows["ci_low"].to_numpy() == pytest.approx(ci.low, rel=1e-9)
        assert rows["ci_high"].to_numpy() == pytest.approx(ci.high, rel=1e-9)
        ref = np.array([losses["review_neutral", s] for s in range(4)]).mean(axis=0)
        assert rows["reference_mean"].to_numpy() == pytest.approx(ref, rel=1e-12)
    # pairing by seed instead would leave the batches' noise in: a wider interval, the wrong one
    by_seed = _pairs(train, pair_on_data_seed=False)
    assert by_seed.std(axis=0, ddof=1).mean() > 5 * _pairs(train).std(axis=0, ddof=1).mean()


@pytest.mark.parametrize("effect", list(EFFECTS))
def test_the_trend_is_the_t_interval_of_the_pairs_slopes_on_log_tokens_over_the_last_half(tmp_path, effect):
    path, train, _ = _sweep(tmp_path, effect)
    row = pd.DataFrame(_records(path)).query("series == 'train'").iloc[0]
    late = STEPS >= 20
    slopes = [stats.linregress(np.log10(STEPS[late]), d[late]).slope for d in _pairs(train)]
    test = stats.ttest_1samp(slopes, 0.0)
    ci = test.confidence_interval(0.95)
    assert row["trend_from"] == 20 and row["trend_n"] == 4
    assert row["trend_slope"] == pytest.approx(np.mean(slopes), rel=1e-9)
    assert (row["trend_ci_low"], row["trend_ci_high"]) == pytest.approx((ci.low, ci.high), rel=1e-9)
    assert row["trend_p"] == pytest.approx(test.pvalue, rel=1e-9)
    assert row["trend"] == effect  # the gap is positive throughout: a falling slope shrinks it


def test_tokens_to_target_interpolate_the_smoothed_mean_curves(tmp_path):
    """Review ends lower: it reaches standard's final loss before the last step, and the multiplier is the
    last step's tokens over those; standard never reaches Review's final loss."""
    path, train, val = _sweep(tmp_path)
    got = pd.DataFrame(_records(path))
    for series, losses, steps, h in (("train", train, STEPS, 0.35), ("val", val, VAL_STEPS, 0.0)):
        row = got[got["series"] == series].iloc[0]
        assert row["half_life"] == pytest.approx(h)  # 1% of the 35 steps the readings span; validation raw
        curves = {
            v: np.mean([_ema(steps, losses[v, s], h) if h else losses[v, s] for s in range(4)], axis=0)
            for v in DATA_SEEDS
        }
        target = curves["standard"][-1]
        at = _first_at_or_below(steps, curves["review_neutral"], target)
        assert row["baseline_final"] == pytest.approx(target, rel=1e-12)
        assert row["reference_tokens_to_target"] == pytest.approx(at * 2048, rel=1e-9)
        assert row["multiplier"] == pytest.approx(40 / at, rel=1e-9) and row["multiplier"] > 1
        assert row["baseline_tokens_to_target"] is None
        assert "Standard to Review's final loss: not reached within its 40 steps" in row["cell_note"]


def test_the_text_states_the_verdicts_and_every_format_renders(tmp_path):
    path, *_ = _sweep(tmp_path)
    text = rr("analyze", "curves", "--data", path, "--wide").stdout
    assert (
        text.splitlines()[0]
        == "The gap over training: Review against each baseline at every logged step, seed-paired"
    )
    flat = " ".join(text.split())
    assert (
        "tiny (40 steps) Standard, training loss: the gap shrinks over the last half (from step 20)" in flat
    )
    assert "Review reaches Standard's final loss" in flat and "validation loss:" in flat
    for fmt in ("markdown", "latex", "csv"):
        result = rr("analyze", "curves", "--data", path, "--format", fmt)
        assert result.exit_code == 0 and "standard" in result.stdout.lower(), (fmt, result.output)
    csv_header = rr("analyze", "curves", "--data", path, "--format", "csv").stdout.splitlines()[0]
    assert csv_header.startswith("size,steps,baseline,series,step,tokens,n,reference_mean,baseline_mean,gap")


def test_a_missing_log_and_a_single_pair_say_so(tmp_path):
    path, train, _ = _sweep(tmp_path, drop_log=("standard", 3))
    got = pd.DataFrame(_records(path)).query("series == 'train'")
    assert (got["n"] == 3).all() and "no metrics log for Standard seed 3" in got["cell_note"].iloc[0]
    pairs = [(0, 1), (1, 0), (2, 3)]  # (standard seed, Review seed) of the data seeds 1, 0, 3 left
    d = np.array([train["standard", s] - train["review_neutral", r] for s, r in pairs])
    assert got["gap"].to_numpy() == pytest.approx(d.mean(axis=0), rel=1e-9)


def _frame(budgets: dict[int, float], seeds: int = 2) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A sweep (as load_sweep gives it) and its losses: one tiny (size, variant, seed) at each budget in
    `budgets` {steps: the baseline's constant excess}, logged every 10 steps."""
    runs, losses = [], []
    for steps, excess in budgets.items():
        for variant in ("review_neutral", "standard"):
            for seed in range(seeds):
                runs.append(
                    {
                        "size": "tiny",
                        "variant": variant,
                        "seed": seed,
                        "params_M": 1.1,
                        "steps": steps,
                        "val_loss": 2.0,
                    }
                )
                t = np.arange(10, steps + 1, 10)
                loss = (
                    5 / np.sqrt(t)
                    + (excess if variant == "standard" else 0)
                    + 0.01 * seed * (variant == "standard")
                )
                losses.append(
                    pd.DataFrame(
                        {
                            "size": "tiny",
                            "variant": variant,
                            "seed": seed,
                            "steps": steps,
                            "series": "train",
                            "step": t,
                            "loss": loss,
                            "source": "",
                        }
                    )
                )
    return pd.DataFrame(runs), pd.concat(losses, ignore_index=True)


def test_two_budgets_of_one_size_are_two_cells(tmp_path):
    df, losses = _frame({40: 0.02, 20: 0.05})
    got = training_gap(df, losses)
    assert got[["steps", "step"]].values.tolist() == [
        [20, 10],
        [20, 20],
        [40, 10],
        [40, 20],
        [40, 30],
        [40, 40],
    ]
    assert got["gap"].to_numpy() == pytest.approx(
        [0.055] * 2 + [0.025] * 4, rel=1e-9
    )  # excess + 0.01 x mean seed
    one = training_gap(*_frame({40: 0.02}, seeds=1))
    assert (one["note"] == "one pair: no interval").all() and one["ci_low"].isna().all()
    assert one["trend"].iloc[0] == "" and "one pair: no interval for the trend" in one["cell_note"].iloc[0]


def test_pairs_logged_at_different_steps_have_no_common_curve():
    """Seed 0 logged steps 10 and 30, seed 1 steps 20 and 40: each step has one pair, and no step has both,
    so there is no mean curve to read tokens to target from; the reason is said, nothing raises."""
    df, losses = _frame({40: 0.02})
    odd = losses["step"].isin([10, 30])
    got = training_gap(df, losses[(losses["seed"] == 0) & odd | (losses["seed"] == 1) & ~odd])
    assert got["n"].tolist() == [1] * 4 and got["gap"].to_numpy() == pytest.approx([0.02, 0.03, 0.02, 0.03])
    assert got["multiplier"].isna().all() and "no step logged by every pair" in got["cell_note"].iloc[0]


def test_the_published_sweep_has_no_curves_and_another_metric_is_refused(tmp_path):
    result = rr("analyze", "curves")
    assert (
        result.exit_code == 2
        and "no training curves in" in result.output
        and "Traceback" not in result.output
    )
    path, *_ = _sweep(tmp_path)
    ece = rr("analyze", "curves", "--data", path, "--metric", "ece")
    assert ece.exit_code == 2 and "--metric and --higher-is-better do not apply" in ece.output
    with pytest.raises(InputError, match="do not apply"):
        training_gap(*_frame({40: 0.02}), Comparison(higher_is_better=True))


def test_slopes_and_steps_to_reach_by_hand():
    # d = 0.3 - 0.1 log10(t) exactly: slope -0.1 per decade; a pair with one reading has none
    assert gap_slopes(
        np.array([10, 100, 1000]), np.array([[0.2, 0.1, 0.0], [np.nan, 0.1, np.nan]])
    ).tolist() == [pytest.approx(-0.1), pytest.approx(np.nan, nan_ok=True)]
    assert steps_to_reach(np.array([10, 20]), np.array([4.0, 2.0]), 3.5) == (12.5, "")  # 10 + 0.5/2 x 10
    assert np.isnan(steps_to_reach(np.array([10, 20]), np.array([4.0, 2.0]), 5.0)[0])  # below at the first


def test_rr_plot_curves_gap_draws_each_series_with_its_band(tmp_path):
    path, train, _ = _sweep(tmp_path)
    out = tmp_path / "gap.png"
    result = rr("plot", "curves", "--gap", "--data", path, "--out", out)
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:4] == b"\x89PNG"
    from rr_analysis.figures.gap_curves import gap_plot
    from rr_core.sweepfile.dataset import load_sweep

    fig = gap_plot(load_sweep(path), [path])  # the command's one call: the paired mean gap by tokens trained
    lines = {line.get_gid(): line for ax in fig.axes for line in ax.get_lines()}
    x, y = lines["gap:tiny:40:standard:train"].get_data()
    assert list(x) == (STEPS * TOKENS_PER_STEP).tolist()
    assert list(y) == pytest.approx(_pairs(train).mean(axis=0).tolist(), rel=1e-9)
    assert lines["gap:tiny:40:standard:val"].get_linestyle() == "--"
    bands = {c.get_gid() for ax in fig.axes for c in ax.collections}
    assert bands == {"band:tiny:40:standard:train", "band:tiny:40:standard:val"}
    assert fig.axes[0].get_ylabel() == "Baseline loss \u2212 Review loss\n(positive: Review better)"
    no_data = rr("plot", "curves", "--gap", tmp_path / "s.metrics", "--out", out)
    assert (
        no_data.exit_code == 2 and "--gap pairs the runs of a sweep: give --data FILE.csv" in no_data.output
    )


@pytest.mark.slow  # four tiny runs trained: ~40 s on a shared 2-core machine
def test_on_a_real_tiny_sweep_the_last_point_is_the_final_logged_training_losses(tmp_path, offline):
    """Two seeds of review_neutral and standard, 12 steps on the synthetic corpus. The curve's last point is
    the gap of the last logged training losses (each run's record keeps its loss curve): the same pairs, the
    same mean and the t interval scipy gives. The final val_loss gap of the file is another quantity (a held-out
    loss after the last step, not the training loss of the last interval); the test compares like with like."""
    out = tmp_path / "real.csv"
    for seed in (0, 1):
        result = rr("train", "--size", "tiny", "--variant", "review_neutral", "--variant", "standard",
                    "--seed", seed, "--corpus", "synthetic", "--steps", 12, "--out", out)  # fmt: skip
        assert result.exit_code == 0, result.output
    from rr_core.sweepfile.provenance import read_records, sidecar_path

    last = {(r["variant"], r["seed"]): r["loss_curve"][-1] for r in read_records(sidecar_path(out))}
    d = np.array([last["standard", s][1] - last["review_neutral", s][1] for s in (0, 1)])
    got = pd.DataFrame(_records(out)).query("series == 'train'")
    final = got.iloc[-1]
    assert final["step"] == 12 == last["standard", 0][0] and final["n"] == 2
    assert final["gap"] == pytest.approx(d.mean(), rel=1e-9)
    ci = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert (final["ci_low"], final["ci_high"]) == pytest.approx((ci.low, ci.high), rel=1e-9)
    assert got["step"].tolist() == list(range(1, 13))  # tiny 12 steps: logged every step

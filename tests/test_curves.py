"""Training curves: the tiny run's metrics log read back (rr_core.sweepfile.metrics_log), smoothed
(rr_analysis.stats.smoothing) and drawn by `rr plot curves` (rr_analysis.figures.curves.curves_figure); the
losses `rr analyze curves` pairs (`load_losses`)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from conftest import rr

from rr_analysis.figures.curves import curves_figure, curves_plot
from rr_analysis.stats.smoothing import ema, half_life_of_weight, smooth_curves
from rr_core.errors import InputError
from rr_core.ladder import get_size
from rr_core.palette import colour
from rr_core.sweepfile.metrics_log import LOSS_COLUMNS, load_curves, load_losses
from rr_core.sweepfile.provenance import sidecar_path


def _lr(step: int, steps: int) -> float:
    """The published schedule by hand: linear warmup, cosine to a tenth (rr_model.run.step.lr_at's Notes)."""
    r = get_size("tiny").recipe
    if step < r.warmup_steps:
        return r.lr * (step + 1) / r.warmup_steps
    p = min(1.0, (step - r.warmup_steps) / max(1, steps - r.warmup_steps))
    return r.lr * (r.min_lr_frac + (1 - r.min_lr_frac) * 0.5 * (1 + np.cos(np.pi * p)))


def test_a_datasets_curves_are_its_runs_metrics_logs(tiny_run):
    curves = load_curves([tiny_run["out"]])
    assert curves[["step", "loss"]].values.tolist() == tiny_run["loss_curve"]
    assert curves["lr"].tolist() == pytest.approx([_lr(s - 1, 12) for s in curves["step"]], rel=1e-12)
    assert set(curves[["size", "variant", "seed"]].itertuples(index=False)) == {("tiny", "standard", 0)}


def test_a_run_without_a_log_gives_its_records_loss_curve(tiny_run, tmp_path):
    out = tmp_path / "copy.csv"
    shutil.copy(tiny_run["out"], out)
    shutil.copy(sidecar_path(tiny_run["out"]), sidecar_path(out))  # no copy.metrics/
    curves = load_curves([out])
    assert curves[["step", "loss"]].values.tolist() == tiny_run["loss_curve"] and curves["lr"].isna().all()
    (tmp_path / "empty.metrics").mkdir()
    with pytest.raises(InputError, match="no training curves in .*empty.metrics: runs trained by rr write"):
        load_curves([tmp_path / "empty.metrics"])
    with pytest.raises(InputError, match="copy.runs.jsonl: line 1 is not a metrics record"):
        load_curves([sidecar_path(out)])


def test_the_losses_of_a_dataset_are_its_runs_training_loss_with_their_steps(tiny_run, tmp_path):
    losses = load_losses([tiny_run["out"]])
    assert list(losses.columns) == list(LOSS_COLUMNS) and set(losses["series"]) == {"train"}
    assert losses[["step", "loss"]].values.tolist() == tiny_run["loss_curve"]
    assert set(losses["steps"]) == {12}  # the final evaluation's step: the run's budget
    out = tmp_path / "copy.csv"  # without its log, the record's curve and its config's steps
    shutil.copy(tiny_run["out"], out)
    shutil.copy(sidecar_path(tiny_run["out"]), sidecar_path(out))
    assert load_losses([out])[["steps", "step", "loss"]].values.tolist() == [
        [12, step, loss] for step, loss in tiny_run["loss_curve"]
    ]


def test_periodic_evaluations_are_the_validation_series_and_a_resumed_log_keeps_the_last_reading(tmp_path):
    """The trainer's periodic event ({"event": "eval", "periodic": true, ...}) is a "val" row; the final
    evaluation is not a row; a step logged again after a resume keeps its last reading; two budgets of one
    run (two logs) stay apart by their steps."""

    def log(name: str, events: list[dict]) -> None:
        text = "\n".join(json.dumps(e) for e in events) + "\n"
        (tmp_path / f"{name}.jsonl").write_text(text, encoding="utf-8")

    start = {"event": "start", "size": "tiny", "variant": "standard", "seed": 0}
    log(
        "tiny-standard-seed0",
        [
            {**start, "step": 0, "resumed": False},
            {"event": "train", "step": 5, "loss": 4.0},
            {"event": "eval", "step": 5, "tokens": 10240, "val_loss": 4.1, "periodic": True},
            {"event": "train", "step": 10, "loss": 3.5},  # killed here; resumed from the checkpoint at step 5
            {**start, "step": 5, "resumed": True},
            {"event": "train", "step": 10, "loss": 3.4},
            {"event": "eval", "step": 10, "tokens": 20480, "val_loss": 3.6, "periodic": True},
            {"event": "eval", "step": 10, "val_loss": 3.6, "ece": 0.1, "minutes": 0.2},
        ],
    )
    log(
        "tiny-standard-seed0-steps20",
        [
            {**start, "step": 0, "resumed": False},
            {"event": "train", "step": 10, "loss": 3.3},
            {"event": "train", "step": 20, "loss": 3.0},
            {"event": "eval", "step": 20, "val_loss": 3.1, "ece": 0.1, "minutes": 0.3},
        ],
    )
    got = load_losses([tmp_path])
    assert got[["steps", "series", "step", "loss"]].values.tolist() == [
        [10, "train", 5, 4.0],
        [10, "val", 5, 4.1],
        [10, "train", 10, 3.4],
        [10, "val", 10, 3.6],
        [20, "train", 10, 3.3],
        [20, "train", 20, 3.0],
    ]


def test_the_figure_draws_the_smoothed_loss_and_lr_of_each_run(tiny_run):
    curves = smooth_curves(load_curves([tiny_run["out"]]), 2.0)
    want = ema(curves["step"].to_numpy(), curves["loss"].to_numpy(), 2.0)
    assert curves["loss_smooth"].tolist() == pytest.approx(want.tolist())
    fig = curves_figure(curves)
    lines = {line.get_gid(): line for ax in fig.axes for line in ax.get_lines()}
    x, y = lines["loss:standard:0"].get_data()
    assert list(x) == list(curves["step"]) and list(y) == pytest.approx(curves["loss_smooth"].tolist())
    assert list(lines["lr:standard:0"].get_ydata()) == pytest.approx(curves["lr"].tolist())
    assert lines["loss:standard:0"].get_color() == colour("standard")  # the registry's, as every figure
    raw = lines["raw:standard:0"]  # the readings stay visible under the smoothed line: points, not a haze
    assert list(raw.get_ydata()) == curves["loss"].tolist()
    assert raw.get_marker() == "o" and raw.get_alpha() >= 0.4
    assert fig.axes[0].get_ylabel() == "Training loss\n(EMA, half-life 2 steps)"
    raw_only = curves_figure(smooth_curves(load_curves([tiny_run["out"]]), 0))
    assert raw_only.axes[0].get_ylabel() == "Training loss\n(raw readings)"


def test_smoothing_by_step_distance_by_hand():
    """Each reading's weight halves every half-life in steps, whatever the spacing (weights written out)."""
    steps, loss = np.array([0, 10, 30]), np.array([4.0, 2.0, 2.0])
    # weights at step 30: 2^-3, 2^-2, 1 -> (0.5 + 0.5 + 2) / 1.375
    assert ema(steps, loss, 10).tolist() == pytest.approx([4.0, 8 / 3, 3 / 1.375])
    # a NaN reading carries the last value and adds no weight: at 20, (1 + 2) / (1/4 + 1)
    gappy = ema(np.array([0, 10, 20, 30]), np.array([4.0, np.nan, 2.0, 2.0]), 10)
    assert gappy.tolist() == pytest.approx([4.0, 4.0, 2.4, 3.5 / 1.625])
    assert ema(steps, loss, 0).tolist() == loss.tolist()  # half-life 0: the raw readings
    # evenly logged, it is the per-reading EMA with weight 2^(-interval / half-life) and its bias correction
    assert ema(np.array([0, 5, 10]), loss, 5).round(4).tolist() == [4.0, 2.6667, 2.2857]
    with pytest.raises(InputError, match="half-life -1 must be a number of steps >= 0"):
        ema(steps, loss, -1)


def _run(steps: np.ndarray, loss: np.ndarray, seed: int = 0) -> pd.DataFrame:
    return pd.DataFrame({"size": "tiny", "variant": "standard", "seed": seed, "step": steps, "loss": loss})


def test_ten_readings_are_not_dragged_behind_their_curve():
    """A falling loss read ten times (steps 4 to 40): by default the smoothed line is the readings to within
    0.001, where the old per-reading weight of 0.6 left it 0.15 above the last one (3.007 against 2.854)."""
    steps = np.arange(4, 44, 4)
    loss = 2.8 + 8 * np.exp(-steps / 8)
    smoothed = smooth_curves(_run(steps, loss))
    assert smoothed["half_life"].unique().tolist() == [0.36]  # 1% of the 36 steps the readings span
    assert np.abs(smoothed["loss_smooth"] - loss).max() < 1e-3
    old = smooth_curves(_run(steps, loss), weight=0.6)["loss_smooth"].iloc[-1]
    assert round(loss[-1], 3) == 2.854 and round(old, 3) == 3.007  # the old default, by hand above


@pytest.mark.parametrize("readings", [10, 1000])
def test_the_lag_of_a_falling_line_is_bounded_by_the_half_life(readings):
    """On a line falling b per step, evenly logged, the smoothed value lies above the reading by at most
    b * half-life / ln 2: the default lags at most 1.44% of the run, however often it was logged."""
    steps = np.linspace(100, 10_100, readings)
    loss = 5.0 - 2e-4 * steps
    smoothed = smooth_curves(_run(steps, loss))
    h = smoothed["half_life"].iloc[0]
    assert h == pytest.approx(100.0)
    lag = (smoothed["loss_smooth"] - loss).to_numpy()
    assert (lag >= -1e-12).all() and lag.max() <= 2e-4 * h / np.log(2) + 1e-12
    if readings == 1000:  # a long run reaches the weights' mean age D / (2^(D/h) - 1), D the interval
        d = steps[1] - steps[0]
        assert lag[-1] == pytest.approx(2e-4 * d / (2 ** (d / h) - 1), rel=1e-9)


def test_the_old_weight_is_read_as_the_half_life_giving_the_same_curve():
    """`--smooth W` (deprecated): half-life = median interval x ln 0.5 / ln W, per run; on evenly logged
    readings the per-reading EMA by hand, s = w s + (1 - w) x over 1 - w^n."""
    steps, loss = np.array([25, 50, 75, 100]), np.array([6.0, 4.0, 3.0, 3.5])
    assert half_life_of_weight(steps, 0.5) == 25.0 and half_life_of_weight(steps, 0) == 0
    w, s, by_hand = 0.6, 0.0, []
    for n, x in enumerate(loss, 1):
        s = w * s + (1 - w) * x
        by_hand.append(s / (1 - w**n))
    got = smooth_curves(_run(steps, loss), weight=0.6)
    assert got["loss_smooth"].tolist() == pytest.approx(by_hand)
    with pytest.raises(InputError, match="not both"):
        smooth_curves(_run(steps, loss), 10, weight=0.6)


def test_curves_plot_says_the_half_life_it_read_the_old_weight_as_and_reads_the_sweep_after_the_logs(
    tiny_run, tmp_path
):
    """`rr plot curves`'s one call: the old weight 0.5 halves a reading's weight at each later reading, so it is
    read as a half-life of one logging interval (what the command tells its user); a log that cannot be read is
    the error, before the sweep for the footnote is read."""
    folder = tiny_run["out"].with_name("whole.metrics")
    fig, lives = curves_plot([folder], weight=0.5)
    curves = load_curves([folder])
    steps = curves["step"].to_numpy(float)
    interval = float(np.median(np.diff(steps)))
    assert lives == pytest.approx((interval,))
    loss = next(ln for ax in fig.axes for ln in ax.get_lines() if ln.get_gid() == "loss:standard:0")
    assert list(loss.get_ydata()) == pytest.approx(ema(steps, curves["loss"].to_numpy(), interval).tolist())
    with pytest.raises(InputError):
        curves_plot([tmp_path / "none.metrics"], sweep=lambda: pytest.fail("the sweep was read first"))


def test_rr_plot_curves_writes_a_figure_from_a_metrics_folder(tiny_run, tmp_path):
    folder = tiny_run["out"].with_name("whole.metrics")
    out = tmp_path / "curves.png"
    result = rr("plot", "curves", str(folder), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(out) and out.read_bytes()[:4] == b"\x89PNG"
    old = rr("plot", "curves", str(folder), "--out", str(out), "--smooth", "0.5")
    assert old.exit_code == 0 and "rr plot: --smooth is deprecated: read as --half-life 1" in old.stderr
    none = rr("plot", "curves", "--out", str(out))
    assert (
        none.exit_code == 2
        and "rr: error: give --data FILE.csv or at least one metrics folder" in none.output
    )

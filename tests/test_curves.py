"""Training curves: the tiny run's metrics log read back (rr_core.sweepfile.metrics_log), smoothed
(rr_analysis.stats.smoothing) and drawn by `rr plot curves` (rr_analysis.figures.curves.curves_figure)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from conftest import rr

from rr_analysis.figures.curves import curves_figure
from rr_analysis.stats.smoothing import ema, smooth_curves
from rr_core.errors import InputError
from rr_core.ladder import get_size
from rr_core.sweepfile.metrics_log import load_curves
from rr_core.sweepfile.provenance import sidecar_path
from rr_core.variants import colour


def _lr(step: int, steps: int) -> float:
    """The published schedule by hand: linear warmup, cosine to a tenth (rr_model.step.lr_at's Notes)."""
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


def test_the_figure_draws_the_smoothed_loss_and_lr_of_each_run(tiny_run):
    curves = smooth_curves(load_curves([tiny_run["out"]]), 0.5)
    assert curves["loss_smooth"].tolist() == pytest.approx(ema(curves["loss"].to_numpy(), 0.5).tolist())
    fig = curves_figure(curves)
    lines = {line.get_gid(): line for ax in fig.axes for line in ax.get_lines()}
    x, y = lines["loss:standard:0"].get_data()
    assert list(x) == list(curves["step"]) and list(y) == pytest.approx(curves["loss_smooth"].tolist())
    assert list(lines["lr:standard:0"].get_ydata()) == pytest.approx(curves["lr"].tolist())
    assert lines["loss:standard:0"].get_color() == colour("standard")  # the registry's, as every figure


def test_rr_plot_curves_writes_a_figure_from_a_metrics_folder(tiny_run, tmp_path):
    folder = tiny_run["out"].with_name("whole.metrics")
    out = tmp_path / "curves.png"
    result = rr("plot", "curves", str(folder), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(out) and out.read_bytes()[:4] == b"\x89PNG"
    none = rr("plot", "curves", "--out", str(out))
    assert (
        none.exit_code == 2
        and "rr: error: give --data FILE.csv or at least one metrics folder" in none.output
    )

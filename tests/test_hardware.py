"""MFU against the datasheet dense peak of the GPU in use (rr_model.parallel.hardware, rr_model.parallel.flops), looked up by
the device names torch reports, and the progress line that shows it."""

from __future__ import annotations

import pytest

from rr_model.parallel.flops import mfu
from rr_model.parallel.hardware import PEAKS, datasheet_peak, peak_note
from rr_model.run.progress import Progress

# torch.cuda.get_device_name on each part, and its datasheet dense peaks in TFLOP/s (fp32, tf32, bf16)
NAMES = {
    "NVIDIA A100-SXM4-80GB": (19.5, 156, 312),
    "NVIDIA A100 80GB PCIe": (19.5, 156, 312),
    "NVIDIA H100 80GB HBM3": (66.9, 494.7, 989.4),
    "NVIDIA H100 PCIe": (51.2, 378, 756),
    "NVIDIA H200": (67, 494.7, 989.4),
    "NVIDIA B200": (75, 1100, 2250),
    "NVIDIA L40S": (91.6, 183, 362.05),
}


@pytest.mark.parametrize("name", NAMES)
def test_each_listed_gpu_is_found_by_its_torch_name(name):
    found = [datasheet_peak(name, p) / 1e12 for p in ("fp32", "tf32", "bf16")]
    assert found == pytest.approx(NAMES[name], rel=1e-12)
    assert peak_note(name, "bf16").startswith("MFU against the ")


@pytest.mark.parametrize(
    "name", ["NVIDIA H100 NVL", "NVIDIA H200 NVL", "NVIDIA L40", "NVIDIA GeForce RTX 4090", "cpu"]
)
def test_an_unlisted_device_gets_no_mfu_and_says_why(name):
    assert datasheet_peak(name, "tf32") is None and mfu(1e5, 6e9, None) is None
    note = peak_note(name, "tf32")
    assert note.startswith(f"MFU -: no datasheet peak for {name!r}") and "H200 SXM" in note


def test_every_peak_names_its_source_and_dense_tensor_figures_exceed_fp32():
    for peak in PEAKS:
        assert "NVIDIA" in peak.source and peak.fp32 < peak.tf32 < peak.bf16


def test_the_progress_line_shows_mfu_or_a_dash_and_the_total_eta(capsys):
    Progress("run", 10, 0, 1000, 6e9, None, True, queued=20).report(5, 2.5)
    line = capsys.readouterr().err
    assert line.startswith("step 5/10 | loss 2.5000 |") and "MFU - |" in line and "(all runs " in line
    Progress("run", 10, 0, 1000, 6e9, 1e30, True).report(5, 2.5)
    line = capsys.readouterr().err
    assert "MFU 0.0%" in line and "all runs" not in line

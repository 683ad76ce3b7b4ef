"""Integrity: the published rows, pinned by digest and compared value by value."""

from __future__ import annotations

from rr_core.sweepfile.dataset import append_rows, bundled_path, load_sweep
from rr_core.sweepfile.integrity import PUBLISHED_DIGEST, check_integrity, digest


def test_reference_copy_matches_pinned_digest():
    assert digest(load_sweep()) == PUBLISHED_DIGEST


def test_digest_ignores_row_order():
    df = load_sweep()
    assert digest(df.iloc[::-1]) == digest(df)


def test_published_file_is_intact():
    report = check_integrity(load_sweep())
    assert report.intact and report.present == 42 and report.added == 0
    assert report.summary() == "published rows 42/42 present and unchanged; 0 row(s) added"


def test_added_rows_are_counted(published_copy):
    path = published_copy
    append_rows(
        path, [dict(size="2B", variant="standard", seed=0, params_M=2000.0, steps=5000, val_loss=1.4)]
    )
    report = check_integrity(load_sweep(path))
    assert report.intact and report.added == 1


def test_changed_and_missing_published_values_are_named(tmp_path):
    lines = bundled_path().read_text().splitlines()
    assert lines[4] == "60M,highway,0,60.68,8000,1.698,0.0078,7.3"
    lines[4] = "60M,highway,0,60.68,8000,1.6990,0.0078,7.3"
    del lines[1]  # 60M review_neutral seed 0
    path = tmp_path / "s.csv"
    path.write_text("\n".join(lines) + "\n")
    report = check_integrity(load_sweep(path))
    assert not report.intact
    assert report.changed == ["line 4 (60M, highway, 0), val_loss: published 1.698, found 1.699"]
    assert report.missing == [("60M", "review_neutral", 0)]
    assert report.present == 41

"""One number formatter for every view and the docs: a value prints one way wherever it appears."""

from __future__ import annotations

from pathlib import Path

import pytest

from rr_analysis.numbers import BLANK, NA, duration, fixed, missing, p_value, percent, significant

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cells(table):
    """The published gap table by (size, baseline), to read one cell."""
    return table.set_index(["size", "baseline"])


@pytest.mark.parametrize(
    ("value", "decimals", "shown"),
    [
        (0.00405, 4, "0.0041"),
        (0.0040499999999999998, 4, "0.0041"),
        (0.00405000000000011, 4, "0.0041"),
        (-0.00405, 4, "-0.0041"),
        (0.0774555, 3, "0.077"),
        (552.5, 0, "553"),
        (-0.00001, 4, "0.0000"),
        (1.0, 2, "1.00"),
        (float("inf"), 2, "inf"),
    ],
)
def test_fixed_rounds_the_decimal_a_float_stands_for_half_away_from_zero(value, decimals, shown):
    assert fixed(value, decimals) == shown


def test_missing_values_and_tiny_p_values_read_as_words():
    assert fixed(None, 4) == fixed(float("nan"), 2) == p_value(None) == "n/a"
    assert p_value(0.0) == "<0.0001" and p_value(0.0001) == "0.0001" and fixed(0.5, 1, sign=True) == "+0.5"


def test_a_gap_of_two_float_spellings_prints_one_way(cells):
    """320M Highway: the mean gap and the seed-paired mean are 0.00405 either side of the float tie."""
    r = cells.loc[("320M", "highway")]
    assert r["gap"] != r["paired_diff"] and fixed(r["gap"], 4) == fixed(r["paired_diff"], 4) == "0.0041"


def test_the_docs_quote_the_numbers_as_the_formatter_prints_them(cells):
    docs = (ROOT / "docs" / "statistics.md").read_text(encoding="utf-8")
    p = [fixed(cells.loc[("1B", b), "welch_p"], 3) for b in ("highway", "standard")]
    assert f"Welch p = {p[0]} and {p[1]}" in docs
    assert f"320M {fixed(cells.loc[('320M', 'highway'), 'paired_diff'], 4)})" in docs


def test_one_missing_test_two_spellings_each_in_its_context():
    """`missing` is the one test for no value (None, NaN of any kind, pandas' NA; not text); the views spell
    it NA, the training commands' tables BLANK."""
    import numpy as np
    import pandas as pd

    from cli.run_options import PLAN_FORMATS, RESULT_FORMATS
    from rr_analysis.tables.columns import number, p_cell

    assert [missing(v) for v in (None, float("nan"), np.float32("nan"), pd.NA, 0.0, 0, "")] == [True] * 4 + [
        False
    ] * 3
    assert number(".4f")(np.nan) == p_cell(pd.NA) == NA == "n/a"
    assert (
        RESULT_FORMATS["val_loss"](None) == BLANK == "-" and RESULT_FORMATS["val_loss"](3.14159) == "3.1416"
    )
    assert PLAN_FORMATS["params"](59470848) == fixed(59470848, 0, grouped=True) == "59,470,848"


def test_the_significance_level_and_the_power_target_are_printed_from_their_constants(monkeypatch, sweep):
    from rr_analysis import comparison
    from rr_analysis.stats.power import power_table
    from rr_analysis.tables import columns
    from rr_analysis.tables.render import render
    from rr_analysis.views.registry import VIEWS

    first = render(power_table(sweep), VIEWS["power"], "text").splitlines()[0]
    assert first.startswith(
        f"Seeds needed for {percent(comparison.POWER)} power at alpha {significant(comparison.ALPHA)} "
    )
    monkeypatch.setattr(columns, "POWER", 0.9)
    monkeypatch.setattr(columns, "ALPHA", 0.01)
    assert render(power_table(sweep), VIEWS["power"], "text").startswith(
        "Seeds needed for 90% power at alpha 0.01 "
    )


def test_plan_durations_read_in_minutes_hours_or_days():
    assert [duration(m) for m in (0.001, 0.04, 0.5, 12.34, 89.9, 90, 47.9 * 60, 48 * 60, 25137.2 * 3)] == [
        "under a second",  # issue 49.10: a tiny dry run said "about 0.0 minutes"
        "2 seconds",
        "30 seconds",
        "12.3 minutes",
        "89.9 minutes",
        "1.5 hours",
        "47.9 hours",
        "2.0 days",
        "52.4 days",
    ]

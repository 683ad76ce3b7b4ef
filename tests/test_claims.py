"""The claims audit: each verdict function on the inputs that reach each of its statements, and the
audit on the published data."""

from __future__ import annotations

import math

import pytest

from rr_analysis.claims import (
    NOT_RUN,
    budget_verdict,
    equivalence_verdict,
    grows_verdict,
    near_reported_verdict,
    significance_verdict,
    trend_verdict,
)

NAN = math.nan

# --- the verdict functions ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "verdict"),
    [([0.083, 0.077], "reproduced, to rounding"), ([0.083, 0.127], "not reproduced"), ([NAN, NAN], NOT_RUN)],
)
def test_near_reported_verdict(p, verdict):
    assert near_reported_verdict(p) == verdict


@pytest.mark.parametrize(
    ("p", "verdict"),
    [
        ([0.009, 0.0018], "understated: significant under the primary test"),
        ([0.12, 0.017], "supported: not significant under the primary test"),
        ([NAN, NAN], NOT_RUN),
    ],
)
def test_trend_verdict(p, verdict):
    assert trend_verdict(p) == verdict


def test_grows_verdict():
    assert grows_verdict([]) == "supported"
    assert grows_verdict(["Highway 150M 0.0049 -> 320M 0.0040"]).startswith("not supported")


@pytest.mark.parametrize(
    ("raw", "adj", "verdict"),
    [
        ([0.031, 0.021], [0.28, 0.21], "holds only uncorrected"),
        ([0.001, 0.002], [0.01, 0.02], "holds after adjustment"),
        ([0.031, 0.2], [0.28, 1.0], "not reproduced"),
        ([NAN, NAN], [NAN, NAN], NOT_RUN),
    ],
)
def test_significance_verdict(raw, adj, verdict):
    assert significance_verdict(raw, adj) == verdict


def test_equivalence_verdict():
    assert equivalence_verdict([0.01, 0.02], 0.005) == "supported: equivalent within ±0.005 in every cell"
    # a TOST that did not run (NaN) is a cell that did not pass
    assert (
        equivalence_verdict([0.01, NAN, 0.9], 0.01)
        == "not shown: equivalence within ±0.01 fails in 2 of 3 cells"
    )


@pytest.mark.parametrize(
    ("across", "within", "verdict"),
    [
        (False, False, "supported"),
        (True, False, "true within each size only: steps differ across sizes"),
        (True, True, "not supported"),
        (False, True, "not supported"),
    ],
)
def test_budget_verdict(across, within, verdict):
    assert budget_verdict(across, within) == verdict

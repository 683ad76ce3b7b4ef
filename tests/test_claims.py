"""The claims audit (statcheck-style): reported intervals, each verdict on the published data and on
constructed claims, the recomputed statistics against scipy, GRIM, the claims file's errors and the JSON."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from conftest import rr
from scipy import stats

from rr_analysis.claims.audit import claims
from rr_analysis.claims.reported import load_claims, parse_reported
from rr_analysis.claims.verdicts import (
    NOT_RUN,
    budget_verdict,
    equivalence_verdict,
    grim_possible,
    grows_verdict,
    judge,
    primary_verdict,
)
from rr_analysis.stats.gap_tests import gap_table
from rr_core.errors import InputError

NAN = math.nan


@pytest.fixture(scope="module")
def audit(sweep) -> pd.DataFrame:
    return claims(sweep).set_index("id")


def claims_file(tmp_path, *records: str) -> str:
    path = tmp_path / "claims.toml"
    path.write_text("\n".join(f"[[claim]]\n{r}\n" for r in records), encoding="utf-8")
    return str(path)


# --- reported values and their intervals -------------------------------------------------------------------


def test_reported_interval_is_what_rounding_allows():
    t = parse_reported("t=3.3")
    assert t.statistic == "t" and t.decimals == 1
    assert t.holds(3.25) and t.holds(3.3499) and not t.holds(3.35) and not t.holds(3.2499)
    neg = parse_reported("t=-1.01")  # half away from zero: -1.015 rounds to -1.02
    assert neg.holds(-1.005) and not neg.holds(-1.015)
    p = parse_reported("p<0.05")
    assert p.interval() == (-math.inf, 0.05) and p.holds(0.049) and not p.holds(0.05)
    assert parse_reported("0.07", "p").interval() == pytest.approx((0.065, 0.075))
    with pytest.raises(InputError, match="cannot read the reported value 'about .07'"):
        parse_reported("about .07", "p")
    with pytest.raises(InputError, match="cannot read"):
        parse_reported("0.07")  # no statistic named anywhere


def test_a_value_on_the_rounding_edge_holds_whichever_way_float_noise_moved_it():
    """Table 2's 320M Highway mean, 1.5042, of two runs at 1.5041 and 1.5042: 1.50415 is inside it, however the
    float arithmetic of the library versions lands (a last-digit move once flipped it to "only by rounding")."""
    mean = parse_reported("mean=1.5042")
    assert all(mean.holds(x) for x in (1.5041499999999999, 1.50415, 1.5041500000000002))
    assert judge(mean, 1.5041499999999999, 1.5041, 1.5042, None, None) == "consistent"
    assert not mean.holds(1.50414999999) and not parse_reported("t=-1.01").holds(-1.0150000000000001)


# --- the verdict functions ----------------------------------------------------------------------------------


def test_judge_each_verdict():
    t = parse_reported("t=3.3")
    assert judge(t, 3.28, 3.27, 3.29, True, True) == "consistent"
    assert judge(t, 3.24, 3.23, 3.26, True, True) == "consistent only by rounding"
    assert judge(t, 3.1, 3.0, 3.2, True, True) == "value error"
    assert judge(t, 1.2, 1.1, 1.3, True, False) == "decision error"
    assert judge(t, NAN, NAN, NAN, True, None) == NOT_RUN
    # a range that covers the whole interval is consistent by rounding
    assert judge(t, 3.2, 3.2, 3.4, True, True) == "consistent only by rounding"


@pytest.mark.parametrize(
    ("p", "claimed", "verdict"),
    [
        (0.009, False, "understated: significant under the primary test"),
        (0.12, False, "supported: not significant under the primary test"),
        (0.003, True, "holds under the primary test"),
        (0.09, True, "not shown: not significant under the primary test"),
        (0.09, None, "not significant under the primary test"),
        (NAN, True, NOT_RUN),
    ],
)
def test_primary_verdict(p, claimed, verdict):
    assert primary_verdict(p, claimed) == verdict


def test_grows_verdict():
    assert grows_verdict([]) == "supported"
    assert grows_verdict(["Highway 150M 0.0049 -> 320M 0.0040"]).startswith("not supported")


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
        ("", False, "supported"),
        (
            "tokens per run 1M at 1M, 2M at 2M",
            False,
            "contradicted across sizes: tokens per run 1M at 1M, 2M at 2M; identical within each size only",
        ),
        ("tokens per run 1M at 1M, 2M at 2M", True, "not supported"),
        ("", True, "not supported"),
    ],
)
def test_budget_verdict(across, within, verdict):
    assert budget_verdict(across, within) == verdict


def test_grim_against_brute_force():
    """Every mean of 3 values on a 1e-4 grid near 1.6891, against the interval test."""
    sums = np.arange(50670, 50680)  # S in units of 1e-4: mean = S / 3 * 1e-4
    for text in ("mean=1.68912", "mean=1.68913", "mean=1.6891", "mean=1.68915"):
        rep = parse_reported(text)
        brute = any(rep.holds(round(s / 3 * 1e-4, 12)) for s in sums)
        assert grim_possible(rep, 3) is brute
    assert not grim_possible(parse_reported("mean=1.68912"), 3)


# --- the audit on the published data ------------------------------------------------------------------------


def test_claims_file_holds_the_papers_numbers():
    records = {r["id"]: r for r in load_claims()}
    headline = {
        k: records[k]["reported"]
        for k in ("t_590M_highway", "t_590M_standard", "t_1B_highway", "t_1B_standard")
    }
    assert headline == {
        "t_590M_highway": "t=3.3",
        "t_590M_standard": "t=3.7",
        "t_1B_highway": "t=2.3",
        "t_1B_standard": "t=2.4",
    }
    assert sum(r["source"] == "Table 2" for r in records.values()) == 25  # 10 t values, 15 means


def test_recomputed_t_and_p_are_scipys_and_the_tables(sweep, audit):
    t = gap_table(sweep).set_index(["size", "baseline"])
    for size, b in (("590M", "highway"), ("1B", "standard"), ("60M", "standard")):
        cell = sweep[sweep["size"] == size]
        res = stats.ttest_ind(
            cell.loc[cell.variant == b, "val_loss"],
            cell.loc[cell.variant == "review_neutral", "val_loss"],
            equal_var=False,
        )
        row = audit.loc[f"table2_t_{size}_{b}"]
        assert (
            row["recomputed"]
            == pytest.approx(res.statistic, rel=1e-12)
            == pytest.approx(t.loc[(size, b), "welch_t"])
        )
        assert row["p"] == pytest.approx(res.pvalue, rel=1e-12) and row["df"] == pytest.approx(
            res.df, rel=1e-12
        )
        assert row["recomputed_low"] < row["recomputed"] < row["recomputed_high"]
        assert row["primary_p_adj"] == pytest.approx(t.loc[(size, b), "p_adj_paired"])


def test_published_verdicts(audit):
    v = audit["verdict"]
    for k in ("t_590M_highway", "t_590M_standard", "t_1B_highway", "t_1B_standard"):
        assert v[k] == "consistent"
    assert (v[audit["source"] == "Table 2"] == "consistent").all()
    assert (audit.loc[audit["test"] == "mean", "grim"] == "possible").all()
    # "p about 0.07": 0.083 and 0.077 lie outside [0.065, 0.075), and both stay above 0.05
    assert v["p_about_0.07_highway"] == v["p_about_0.07_standard"] == "value error"
    assert v["significant_590M_highway"] == v["significant_590M_standard"] == "consistent"
    assert v["a_trend_highway"] == "consistent"
    assert audit.loc["a_trend_highway", "primary"] == "understated: significant under the primary test"
    assert (
        audit.loc["significant_590M_standard", "primary"]
        == "not shown: not significant under the primary test"
    )
    assert v["grows_every_size"] == "not supported: the gap falls between some sizes"
    assert "Highway 150M 0.0049 -> 320M" in audit.loc["grows_every_size", "evidence"]
    assert v["no_advantage_small"] == "not shown: equivalence within ±0.005 fails in 5 of 6 cells"
    # issue 44: the tokens per run differ across sizes, which the paper's "identical token budget" contradicts
    assert v["identical_token_budget"] == (
        "contradicted across sizes: tokens per run 131M at 60M-320M, 115M at 590M, 98.3M at 1B, so tokens per "
        "parameter go from 2.20 at 60M to 0.10 at 1B (r = -0.998 with log10 N); identical within each size only"
    )
    budget = audit.loc["identical_token_budget", "numbers"]
    assert budget["steps_1B"] == 6000 and budget["tokens_1B"] == 6000 * 64 * 256
    assert round(budget["tokens_per_param_60M"], 2) == 2.20
    for b in ("highway", "standard"):
        assert v[f"emerges_{b}"].startswith(
            "the gap grows along the sweep, where size and tokens per parameter move together (r = -0.998), so "
            "the data cannot attribute it to size"
        )
        assert audit.loc[f"emerges_{b}", "evidence"].endswith(
            "where log10 N and log10 D/N correlate at r = -0.998"
        )


def test_constructed_claims_reach_each_verdict(sweep, tmp_path):
    cell = sweep[sweep["size"] == "590M"].pivot(index="seed", columns="variant", values="val_loss")
    paired = stats.ttest_rel(cell["highway"], cell["review_neutral"])
    welch = 'words = "w"\nsize = "590M"\nbaseline = "highway"\ntest = "welch"\n'
    path = claims_file(
        tmp_path,
        f'id = "ok"\n{welch}reported = "t=3.3"',
        f'id = "rounding"\n{welch}reported = "t=3.23"',  # 3.2774, within the rows' rounding 3.222 to 3.334
        f'id = "value"\n{welch}reported = "t=4.1"',  # still significant on ~4 df
        f'id = "decision"\n{welch}reported = "t=2.0"',  # p 0.12 on ~4 df: not significant
        'id = "decision_p"\nwords = "w"\nsize = "1B"\nbaseline = "highway"\ntest = "welch"\nreported = "p<0.05"',
        f'id = "paired"\nwords = "w"\nsize = "590M"\nbaseline = "highway"\ntest = "paired"\nreported = "t={paired.statistic:.1f}"',
        'id = "absent"\nwords = "w"\nsize = "3B"\nbaseline = "highway"\ntest = "welch"\nreported = "t=1"',
    )
    c = claims(sweep, records=path).set_index("id")
    assert c["verdict"].to_dict() == {
        "ok": "consistent",
        "rounding": "consistent only by rounding",
        "value": "value error",
        "decision": "decision error",
        "decision_p": "decision error",
        "paired": "consistent",
        "absent": "n/a: no runs at 3B in the data",
    }
    assert c.loc["paired", "recomputed"] == pytest.approx(paired.statistic, rel=1e-12)
    assert c.loc["paired", "df"] == 2 and c.loc["paired", "p"] == pytest.approx(paired.pvalue, rel=1e-12)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (
            'id = "a"\nwords = "w"\nsize = "1B"\nbaseline = "highway"\ntest = "welch"\nreported = "t=1"\ncolour = "red"',
            "unknown field(s) colour",
        ),
        (
            'id = "a"\nwords = "w"\nsize = "1B"\nbaseline = "highway"\ntest = "anova"\nreported = "t=1"',
            "test must be one of",
        ),
        (
            'id = "a"\nwords = "w"\nsize = "1B"\nbaseline = "highway"\ntest = "welch"\nreported = "t about 1"',
            "cannot read the reported value",
        ),
        ('id = "a"\nwords = "w"\ncheck = "vibes"', "check must be one of"),
        ('words = "w"\ncheck = "budget"', "needs an id"),
    ],
)
def test_bad_claims_file_is_a_sentence(tmp_path, record, message):
    with pytest.raises(
        InputError, match=r"claims.toml: claim 1 \(.*\): " + message.replace("(", r"\(").replace(")", r"\)")
    ):
        load_claims(claims_file(tmp_path, record))


def test_duplicate_id_and_bad_toml(tmp_path):
    with pytest.raises(InputError, match="claim 2 \\(a\\): the id 'a' is used twice"):
        load_claims(
            claims_file(
                tmp_path, 'id = "a"\nwords = "w"\ncheck = "budget"', 'id = "a"\nwords = "w"\ncheck = "grows"'
            )
        )
    bad = tmp_path / "bad.toml"
    bad.write_text("[[claim]\n", encoding="utf-8")
    with pytest.raises(InputError, match="not a TOML claims file"):
        load_claims(bad)


def test_claims_json_carries_every_number():
    out = rr("analyze", "claims", "--format", "json")
    assert out.exit_code == 0, out.output
    rows = {r["id"]: r for r in json.loads(out.output)}
    t = rows["t_590M_highway"]
    for key in (
        "reported_value",
        "reported_low",
        "reported_high",
        "recomputed",
        "recomputed_low",
        "recomputed_high",
        "df",
        "p",
        "p_adj",
        "primary_p_adj",
    ):
        assert isinstance(t[key], float), key
    assert t["n"] == 3 and t["reported_low"] == pytest.approx(3.25)
    assert rows["significant_590M_highway"]["reported_low"] is None  # unbounded below
    e = rows["emerges_highway"]["numbers"]
    assert isinstance(e["slope_per_decade"], float) and isinstance(e["p"], float)
    assert all(isinstance(x, (int, float)) for x in rows["no_advantage_small"]["numbers"].values())


@pytest.mark.slow
def test_claims_file_option_and_its_error(tmp_path):
    path = claims_file(tmp_path, 'id = "b"\nwords = "w"\ncheck = "budget"')
    out = rr("analyze", "claims", "--claims-file", path, "--format", "csv")
    assert out.exit_code == 0 and out.output.count("\n") == 2 and '""steps_60M"": 8000' in out.output
    bad = rr("analyze", "claims", "--claims-file", claims_file(tmp_path, 'id = "b"'))
    assert (
        bad.exit_code == 2
        and "needs an id and the paper's words" in bad.output
        and "Traceback" not in bad.output
    )

"""R as the oracle: lmerTest (per-size mixed model; size-deviation model with Satterthwaite and pbkrtest's
Kenward-Roger df) and metafor's rma(..., test = "knha") with its predict() against rr, on the published sweep and on
hypothesis-generated ones (unbalanced, missing seeds, new size labels, extra variants); and lme4's crossed
random-effects fit against rr's seed components (tests/oracle_seeds.R), on constructed crossed designs.

One Rscript process runs every dataset (tests/oracle.R, tests/oracle_seeds.R). Skipped, with the reason, without Rscript or
its packages (Debian: r-base-core r-cran-lmertest r-cran-metafor; .ci/run installs them).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import budget_grid
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rr_analysis.cells import budget_cells
from rr_analysis.stats.emergence import emergence
from rr_analysis.stats.forecast import forecast
from rr_analysis.stats.mixed import mixed_table
from rr_analysis.stats.tokens import cell_budgets
from rr_core.sweepfile.dataset import load_sweep

ORACLE = Path(__file__).with_name("oracle.R")
PACKAGES = ("lmerTest", "metafor", "jsonlite", "pbkrtest")


def _r_missing() -> str:
    if shutil.which("Rscript") is None:
        return "Rscript is not installed (apt-get install r-base-core r-cran-lmertest r-cran-metafor)"
    check = "cat(all(sapply(c({}), requireNamespace, quietly = TRUE)))".format(
        ", ".join(f'"{p}"' for p in PACKAGES)
    )
    out = subprocess.run(["Rscript", "-e", check], capture_output=True, text=True)
    return "" if out.stdout.strip() == "TRUE" else f"R lacks one of {', '.join(PACKAGES)}"


WHY = _r_missing()
pytestmark = pytest.mark.skipif(bool(WHY), reason=WHY)


def with_reference_params(d: pd.DataFrame) -> pd.DataFrame:
    """`d` with each row's cell's reference parameter count, as rr counts it (the oracle's N in D/N)."""
    cells = budget_cells(d)
    n = cell_budgets(cells, "review_neutral").set_index("size")["params"]
    return d.assign(ref_params=cells["size"].map(n).astype(float).to_numpy())


def run_r(sweeps: list[pd.DataFrame], tmp: Path) -> list[dict]:
    paths = []
    for i, d in enumerate(sweeps):
        paths.append(tmp / f"sweep{i}.csv")
        with_reference_params(d).to_csv(paths[-1], index=False)
    out = tmp / "r.json"
    subprocess.run(["Rscript", str(ORACLE), *map(str, paths), str(out)], check=True, capture_output=True)
    return json.loads(out.read_text())


def close(a: float, b, rel: float) -> bool:
    return b is not None and abs(a - b) <= rel * max(abs(b), 1e-300)


def compare(d: pd.DataFrame, r: dict, rel: dict[str, float]) -> list[str]:
    """Every mismatch between rr and R on one sweep, as readable lines (empty: they agree)."""
    bad = compare_meta2(d, r.get("meta2") or {}, rel["meta"])
    if "mixed" not in r:  # several budgets: R fitted the two-moderator model only
        return bad
    m = mixed_table(d)
    for size, terms in (r["mixed"] or {}).items():
        for term, (est, se, df, p) in ((t, v.values()) for t, v in terms.items()):
            row = m[(m["size"] == size) & (m["baseline"] == term.removeprefix("variant"))].iloc[0]
            for col, want in zip(
                ("mixed_coef", "mixed_se", "mixed_df", "mixed_p"), (est, se, df, p), strict=True
            ):
                if not close(row[col], want, rel[col.split("_")[1]]):
                    bad.append(f"mixed {size} {term} {col}: rr {row[col]!r} R {want!r}")
    e = emergence(d).set_index("baseline")
    dev = r["deviation"] or {"satterthwaite": {}, "kr": {}}
    for kind, prefix in (("satterthwaite", "dev_"), ("kr", "dev_kr_")):
        for term, vals in dev[kind].items():
            b = term.removesuffix(":lxc")
            cols = ["dev_slope", f"{prefix}se", f"{prefix}df", f"{prefix}p"]
            for col, want in zip(cols, vals.values(), strict=True):
                if not close(e.loc[b, col], want, rel[col.split("_")[-1]]):
                    bad.append(f"deviation {kind} {b} {col}: rr {e.loc[b, col]!r} R {want!r}")
    for b, vals in (r["meta"] or {}).items():
        for key, want in vals.items():
            if not close(e.loc[b, f"meta_{key}"], want, rel["meta"]):
                bad.append(f"meta {b} {key}: rr {e.loc[b, f'meta_{key}']!r} R {want!r}")
    return bad + compare_forecast(d, r.get("forecast") or {}, rel["meta"]) + compare_models(d, r, rel)


def compare_meta2(d: pd.DataFrame, r: dict, rel: float) -> list[str]:
    """rr's size-level fit on log10 N and log10 D/N against metafor's rma(mods = ~ lN + lDN, test = "knha"),
    and that rr fits it for exactly the baselines R does."""
    e = emergence(d).set_index("baseline")
    fitted = set(e.index[np.isfinite(e["meta2_size_slope"].astype(float))])
    bad = [] if fitted == set(r) else [f"meta2 fitted for {sorted(fitted)} by rr, {sorted(r)} by R"]
    for b, vals in r.items():
        ahead = vals.pop("forecast")
        for key, want in vals.items():
            got = e.loc[b, f"meta2_{key}"] if b in e.index else np.nan
            if not close(got, want, rel):
                bad.append(f"meta2 {b} {key}: rr {got!r} R {want!r}")
        if e.loc[b, "dn_reading"] != "separable":
            continue  # rr forecasts at a stated budget only where the cells tell size from D/N
        at = f"{10 ** (ahead['x'][0] - 6)!r}M"
        f = forecast(d, [at], tokens_per_param=10 ** ahead["x"][1]).set_index("baseline")
        for key in ("pred", "se", "ci_low", "ci_high", "pi_low", "pi_high"):
            got = f.loc[b, "pred_se" if key == "se" else key]
            if not close(got, ahead[key], rel):
                bad.append(f"meta2 forecast {b} {key}: rr {got!r} R {ahead[key]!r}")
    return bad


def compare_forecast(d: pd.DataFrame, r: dict, rel: float) -> list[str]:
    """rr's forecast against metafor's predict.rma at the sizes R chose (log10 counts past the largest)."""
    bad = []
    for b, vals in r.items():
        labels = [f"{10 ** (x - 6)!r}M" for x in vals["x"]]
        f = forecast(d, labels)  # every baseline in the models, as the oracle fits them
        f = f[f["baseline"] == b]
        for key in ("pred", "se", "ci_low", "ci_high", "pi_low", "pi_high"):
            got = f["pred_se" if key == "se" else key].to_numpy()
            bad += [
                f"forecast {b} {lab} {key}: rr {g!r} R {w!r}"
                for lab, g, w in zip(labels, got, vals[key], strict=True)
                if not close(g, w, rel)
            ]
    return bad


def compare_models(d: pd.DataFrame, r: dict, rel: dict[str, float]) -> list[str]:
    """The forecast's (b) (Kenward-Roger) and (a) (Satterthwaite) gaps against lmer centred at that size."""
    fm = r.get("forecast_models") or {}
    if not fm:
        return []
    f = forecast(d, [f"{10 ** (fm['x'] - 6)!r}M"]).set_index("baseline")
    bad = []
    for kind, prefix in (("kr", "dev_"), ("run", "run_")):
        for b, vals in (fm.get(kind) or {}).items():
            for col, want in zip(
                (f"{prefix}pred", f"{prefix}se", f"{prefix}df"), list(vals.values())[:3], strict=True
            ):
                tol = rel["df"] if col.endswith("df") else rel["coef"]
                if not close(f.loc[b, col], want, tol):
                    bad.append(f"forecast {kind} {b} {col}: rr {f.loc[b, col]!r} R {want!r}")
    return bad


# Estimates and SEs to 1e-6. df and p come from numerical derivatives at an optimum that two optimisers
# locate only to ~1e-6 in theta on a flat REML surface, so they get 1e-5; metafor's REML tau^2 to 1e-6.
REL = {"coef": 1e-6, "slope": 1e-6, "se": 1e-6, "df": 1e-5, "p": 1e-5, "meta": 1e-6}


def test_published_sweep_matches_r(tmp_path):
    d = load_sweep()
    assert compare(d, run_r([d], tmp_path)[0], REL) == []


@pytest.mark.slow
def test_two_moderator_fit_on_a_grid_of_budgets_matches_r(tmp_path):
    """Issue 44: on 3 sizes x 3 budgets (conftest.budget_grid), each (size, steps) cell's paired gap on log10 N
    and log10 D/N, as metafor fits it, to 1e-6; and on the published sweep, where the two barely differ."""
    grid = budget_grid()
    r = run_r([grid], tmp_path)[0]
    assert set(r["meta2"]) == {"standard"}
    assert compare(grid, r, REL) == []


@st.composite
def sweeps(draw) -> pd.DataFrame:
    """A sweep with 3-6 new size labels, 2-4 seeds, some runs missing, and 1-3 extra variants."""
    n_sizes = draw(st.integers(3, 6))
    extra = draw(
        st.lists(st.sampled_from(["standard", "layerscale", "rezero"]), min_size=0, max_size=2, unique=True)
    )
    variants = ["review_neutral", "highway", *extra]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    params = np.sort(rng.uniform(1.0, 3.5, n_sizes)) + np.arange(n_sizes) * 0.3
    rows = []
    for i in range(n_sizes):
        seeds = int(rng.integers(2, 5))
        u = rng.normal(0, 0.01, seeds)  # the seed effect, shared by every variant at the size
        for j, v in enumerate(variants):
            effect = 0.004 * j * (params[i] - 2) + rng.normal(0, 0.002)  # a slope and a size deviation
            for s in range(seeds):
                rows.append((f"S{i}", v, s, 10 ** params[i], 8000, 2.0 - 0.1 * params[i] + effect + u[s]))
    d = pd.DataFrame(rows, columns=["size", "variant", "seed", "params_M", "steps", "val_loss"])
    d["val_loss"] += rng.normal(0, 0.001, len(d))
    drop = rng.random(len(d)) < draw(st.sampled_from([0.0, 0.1, 0.2]))
    keep = ~drop | (d["seed"] < 2) & (d["variant"] == "review_neutral")
    return d[keep].reset_index(drop=True)


@pytest.mark.slow  # R and rr on ten sweeps, forecasts included: about 5 min on two shared cores
@settings(max_examples=1, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(sweeps(), min_size=10, max_size=10))
def test_generated_sweeps_match_r(tmp_path_factory, batch):
    results = run_r(batch, tmp_path_factory.mktemp("oracle"))
    bad = {i: compare(d, r, REL) for i, (d, r) in enumerate(zip(batch, results, strict=True))}
    assert {i: b for i, b in bad.items() if b} == {}


# ------------------------------------------------------------------------------------------ seed components

SEEDS_ORACLE = Path(__file__).with_name("oracle_seeds.R")


def crossed(n_init: int, n_data: int, reps: int, sd: tuple[float, float, float], seed: int) -> pd.DataFrame:
    """Runs of a balanced crossed design: init and data effects drawn with SDs sd[0] and sd[1], noise sd[2]."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(0, sd[0], n_init), rng.normal(0, sd[1], n_data)
    rows = [
        (i, j, 1.7 + a[i] + b[j] + rng.normal(0, sd[2]))
        for i in range(n_init)
        for j in range(n_data)
        for _ in range(reps)
    ]
    return pd.DataFrame(rows, columns=["init", "data", "y"])


# Both components inside the space, a 2 x 2 pilot, then the init component and (with neither drawn) the data
# component on the boundary at 0: its mean square below the residual's, its sum of squares pooled with it
DESIGNS = [
    crossed(4, 3, 2, (0.01, 0.02, 0.005), 1),
    crossed(2, 2, 1, (0.01, 0.02, 0.005), 2),
    crossed(3, 4, 2, (0.0, 0.02, 0.01), 3),
    crossed(3, 3, 1, (0.0, 0.0, 0.01), 4),
]


def test_seed_components_match_lme4(tmp_path):
    from rr_analysis.stats.seeds import seed_components

    paths = []
    for i, d in enumerate(DESIGNS):
        paths.append(tmp_path / f"crossed{i}.csv")
        d.to_csv(paths[-1], index=False)
    out = tmp_path / "r.json"
    subprocess.run(
        ["Rscript", str(SEEDS_ORACLE), *map(str, paths), str(out)], check=True, capture_output=True
    )
    bound = 0
    for d, want in zip(DESIGNS, json.loads(out.read_text()), strict=True):
        runs = d.rename(columns={"init": "init_seed", "data": "data_seed", "y": "val_loss"})
        runs = runs.assign(size="tiny", variant="standard", seed=range(len(d)), params_M=1.0, steps=100)
        got = seed_components(runs).iloc[0]
        for key in ("init_var", "data_var", "resid_var"):
            scale = want["resid_var"]  # lme4 stops a component at its boundary within ~1e-8 of the residual's
            assert abs(got[key] - want[key]) <= 1e-6 * max(want[key], 0) + 1e-8 * scale, (key, got[key], want)
        assert got["mean"] == pytest.approx(want["mean"], rel=1e-9)
        bound += (got["init_var"] == 0) + (got["data_var"] == 0)
    assert bound == 2  # the boundary was reached: the pooled residual is checked too

"""--pool-check: new rows flagged by recipe and provenance, the source term of the pooled model against an
independent computation, and rr merge's source records read back."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict

import numpy as np
import pandas as pd
import pytest
from conftest import rr

from rr_analysis.stats.pooling import pool_check, row_flags
from rr_core.ladder import RECIPE
from rr_core.sweepfile.dataset import append_rows, bundled_path, write_sweep
from rr_core.sweepfile.provenance import append_record, sidecar_path


def new_seed(sweep: pd.DataFrame, seed: int = 5, shift: float = 0.004, jitter: float = 0.003) -> pd.DataFrame:
    rows = sweep[sweep["seed"] == 0].assign(seed=seed)
    rng = np.random.default_rng(seed)
    return rows.assign(val_loss=(rows["val_loss"] + shift + rng.normal(0, jitter, len(rows))).round(4))


def test_published_rows_alone_have_nothing_to_check(sweep):
    r = pool_check(sweep).iloc[0]
    assert (r["n_published"], r["n_new"], r["n_flagged"]) == (42, 0, 0) and np.isnan(r["estimate"])
    assert r["note"] == "no new rows to compare"


def test_source_term_equals_the_between_block_contrast(sweep):
    """Every block (size, seed) holds all three variants with equal weight, so the REML estimate of a term
    constant within blocks is the OLS fit of the block means on size and source (within-block contrasts are
    orthogonal to it): an independent computation of the same number."""
    merged = pd.concat([sweep, new_seed(sweep)], ignore_index=True)
    r = pool_check(merged).iloc[0]
    blocks = merged.groupby(["size", "seed"], sort=False, observed=True)["val_loss"].mean().reset_index()
    sizes = pd.get_dummies(blocks["size"]).to_numpy(float)
    X = np.column_stack([sizes, (blocks["seed"] == 5).to_numpy(float)])
    beta = np.linalg.lstsq(X, blocks["val_loss"].to_numpy(), rcond=None)[0]
    assert r["estimate"] == pytest.approx(beta[-1], rel=1e-6)
    assert r["n_new"] == 15 and r["n_flagged"] == 15 and 0 < r["p"] < 1
    assert all(row["flags"] == ["no provenance record: recipe and hardware unknown"] for row in r["rows"])


def test_flags_name_recipe_hardware_precision_and_changed_rows(sweep):
    good = {
        "config": {"precision": "tf32", "data": "tinystories"},
        "environment": {"device_name": "NVIDIA B200"},
    }
    row = pd.Series({"size": "60M", "steps": 8000})
    assert row_flags(row, good) == []
    other = {
        "config": {"precision": "bf16", "data": "synthetic"},
        "environment": {"device_name": "NVIDIA H200"},
    }
    assert row_flags(row, other) == [
        "precision bf16 (published: tf32)",
        "data synthetic (published: tinystories)",
        "hardware NVIDIA H200 (published: NVIDIA B200)",
    ]
    # the recipe a published size's record states, field by field (issue 49.3: recipe, not only steps)
    recipe = asdict(RECIPE)
    assert row_flags(row, {**good, "config": {**good["config"], "recipe": recipe}}) == []
    tuned = {**good, "config": {**good["config"], "recipe": {**recipe, "lr": 0.001, "batch_size": 32}}}
    assert row_flags(row, tuned) == [
        "recipe batch_size 32 (published: 64)",
        "recipe lr 0.001 (published: 0.0002)",
    ]
    changed = sweep.copy()
    changed.loc[0, "val_loss"] += 0.01
    rows = pool_check(changed).iloc[0]["rows"]
    assert len(rows) == 1 and rows[0]["flags"][0] == "changes the published row of this key"


def test_merge_keeps_sources_and_pool_check_reads_them(sweep, tmp_path):
    a = tmp_path / "a.csv"
    shutil.copy(bundled_path(), a)
    rows = new_seed(sweep)
    append_rows(a, rows.to_dict("records"))
    for r in rows.itertuples():
        env = {"device_name": "NVIDIA H100 80GB HBM3"}
        append_record(
            sidecar_path(a),
            {
                "status": "ok",
                "size": r.size,
                "variant": r.variant,
                "seed": r.seed,
                "config": {"precision": "tf32", "data": "tinystories"},
                "environment": env,
            },
        )
    merged = tmp_path / "merged.csv"
    assert rr("merge", str(a), "--out", str(merged)).exit_code == 0
    out = rr("analyze", "--data", str(merged), "--pool-check", "--format", "json")
    assert out.exit_code == 0, out.output
    r = json.loads(out.output)[0]
    assert isinstance(r["estimate"], float) and isinstance(r["p"], float) and r["n_new"] == 15
    first = r["rows"][0]
    assert first["from"] == f"{a} line 44" and first["device"] == "NVIDIA H100 80GB HBM3"
    assert first["flags"] == ["hardware NVIDIA H100 80GB HBM3 (published: NVIDIA B200)"]
    text = " ".join(rr("analyze", "pool-check", "--data", str(merged)).output.split())
    assert "verdict: " in text and "15 new row(s) flagged" in text


def test_pool_check_on_a_file_without_sidecar(sweep, tmp_path):
    path = tmp_path / "m.csv"
    write_sweep(pd.concat([sweep, new_seed(sweep)], ignore_index=True), path)
    out = rr("analyze", "--data", str(path), "--pool-check", "--format", "csv")
    assert out.exit_code == 0 and out.output.startswith("term,estimate,se,z,p,")


def test_sharding_and_its_kin_are_named_but_not_flagged(sweep, tmp_path):
    a = tmp_path / "a.csv"
    shutil.copy(bundled_path(), a)
    rows = new_seed(sweep)
    append_rows(a, rows.to_dict("records"))
    how = {"precision": "tf32", "data": "tinystories", "shard": "fsdp", "activation_checkpointing": "every:2"}
    for r in rows.itertuples():
        append_record(
            sidecar_path(a),
            {
                "status": "ok",
                "size": r.size,
                "variant": r.variant,
                "seed": r.seed,
                "config": how,
                "environment": {"device_name": "NVIDIA B200"},
                "world_size": 16,
                "grad_accum": 2,
            },
        )
    (pool,) = json.loads(rr("analyze", "--data", str(a), "--pool-check", "--format", "json").stdout)
    assert pool["n_new"] == len(rows) and pool["n_flagged"] == 0
    details = ["sharded (fsdp)", "activation checkpointing every:2", "2 micro-batches", "16 processes"]
    assert all(r["flags"] == [] and r["details"] == details for r in pool["rows"])
    text = rr("analyze", "--data", str(a), "--pool-check", env={"COLUMNS": "400"}).stdout
    said = f"was trained {', '.join(details)}: implementation details, not off the recipe"
    assert text.count(said) == len(rows)


def with_plugin_rule(sweep: pd.DataFrame) -> pd.DataFrame:
    """The published rows plus a rule beside each standard run whose rows are all new (docs/extending/myrule.py's
    example, as tests/golden/update.py's plugin sweep builds it)."""
    mine = sweep[sweep["variant"] == "standard"].assign(
        variant="myrule", val_loss=lambda d: d["val_loss"] + 0.002
    )
    return pd.concat([sweep, mine], ignore_index=True)


def test_a_variant_whose_rows_are_all_new_is_a_note_not_a_singular_matrix(sweep):
    """Issue 36: the source term beside the cell means of a variant the published sweep never ran is not
    identifiable (numpy's LinAlgError before): those cells are left out and named, and with no cell holding
    both published and new rows the term is n/a with the reason."""
    r = pool_check(with_plugin_rule(sweep)).iloc[0]
    assert (r["n_published"], r["n_new"]) == (42, 14) and np.isnan(r["estimate"]) and np.isnan(r["p"])
    assert r["note"].startswith(
        "no (size, variant) cell holds both published and new rows: the source term "
        "cannot be estimated; left out 5 (size, variant) cell(s) whose rows are all new "
        "(60M:myrule, 150M:myrule, 320M:myrule, 590M:myrule, 1B:myrule)"
    )
    assert r["verdict"].startswith("the source term cannot be fitted (the note says why)")
    # with a new seed of the published variants too, the term is theirs: the same as without the rule's rows
    seed5 = new_seed(sweep)
    both = pool_check(pd.concat([with_plugin_rule(sweep), seed5], ignore_index=True)).iloc[0]
    alone = pool_check(pd.concat([sweep, seed5], ignore_index=True)).iloc[0]
    assert both["estimate"] == pytest.approx(alone["estimate"], rel=1e-6) and 0 < both["p"] < 1
    assert "left out 5 (size, variant) cell(s) whose rows are all new" in both["note"]


def test_pool_check_says_each_sentence_once(sweep, tmp_path):
    """Issue 49.10: the reason the source term cannot be fitted was printed twice, in the verdict and in the
    note; it has one home, the note."""
    path = tmp_path / "plugin.csv"
    write_sweep(with_plugin_rule(sweep), path)
    text = " ".join(rr("analyze", "pool-check", "--data", path, env={"COLUMNS": "400"}).stdout.split())
    reason = "no (size, variant) cell holds both published and new rows: the source term cannot be estimated"
    assert text.count(reason) == 1 and "verdict: the source term cannot be fitted (the note says why)" in text

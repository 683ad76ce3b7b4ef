"""Can new rows be pooled with the published ones? Flag the rows that were not trained the published way,
and fit the primary model with a source term (published vs new) to see whether new seeds shifted the losses.

The flags (`row_flags`, from the row and its provenance sidecar record) are read by `pool_check` row by row and
by `cell_provenance` cell by cell: every view, figure and the report name the (size, variant) cells whose runs
differ from the published ones in corpus, recipe, schedule, precision or hardware (`provenance_notes`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd

from rr_analysis.cells import of_sizes
from rr_analysis.comparison import ALPHA, Comparison, asked, sizes_in_order
from rr_analysis.numbers import fixed, significant
from rr_core.errors import InputError
from rr_core.ladder import PUBLISHED_CORPUS, get_size
from rr_core.sweepfile.csv_text import FIELDS
from rr_core.sweepfile.dataset import bundled_path, load_sweep
from rr_core.sweepfile.provenance import PUBLISHED_ENVIRONMENT, read_records, sidecar_path
from rr_core.variants import label, order_key

__all__ = [
    "pool_check",
    "row_flags",
    "row_details",
    "cell_provenance",
    "provenance_notes",
    "POOL_COLUMNS",
    "PROVENANCE_COLUMNS",
]

POOL_COLUMNS: tuple[str, ...] = (
    "term",
    "estimate",
    "se",
    "z",
    "p",
    "test",
    "n_published",
    "n_new",
    "n_flagged",
    "verdict",
    "note",
    "rows",
)
KEY = ["size", "variant", "seed"]
# What `cell_provenance` says of each (size, variant) cell holding a run that differs from the published ones.
PROVENANCE_COLUMNS: tuple[str, ...] = ("size", "variant", "n_runs", "n_differ", "differs")
_UNKNOWN = "no provenance record: recipe and hardware unknown"


def _records(df: pd.DataFrame, sidecar: str | Path | None) -> tuple[dict[tuple, dict], dict[tuple, str]]:
    """The last "ok" provenance record of each key, and the input each row came from (`rr merge`'s "source"
    records), from the data's sidecar (none for the packaged file)."""
    path = Path(sidecar) if sidecar is not None else sidecar_path(df.attrs.get("path") or bundled_path())
    records, ok, sources = read_records(path), {}, {}
    for r in records:
        key = (r.get("size"), r.get("variant"), r.get("seed"))
        if r.get("status") == "ok":
            ok[key] = r
        elif r.get("status") == "source":
            sources[key] = r.get("source")
    return ok, sources


def row_flags(row: pd.Series, record: dict | None) -> list[str]:
    """Why a new row may not pool with the published ones: its recipe or provenance, one phrase each.

    Example
    -------
    >>> row = pd.Series({"size": "60M", "steps": 4000})
    >>> row_flags(row, {"config": {"precision": "bf16", "data": "tinystories"}, "environment": {"device_name": "NVIDIA H100"}})
    ['steps 4000 (published: 8000)', 'precision bf16 (published: tf32)', 'hardware NVIDIA H100 (published: NVIDIA B200)']
    """
    return [*_steps_flags(str(row["size"]), int(row["steps"])), *_record_flags(record, str(row["size"]))]


def _published(size: str):
    """The ladder's `Size` of a published size; None for any other (tiny, a ladder file's, a label off it)."""
    try:
        return get_size(size) if get_size(size).published else None
    except InputError:
        return None  # a size off the ladder: nothing of it was published


def _steps_flags(size: str, steps: int) -> list[str]:
    """A run's steps where they are not its published size's (the recipe's length), as a flag."""
    published = _published(size)
    if published is not None and steps != published.steps:
        return [f"steps {steps} (published: {published.steps})"]
    return []


def _record_flags(record: dict | None, size: str | None = None) -> list[str]:
    """What a run's provenance record says is not the published way: precision, corpus, schedule, the recipe's
    settings of a published `size` (learning rate, batch, warmup, ...), hardware."""
    if record is None:
        return [_UNKNOWN]
    flags = []
    config, env = record.get("config", {}), record.get("environment", {})
    published = _published(size) if size is not None else None
    if published is not None and isinstance(config.get("recipe"), dict):
        recipe = asdict(published.recipe)
        flags += [
            f"recipe {k} {v} (published: {recipe[k]})"
            for k, v in config["recipe"].items()
            if k in recipe and v != recipe[k]
        ]
    if config.get("precision") != PUBLISHED_ENVIRONMENT["precision"]:
        flags.append(f"precision {config.get('precision')} (published: {PUBLISHED_ENVIRONMENT['precision']})")
    if config.get("data") != PUBLISHED_CORPUS:
        flags.append(f"data {config.get('data')} (published: {PUBLISHED_CORPUS})")
    if config.get("schedule", "cosine") != "cosine":  # warmup-stable-decay: another schedule than the paper's
        flags.append(f"schedule {config['schedule']} (published: cosine)")
    device = env.get("device_name") or "unknown"
    if PUBLISHED_ENVIRONMENT["device_name"].split()[-1] not in device:
        flags.append(f"hardware {device} (published: {PUBLISHED_ENVIRONMENT['device_name']})")
    return flags


def row_details(record: dict | None) -> list[str]:
    """How a new row's run was laid over its processes, one phrase each: sharding, activation checkpointing,
    micro-batches, the number of processes. Implementation details, never flags: each computes the published
    step (the same batch, gradient and update) up to float rounding.

    Example
    -------
    >>> row_details({"config": {"shard": "fsdp", "activation_checkpointing": "full"}, "world_size": 8, "grad_accum": 1})
    ['sharded (fsdp)', 'activation checkpointing full', '8 processes']
    """
    config, record = (record or {}).get("config", {}), record or {}
    details = []
    if config.get("shard", "none") != "none":
        details.append(f"sharded ({config['shard']})")
    if config.get("activation_checkpointing", "none") != "none":
        details.append(f"activation checkpointing {config['activation_checkpointing']}")
    if record.get("grad_accum", 1) > 1:
        details.append(f"{record['grad_accum']} micro-batches")
    if record.get("world_size", 1) > 1:
        details.append(f"{record['world_size']} processes")
    return details


def cell_provenance(
    df: pd.DataFrame, sidecar: str | Path | None = None, comparison: Comparison | None = None
) -> pd.DataFrame:
    """The (size, variant) cells of a sweep whose runs differ from the published ones in corpus, recipe (steps),
    schedule, precision or hardware, as the provenance sidecar and the rows say (`row_flags`, the flags
    `pool_check` reads). A run without a record is not counted: what it differs in is unknown (`pool_check`
    names it), and the published rows, which predate the records, differ in nothing.

    Parameters
    ----------
    df
        A sweep (`load_sweep`), before or after a comparison chose its rows.
    sidecar
        Its provenance sidecar; default the file's own (`sidecar_path`; none for the packaged file).
    comparison
        The cells read: its sizes (`rr_analysis.comparison.of_sizes`), and its reference and baselines where
        it names baselines (every variant otherwise). Default: every cell.

    Returns
    -------
    DataFrame with `PROVENANCE_COLUMNS`, one row per cell with such a run, in the data's size order:
    ``size, variant``, ``n_runs`` (the cell's runs), ``n_differ`` (those that differ) and ``differs`` (each
    difference once, as `row_flags` words it). Empty for the published file.

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> len(cell_provenance(load_sweep()))
    0
    """
    if comparison is not None:
        df = of_sizes(df, comparison)
        if comparison.baselines is not None:
            df = df[df["variant"].isin([comparison.reference, *comparison.baselines])]
    records, _ = _records(df, sidecar)
    out = []
    pairs = df[["size", "steps"]].drop_duplicates()
    steps = {(str(s), int(n)): _steps_flags(str(s), int(n)) for s, n in pairs.itertuples(index=False)}
    if not records and not any(steps.values()):  # nothing recorded, every run at its size's steps
        return pd.DataFrame(out, columns=list(PROVENANCE_COLUMNS))
    keys = zip(
        df["size"].astype(str), df["variant"], df["seed"].astype(int), df["steps"].astype(int), strict=True
    )
    flags = [steps[(s, n)] + _record_flags(records.get((s, v, k)), s) for s, v, k, n in keys]
    runs = pd.DataFrame({"size": df["size"].to_numpy(), "variant": df["variant"].to_numpy(), "flags": flags})
    for (size, variant), cell in runs.groupby(["size", "variant"], sort=False, observed=True):
        known = [[f for f in fs if f != _UNKNOWN] for fs in cell["flags"]]
        if any(known):
            differs = list(dict.fromkeys(f for fs in known for f in fs))
            out.append((str(size), variant, len(cell), sum(map(bool, known)), differs))
    order = {s: i for i, s in enumerate(sizes_in_order(df))} if out else {}
    out.sort(key=lambda c: (order[c[0]], order_key(c[1])))  # the sizes' order, then the registry's
    return pd.DataFrame(out, columns=list(PROVENANCE_COLUMNS))


def provenance_notes(cells: pd.DataFrame) -> list[str]:
    """The sentences every view, figure and the report add for `cell_provenance`'s cells: one per size and
    difference, naming the cells (variants) it holds and how many of their runs differ.

    Example
    -------
    >>> cells = pd.DataFrame([("tiny", v, 2, 2, ["data synthetic (published: tinystories)"])
    ...                       for v in ("review_neutral", "highway")], columns=PROVENANCE_COLUMNS)
    >>> provenance_notes(cells)
    ['provenance: tiny Review, Highway: 4 of 4 runs differ from the published ones: data synthetic (published: tinystories)']
    """
    notes = []
    for _, group in cells.groupby(
        [cells["size"], cells["differs"].map("; ".join)], sort=False, observed=True
    ):
        arms = ", ".join(label(v) for v in group["variant"])
        n, of = int(group["n_differ"].sum()), int(group["n_runs"].sum())
        notes.append(
            f"provenance: {group['size'].iloc[0]} {arms}: {n} of {of} runs differ from the published ones: "
            + "; ".join(group["differs"].iloc[0])
        )
    return notes


def _new_rows(
    df: pd.DataFrame, published: pd.DataFrame, records: dict, sources: dict
) -> tuple[np.ndarray, list[dict]]:
    """Which rows are not published rows unchanged, and each such row with its flags."""
    values = [c for c in FIELDS if c not in KEY]
    pub = published.set_index(KEY)[values]
    new, rows = np.zeros(len(df), dtype=bool), []
    for i, (_, r) in enumerate(df.iterrows()):
        key = (r["size"], r["variant"], int(r["seed"]))
        same = key in pub.index and all(
            (pd.isna(a) and pd.isna(b)) or a == b for a, b in zip(pub.loc[key], r[values], strict=True)
        )
        if same:
            continue
        new[i] = True
        record = records.get(key)
        flags = ["changes the published row of this key"] * (key in pub.index) + row_flags(r, record)
        env = (record or {}).get("environment", {})
        rows.append(
            {
                "size": key[0],
                "variant": key[1],
                "seed": key[2],
                "from": sources.get(key),
                "device": env.get("device_name"),
                "precision": (record or {}).get("config", {}).get("precision"),
                "flags": flags,
                "details": row_details(record),
            }
        )
    return new, rows


def _source_fit(df: pd.DataFrame, new: np.ndarray, metric: str) -> tuple[dict, str]:
    """REML fit of metric ~ 0 + size:variant + new + (1 | size:seed): the source term, or why it did not run.

    A (size, variant) cell whose rows are all new (a variant the published sweep never ran, such as a plugin
    rule) says nothing of the source term: its own mean absorbs it, and with it in the model the term is not
    identifiable (a singular design). Such cells are left out of the fit and named in the note; when no cell
    holds both published and new rows, the term cannot be estimated and the note says why."""
    import statsmodels.formula.api as smf

    data = pd.DataFrame(
        {
            "y": df[metric].to_numpy(float),
            "new": new.astype(float),
            "cell": (df["size"].astype(str) + ":" + df["variant"]).to_numpy(str),
            "block": (df["size"].astype(str) + ":" + df["seed"].astype(str)).to_numpy(str),
        }
    )
    empty = {"estimate": math.nan, "se": math.nan, "z": math.nan, "p": math.nan}
    if not new.any() or new.all():
        return empty, "no new rows to compare" if not new.any() else "no published rows to compare with"
    share = data.groupby("cell", sort=False, observed=True)["new"].mean()
    by_size = df[["size", "variant"]].drop_duplicates().sort_values("size", kind="stable")  # the sizes' order
    only_new = [c for c in by_size["size"].astype(str) + ":" + by_size["variant"] if share[c] == 1.0]
    left = (
        f"left out {len(only_new)} (size, variant) cell(s) whose rows are all new ({', '.join(only_new)}): a "
        "cell with no published row says nothing of a shift from the published rows"
        if only_new
        else ""
    )
    data = data[~data["cell"].isin(only_new)]
    if not (data["new"] == 1.0).any():
        why = "no (size, variant) cell holds both published and new rows: the source term cannot be estimated"
        return empty, "; ".join(filter(None, [why, left]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fit = smf.mixedlm("y ~ 0 + C(cell) + new", data, groups=data["block"]).fit(reml=True)
        except np.linalg.LinAlgError as e:  # a design singular some other way: say so, never a traceback
            return empty, "; ".join(filter(None, [f"the model cannot be fitted ({e})", left]))
    out = {
        "estimate": float(fit.params["new"]),
        "se": float(fit.bse["new"]),
        "z": float(fit.tvalues["new"]),
        "p": float(fit.pvalues["new"]),
    }
    note = "; ".join(sorted({str(w.message).split("\n")[0] for w in caught}))
    return out, "; ".join(filter(None, [f"fit warnings: {note}" if note else "", left]))


def pool_check(
    df: pd.DataFrame,
    sidecar: str | Path | None = None,
    published: pd.DataFrame | None = None,
    comparison: Comparison | None = None,
) -> pd.DataFrame:
    """Whether the rows of a sweep that are not published rows can be pooled with the published ones.

    Parameters
    ----------
    df
        A sweep (`load_sweep`): the published rows and new ones (a merge, `rr merge`).
    sidecar
        Its provenance sidecar; default the file's own (`sidecar_path`).
    published
        The published rows; default the packaged copy.
    comparison
        The comparison (`rr_analysis.comparison.Comparison`): its reference and
        baselines are the variants kept (default Review and every other variant present), its metric the
        column modelled, as it is (a shift of the metric itself, whichever way is better).

    Returns
    -------
    DataFrame with `POOL_COLUMNS`, one row per term of the model (today one: "source: new - published"):
    ``estimate, se, z, p`` (the source term: mean shift of the new rows' metric, Wald z, two-sided),
    ``test`` (the model), ``n_published, n_new, n_flagged``, ``verdict``, ``note`` (why the fit did not run,
    or its warnings) and ``rows``: each new row's key, ``from`` (the input `rr merge` took it from), device,
    precision, ``flags`` (why it may not pool:
    off the published recipe, other hardware or precision, no provenance record, a changed published row)
    and ``details`` (how it was laid over its processes: sharding, activation checkpointing, micro-batches,
    processes; `row_details`), which are not flags.

    Notes
    -----
    The per-size mixed model of the primary test's twin, pooled over sizes with one source term:
    metric ~ 0 + size:variant + new + (1 | size:seed), REML (statsmodels MixedLM), where new = 1 for a row
    that is not a published row unchanged. New seeds share no block with published ones, so the source term
    is a contrast between seed blocks, judged against the between-seed variance. A (size, variant) cell with
    no published row (a plugin rule's) cannot inform the term and would make it unidentifiable: it is left
    out of the fit and named in ``note``.

    Example
    -------
    >>> from rr_core.sweepfile.dataset import load_sweep
    >>> pool_check(load_sweep())["verdict"].item()
    'nothing to check: every row is a published row unchanged'
    """
    c = asked(comparison)
    reference, baselines, metric = c.reference, c.baselines, c.metric
    published = load_sweep(bundled_path()) if published is None else published
    keep = [reference, *(baselines if baselines is not None else sorted(set(df["variant"]) - {reference}))]
    df = df[df["variant"].isin(keep)]
    new, rows = _new_rows(df, published, *_records(df, sidecar))
    fit, note = _source_fit(df, new, metric)
    flagged = sum(bool(r["flags"]) for r in rows)
    if not new.any():
        verdict = "nothing to check: every row is a published row unchanged"
    elif math.isnan(fit["p"]):
        verdict = "the source term cannot be fitted (the note says why)"  # the reason's one home: `note`
    else:
        shift = "the new rows shift" if fit["p"] < ALPHA else "no shift detected in"
        verdict = f"{shift} {metric} by {fixed(fit['estimate'], 5, sign=True)} (p {significant(fit['p'], 3)})"
    if flagged:
        verdict += f"; {flagged} new row(s) flagged: pool them only knowingly"
    test = f"{metric} ~ 0 + size:variant + new + (1 | size:seed), REML, Wald z (statsmodels MixedLM)"
    return pd.DataFrame(
        [
            {
                "term": "source: new - published",
                **fit,
                "test": test,
                "n_published": int((~new).sum()),
                "n_new": int(new.sum()),
                "n_flagged": flagged,
                "verdict": verdict,
                "note": note,
                "rows": rows,
            }
        ],
        columns=list(POOL_COLUMNS),
    )

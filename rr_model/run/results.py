"""What a finished run leaves: its row and provenance record, appended as one unit under the row's lock
(`write_results`, `publish`), its final weights with what rebuilds them (`keep_weights`), the record itself
(`run_record`), the error that says how `--resume` writes what could not be written (`unwritten`), and one
flat line per record for the command's table (`summarize`).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from rr_core.budget import reference_params
from rr_core.errors import InputError
from rr_core.files.appending import Unwritten
from rr_core.files.reading import stamp
from rr_core.plugins import provenance
from rr_core.sweepfile.csv_text import DataError
from rr_core.sweepfile.dataset import append_rows
from rr_core.sweepfile.provenance import append_record, sidecar_path
from rr_model.checkpoint import state as checkpoint
from rr_model.config import TrainConfig
from rr_model.data.windows import describe_held_out
from rr_model.run.identity import result_config
from rr_model.run.output_file import dataset_row
from rr_model.run.run_checkpoints import remove_checkpoints
from rr_model.run.run_state import Run
from rr_model.run.step import utc_now

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "publish",
    "final_weights",
    "keep_weights",
    "run_record",
    "write_results",
    "unwritten",
    "summarize",
]


def publish(run: Run, record: dict[str, Any]) -> dict[str, Any]:
    """Write the run's row and record (rank 0) and drop its checkpoints, which they supersede; the record.

    Where the final weights are kept (`finish` saved them) the checkpoints go first: a kill before the row
    leaves the final weights, from which the same command with --resume writes the row (`kept_record`),
    and a kill after it leaves nothing behind. In the other order a kill between the two left a checkpoint
    that no later command removed, the run's row being in place. A diverged run (no final weights) keeps
    its checkpoint until its record is written."""
    if run.rank == 0:
        final_kept = checkpoint.final_path(run.out, *run.cfg.key).exists()
        if final_kept:
            remove_checkpoints(run)
        if (written := write_results(run.out, run.cfg, record, run.ckpt)) is not None:
            run.plan.extend(*written)
        if not final_kept:
            remove_checkpoints(run)
    return record


def final_weights(run: Run) -> dict[str, torch.Tensor]:
    """The whole model's state dict on rank 0 (a sharded run's pieces gathered: every process calls this)."""
    if not run.sharded:
        return run.model.state_dict()
    from rr_model.parallel.sharding import full_weights

    return full_weights(run.model)


def keep_weights(run: Run, record: dict[str, Any], weights: dict[str, torch.Tensor]) -> None:
    """The finished run's weights (no optimiser) and what rebuilds them, for rr sample, eval, export, gates."""
    final = checkpoint.Final(
        step=run.cfg.steps,
        config=result_config(run.cfg),
        model=weights,
        model_config=asdict(run.mcfg),
        data=run.tokens.describe(),
        record=json.loads(json.dumps(record)),  # plain values (torch's version is a str subclass)
    )
    checkpoint.save(checkpoint.final_path(run.out, **run.cfg.stem), final)


def run_record(run: Run, failure: str | None, result: dict[str, Any] | None) -> dict[str, Any]:
    """The run's provenance record for the sidecar; a plugin's variant adds its module, file and sha256."""
    plugin, r = provenance(run.cfg.variant), run.cfg.recipe
    return {
        "run_id": uuid.uuid4().hex[:12],
        **run.cfg.named,  # size, variant, seed; lr, and steps and budget for one of several budgets
        "init_seed": run.cfg.seeds.init,  # the seeds it drew from: `seed`'s unless it named its own
        "data_seed": run.cfg.seeds.data,
        **({"role": run.cfg.role} if run.cfg.role else {}),
        **_branch_record(run),
        "status": "failed" if failure else "ok",
        "error": failure,
        **_budget_record(run),
        "config": asdict(run.cfg),
        "model": asdict(run.mcfg),
        "data": run.tokens.describe(),
        "environment": run.env,
        "world_size": run.world,
        "grad_accum": run.accum,
        "started": run.state.started,
        "ended": utc_now(),
        "resumed_at": run.state.resumed,
        "loss_curve": run.state.curve,
        "result": result,
        "val_windows": _final_windows(run) if result is not None else None,
        **({"held_out_windows": describe_held_out(run.held_out, r.block_size)} if run.cfg.eval_every else {}),
        **({"plugin": plugin} if plugin else {}),
    }


def _branch_record(run: Run) -> dict[str, Any]:
    """A cooldown branch's provenance: the steps of the run it branches from, and the step of that run's state
    it continued from (None where it trained from the start, as a run of its steps)."""
    if run.cfg.branch_of is None:
        return {}
    return {"branch_of": run.cfg.branch_of, "branched_at": run.state.branched_at}


def _budget_record(run: Run) -> dict[str, Any]:
    """What the run trains on, for its record: tokens (steps x batch x block) and tokens per parameter of the
    reference at the corpus's vocabulary (`rr_core.budget`), the same for every arm of a cell."""
    cfg = run.cfg
    n = reference_params(cfg.size, run.tokens.vocab_size, cfg.ladder, cfg.reference, cfg.recipe.block_size)
    return {"tokens": cfg.trained_tokens, "tokens_per_param": cfg.trained_tokens / n}


def _final_windows(run: Run) -> dict[str, Any]:
    """Which windows the final evaluation scored, for the record: the published draw, from the data-order
    stream where the training batches left it (so they move with the step count), `evaluate`'s batches."""
    r = run.cfg.recipe
    return {
        "draw": "the data-order stream after the training batches",
        "rng": "numpy.random.RandomState",
        "seed": run.cfg.seeds.data,
        "after_batches": run.cfg.steps,
        "batches": r.eval_batches,
        "batch_size": r.batch_size,
        "block_size": r.block_size,
    }


def write_results(
    out: Path, cfg: TrainConfig, record: dict[str, Any], ckpt: Path
) -> tuple[pd.DataFrame, tuple[int, ...] | None] | None:
    """Append the run's row (if it finished) and its provenance record as one unit, under the row's lock (a
    reader holding it sees both or neither); a refused row is recorded as failed. A row that cannot be
    written (a full disk, a folder gone) is not, nor its record: the final weights (saved before) or the
    checkpoint `ckpt` are kept, and the error says how `--resume` writes them (`unwritten`).
    Returns the row as appended and `out`'s stamp once it was in, under the lock (None for a run that
    diverged): what `rr_model.run.output_file.OutputPlan.extend` takes."""
    sidecar = sidecar_path(out)
    if record["result"] is None:
        append_record(sidecar, record)
        return None
    after = []

    def then() -> None:
        append_record(sidecar, record)
        after.append(stamp(out))

    try:
        row = dataset_row(cfg, record["result"])
        return append_rows(out, [row], then=then), after[0]
    except DataError as e:  # e.g. another trainer appended the same run meanwhile
        record.update(status="failed", error=f"row refused: {e}")
        append_record(sidecar, record)
        raise
    except (Unwritten, OSError) as e:
        raise unwritten(e, "the run's row and record", ckpt, checkpoint.final_path(out, *cfg.key)) from None


def unwritten(e: OSError | Unwritten, what: str, ckpt: Path, final: Path | None) -> InputError:
    """The error for a run whose results could not be written after training, `what` saying which: it names
    what is kept (the final weights `final`, else the checkpoint `ckpt`) and the command that writes the rest."""
    if final is not None and final.exists():
        then = f"writes them from its final weights, kept in {final}, without training"
    elif ckpt.exists():
        then = f"continues from its checkpoint {ckpt} and writes them (resuming is bitwise: the same row)"
    else:
        then = "trains it again (no checkpoint) and writes them"
    cause = str(e) if isinstance(e, Unwritten) else f"{e.filename}: {e.strerror or e}"
    return InputError(
        f"{cause}: {what} were not written. Once that is put right (space freed, the folder back), the same "
        f"rr train command with --resume {then}"
    )


def summarize(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One flat record per run record: size, variant, seed (and steps, where the runs are budgets of one
    run: `TrainConfig.several_budgets`), status, params_M, val_loss, ece, minutes (the last four None for a
    failed run)."""
    rows = []
    budgets = ("steps",) if any("budget" in r for r in records) else ()
    for r in records:
        res = r["result"] or {}
        rows.append(
            {
                **{k: r[k] for k in ("size", "variant", "seed", *budgets, "status")},
                "params_M": res["params"] / 1e6 if res else None,
                **{k: res.get(k) for k in ("val_loss", "ece", "minutes")},
            }
        )
    return rows

"""One planned run of a sweep, trained by the library: `python -m rr_model.sweep.child OUT CONFIG`.

CONFIG is the run's whole `TrainConfig` as JSON (`config_json`), so a child trains exactly the run the
sweep planned, every field included (a reproduction, a ladder file's size, the text field, determinism),
resuming from its checkpoint; `rr_model.sweep.local.train_command` writes the command line. A Slurm job
(`rr_model.sweep.slurm.TrainJob`) trains its run through the same `train_planned`. The library, not the
command line, runs here: a sweep never calls `rr`. What a child prints is what `rr train` prints for the
run: the trainer's progress, and a refusal as one `rr: error:` paragraph.

Exit 0: the row is written (or was already there); 1: the run diverged; 2: it was refused; 75 (`HELD`):
another process is training the run now (it holds the run's claim), so the sweep comes back to it later;
130: interrupted (saying whether the run continues from a checkpoint when the sweep runs again).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from typing import Any

from rr_core.errors import RRError, StoppedElsewhere, notes_said
from rr_core.files.locks import Held
from rr_core.ladder import Recipe
from rr_model.config import TrainConfig
from rr_model.run.output_file import preflight

__all__ = ["config_json", "config_from_json", "train_planned", "main", "HELD", "INTERRUPTED"]

HELD = 75  # sysexits' EX_TEMPFAIL: the run is claimed by another process; try it again once that ends
INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a process Ctrl-C stopped: said what the run keeps


def config_json(cfg: TrainConfig) -> str:
    """`cfg` as one line of JSON (the recipe as a table).

    Example
    -------
    >>> cfg = TrainConfig("tiny", "highway", 2, data="synthetic", steps=5)
    >>> config_from_json(config_json(cfg)) == cfg
    True
    """
    return json.dumps(asdict(cfg), sort_keys=True)


def config_from_json(text: str) -> TrainConfig:
    """The TrainConfig `config_json` wrote."""
    fields = json.loads(text)
    return TrainConfig(**{**fields, "recipe": Recipe(**fields["recipe"])})


def train_planned(cfg: TrainConfig, out: str | os.PathLike) -> dict[str, Any] | None:
    """Train `cfg` into `out`, resuming from its checkpoint; its provenance record, or None when its row is
    already in `out` (the run finished just before an interruption, or another sweep trained it)."""
    from rr_model.run.trainer import train_runs  # torch: only where a run trains

    plan = preflight(out, reproduction=cfg.reproduce)  # the file's one reading
    if plan.holds(cfg):
        return None
    (record,) = train_runs([cfg], out, resume=True, plan=plan)
    return record


def _kept(cfg: TrainConfig, out: str | os.PathLike) -> str:
    """What an interrupted run leaves for the next run of the same sweep."""
    from rr_model.checkpoint.state import current

    key, saved = " ".join(map(str, cfg.key)), current(out, **cfg.stem)
    if saved is not None:
        return f"{key} continues from its checkpoint {saved} when the same sweep runs again"
    return f"{key} had no checkpoint yet, so the same sweep run again trains it from the start"


def main(argv: list[str] | None = None) -> int:
    """Train the run of CONFIG into OUT (`argv`: [OUT, CONFIG]); the exit code (see the module)."""
    out, text = sys.argv[1:] if argv is None else argv
    cfg, lead = None, os.environ.get("RANK", "0") == "0"
    try:
        with notes_said():
            cfg = config_from_json(text)  # a plugin's variant, missing here, is refused as rr train refuses
            if (record := train_planned(cfg, out)) is None and lead:
                print(f"skip: {' '.join(map(str, cfg.key))} is already in {out}", flush=True)
    except Held as e:
        if lead:
            print(f"skip for now: {e}; the sweep comes back to it", flush=True)
        return HELD
    except StoppedElsewhere:
        return 2  # the process that failed said why
    except RRError as e:
        print(f"rr: error: {e}", file=sys.stderr, flush=True)
        return 2
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"rr: error: {where}{e.strerror or e}", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:
        if lead and cfg is not None:
            print(f"rr: interrupted: {_kept(cfg, out)}", file=sys.stderr, flush=True)
        return INTERRUPTED
    return 0 if record is None or record["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())

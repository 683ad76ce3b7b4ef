"""Where a run's metrics go: its JSONL log always, TensorBoard and Weights & Biases when asked.

The trainer calls `Metrics.log` at its log points only (every `log_every` steps, where it reads the loss
back from the device anyway), `Metrics.validation` at each periodic validation reading (`--eval-every`)
and `Metrics.evaluation` once at the end, so logging adds no host sync of its own. The
JSONL log (`rr_core.sweepfile.metrics_log.metrics_path`, its records described there) is written line by line
and flushed at each log point; TensorBoard's event file lives in ``NAME.metrics/tensorboard/RUN/`` and W&B's
run folder in ``NAME.metrics/wandb/``. A resumed run appends to its log and continues the same W&B run
(its id is kept in the checkpoint). Only rank 0 logs.

    rr train --size tiny --corpus synthetic --log tensorboard    # tensorboard --logdir NAME.metrics/tensorboard
    WANDB_MODE=offline rr train --size tiny --corpus synthetic --log wandb
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, get_args

from rr_core.errors import InputError
from rr_core.files.appending import torn_tail

__all__ = ["Backend", "BACKENDS", "Metrics", "require_backends", "wandb_mode"]

Backend = Literal["tensorboard", "wandb"]  # besides the JSONL log, which every run writes
BACKENDS: tuple[str, ...] = get_args(Backend)


def require_backends(backends: tuple[str, ...]) -> None:
    """Fail before anything trains when a backend asked for is not installed: a ModuleNotFoundError naming
    its package, which `rr` turns into one line naming the 'logging' extra. Finds, does not import."""
    for package in backends:
        if importlib.util.find_spec(package) is None:
            raise ModuleNotFoundError(f"No module named {package!r}", name=package)


def _finite(value: Any) -> Any:
    """JSON has no NaN or infinity: a diverged reading is written as null."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def wandb_mode() -> str:
    """W&B's mode: $WANDB_MODE if set, else online with an API key in the environment, else offline.

    Offline needs no network and no account: the run is written to its folder, and `wandb sync` uploads
    it later.
    """
    return os.environ.get("WANDB_MODE") or ("online" if os.environ.get("WANDB_API_KEY") else "offline")


class Metrics:
    """The metrics sink of one run (a no-op when `enabled` is False, as on ranks other than 0).

    Parameters
    ----------
    path
        The JSONL log (`rr_core.sweepfile.metrics_log.metrics_path`); its folder holds the backends' files too.
    run
        The run's size, variant and seed (and anything else for the start record and W&B's config).
    backends
        Any of `BACKENDS`.
    resumed
        The run continues from a checkpoint: append to its log (else the log starts afresh).
    wandb_id
        The W&B run to continue; None starts a new one (its id is then `self.wandb_id`).
    """

    def __init__(
        self,
        path: Path,
        run: dict[str, Any],
        *,
        step: int,
        backends: tuple[str, ...] = (),
        resumed: bool = False,
        wandb_id: str | None = None,
        config: dict[str, Any] | None = None,
        enabled: bool = True,
    ):
        unknown = set(backends) - set(BACKENDS)
        if unknown:
            raise InputError(f"--log {', '.join(sorted(unknown))}: use {' or '.join(BACKENDS)}")
        self.enabled, self.wandb_id = enabled, wandb_id
        self.file = self.tensorboard = self.wandb = None
        if not enabled:
            return
        name = f"{run['size']}-{run['variant']}-seed{run['seed']}"
        path.parent.mkdir(parents=True, exist_ok=True)
        if "tensorboard" in backends:
            from torch.utils.tensorboard import SummaryWriter  # the 'logging' extra's tensorboard

            self.tensorboard = SummaryWriter(log_dir=str(path.parent / "tensorboard" / name))
        if "wandb" in backends:
            self.wandb = self._wandb(path.parent, name, config or run)
        self.file = open(path, "a+" if resumed else "w", encoding="utf-8")  # noqa: SIM115 (closed by close)
        if resumed and torn_tail(self.file.fileno()):  # the killed segment's last line: end it, keep it apart
            self.file.write("\n")
        self._write({"event": "start", "step": step, **run, "resumed": resumed})

    def _wandb(self, folder: Path, name: str, config: dict[str, Any]):
        import uuid  # here: only a W&B run needs an id

        import wandb  # the 'logging' extra

        self.wandb_id = self.wandb_id or uuid.uuid4().hex[:12]
        return wandb.init(
            project=os.environ.get("WANDB_PROJECT", "rr"),
            name=name,
            id=self.wandb_id,
            resume="allow",
            dir=str(folder),  # W&B writes into its wandb/ folder
            mode=wandb_mode(),
            config=config,
        )

    def _write(self, record: dict[str, Any]) -> None:
        self.file.write(json.dumps({k: _finite(v) for k, v in record.items()}) + "\n")
        self.file.flush()

    def log(self, step: int, gates: Sequence[dict[str, Any]] = (), **values: float | None) -> None:
        """One log interval's readings at optimiser step `step` (loss, lr, grad_norm, tokens_per_s, ...).

        `gates`: each gated sublayer's r over the interval (`rr_model.run.gate_watch.GateWatch.stats`: layer,
        sublayer, mean, std), written under the record's "gates" key and sent to TensorBoard and W&B as
        ``gates/r_mean/LAYER.SUBLAYER`` and ``gates/r_std/LAYER.SUBLAYER``; a run without a gate has none.
        """
        if not self.enabled:
            return
        gated = {"gates": [{k: _finite(v) for k, v in g.items()} for g in gates]} if gates else {}
        self._write({"event": "train", "step": step, **values, **gated})
        scalars = {f"train/{k}": v for k, v in values.items() if v is not None and math.isfinite(v)}
        for g in gates:
            for stat in ("mean", "std"):
                if g[stat] is not None and math.isfinite(g[stat]):
                    scalars[f"gates/r_{stat}/{g['layer']}.{g['sublayer']}"] = g[stat]
        self._send(scalars, step)

    def evaluation(self, step: int, **values: float | None) -> None:
        """The final evaluation (val_loss, ece, minutes) after `step` steps."""
        if not self.enabled:
            return
        self._write({"event": "eval", "step": step, **values})
        self._send({f"eval/{k}": v for k, v in values.items() if v is not None}, step)

    def validation(self, step: int, *, tokens: int, val_loss: float) -> None:
        """A periodic validation reading (`--eval-every`) after `step` steps and `tokens` tokens trained: the
        loss on the held-out windows, an eval event marked ``periodic`` (the final evaluation's has no such
        key), sent to TensorBoard and W&B as ``val/loss``."""
        if not self.enabled:
            return
        self._write({"event": "eval", "step": step, "tokens": tokens, "val_loss": val_loss, "periodic": True})
        if math.isfinite(val_loss):
            self._send({"val/loss": val_loss}, step)

    def _send(self, scalars: dict[str, float], step: int) -> None:
        """`scalars` (tag: value) at `step` to TensorBoard and W&B, where the run logs to them."""
        if self.tensorboard is not None:
            for tag, value in scalars.items():
                self.tensorboard.add_scalar(tag, value, step)
        if self.wandb is not None:
            self.wandb.log(scalars, step=step)

    def close(self, finished: bool = True) -> None:
        """Flush and close every backend; a W&B run that did not finish is marked so (exit code 1)."""
        if self.file is not None:
            self.file.close()
            self.file = None
        if self.tensorboard is not None:
            self.tensorboard.close()
            self.tensorboard = None
        if self.wandb is not None:
            self.wandb.finish(exit_code=0 if finished else 1)
            self.wandb = None

"""The progress display of a run: a rich progress bar on a terminal (step, loss, tokens/s, MFU, ETA),
otherwise one plain line per log interval, which reads well in a log file or a CI job. The FLOP arithmetic
is `rr_model.parallel.flops`'s, the peaks `rr_model.parallel.hardware`'s.
"""

from __future__ import annotations

import sys
import time

from rr_model.parallel.flops import mfu

__all__ = ["Progress"]


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}"


class Progress:
    """Step counter and log lines of one run, for rank 0; every method is a no-op when `enabled` is False.

    `tokens_per_step` is the global batch in tokens; `flops` the training FLOPs per token; `peak` the
    summed datasheet peak FLOP/s of all processes (None: MFU is shown as "-"); `queued` the steps of the
    runs still to train after this one, at the same batch, so the ETA covers them too.
    """

    def __init__(
        self,
        title: str,
        steps: int,
        start: int,
        tokens_per_step: int,
        flops: float,
        peak: float | None,
        enabled: bool,
        queued: int = 0,
    ):
        self.steps, self.done, self.tokens_per_step, self.queued = steps, start, tokens_per_step, queued
        self.flops, self.peak, self.enabled = flops, peak, enabled
        self.t0, self.step0 = time.perf_counter(), start
        self.bar = None
        if enabled and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
            from rich.progress import Progress as Bar

            self.bar = Bar(
                TextColumn(title),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[stats]}"),
                console=Console(stderr=True),
                transient=False,
            )
            self.task = self.bar.add_task(title, total=steps, completed=start, stats="")
            self.bar.start()

    def log(self, message: str) -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.console.print(message, markup=False, highlight=False)
        else:
            print(message, file=sys.stderr, flush=True)

    def advance(self, step: int) -> None:
        """`step` optimiser steps are done (cheap: no device sync)."""
        self.done = step
        if self.bar is not None:
            self.bar.update(self.task, completed=step)

    def rates(self, step: int) -> tuple[float, float | None]:
        """Tokens per second since this segment began, at `step`, and the MFU (None: no known peak)."""
        rate = (step - self.step0) * self.tokens_per_step / max(time.perf_counter() - self.t0, 1e-9)
        return rate, mfu(rate, self.flops, self.peak)

    def report(self, step: int, loss: float) -> None:
        """A log interval ended at `step` with mean training loss `loss`."""
        if not self.enabled:
            return
        rate, used = self.rates(step)
        eta = (self.steps - step) * self.tokens_per_step / max(rate, 1e-9)
        stats = f"loss {loss:.4f} | {rate:,.0f} tok/s | MFU {'-' if used is None else f'{used:.1%}'}"
        stats += f" | ETA {_clock(eta)}"
        if self.queued:
            total = eta + self.queued * self.tokens_per_step / max(rate, 1e-9)
            stats += f" (all runs {_clock(total)})"
        if self.bar is not None:
            self.bar.update(self.task, completed=step, stats=stats)
        else:
            print(f"step {step}/{self.steps} | {stats}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()

"""The garbage collector in an `rr` process: a short run whose heap is mostly what its libraries built.

Once pandas, scipy, matplotlib and seaborn are imported the collector tracks ~2x10^5 objects that live
until the process ends, and CPython's cyclic collector walks all of them on every full collection: while a
figure is drawn (matplotlib's allocations trigger one or two, ~70 ms) and at shutdown (~0.3 s on 2 cores).
Neither walk finds garbage among those objects, so rr takes them out of it; what is made meanwhile is
collected as usual. `python bench/cli_latency.py` measures the effect (issue 19.8):
`rr plot seeds` 3.05 -> 2.5 s.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Inside the block (drawing and writing a figure) full collections skip every object that existed
    before it; after it they are collected as usual again (`gc.freeze`, then `gc.unfreeze`, which releases
    every frozen object: not for nesting)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def skip_exit_collection() -> None:
    """Move every live object out of the collector's reach, so the interpreter's shutdown does not walk them.

    Only for a process about to end with its files closed (rr closes every file it writes explicitly): an
    object in a reference cycle is then left to the operating system instead of being finalised.
    """
    gc.freeze()

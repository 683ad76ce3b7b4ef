"""Windows of a token stream: the random training batches (`sample_batch`, the published script's draw) and the
fixed held-out windows of periodic validation (`held_out_windows`), read from the memory-mapped stream a token
cache holds (`rr_model.data.token_cache`). Torch-free: the trainer turns the windows into tensors.
"""

from __future__ import annotations

import hashlib

import numpy as np

from rr_core.errors import InputError

__all__ = ["sample_batch", "windows_at", "HELD_OUT", "HELD_OUT_SEED", "held_out_windows", "describe_held_out"]


def sample_batch(
    data: np.ndarray, rng: np.random.RandomState, batch: int, block: int
) -> tuple[np.ndarray, np.ndarray]:
    """Random windows of a token stream: inputs `x` and next-token targets `y`, each (batch, block) int64.

    Window starts are `rng.randint(0, len(data) - block - 1, size=batch)`, the published script's draw
    from numpy's legacy Mersenne Twister, so a seed's batches are the published ones and a given rng state
    always gives the same batch; only the selected windows are read from the memory map.
    """
    _check_long_enough(data, block)
    return windows_at(data, rng.randint(0, len(data) - block - 1, size=batch), block)


def windows_at(data: np.ndarray, starts: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """The windows of `block` + 1 tokens of `data` at `starts`: inputs `x` and next-token targets `y`, each
    (len(starts), block) int64; only these windows are read from the memory map."""
    windows = np.lib.stride_tricks.sliding_window_view(data, block + 1)[starts].astype(np.int64)
    return np.ascontiguousarray(windows[:, :-1]), np.ascontiguousarray(windows[:, 1:])


def _check_long_enough(data: np.ndarray, block: int) -> None:
    if len(data) < block + 2:
        raise InputError(f"a stream of {len(data)} tokens is too short for blocks of {block}")


# Periodic validation (`rr train --eval-every`) reads a fixed set of validation windows, drawn from a stream of
# their own whose seed is derived from this name: a constant, apart from every run's seeds and step count, so
# every variant, seed and size of a corpus (at one block size) is scored on the same windows at every reading.
HELD_OUT = "rr held-out validation windows"


HELD_OUT_SEED = int.from_bytes(hashlib.sha256(HELD_OUT.encode()).digest()[:4], "little")


def held_out_windows(val: np.ndarray, n: int, block: int) -> np.ndarray:
    """The starts of the `n` held-out windows of `block` + 1 tokens in the validation stream `val`.

    Drawn as `sample_batch` draws a batch, ``randint(0, len(val) - block - 1, size=n)``, from a
    ``RandomState(HELD_OUT_SEED)`` of their own: they depend on the stream, `n` and `block` alone, and the first
    k of n windows are the windows of a draw of k.

    Example
    -------
    >>> val = np.arange(1000, dtype=np.uint16)
    >>> held_out_windows(val, 4, 16).tolist() == held_out_windows(val, 8, 16)[:4].tolist()
    True
    """
    _check_long_enough(val, block)
    return np.random.RandomState(HELD_OUT_SEED).randint(0, len(val) - block - 1, size=n)


def describe_held_out(starts: np.ndarray, block: int) -> dict:
    """JSON-able provenance of held-out windows for a run's record: how they were drawn, their count and block,
    and the sha256 of their starts (as little-endian int64), which is equal for runs scored on the same
    windows."""
    return {
        "draw": "held-out windows of the validation stream, fixed per corpus and block size",
        "rng": "numpy.random.RandomState",
        "seed": HELD_OUT_SEED,
        "seeded_by": f"the first 4 bytes (little-endian) of the sha256 of {HELD_OUT!r}",
        "windows": len(starts),
        "block_size": block,
        "starts_sha256": hashlib.sha256(np.asarray(starts, dtype="<i8").tobytes()).hexdigest(),
    }

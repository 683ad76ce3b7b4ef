"""What checking rr's files before use costs: each check beside the read it guards, as ratios in one run.

- A checkpoint (`rr_model.checkpoint.state.verify`: the zip's per-entry CRC-32s) against `torch.load` of the same
  file, for a model of the chosen size with its AdamW moments (a resumable checkpoint: 3 tensors per
  parameter), from the page cache.
- A token cache (`rr_model.data.token_cache`: the stream's sha256, checked at every load) against opening it
  unchecked (a memory map) and against tokenizing it (the build, which computes the sha256 as it writes).
- A run's identity (`rr_model.run.identity.run_identity`), which a checkpoint saves and a resume compares.

    python bench/read_back.py                       # 60M's checkpoint, a TinyStories-sized stream (200 MB)
    python bench/read_back.py --size tiny --stream-mb 20
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def timed(call, repeat: int = 3) -> float:
    """The median wall-clock seconds of `repeat` calls (the first one warms the page cache)."""
    call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def checkpoint_figures(size: str, folder: Path) -> None:
    import torch

    from rr_core.shapes import model_config
    from rr_model.checkpoint import state as checkpoint
    from rr_model.model import GPT

    model = GPT(model_config(size, "review_neutral", 50257))
    state = {k: v for k, v in model.state_dict().items()}
    moments = {f"{k}.{m}": torch.randn_like(v) for k, v in state.items() for m in ("exp_avg", "exp_avg_sq")}
    path = folder / "run.pt"
    checkpoint.save(path, {"model": state, "optimizer": moments, "step": 1})
    mb = path.stat().st_size / 1e6
    load = timed(lambda: torch.load(path, map_location="cpu", weights_only=True))
    verify = timed(lambda: checkpoint.verify(path))
    print(f"checkpoint of {size} with AdamW moments: {mb:,.0f} MB")
    print(f"  torch.load            {load:7.3f} s")
    print(
        f"  verify (zip CRC-32s)  {verify:7.3f} s   {verify / load:.2f}x torch.load, {mb / verify:,.0f} MB/s"
    )


def stream_figures(stream_mb: int, folder: Path) -> None:
    import numpy as np

    from rr_model.data import token_cache

    n = stream_mb * 1_000_000 // 2
    text = folder / "corpus.txt"
    rng = np.random.default_rng(0)
    words = ["the", "cat", "sat", "on", "a", "mat", "and", "then", "she", "ran", "home", "happy"]
    with open(text, "w") as f:
        while f.tell() < n:  # about n bytes: n byte tokens
            f.write(" ".join(rng.choice(words, 60)) + ".\n\n")
    cache = folder / "cache"
    start = time.perf_counter()
    tokens = token_cache.load_tokens(str(text), tokenizer="bytes", cache_dir=cache, n_text=10**9)
    build = time.perf_counter() - start
    directory = cache / "tokens" / tokens.key
    mb = (directory / "tokens.bin").stat().st_size / 1e6
    checked = timed(
        lambda: token_cache.load_tokens(str(text), tokenizer="bytes", cache_dir=cache, n_text=10**9)
    )
    mapped = timed(lambda: np.memmap(directory / "tokens.bin", dtype="<u2", mode="r"))
    digest = timed(lambda: hashlib.file_digest(open(directory / "tokens.bin", "rb"), "sha256"))
    print(f"token cache: {mb:,.0f} MB ({len(tokens.train) + len(tokens.val):,} tokens)")
    print(f"  build (tokenize, sha256 while writing)  {build:7.3f} s")
    print(f"  load, checked (sha256 of the stream)    {checked:7.3f} s   {checked / build:.3f}x the build")
    print(f"  of which the sha256                     {digest:7.3f} s   {mb / digest:,.0f} MB/s")
    print(f"  an unchecked memory map                 {mapped:7.4f} s")
    return tokens


def identity_figures(tokens) -> None:
    from rr_model.config import TrainConfig
    from rr_model.run.identity import run_identity

    cfg = TrainConfig("tiny", "standard", 0, data="synthetic")
    took = timed(lambda: run_identity(cfg, tokens), repeat=100)
    print(f"run_identity (saved with each checkpoint, compared on resume): {took * 1e6:,.0f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="60M", help="the model whose checkpoint is checked")
    parser.add_argument("--stream-mb", type=int, default=200, help="size of the token stream, MB")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; files in the page cache (warm reads)")
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint_figures(args.size, Path(tmp))
        tokens = stream_figures(args.stream_mb, Path(tmp))
        identity_figures(tokens)


if __name__ == "__main__":
    main()

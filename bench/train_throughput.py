"""Training throughput: tokens/s and MFU of one size x variant, at a precision, with or without compile.

Times the trainer's own optimiser step (`rr_model.train.train_step`) on random tokens, after warm-up
steps (which also absorb torch.compile). MFU needs a known GPU peak (`rr_model.progress.PEAK_FLOPS`);
elsewhere the rate is shown against this device's measured matmul rate instead.

    python bench/train_throughput.py --size 150M --precision bf16 --compile
    python bench/train_throughput.py --size tiny --batch 8        # CPU
"""

from __future__ import annotations

import argparse
import contextlib
import time

import torch

from rr_model.config import model_config
from rr_model.ladder import LADDER, get_size
from rr_model.model import GPT
from rr_model.progress import flops_per_token, matmul_flops, peak_flops
from rr_model.provenance import environment
from rr_model.train import DEVICES, PRECISIONS, setup_device, train_step
from rr_model.variants import COMPARED


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="tiny", choices=list(LADDER))
    p.add_argument("--variant", default=COMPARED[0])
    p.add_argument("--precision", default="tf32", choices=PRECISIONS)
    p.add_argument("--compile", action="store_true")
    p.add_argument("--batch", type=int, help="sequences per step (default: the size's recipe)")
    p.add_argument("--vocab", type=int, default=50257, help="vocabulary (GPT-2: 50257, bytes: 257)")
    p.add_argument("--steps", type=int, default=10, help="timed steps")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first (compilation, allocation)")
    p.add_argument("--device", default="auto", choices=DEVICES)
    a = p.parse_args()

    recipe = get_size(a.size).recipe
    batch = a.batch or recipe.batch_size
    device = setup_device(a.device, a.precision)
    cfg = model_config(a.size, a.variant, a.vocab)
    torch.manual_seed(0)
    model = GPT(cfg).to(device)
    optimizer = model.configure_optimizers()
    net = torch.compile(model) if a.compile else model
    bf16 = a.precision == "bf16"
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    x = torch.randint(0, a.vocab, (batch, recipe.block_size), device=device)

    def steps(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            loss = train_step(net, optimizer, x, x, 1, recipe.grad_clip, autocast, ddp=False)
        loss.item()  # waits for the device
        return time.perf_counter() - start

    steps(a.warmup)
    seconds = steps(a.steps)
    tokens_per_s = a.steps * batch * recipe.block_size / seconds
    achieved = tokens_per_s * flops_per_token(cfg)
    name = environment(str(device))["device_name"]
    peak = peak_flops(name, a.precision)
    print(f"{a.size} {a.variant}: {cfg.n_params / 1e6:.2f}M params, batch {batch} x {recipe.block_size}, "
          f"{a.precision}{', compiled' if a.compile else ''}, {device} ({name})")  # fmt: skip
    print(
        f"{seconds / a.steps * 1e3:.1f} ms/step, {tokens_per_s:,.0f} tokens/s, {achieved / 1e12:.3f} TFLOP/s"
    )
    if peak:
        print(f"MFU {achieved / peak:.1%} of the {peak / 1e12:.0f} TFLOP/s peak")
    else:
        rate = matmul_flops(device, a.precision)
        print(f"no peak figure for this device: {achieved / rate:.1%} of its measured matmul rate "
              f"({rate / 1e12:.3f} TFLOP/s)")  # fmt: skip


if __name__ == "__main__":
    main()

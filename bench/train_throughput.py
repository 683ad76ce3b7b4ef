"""Training throughput: tokens/s, step time, peak memory and MFU of a setting, beside a plain baseline.

Times the trainer's own optimiser step (`rr_model.run.step.train_step`) on random tokens after warm-up steps
(which also absorb torch.compile), for the chosen size, precision, compile and AdamW setting and, in the
same run, for the baseline: the same model in plain eager fp32 with the unfused AdamW. Each setting runs
in a fresh process, so its peak memory is its own (CUDA: `torch.cuda.max_memory_allocated`; CPU: the
process's peak RSS) and a failure (out of memory, a compile error) is printed and the run goes on.

FLOPs per token are `rr_model.parallel.flops.flops_per_token`: 6 N plus the attention term 12 L d T (PaLM,
appendix B). MFU divides the achieved rate by the dense peak of a known GPU at the setting's precision
(`rr_model.parallel.hardware.PEAKS`, from NVIDIA's datasheets; H200: 989.4 TFLOP/s bf16, 494.7 TFLOP/s TF32); elsewhere by this device's
measured matmul rate at that precision, and says so. The figure used is printed.

    python bench/train_throughput.py --size tiny                       # CPU: trainer default vs fp32
    python bench/train_throughput.py --size 60M --batch 4 --steps 3 --warmup 1
    python bench/train_throughput.py --size 150M --precision bf16 --compile --fused
    python bench/train_throughput.py --gpu-check                       # H200: 60M, 150M, 1B (~6 min)
    python bench/train_throughput.py --gpu-check --small               # the same path, tiny on CPU
    python bench/train_throughput.py --size tiny --profile --steps 3   # torch.profiler: ops, host syncs
    python bench/train_throughput.py --size tiny --variant review_neutral --gates   # watched / unwatched

`--gpu-check` runs, for 60M, 150M and 1B at the published batch (64 x 256), TF32 eager (the published
setting, with the trainer's AdamW: fused on CUDA) and bf16 + torch.compile + fused AdamW, 25 timed steps
each, within a time budget (`--budget-s`, default 540 s: a config that would not fit is skipped and
says so). It prints tokens/s, MFU, peak memory and the minutes the size's full step count would take,
beside the published `minutes` (median of the size's review_neutral runs, measured on a B200 in TF32).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, replace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPU_CHECK_SIZES = ("60M", "150M", "1B")
MFU_GOAL, SPEEDUP_GOAL = 0.40, 2.0  # issue 7: bf16 + compile at 150M and above


@dataclass(frozen=True)
class Setting:
    size: str
    variant: str
    precision: str
    compile: bool
    fused: bool | None  # None: the trainer's choice (fused on CUDA)
    batch: int | None
    vocab: int
    steps: int
    warmup: int
    device: str
    gates: bool = False  # watch the gates as the trainer does (`rr_model.run.gate_watch.GateWatch`)

    @property
    def label(self) -> str:
        adam = {None: " + trainer's AdamW", True: " + fused AdamW", False: " + unfused AdamW"}[self.fused]
        return f"{self.precision}{' + compile' if self.compile else ' eager'}{adam}{' + gates' * self.gates}"


def _optimizer(model, fused: bool | None):
    """The trainer's AdamW (`GPT.configure_optimizers`), rebuilt with `fused` when that is given."""
    import torch

    opt = model.configure_optimizers()
    if fused is None or opt.defaults["fused"] == fused:
        return opt
    groups = [{k: v for k, v in g.items() if k not in ("fused", "foreach")} for g in opt.param_groups]
    return torch.optim.AdamW(groups, fused=fused)


def _profiled(steps, n: int, device_type: str) -> float:
    """`steps(n)` under torch.profiler; prints the busiest operators and every device-to-host read."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as profiler

    cuda = [ProfilerActivity.CUDA] if device_type == "cuda" else []
    with profiler(activities=[ProfilerActivity.CPU, *cuda]) as prof:
        seconds = steps(n)
    ops = prof.key_averages()
    print(ops.table(sort_by="self_cpu_time_total", row_limit=15), file=sys.stderr)
    syncs = {e.key: e.count for e in ops if e.key in ("aten::_local_scalar_dense", "aten::item")}
    syncs |= {e.key: e.count for e in ops if "Synchronize" in e.key}
    print(f"host reads and syncs in {n} steps (1 is the timer's own loss.item()): {syncs}", file=sys.stderr)
    return seconds


def matmul_flops(device, precision: str) -> float:
    """Measured FLOP/s of square matmuls on `device` at `precision` (well under a second of work): the
    rate MFU is taken against where no datasheet peak is listed, labelled as measured.

    fp32 and tf32 differ only through the float32 matmul precision in force (`rr_model.run.numerics`).
    """
    import torch

    n = 4096 if device.type == "cuda" else 1024
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    a = torch.randn(n, n, device=device, dtype=dtype)
    a @ a  # warm-up: kernel selection, allocation
    reps, start = 0, time.perf_counter()
    while reps < 3 or time.perf_counter() - start < 0.2:
        a @ a
        reps += 1
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    return 2 * n**3 * reps / (time.perf_counter() - start)


def _watch(model, device):
    """The gates watched as the trainer watches them (`rr_model.run.gate_watch.GateWatch`)."""
    from rr_model.run.gate_watch import GateWatch

    return GateWatch(model, device)


def _read_back(loss, watch) -> None:
    """Read the loss back, with r's sums when the gates are watched: one transfer, as at a log point."""
    import torch

    sums = [] if watch is None else [watch.sums.view(-1)]
    dtype = loss.dtype if watch is None else watch.sums.dtype
    torch.cat([loss.view(-1).to(dtype), *sums]).tolist()


def _stepper(s: Setting):
    """The setting's model (watched when `s.gates`), optimiser and random batch on its device: (steps, device,
    cfg, batch), where ``steps(n)`` runs n optimiser steps, reads back once and returns the seconds."""
    import contextlib

    import torch

    from rr_core.ladder import get_size
    from rr_core.shapes import model_config
    from rr_model.model import GPT
    from rr_model.run.numerics import numerics
    from rr_model.run.step import setup_device, train_step

    recipe = get_size(s.size).recipe
    batch = s.batch or recipe.batch_size
    device = setup_device(s.device)
    numerics(device, s.precision).__enter__()  # one setting per process (see main): left set at exit
    cfg = model_config(s.size, s.variant, s.vocab)
    torch.manual_seed(0)
    model = GPT(cfg).to(device)
    optimizer = _optimizer(model, s.fused)
    watch = _watch(model, device) if s.gates else None  # before compiling, as the trainer does
    net = torch.compile(model) if s.compile else model
    bf16 = s.precision == "bf16"
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    x = torch.randint(0, s.vocab, (batch, recipe.block_size), device=device)

    def steps(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            loss, _ = train_step(net, optimizer, x, x, 1, recipe.grad_clip, autocast)
        _read_back(loss, watch)  # waits for the device, once: no sync inside the timed steps
        return time.perf_counter() - start

    return steps, device, cfg, batch


def gate_cost(s: Setting, rounds: int) -> dict:
    """The cost of watching the gates: the setting watched and unwatched in this one process, timed in
    alternating blocks of `s.steps` steps after `s.warmup` each, so that a load that drifts on a shared
    machine weighs on both alike. Returns each block's seconds and the median ratio watched / unwatched."""
    plain, watched = _stepper(replace(s, gates=False))[0], _stepper(replace(s, gates=True))[0]
    plain(s.warmup), watched(s.warmup)
    times = {"plain": [], "watched": []}
    for _ in range(rounds):
        times["plain"].append(plain(s.steps))
        times["watched"].append(watched(s.steps))
    ratios = sorted(w / p for p, w in zip(times["plain"], times["watched"], strict=True))
    return {**times, "ratios": ratios, "median": statistics.median(ratios)}


def measure(s: Setting, profile: bool = False) -> dict:
    """Warm up, then time `s.steps` optimiser steps of one setting in this process.

    `profile` runs the timed steps under torch.profiler and prints the busiest operators and every
    device-to-host read (`aten::_local_scalar_dense`: `.item()`, `float()`, `if tensor:`) to stderr.
    """
    import torch

    from rr_core.ladder import get_size
    from rr_core.sweepfile.provenance import environment
    from rr_model.parallel.flops import flops_per_token
    from rr_model.parallel.hardware import datasheet_peak

    steps, device, cfg, batch = _stepper(s)
    recipe = get_size(s.size).recipe
    warm = steps(s.warmup)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    seconds = _profiled(steps, s.steps, device.type) if profile else steps(s.steps)
    if device.type == "cuda":
        memory, memory_kind = torch.cuda.max_memory_allocated(device), "max_memory_allocated"
    else:
        memory, memory_kind = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "peak RSS"
    name = environment(str(device))["device_name"]
    peak, peak_kind = datasheet_peak(name, s.precision), "dense peak"
    if not peak:
        peak, peak_kind = matmul_flops(device, s.precision), "measured matmul rate"
    tokens = batch * recipe.block_size
    return {
        "device": f"{device} ({name})",
        "params_M": cfg.n_params / 1e6,
        "batch": batch,
        "block": recipe.block_size,
        "warmup_s": warm,
        "step_s": seconds / s.steps,
        "tokens_per_s": s.steps * tokens / seconds,
        "flops_per_token": flops_per_token(cfg),
        "peak_flops": peak,
        "peak_kind": peak_kind,
        "memory": memory,
        "memory_kind": memory_kind,
        "full_steps": get_size(s.size).steps,
    }


def run(s: Setting, timeout: float) -> dict:
    """`measure` in a fresh process; {"error": ...} when it fails or runs past `timeout` seconds."""
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(asdict(s))]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish within {timeout:.0f} s"}
    if out.returncode != 0:
        lines = [ln for ln in out.stderr.strip().splitlines() if ln.strip()]
        return {"error": f"exit {out.returncode}: {lines[-1] if lines else 'no message'}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def published_minutes(size: str) -> float | None:
    """Median `minutes` of the size's review_neutral runs in the published sweep (B200, TF32)."""
    from rr_core.sweepfile.dataset import load_sweep
    from rr_core.variants import REFERENCE

    df = load_sweep()
    m = df.loc[(df["size"] == size) & (df["variant"] == REFERENCE), "minutes"].dropna()
    return float(statistics.median(m)) if len(m) else None


HEADER = (
    f"{'size':<6}{'setting':<34}{'ms/step':>9}{'tokens/s':>11}{'TFLOP/s':>9}{'MFU':>7}  {'of (TFLOP/s)':<27}"
    f"{'memory':>10}{'x base':>8}{'warm-up':>9}"
)


def line(s: Setting, r: dict, base: dict | None) -> str:
    if "error" in r:
        return f"{s.size:<6}{s.label:<34}FAILED: {r['error']}"
    achieved = r["tokens_per_s"] * r["flops_per_token"]
    ratio = f"{r['tokens_per_s'] / base['tokens_per_s']:.2f}x" if base and "error" not in base else "-"
    return (
        f"{s.size:<6}{s.label:<34}{r['step_s'] * 1e3:>9.1f}{r['tokens_per_s']:>11,.0f}{achieved / 1e12:>9.3f}"
        f"{achieved / r['peak_flops']:>7.1%}  {r['peak_kind'] + ' ' + format(r['peak_flops'] / 1e12, '.4g'):<27}"
        f"{r['memory'] / 2**30:>6.2f} GiB{ratio:>8}{r['warmup_s']:>8.1f}s"
    )


def compare(chosen: Setting, baseline: Setting | None, timeout: float) -> None:
    """One setting beside its baseline, each in its own process."""
    rb = run(baseline, timeout) if baseline else None
    rc = run(chosen, timeout)
    first = rc if "error" not in rc else rb or {}
    if "device" in first:
        print(
            f"{chosen.size} {chosen.variant}: {first['params_M']:.2f}M params, batch {first['batch']} x "
            f"{first['block']}, {chosen.steps} timed steps after {chosen.warmup} warm-up, {first['device']}; "
            f"memory: {first['memory_kind']}"
        )
    print(HEADER)
    if baseline:
        print(line(baseline, rb, None) + "  (baseline)")
    print(line(chosen, rc, rb))


def gpu_check(a: argparse.Namespace) -> None:
    """TF32 eager against bf16 + compile + fused AdamW for each size, within `a.budget_s` seconds."""
    sizes = a.sizes or (["tiny"] if a.small else list(GPU_CHECK_SIZES))
    steps, warmup = (2, 1) if a.small else (a.steps or 25, a.warmup or 3)
    batch = 2 if a.small else a.batch
    start = time.perf_counter()
    print(
        f"GPU check: {', '.join(sizes)}; {steps} timed steps after warm-up ({warmup} eager, {warmup + 2} compiled)"
    )
    print(HEADER + f"{'full run':>10}{'published':>11}")
    results: dict[str, dict[str, dict]] = {}
    for size in sizes:
        base = Setting(size, a.variant, "tf32", False, None, batch, a.vocab, steps, warmup, a.device)
        fast = replace(base, precision="bf16", compile=True, fused=True, warmup=warmup + 2)
        pub = published_minutes(size)
        got = results[size] = {}
        for key, s in (("base", base), ("fast", fast)):
            left = a.budget_s - (time.perf_counter() - start)
            if left < 30:
                print(f"{size:<6}{s.label:<34}SKIPPED: {left:.0f} s of the {a.budget_s:.0f} s budget left")
                continue
            r = got[key] = run(s, min(left, a.config_timeout))
            full = f"{r['full_steps'] * r['step_s'] / 60:>8.1f} min" if "error" not in r else ""
            published = f"{pub:>7.1f} min" if pub is not None and full else ""
            print(line(s, r, got.get("base") if key == "fast" else None) + full + published, flush=True)
    print(
        f"done in {time.perf_counter() - start:.0f} s; 'full run': the size's published step count at this "
        f"step time; 'published': median minutes of its review_neutral runs (B200, TF32 eager)"
    )
    for size, got in results.items():
        b, f = got.get("base", {}), got.get("fast", {})
        if size in ("tiny", "60M") or "tokens_per_s" not in b or "tokens_per_s" not in f:
            continue
        mfu = f["tokens_per_s"] * f["flops_per_token"] / f["peak_flops"]
        speedup = f["tokens_per_s"] / b["tokens_per_s"]
        met = mfu >= MFU_GOAL and speedup >= SPEEDUP_GOAL
        print(
            f"goal at {size}: bf16 + compile MFU {mfu:.1%} (>= {MFU_GOAL:.0%}) and {speedup:.2f}x TF32 "
            f"eager tokens/s (>= {SPEEDUP_GOAL:g}x): {'met' if met else 'MISSED'}"
        )


def print_gate_cost(s: Setting, rounds: int) -> None:
    """`gate_cost` of the setting, each block's step time and the median ratio."""
    r = gate_cost(s, rounds)
    print(
        f"{s.size} {s.variant}, {s.label}: {rounds} rounds of {s.steps} steps each way, alternating, "
        f"after {s.warmup} warm-up"
    )
    for key in ("plain", "watched"):
        print(f"  {key:<8} s/step: " + " ".join(f"{t / s.steps:.3f}" for t in r[key]))
    print(
        f"gates watched / unwatched step time: median {r['median']:.3f} "
        f"(rounds: {', '.join(f'{x:.3f}' for x in r['ratios'])})"
    )


def main() -> None:
    from rr_core.ladder import LADDER
    from rr_core.variants import COMPARED
    from rr_model.config import DEVICES, PRECISIONS

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="tiny", choices=list(LADDER))
    p.add_argument("--variant", default=COMPARED[0])
    p.add_argument("--precision", default="tf32", choices=PRECISIONS, help="tf32 is fp32 arithmetic off CUDA")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument(
        "--fused", action=argparse.BooleanOptionalAction, help="AdamW kernel (default: the trainer's)"
    )
    p.add_argument(
        "--baseline", default="fp32", choices=["fp32", "none"], help="fp32: plain eager fp32 beside"
    )
    p.add_argument(
        "--gates",
        action="store_true",
        help="the cost of watching the gates as the trainer does: watched against unwatched in one process, "
        "in alternating blocks of --steps (with --profile: profile the watched setting)",
    )
    p.add_argument("--rounds", type=int, default=5, help="with --gates: blocks timed each way")
    p.add_argument("--batch", type=int, help="sequences per step (default: the size's recipe)")
    p.add_argument("--vocab", type=int, default=50257, help="vocabulary (GPT-2: 50257, bytes: 257)")
    p.add_argument("--steps", type=int, help="timed steps (default 10; 25 for --gpu-check)")
    p.add_argument("--warmup", type=int, help="untimed steps first (default 3; compiled settings get 2 more)")
    p.add_argument("--device", default="auto", choices=DEVICES)
    p.add_argument("--gpu-check", action="store_true", help="60M, 150M, 1B: TF32 eager vs bf16 + compile")
    p.add_argument("--small", action="store_true", help="with --gpu-check: tiny, batch 2, 2 steps (dry run)")
    p.add_argument("--sizes", nargs="+", choices=list(LADDER), help="with --gpu-check: these sizes instead")
    p.add_argument("--budget-s", type=float, default=540, help="with --gpu-check: wall-clock budget")
    p.add_argument("--config-timeout", type=float, default=240, help="seconds one setting may take")
    p.add_argument(
        "--profile", action="store_true", help="torch.profiler over the chosen setting, in-process"
    )
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        print(json.dumps(measure(Setting(**json.loads(a.child)))))
        return
    if a.gpu_check:
        gpu_check(a)
        return
    steps, warmup = a.steps or 10, a.warmup or 3
    chosen = Setting(
        a.size,
        a.variant,
        a.precision,
        a.compile,
        a.fused,
        a.batch,
        a.vocab,
        steps,
        warmup + 2 * a.compile,
        a.device,
    )
    if a.profile:
        r = measure(replace(chosen, gates=a.gates), profile=True)
        print(f"{chosen.size} {chosen.label}: {r['step_s'] * 1e3:.1f} ms/step under the profiler")
        return
    if a.gates:  # the cost of watching: the same setting with and without the watch, interleaved
        print_gate_cost(chosen, a.rounds)
        return
    baseline = replace(chosen, precision="fp32", compile=False, fused=False, warmup=warmup)
    compare(chosen, baseline if a.baseline == "fp32" else None, a.config_timeout)


if __name__ == "__main__":
    main()

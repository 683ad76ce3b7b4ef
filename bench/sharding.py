"""Sharded training (FSDP2, `--shard fsdp`) against data parallel: memory per process and step time.

    python bench/sharding.py state    # exact state bytes per process of 1B, 3B and 7B on 8 processes
    python bench/sharding.py peaks    # measured CPU peaks of a small model: 1 process vs 2
    python bench/sharding.py time     # step time, sharded / data parallel, 2 CPU processes, one run
    python bench/sharding.py time --profile   # and where one sharded step's time goes (torch.profiler)
    python bench/sharding.py gpu --size 150M --steps 20   # one CUDA GPU: sharded vs not, bf16, peaks vs plan

`state` shards each model as the trainer does (`rr_model.parallel.sharding.shard`) on torch's meta device, over a
process group of 8 simulated in this one process (torch's fake backend, from its test utilities), and
counts what process 0 holds: its pieces of the parameters and, after one AdamW step on zero gradients,
of both moments (and the step counters); beside `rr_model.parallel.memory.state_bytes`, the plan's arithmetic.
No memory is used: meta tensors have shapes only. 3B and 7B come from docs/extending/next.toml.

`peaks` trains a small model (d_model 512, 4 blocks, byte vocabulary, 8 x 128 tokens a step) in fresh
processes: 1 process data parallel, then 2 processes data parallel, sharded, and sharded with activation
checkpointing of every block. Each process reports its resident memory once model and optimiser are
built (its own share: the whole model is built on every process before it is cut) and its peak over 3
training steps, both over what it held before building the model (Linux's VmHWM, reset after the build with /proc/self/clear_refs; glibc's malloc is told
to hand large blocks straight back to the system, MALLOC_MMAP_THRESHOLD_, so the peak follows torch's
allocations); beside the plan's state + gathered + activations estimate.

`time` runs both layouts in the same two processes, alternating one data-parallel step and one sharded
step (the trainer's `accumulate` and `apply_gradients`) on the same batches, and prints the median of
each and their ratio: the issue's target is sharded <= 1.3 x data parallel.

`gpu` trains a size for a few steps on one CUDA GPU through the trainer (the synthetic corpus: no network
there), data parallel and sharded on one process, with and without activation checkpointing, in TF32 and
under `--precision bf16` (the bf16 policy), and prints each run's largest per-step loss difference from
data parallel at its precision, its val_loss, and its measured peak (torch.cuda.max_memory_allocated over
training, as the metrics log reports it) beside the plan's state + gathered + activations.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
SMALL = {
    "vocab_size": 257,
    "block_size": 128,
    "n_layer": 4,
    "n_head": 8,
    "d_model": 512,
    "variant": "review_neutral",
}
BATCH, STEPS, TARGET = 8, 3, 1.3


def state() -> None:
    """FSDP2's pieces of 1B, 3B and 7B on 8 simulated processes, against the plan's arithmetic."""
    import torch
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    from rr_core.shapes import model_config
    from rr_model.model import GPT
    from rr_model.parallel.memory import state_bytes
    from rr_model.parallel.sharding import local, shard

    world, gib = 8, 2**30
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
    print(f"state bytes per process, process 0 of {world} (GiB; fp32 parameters, gradients, AdamW)")
    print(
        f"{'size':4}  {'variant':8}  {'params':>13}  {'sharded params':>14}  {'plan':>8}  {'AdamW':>8}  "
        f"{'plan':>8}  {'data parallel total':>19}  {'sharded total':>13}"
    )
    next_toml = os.path.join(ROOT, "docs", "extending", "next.toml")
    for size, ladder in (("1B", None), ("3B", next_toml), ("7B", next_toml)):
        mcfg = replace(model_config(size, "standard", ladder=ladder), block_size=256)
        with torch.device("meta"):
            model = GPT(mcfg)
        shard(model, torch.device("cpu"), world, "tf32")
        optimizer = model.configure_optimizers()
        for p in model.parameters():
            p.grad = torch.zeros_like(p)
        optimizer.step()  # meta tensors: AdamW's state appears with its shapes, nothing is computed
        held = sum(local(p).numel() * 4 for p in model.parameters())
        adam = sum(local(t).numel() * t.element_size() for s in optimizer.state.values() for t in s.values())
        plan, whole = state_bytes(mcfg, world, "fsdp"), state_bytes(mcfg)
        assert (held, adam) == (plan["params"], plan["optimizer"]), "the plan's arithmetic is not FSDP2's"
        print(
            f"{size:4}  {'standard':8}  {mcfg.n_params:>13,}  {held / gib:>14.3f}  {plan['params'] / gib:>8.3f}  "
            f"{adam / gib:>8.3f}  {plan['optimizer'] / gib:>8.3f}  {sum(whole.values()) / gib:>19.2f}  "
            f"{(2 * held + adam) / gib:>13.2f}"
        )
    print("(the widest compared variant of each size; sharded total = parameters + gradients + AdamW state)")
    dist.destroy_process_group()


def _rss(field: str) -> int:
    """A field of /proc/self/status in bytes (VmRSS: now, VmHWM: the peak since the last reset)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _build(shard_: str, ac: str, world: int):
    """The small model as the trainer builds it (published init, laid over `world` processes) and AdamW."""
    import torch

    from rr_core.shapes import GPTConfig
    from rr_model.config import checkpoint_interval
    from rr_model.model import GPT

    torch.manual_seed(0)
    model = GPT(GPTConfig(**SMALL))
    model.checkpoint_activations(checkpoint_interval(ac))
    if shard_ == "fsdp":
        from rr_model.parallel.sharding import shard

        shard(model, torch.device("cpu"), world, "fp32")
    return model, model.configure_optimizers()


def _batch(step: int, rank: int, world: int):
    import torch

    g = torch.Generator().manual_seed(step)
    tokens = torch.randint(0, SMALL["vocab_size"], (BATCH, SMALL["block_size"] + 1), generator=g)
    mine = slice(rank * BATCH // world, (rank + 1) * BATCH // world)
    return tokens[mine, :-1], tokens[mine, 1:]


def _join(rank: int, world: int, folder: str) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{folder}/store", rank=rank, world_size=world)


def _peak_process(rank: int, world: int, folder: str, shard_: str, ac: str) -> None:
    """One process of `peaks`: build, reset the peak, train STEPS steps, report both."""
    import contextlib

    from rr_model.run.step import accumulate, apply_gradients

    _join(rank, world, folder)
    import torch  # noqa: F401 (loaded already; the base below is torch's libraries and the process group)

    base = _rss("VmRSS")
    model, optimizer = _build(shard_, ac, world)
    built = _rss("VmRSS") - base
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    for step in range(STEPS):
        x, y = _batch(step, rank, world)
        accumulate(model, x, y, 1, contextlib.nullcontext())
        apply_gradients(model, optimizer, 1.0, world)
    Path(folder, f"peak{rank}.json").write_text(json.dumps({"built": built, "peak": _rss("VmHWM") - base}))


def peaks() -> None:
    """Measured CPU peaks of the small model, 1 process vs 2, beside the plan."""
    import torch.multiprocessing as mp

    from rr_core.ladder import RECIPE
    from rr_core.shapes import GPTConfig
    from rr_model.parallel.memory import activation_bytes, gathered_bytes, state_bytes

    os.environ["MALLOC_MMAP_THRESHOLD_"] = "65536"  # read by each spawned process's malloc at its start
    mcfg, mib = GPTConfig(**SMALL), 2**20
    recipe = replace(RECIPE, batch_size=BATCH, block_size=SMALL["block_size"])
    print(
        f"small model: {mcfg.n_params:,} parameters, {BATCH} x {recipe.block_size} tokens a step; MiB per process"
    )
    print(f"{'setting':44}  {'built':>6}  {'training peak':>13}  {'plan':>6}  {'peak / plan':>11}")
    for world, shard_, ac in (
        (1, "none", "none"),
        (2, "none", "none"),
        (2, "fsdp", "none"),
        (2, "fsdp", "full"),
    ):
        with tempfile.TemporaryDirectory() as folder:
            mp.spawn(_peak_process, args=(world, folder, shard_, ac), nprocs=world)
            found = json.loads(Path(folder, "peak0.json").read_text())
        every = 1 if ac == "full" else 0
        plan = sum(state_bytes(mcfg, world, shard_).values()) + (
            gathered_bytes(mcfg, "fp32") if shard_ == "fsdp" else 0
        )
        plan += activation_bytes(mcfg, BATCH // world, "fp32", every)
        name = f"{world} process(es), {'sharded' if shard_ == 'fsdp' else 'data parallel'}" + (
            ", checkpointing" if every else ""
        )
        print(
            f"{name:44}  {found['built'] / mib:>6.0f}  {found['peak'] / mib:>13.0f}  {plan / mib:>6.0f}  "
            f"{found['peak'] / plan:>11.2f}"
        )
    print(
        "MiB over each process's memory before the model (torch, the process group): built, with model and"
        " optimiser built (and cut); training peak, over 3 steps; plan: state + gathered + activations"
    )


def _time_process(rank: int, world: int, folder: str, steps: int, profile: bool) -> None:
    """One process of `time`: a data-parallel and a sharded model, their steps alternated."""
    import contextlib

    import torch

    from rr_model.run.step import accumulate, apply_gradients

    _join(rank, world, folder)
    layouts = {"data parallel": _build("none", "none", world), "sharded": _build("fsdp", "none", world)}
    times: dict[str, list[float]] = {name: [] for name in layouts}
    for step in range(steps + 2):  # two warm-up steps
        x, y = _batch(step, rank, world)
        for name, (model, optimizer) in layouts.items():
            start = time.perf_counter()
            accumulate(model, x, y, 1, contextlib.nullcontext())
            float(apply_gradients(model, optimizer, 1.0, world))
            if step >= 2:
                times[name].append(time.perf_counter() - start)
    if profile:
        model, optimizer = layouts["sharded"]
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            accumulate(model, x, y, 1, contextlib.nullcontext())
            apply_gradients(model, optimizer, 1.0, world)
        times["profile"] = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12)
    Path(folder, f"time{rank}.json").write_text(json.dumps(times))


def step_time(steps: int, profile: bool) -> None:
    """Median step time of both layouts on 2 processes and their ratio."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as folder:
        mp.spawn(_time_process, args=(2, folder, steps, profile), nprocs=2)
        times = json.loads(Path(folder, "time0.json").read_text())
    dp, sharded = (statistics.median(times[k]) for k in ("data parallel", "sharded"))
    print(
        f"2 CPU processes (gloo), small model ({BATCH} x {SMALL['block_size']} tokens a step), {steps} steps each, "
        f"alternated: median step data parallel {dp * 1e3:.1f} ms, sharded {sharded * 1e3:.1f} ms"
    )
    verdict = "meets" if sharded / dp <= TARGET else "misses"
    print(f"sharded / data parallel = {sharded / dp:.2f} ({verdict} the target of <= {TARGET})")
    if profile:
        print("\none sharded step on process 0, by self CPU time:\n" + times["profile"])


GPU_SETTINGS = (
    ("none", "none", "tf32"),
    ("fsdp", "none", "tf32"),
    ("fsdp", "full", "tf32"),
    ("none", "none", "bf16"),
    ("fsdp", "none", "bf16"),
    ("fsdp", "full", "bf16"),
)


def gpu(size: str, steps: int, ladder: str | None) -> None:
    """One CUDA GPU: each setting's losses against data parallel's, and its peak against the plan."""
    import torch

    from rr_model.config import TrainConfig
    from rr_model.parallel.memory import Setting, memory_plan
    from rr_model.run.planning import planned_model
    from rr_model.run.trainer import train

    assert torch.cuda.is_available(), "gpu: needs a CUDA GPU"
    reference: dict[str, list[float]] = {}
    print(f"{size}, {steps} steps, synthetic corpus, one {torch.cuda.get_device_name()}; GiB")
    print(f"{'setting':44}  {'max |dloss|':>11}  {'val_loss':>8}  {'peak':>6}  {'plan':>6}  {'peak/plan':>9}")
    with tempfile.TemporaryDirectory() as folder:
        for shard_, ac, precision in GPU_SETTINGS:
            cfg = TrainConfig(
                size,
                "standard",
                data="synthetic",
                steps=steps,
                log_every=1,
                checkpoint_every=0,
                shard=shard_,
                activation_checkpointing=ac,
                precision=precision,
                ladder=ladder,
            )
            torch.cuda.reset_peak_memory_stats()
            out = Path(folder, f"{shard_}-{ac}-{precision}.csv")
            record = train(cfg, out)
            log = Path(folder, f"{out.stem}.metrics", f"{size}-standard-seed0.jsonl").read_text().splitlines()
            peak = max(r["memory_gib"] for r in map(json.loads, log) if r["event"] == "train")
            losses = [loss for _, loss in record["loss_curve"]]
            reference.setdefault(precision, losses)
            own = Setting(shard_, ac)
            (plan,) = memory_plan(planned_model(cfg), cfg.recipe, 1, precision, None, 1, (own,))
            estimate = (
                sum(plan[k] for k in ("params", "grads", "optimizer", "gathered", "activations")) / 2**30
            )
            diff = max(abs(a - b) for a, b in zip(losses, reference[precision], strict=True))
            print(
                f"{own.name + ', ' + precision:44}  {diff:>11.2e}  {record['result']['val_loss']:>8.4f}  "
                f"{peak:>6.2f}  {estimate:>6.2f}  {peak / estimate:>9.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=("state", "peaks", "time", "gpu"))
    parser.add_argument("--size", default="150M", help="gpu: the size to train")
    parser.add_argument("--ladder", default=None, help="gpu: a ladder file holding --size")
    parser.add_argument("--steps", type=int, default=20, help="time: timed steps of each layout")
    parser.add_argument("--profile", action="store_true", help="time: profile one sharded step")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    parts = {
        "state": state,
        "peaks": peaks,
        "time": lambda: step_time(args.steps, args.profile),
        "gpu": lambda: gpu(args.size, args.steps, args.ladder),
    }
    parts[args.part]()


if __name__ == "__main__":
    main()

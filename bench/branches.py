"""What cooldown branches save: several budgets from one warmup-stable-decay run against a separate wsd run of
each budget, as ratios in one process (steps trained, and CPU wall time of the trainer, evaluation included).

By arithmetic, budgets b_1 < ... < b_k with a cooldown over the last F of each cost b_k + F (b_1 + ... +
b_{k-1}) steps branched, against b_1 + ... + b_k separately: for 1, 2 and 4 times a budget at F = 0.2,
(4 + 0.2 x 3) / 7 = 4.6 / 7 = 0.66. The measured ratio of wall time adds what each run pays besides its steps
(start-up, the final evaluation: `--eval-batches` each, the same in both designs, and the branch-start
checkpoints). Every branch's val_loss is checked against the separate run of its steps (equal bit for bit).

    python bench/branches.py                          # tiny, budgets 1,2,4 x 20 steps, F = 0.2
    python bench/branches.py --base-steps 50 --budgets 1,2,4,8
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", default="tiny")
    p.add_argument("--variant", default="standard")
    p.add_argument("--base-steps", type=int, default=20, help="the budget the multiples scale (steps)")
    p.add_argument("--budgets", default="1,2,4", help="comma-separated multiples of --base-steps")
    p.add_argument("--decay-frac", type=float, default=0.2)
    p.add_argument("--eval-batches", type=int, default=4, help="the final evaluation's batches, every run")
    a = p.parse_args()

    from rr_core.ladder import get_size
    from rr_model.config import TrainConfig
    from rr_model.run.planning import plan_runs
    from rr_model.run.trainer import train, train_runs

    steps = sorted(int(float(k) * a.base_steps) for k in a.budgets.split(","))
    options = dict(
        data="synthetic",
        schedule="wsd",
        decay_frac=a.decay_frac,
        checkpoint_every=0,
        recipe=replace(get_size(a.size).recipe, eval_batches=a.eval_batches),
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ.setdefault("RR_CACHE", str(folder / "cache"))
        train(TrainConfig(a.size, a.variant, 0, steps=2, **options), folder / "warm.csv")  # tokenize, warm up

        start = time.perf_counter()
        separate = [
            train(TrainConfig(a.size, a.variant, 0, steps=s, **options), folder / f"separate-{s}.csv")
            for s in steps
        ]
        separate_s = time.perf_counter() - start

        runs = plan_runs(
            folder / "branched.csv",
            a.size,
            (a.variant,),
            0,
            steps=steps[-1],
            branch_at=tuple(steps[:-1]),
            **options,
        )
        start = time.perf_counter()
        branched = train_runs(runs.todo, folder / "branched.csv", plan=runs.output)
        branched_s = time.perf_counter() - start

    trained_separate = sum(steps)
    trained_branched = sum(r["steps"] - (r.get("branched_at") or 0) for r in branched)
    by_steps = {r["steps"]: r["result"]["val_loss"] for r in branched}
    same = all(by_steps[s] == r["result"]["val_loss"] for s, r in zip(steps, separate, strict=True))
    multiples = ", ".join(f"{s / a.base_steps:g}" for s in steps)
    arithmetic = steps[-1] + sum(s - TrainConfig(a.size, steps=s, **options).branch_start for s in steps[:-1])
    print(
        f"{a.size} {a.variant}, wsd with a cooldown over the last {a.decay_frac:g} of each run; budgets "
        f"{', '.join(map(str, steps))} steps ({multiples} x {a.base_steps}); {a.eval_batches} evaluation "
        f"batches per run"
    )
    print(f"  separate runs   {trained_separate:6d} steps   {separate_s:8.1f} s")
    print(f"  branched        {trained_branched:6d} steps   {branched_s:8.1f} s")
    print(
        f"  ratio           {trained_branched / trained_separate:6.3f} steps   {branched_s / separate_s:8.3f} wall "
        f"(by arithmetic {arithmetic}/{trained_separate} = {arithmetic / trained_separate:.3f})"
    )
    print(f"  every branch's val_loss equals its separate run's: {same}")


if __name__ == "__main__":
    main()

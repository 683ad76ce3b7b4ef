"""What a run holds in each GPU's memory, by arithmetic: the memory plan that `rr sizes --memory` and the
training commands' `--dry-run` print, and the check that refuses, before training, a run that cannot fit.
Torch-free, from the exact shapes of `rr_core.shapes.param_shapes`.

Per process, for data parallel (each process holds the whole model) and for sharding (FSDP2,
`rr_model.parallel.sharding`), with and without activation checkpointing:

- state, exact: parameters, gradients and AdamW's two moments in float32 (the bf16 policy keeps these in
  float32 too), plus AdamW's step counter (one float32 per parameter tensor). Sharded, a tensor of d0 rows
  is cut into pieces of ceil(d0 / world) rows, the last pieces shorter or empty; process 0's is the
  largest, and the plan reports it. 0-d parameters (ReZero) stay whole. `tests/test_sharding.py` checks
  these numbers against the pieces two gloo processes hold.
- gathered (sharding only, an estimate): the whole parameters of the units being computed and their whole
  gradients before the reduce-scatter: the root (embeddings, final norm) for the whole step and two blocks
  (the one computed and the one fetched ahead), in the gathered dtype (bfloat16 under `--precision bf16`)
  plus float32 gradients for the reduction.
- activations per micro-batch (an estimate; the formula under `activation_bytes`): what autograd keeps for
  the backward pass, counted exactly on CPU, plus the largest working tensors of the backward pass; and the
  final evaluation's forward on a whole batch, which can be larger.

A setting fits when its total is at most `FIT_SHARE` of the GPU's memory: the CUDA context, the
collectives' buffers and the allocator's fragmentation take the rest.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace

from rr_core.errors import InputError
from rr_core.ladder import Recipe, ladder_sizes
from rr_core.shapes import GPTConfig, model_config, param_shapes
from rr_core.variants import COMPARED, VARIANTS
from rr_model.config import TrainConfig, checkpoint_interval

__all__ = [
    "FIT_SHARE",
    "SETTINGS",
    "Setting",
    "piece_rows",
    "state_bytes",
    "gathered_bytes",
    "saved_activation_bytes",
    "activation_bytes",
    "memory_plan",
    "plan_text",
    "refuse_unfit",
    "refuse_unbuildable",
    "size_plans",
]

FIT_SHARE = 0.9
GIB = 2**30


@dataclass(frozen=True)
class Setting:
    """One way to lay a run over its processes: `shard` ("none", "fsdp") and `activation_checkpointing`."""

    shard: str
    activation_checkpointing: str

    @property
    def name(self) -> str:
        what = "data parallel" if self.shard == "none" else "fsdp"
        ac = self.activation_checkpointing
        return what if ac == "none" else f"{what} + checkpointing {ac}"


SETTINGS = tuple(Setting(s, ac) for s in ("none", "fsdp") for ac in ("none", "full"))


def piece_rows(rows: int, world: int, rank: int = 0) -> int:
    """Rows of a `rows`-row tensor that process `rank` of `world` holds: torch.chunk's cut, as FSDP2's.

    Example
    -------
    >>> [piece_rows(251, 2, r) for r in (0, 1)], [piece_rows(5, 4, r) for r in range(4)]
    ([126, 125], [2, 2, 1, 0])
    """
    size = -(-rows // world)
    return max(0, min(size, rows - rank * size))


def state_bytes(mcfg: GPTConfig, world: int = 1, shard: str = "none", rank: int = 0) -> dict[str, int]:
    """Exact bytes of parameters, gradients and AdamW state that process `rank` holds.

    Returns
    -------
    {"params": 4 n, "grads": 4 n, "optimizer": 8 n + 4 t}, n the elements held (sharded: the pieces), t the
    parameter tensors (each has a float32 step counter).
    """
    shapes = [shape for _, shape in param_shapes(mcfg)]
    if shard == "fsdp":
        held = sum(piece_rows(s[0], world, rank) * math.prod(s[1:]) if s else 1 for s in shapes)
    else:
        held = sum(math.prod(s) for s in shapes)
    return {"params": 4 * held, "grads": 4 * held, "optimizer": 8 * held + 4 * len(shapes)}


def gathered_bytes(mcfg: GPTConfig, precision: str) -> int:
    """Whole parameters and gradients of the units computed at once under FSDP2 (see the module)."""
    root = (mcfg.vocab_size + mcfg.block_size + 1) * mcfg.d_model
    block = sum(math.prod(s) for n, s in param_shapes(mcfg) if n.startswith("transformer.h.0.") and s)
    gathered = 2 if precision == "bf16" else 4
    return (root + 2 * block) * (gathered + 4)


def _block_bytes(mcfg: GPTConfig, sequences: int, bf16: bool) -> int:
    """Bytes a block of Standard keeps for the backward pass (see `saved_activation_bytes`)."""
    B, T, d, H = sequences, mcfg.block_size, mcfg.d_model, mcfg.n_head
    return (44 if bf16 else 72) * B * T * d + 4 * B * H * T + 8 * B * T


def _rule_bytes(mcfg: GPTConfig, sequences: int, blocks: int, bf16: bool, weight_copies: bool) -> int:
    """Bytes the residual rules of `blocks` blocks keep beyond Standard's: the variant's entry's `kept`
    (`rr_core.kept_bytes.Kept`); a rule whose entry has none, as much as Review (convex) keeps."""
    entry = VARIANTS.get(mcfg.variant)
    kept = (entry and entry.kept) or VARIANTS["review_convex"].kept
    return kept(sequences * mcfg.block_size, mcfg.d_model, blocks, bf16, weight_copies)


def saved_activation_bytes(
    mcfg: GPTConfig, sequences: int, precision: str, every: int = 0, weight_copies: bool = True
) -> int:
    """Bytes autograd keeps for the backward pass of one micro-batch of `sequences` sequences.

    Notes
    -----
    With B sequences of T tokens, width d, L blocks, H heads, vocabulary V, k of the blocks recomputed
    (`every`: blocks 0, every, 2 every, ...), in float32 (a = 72, c = 12) or under bf16 autocast (a = 44,
    c = 10), and R(n) the bytes the residual rules of n blocks keep beyond Standard's (the variant's entry,
    `rr_core.variants.Variant.kept`: for a rule on one stream 2 n (r_d B T d + r_t B T), r_d and r_t its
    bytes per channel and per token at each sublayer):

        (L - k) [a B T d + 4 B H T + 8 B T] + R(L - k)              blocks kept
        + k 4 B T d                                                 blocks recomputed: their float32 input
        + c B T d + 4 B T V + 20 B T + 8 T + 4                      embeddings, final norm, loss
        + 2 W                                                       bf16 autocast's weight copies

    W: the elements of the matrices the kept blocks and the head multiply by (the copies autocast caches;
    none under FSDP's bf16 policy, whose gathered weights are bfloat16 already). 4 B H T is the attention's
    log-sum-exp (flash and memory-efficient kernels); 4 B T V the loss's log-softmax in float32. Exact on
    CPU without recomputation for every rule whose entry states what it keeps (tests/test_memory.py counts
    the saved tensors); with recomputation, exact for the rules on one stream, and for the rules on several
    streams an estimate (a recomputed block's input is then their whole state, counted as one stream).
    """
    bf16 = precision == "bf16"
    B, T, d, L, V = sequences, mcfg.block_size, mcfg.d_model, mcfg.n_layer, mcfg.vocab_size
    k = -(-L // every) if every else 0
    head = (10 if bf16 else 12) * B * T * d + 4 * B * T * V + 20 * B * T + 8 * T + 4
    block = param_shapes(replace(mcfg, n_layer=1))
    matrices = sum(math.prod(s) for n, s in block if n.startswith("transformer.h.") and len(s) == 2)
    copies = 2 * ((L - k) * matrices + V * d) if bf16 and weight_copies else 0
    kept = (L - k) * _block_bytes(mcfg, B, bf16) + _rule_bytes(mcfg, B, L - k, bf16, weight_copies)
    return kept + k * 4 * B * T * d + head + copies


def activation_bytes(
    mcfg: GPTConfig, sequences: int, precision: str, every: int = 0, weight_copies: bool = True
) -> int:
    """Activation memory of a training micro-batch: `saved_activation_bytes`, plus the working tensors of the
    backward pass: the logits' gradient and softmax in float32 (8 B T V) and, with checkpointing, one
    recomputed block's activations."""
    bf16 = precision == "bf16"
    saved = saved_activation_bytes(mcfg, sequences, precision, every, weight_copies)
    working = 8 * sequences * mcfg.block_size * mcfg.vocab_size
    one = _block_bytes(mcfg, sequences, bf16) + _rule_bytes(mcfg, sequences, 1, bf16, weight_copies)
    return saved + working + (one if every else 0)


def _eval_bytes(mcfg: GPTConfig, batch: int, precision: str) -> int:
    """The final evaluation's forward on a whole batch: its logits in float32 and one temporary of their
    size (log-sum-exp), plus the bfloat16 logits under bf16."""
    return (10 if precision == "bf16" else 8) * batch * mcfg.block_size * mcfg.vocab_size


def memory_plan(
    mcfg: GPTConfig,
    recipe: Recipe,
    world: int,
    precision: str,
    gpu_gib: float | None,
    micro_batches: int = 1,
    settings: tuple[Setting, ...] = SETTINGS,
) -> list[dict]:
    """Per process, what each setting holds for the model `mcfg` trained on `world` processes.

    For each setting the micro-batch count is the smallest of `micro_batches`, twice it, four times... (each
    dividing a process's share of the batch) whose total fits `gpu_gib` (None: `micro_batches`).

    Returns
    -------
    One record per setting: setting, params, grads, optimizer, gathered, activations (per micro-batch),
    eval, micro_batches, sequences (per micro-batch), total (bytes: state + gathered + the larger of
    activations and eval) and fits (True, False, or None when the GPU's memory is unknown).
    """
    per = recipe.batch_size // world
    rows = []
    for setting in settings:
        sharded, every = setting.shard == "fsdp", checkpoint_interval(setting.activation_checkpointing)
        state = state_bytes(mcfg, world, setting.shard)
        gathered = gathered_bytes(mcfg, precision) if sharded else 0
        evaluation = _eval_bytes(mcfg, recipe.batch_size, precision)
        m = micro_batches
        while True:
            act = activation_bytes(mcfg, per // m, precision, every, weight_copies=not sharded)
            total = sum(state.values()) + gathered + max(act, evaluation)
            fits = None if gpu_gib is None else total <= FIT_SHARE * gpu_gib * GIB
            if fits is not False or per % (2 * m):
                break
            m *= 2
        rows.append(
            {
                "setting": setting.name,
                **state,
                "gathered": gathered,
                "activations": act,
                "eval": evaluation,
                "micro_batches": m,
                "sequences": per // m,
                "total": total,
                "fits": fits,
            }
        )
    return rows


def plan_text(rows: list[dict], title: str) -> str:
    """The plan as a plain-text table, sizes in GiB (for messages; the CLI renders records itself)."""
    heads = ["setting", "params", "grads", "optimizer", "gathered", "activations", "eval", "micro-batches",
             "total", "fits"]  # fmt: skip
    cells = [
        [
            r["setting"],
            *(f"{r[k] / GIB:.2f}" for k in heads[1:7]),
            f"{r['micro_batches']} x {r['sequences']}",
            f"{r['total'] / GIB:.2f}",
            {True: "yes", False: "no", None: "-"}[r["fits"]],
        ]
        for r in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(heads)]

    def line(items: list[str]) -> str:
        return "  ".join(
            x.ljust(w) if i == 0 else x.rjust(w) for i, (x, w) in enumerate(zip(items, widths, strict=True))
        )

    return "\n".join([title, line(heads), line(["-" * w for w in widths]), *map(line, cells)])


def refuse_unfit(cfg: TrainConfig, mcfg: GPTConfig, world: int, gpu_gib: float | None) -> None:
    """Refuse before training a run the memory plan says cannot fit `gpu_gib` per process (None: unchecked).

    A data-parallel run is refused only when no micro-batch count fits (on running out of memory it goes on
    in more micro-batches by itself); a sharded run, which stops instead, also when its own count does not
    fit, naming the count that does. The error shows the plan of every setting.
    """
    if gpu_gib is None:
        return
    own = Setting(cfg.shard, cfg.activation_checkpointing)
    others = tuple(s for s in SETTINGS if s != own)
    rows = memory_plan(mcfg, cfg.recipe, world, cfg.precision, gpu_gib, cfg.micro_batches, (own, *others))
    mine = rows[0]
    if mine["fits"] and (own.shard == "none" or mine["micro_batches"] == cfg.micro_batches):
        return
    table = plan_text(
        rows, f"memory per process of {cfg.size} {cfg.variant} on {world} process(es), {cfg.precision}:"
    )
    fitting = [
        r["setting"] + (f" with --micro-batches {r['micro_batches']}" if r["micro_batches"] > 1 else "")
        for r in rows
        if r["fits"]
    ]
    if mine["fits"]:
        advice = f"it fits with --micro-batches {mine['micro_batches']}"
    else:
        advice = f"these fit: {'; '.join(fitting)}" if fitting else "no setting fits: use more GPUs"
    raise InputError(
        f"not training {' '.join(map(str, cfg.key))}: the memory plan says it does not fit in "
        f"{FIT_SHARE:.0%} of {gpu_gib:g} GiB per GPU as set ({own.name}, --micro-batches {cfg.micro_batches}); "
        f"{advice}. --gpu-memory GIB sets the memory checked against.\n{table}"
    )


def refuse_windows(
    windows: int, block: int, vocab: int, option: str, host_gib: float | None, *, batch: int | None = None
) -> None:
    """Refuse `windows` windows of `block` + 1 tokens to score (`option` the setting that asked for them)
    that this machine's memory (`host_gib`; None: unchecked) cannot hold, before any work, so an absurd count
    is one line rather than the allocator's traceback after the corpus has loaded.

    Counted: the windows' int64 ids and starts, drawn whole before scoring, and one forward pass's float32
    logits over `batch` of them (all where `batch` is None). A lower bound (activations are not counted), so
    only a count that cannot fit however it is run is refused.
    """
    per_pass = min(windows, batch or windows)
    need = 8 * windows * (block + 2) + 4 * per_pass * block * vocab
    if host_gib is not None and need > FIT_SHARE * host_gib * GIB:
        raise InputError(
            f"{option} {windows:,}: {windows:,} windows of {block + 1} tokens need {need / GIB:,.1f} GiB (their "
            f"int64 ids and one forward pass's logits), more than {FIT_SHARE:.0%} of this machine's "
            f"{host_gib:.1f} GiB; ask for fewer"
        )


def refuse_unbuildable(
    cfg: TrainConfig, mcfg: GPTConfig, world: int, host_gib: float | None, on_host: bool
) -> None:
    """Refuse before training a run this machine's memory cannot hold in any setting (`host_gib`: its memory;
    None: unchecked), so an absurd shape is one line rather than the allocator's traceback.

    The model is built whole in the host's memory before it moves to a GPU or is sharded: its float32
    parameters (4 bytes each) must fit `FIT_SHARE` of it. A run `on_host` (no GPU) trains there too: the
    smallest total of its memory plan over every setting and micro-batch count must fit. Both are lower
    bounds (one process of the run counted), so only what cannot fit however it is run is refused.
    """
    if host_gib is None:
        return
    if on_host:
        rows = memory_plan(mcfg, cfg.recipe, world, cfg.precision, host_gib, cfg.micro_batches)
        need, what = min(r["total"] for r in rows), "its memory plan's smallest total over every setting"
    else:
        need, what = 4 * mcfg.n_params, "its float32 parameters, built whole on the host before they move"
    if need > FIT_SHARE * host_gib * GIB:
        raise InputError(
            f"not training {' '.join(map(str, cfg.key))}: {mcfg.n_params:,} parameters (d_model {mcfg.d_model}, "
            f"n_layer {mcfg.n_layer}, block_size {mcfg.block_size}) need {need / GIB:,.1f} GiB ({what}), more "
            f"than {FIT_SHARE:.0%} of this machine's {host_gib:.1f} GiB"
        )


def size_plans(
    vocab_size: int,
    ladder: str | os.PathLike | None = None,
    world: int = 1,
    precision: str = "tf32",
    gpu_gib: float | None = None,
) -> tuple[list[dict], list[str]]:
    """`memory_plan` of every size of a ladder (rr's, or `ladder`'s) on `world` processes: `rr sizes --memory`.

    Each size is planned for the largest of its compared variants at vocabulary `vocab_size`, at its
    recipe's batch and context. Returns one record per size and setting (size, variant, then the plan's
    columns), and the sizes left out because their batch does not split over `world` processes.
    """
    rows, left_out = [], []
    for name, size in ladder_sizes(ladder).items():
        if size.recipe.batch_size % world:
            left_out.append(name)
            continue
        mcfg = max((model_config(name, v, vocab_size, ladder) for v in COMPARED), key=lambda c: c.n_params)
        mcfg = replace(mcfg, block_size=size.recipe.block_size)
        rows += [
            {"size": name, "variant": mcfg.variant, **r}
            for r in memory_plan(mcfg, size.recipe, world, precision, gpu_gib)
        ]
    return rows, left_out

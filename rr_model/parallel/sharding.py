"""How a run lays its model over the processes when it shards it (`TrainConfig.shard = "fsdp"`).

Data parallel (the default, as published) keeps the whole model, its gradients and both AdamW moments on
every process: 16 bytes a parameter. Sharding splits all three over the processes, as ZeRO stage 3
(Rajbhandari et al. 2020) and PyTorch FSDP (Zhao et al. 2023) do, with torch's FSDP2 (`fully_shard`): each
parameter is cut along its first dimension into one piece per process (a DTensor), gathered whole for the
forward and backward pass of its unit only, and its gradient is reduce-scattered back into pieces.

The units follow torchtitan's layout: each block is one, then the root takes what is left (the embeddings,
the final RMSNorm and the head). The head's matrix is the token embedding's (tied), one Parameter that the
root owns once; sharding it in a unit of its own would split the tie. The optimiser is built afterwards, on
the pieces. A 0-d parameter (ReZero's alpha) cannot be cut: it stays whole on every process, outside FSDP,
and `rr_model.run.step.apply_gradients` averages its gradient over the processes as data parallel does.

Reductions sum and then divide by the number of processes (`set_force_sum_reduction_for_comms`): gloo has no
pre-multiplied sum, so this is the one setting that runs alike on CPU (gloo) and on GPUs (NCCL). Under
`--precision bf16` the gathered parameters are bfloat16 and gradients are reduced in float32
(`MixedPrecisionPolicy`); the pieces the optimiser updates stay float32.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor

if TYPE_CHECKING:
    from rr_model.model import GPT

__all__ = ["shard", "local", "full_weights"]


def shard(model: GPT, device: torch.device, world: int, precision: str) -> GPT:
    """Shard `model` in place over the `world` processes of the default process group (FSDP2), each block
    a unit, then the root; returns it. Build the optimiser after this, on the pieces.

    The model is built whole on every process from the seed first (its initial weights are the published
    draws), so every process cuts the same tensors; on CUDA each unit is moved to the GPU as it is cut, so
    the whole model is never on one GPU.
    """
    mesh = init_device_mesh(device.type, (world,))
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    options: dict[str, Any] = {
        "mesh": mesh,
        "mp_policy": policy if precision == "bf16" else MixedPrecisionPolicy(),
    }
    options["ignored_params"] = {p for p in model.parameters() if p.ndim == 0}  # whole on every process
    for block in model.transformer.h:
        fully_shard(block, **options)
    fully_shard(model, **options)  # the root: embeddings (the tied matrix, once), final norm, head
    for module in model.modules():
        if isinstance(module, FSDPModule):  # the setting is per unit
            module.set_force_sum_reduction_for_comms(True)
    return model


def local(t: torch.Tensor) -> torch.Tensor:
    """The part of `t` this process holds: a DTensor's local piece, a plain tensor itself."""
    return t.to_local() if isinstance(t, DTensor) else t


def full_weights(model: GPT) -> dict[str, torch.Tensor]:
    """The whole model's state dict on the CPU of process 0 (every process must call it: it gathers), in
    the unsharded model's key order with the tied matrix as one tensor under both names, so `torch.save`
    writes what an unsharded run writes; {} on the other processes."""
    full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if not full:
        return {}
    full["transformer.wte.weight"] = full[
        "lm_head.weight"
    ].detach()  # gathered as two copies: one storage again
    return {name: full[name] for name in model.state_dict()}

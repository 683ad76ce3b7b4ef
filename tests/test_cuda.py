"""The trainer's CUDA paths, on a CUDA device only (`pytest -m cuda`; skipped elsewhere, with the reason).

Each asserts against the same computation on a path already trusted: SDPA's fused kernels against its math
kernel on the widened baselines' head sizes (68, 71, 73, 103, 111: not multiples of 8), pinned non-blocking
copies against plain ones, fused AdamW against the loop, `--deterministic` twice bit for bit.
`bench/gpu_check.sh` runs these first.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (pytest -m cuda on a GPU)"),
]


@pytest.mark.parametrize("head_dim", [64, 68, 71, 73, 96, 103, 111])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_sdpa_on_each_head_size_agrees_with_its_math_kernel(head_dim, dtype):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (
        torch.randn(4, 12, 256, head_dim, device="cuda", generator=g, dtype=getattr(torch, dtype))
        for _ in "qkv"
    )
    chosen = sdpa(q, k, v, is_causal=True)
    with sdpa_kernel(SDPBackend.MATH):
        math = sdpa(q.double(), k.double(), v.double(), is_causal=True)
    tol = 2e-2 if dtype == "bfloat16" else 2e-3  # TF32 is off in this test: float32 is the reference
    assert torch.allclose(chosen.double(), math, atol=tol, rtol=tol)


def test_a_pinned_non_blocking_copy_gives_the_batch():
    from rr_model.run.step import to_device

    batch = np.random.default_rng(0).integers(0, 50257, size=(64, 257), dtype=np.int64)
    got = to_device(batch, torch.device("cuda"))
    torch.cuda.synchronize()
    assert got.is_cuda and torch.equal(got.cpu(), torch.from_numpy(batch))


def test_fused_adamw_is_chosen_on_cuda_and_matches_the_loop():
    from rr_core.shapes import model_config
    from rr_model.model import GPT

    torch.manual_seed(0)
    model = GPT(model_config("tiny", "review_neutral")).cuda()
    fused = model.configure_optimizers(0.1, 2e-4, (0.9, 0.95))
    assert fused.param_groups[0]["fused"]
    twin = GPT(model_config("tiny", "review_neutral")).cuda()
    twin.load_state_dict(model.state_dict())
    loop = torch.optim.AdamW(
        [{"params": g["params"], "weight_decay": g["weight_decay"]} for g in _groups(twin, fused, model)],
        lr=2e-4,
        betas=(0.9, 0.95),
        foreach=False,
    )
    x = torch.randint(0, model.config.vocab_size, (2, 64), device="cuda")
    for m, opt in ((model, fused), (twin, loop)):
        for _ in range(3):
            _, loss = m(x, x)
            loss.backward()
            opt.step()
            opt.zero_grad()
    for a, b in zip(model.parameters(), twin.parameters(), strict=True):
        assert torch.allclose(a, b, atol=1e-6)


def _groups(twin, optimizer, model):
    """The optimiser's parameter groups with `model`'s parameters replaced by `twin`'s, in order."""
    index = {id(p): i for i, p in enumerate(model.parameters())}
    params = list(twin.parameters())
    return [
        {"params": [params[index[id(p)]] for p in g["params"]], "weight_decay": g["weight_decay"]}
        for g in optimizer.param_groups
    ]


def test_deterministic_numerics_repeat_a_step_bit_for_bit():
    from rr_core.shapes import model_config
    from rr_model.model import GPT
    from rr_model.run.numerics import CUBLAS_WORKSPACE, numerics

    grads = []
    with numerics(torch.device("cuda"), "tf32", deterministic=True):
        assert all(os.environ.get(k) for k in CUBLAS_WORKSPACE)
        for _ in range(2):
            torch.manual_seed(0)
            model = GPT(model_config("60M", "standard")).cuda()
            x = torch.randint(0, model.config.vocab_size, (4, 256), device="cuda")
            _, loss = model(x, x)
            loss.backward()
            grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    assert torch.equal(grads[0], grads[1])

"""The depth-stability finding: at 48 sublayers the convex form's gradient vanishes, the additive form's does not."""

from __future__ import annotations

import pytest
import torch
from conftest import rr

from rr_model.uses.depth import DepthCheck, depth_check


@pytest.fixture(scope="module")
def result():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield depth_check().set_index("variant")
    finally:
        torch.set_num_threads(threads)


def test_columns(result):
    assert list(result.reset_index().columns) == [
        "variant",
        "n_layer",
        "d_model",
        "grad_first",
        "grad_last",
        "ratio",
    ]
    assert list(result.index) == ["review_convex", "review_neutral"]


def test_convex_gradient_vanishes_by_orders_of_magnitude(result):
    # Measured ~1e-6 for seeds 0-2 (24 blocks, d_model 64); 1e-4 leaves two orders of margin.
    assert result.loc["review_convex", "ratio"] < 1e-4


def test_additive_review_preserves_the_gradient(result):
    assert 0.5 < result.loc["review_neutral", "ratio"] < 2  # measured ~1.05


def test_the_check_is_reproducible(result):
    again = depth_check(DepthCheck(variants=("review_convex",))).set_index("variant")
    assert again.loc["review_convex", "ratio"] == result.loc["review_convex", "ratio"]


def test_rules_whose_state_is_several_tensors_are_checked_over_all_of_them():
    """Issue 46: `rr depth-check` ended in torch's "got tuple" for DenseFormer and Attention Residuals, whose
    state is the kept outputs of earlier layers. DenseFormer at init is the standard residual (its averaging
    weights put 1 on the stream, 0 on every kept output), so the gradient entering each block is Standard's."""
    variants = ("standard", "denseformer", "attn_res", "attn_res_block")
    df = depth_check(DepthCheck(n_layer=3, d_model=16, n_head=2, variants=variants))
    rows = df.set_index("variant")
    for column in ("grad_first", "grad_last"):
        assert rows.loc["denseformer", column] == pytest.approx(rows.loc["standard", column], rel=1e-6)
    assert (rows[["grad_first", "grad_last"]] > 0).all().all()
    said = rr("depth-check", "--variant", "attn_res", "--layers", "2", "--d-model", "16", "--n-head", "2")
    assert said.exit_code == 0 and "attn_res" in said.stdout, said.output

"""What residual rules keep for the backward pass beyond Standard's, by arithmetic (`Kept`): the functions the
variant registry's entries hold (`rr_core.variants.register_residual`'s `kept`) and the memory plan reads
(`rr_model.parallel.memory.saved_activation_bytes`). For rr's rules on one stream, bytes per sublayer
(`per_sublayer`); for the rules on several streams, counted from the streams, the width, the tokens and the
sources each depth attention reads. tests/test_memory.py checks every one to the byte against what autograd
keeps.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = [
    "Kept",
    "per_sublayer",
    "HC_STREAMS",
    "hyper_kept",
    "denseformer_kept",
    "attn_res_kept",
    "attn_res_pairs",
]


# Bytes autograd keeps for the backward pass of a model's residual rules beyond what Standard's keep, as a
# function of (tokens, d_model, n_layer, bf16, weight_copies): `tokens` the micro-batch's B x T; `bf16`
# under bf16 autocast, whose copies of the rules' matrices count where `weight_copies` (not under FSDP's
# bf16 policy, `rr_model.parallel.memory.saved_activation_bytes`). Exact arithmetic, the tensors counted.
Kept = Callable[[int, int, int, bool, bool], int]


def per_sublayer(fp32: tuple[int, int], bf16: tuple[int, int]) -> Kept:
    """`Kept` of a rule on one stream that keeps (r_d, r_t) bytes per token at each sublayer: r_d per channel
    and r_t per token, in float32 (`fp32`) or under bf16 autocast (`bf16`): 2 L (r_d N d + r_t N)."""

    def kept(tokens: int, d: int, n_layer: int, bf16_: bool, weight_copies: bool) -> int:
        r_d, r_t = bf16 if bf16_ else fp32
        return 2 * n_layer * (r_d * tokens * d + r_t * tokens)

    return kept


# Hyper-connections' expansion rate n, the paper's default: the registry's shapes and kept bytes read it. The rule
# (`rr_model.streams.HyperConnections.streams`) writes it too, as `rr export` carries the class's source alone;
# tests/test_shapes.py holds them equal (the registry's shapes are the built rule's).
HC_STREAMS = 4


def hyper_kept(dynamic: bool, n: int = HC_STREAMS) -> Kept:
    """`Kept` of hyper-connections on n streams, by block (two sublayers) in n, d and the tokens N, less
    what the first block saves by reading the embeddings expanded (a view: d per token, not n d). Read off
    the tensors autograd keeps on CPU and checked to the byte at n = 2, 3 and 4 (tests/test_memory.py at the
    registered n): the state, n d per token, kept per sublayer (in bfloat16 under bf16 autocast, which adds
    copies of the matrices it multiplies by: [A_m A_r], or the dynamic weights), and for the dynamic rule
    the normalised state and its weights' tanh. The copies of a block's matrices are counted with every
    rule's (`rr_model.parallel.memory.saved_activation_bytes`' W); what differs from them is counted here."""

    def kept(tokens: int, d: int, n_layer: int, bf16: bool, weight_copies: bool) -> int:
        N, L = tokens, n_layer
        first = -(4 * n - 4) * N * d if dynamic else (0 if bf16 else -(8 * n - 4) * N * d)
        if not dynamic:  # [A_m A_r]'s bfloat16 copy: counted with the block's matrices
            per, copies = ((8 * n - 4) * N * d - 4 * N if bf16 else (16 * n + 8) * N * d), 0
        elif bf16:  # B's dynamic vector copied too; [A_m A_r], counted with the matrices, is only added
            per, copies = (48 * n - 4) * N * d + (12 * n * n + 44 * n - 4) * N, 4 * d - 4 * n * (n + 1)
        else:
            per, copies = (40 * n + 8) * N * d + (32 * n * n + 72 * n) * N, 0
        return first + L * (per + (copies if bf16 and weight_copies else 0))

    return kept


def denseformer_kept(tokens: int, d: int, n_layer: int, bf16: bool, weight_copies: bool) -> int:
    """DenseFormer keeps each block's output, in float32, for its depth-weighted averages: 4 N d L."""
    return 4 * tokens * d * n_layer


def attn_res_kept(blocks: int) -> Kept:
    """`Kept` of Attention Residuals over `blocks` blocks of sublayers (0: every sublayer a source): each of
    the S = 2 L + 1 sources (the embeddings, each sublayer's output or block's partial sum) in float32 (4 N d
    each), and per source read by each of the 2 L + 1 depth attentions (P pairs: `attn_res_pairs`) its
    logit, norm and weight (12 N; 8 N under bf16, which adds a bfloat16 copy of the embeddings, 2 N a source
    and the queries' copies, 2 d each)."""

    def kept(tokens: int, d: int, n_layer: int, bf16: bool, weight_copies: bool) -> int:
        N, S, P = tokens, 2 * n_layer + 1, attn_res_pairs(n_layer, blocks)
        if not bf16:
            return 4 * N * d * S + 12 * N * P
        return 4 * N * d * S + 2 * N * d + 2 * N * S + 8 * N * P + (2 * d * S if weight_copies else 0)

    return kept


def attn_res_pairs(n_layer: int, blocks: int) -> int:
    """The (depth attention, source) pairs of a model: sublayer s reads 1 + ceil(s / span) sources (span:
    the sublayers a source sums, 1 for full AttnRes), the final norm's input every source.

    Example
    -------
    >>> attn_res_pairs(2, 0), attn_res_pairs(6, 8)  # full: (2 L + 1)(L + 1); 12 sublayers in 8 blocks of 2
    (15, 55)
    """
    sites = 2 * n_layer
    span = -(-sites // blocks) if blocks else 1
    return sum(1 + -(-s // span) for s in range(sites + 1))

"""Fake (meta) kernels for torch.compile: output shapes/dtypes of every kbit op.

Each mirrors the C++ checks in csrc/common/checks.cpp that depend on metadata only.
"""
from __future__ import annotations

import torch
from torch.library import register_fake

#: kGemvMaxRows (csrc/cuda/gemm/scalar_gemv.h): the most rows of x gemv_gemm takes.
GEMV_MAX_ROWS = 128

def _tiles(n, cols):
    return (n + 15) // 16, (cols + 255) // 256


def _check_k(k):
    torch._check(2 <= k <= 5, lambda: f"kbit: k must be 2, 3, 4 or 5 (got k={k})")


@register_fake("kbit::quantize")
def _quantize(W, codebook, k):
    _check_k(k)
    torch._check(W.dim() in (2, 3), lambda: f"kbit: W must be 2-D or 3-D (got {W.dim()}-D)")
    torch._check(W.shape[-1] % 32 == 0, lambda: "kbit: K must be a multiple of 32")
    torch._check(codebook.numel() == 1 << k, lambda: "kbit: codebook must have 2^k entries")
    lead = tuple(W.shape[:-1])
    kb = W.shape[-1] // 32
    return (W.new_empty(lead + (kb, k), dtype=torch.int32),
            W.new_empty(lead + (kb,), dtype=torch.uint8),
            W.new_empty(lead, dtype=torch.float32))


@register_fake("kbit::dequantize")
def _dequantize(packed, absmax, row_scale, codebook, k, dtype):
    torch._check(packed.dim() in (3, 4), lambda: "kbit: packed (flat) must be 3-D or 4-D")
    torch._check(packed.shape[-1] == k, lambda: "kbit: packed's last dim must be k")
    return packed.new_empty(tuple(packed.shape[:-2]) + (packed.shape[-2] * 32,), dtype=dtype)


@register_fake("kbit::repack")
def _repack(packed, absmax):
    torch._check(packed.dim() in (3, 4), lambda: "kbit: packed (flat) must be 3-D or 4-D")
    lead = tuple(packed.shape[:-3])
    n, kb, k = packed.shape[-3:]
    nt, g = _tiles(n, kb * 32)
    return (packed.new_empty(lead + (nt, g, k, 32, 4)), absmax.new_empty(lead + (nt, g, 128)))


@register_fake("kbit::unrepack")
def _unrepack(packed_tiled, absmax_tiled, N, K):
    torch._check(packed_tiled.dim() in (5, 6), lambda: "kbit: packed (tiled) must be 5-D or 6-D")
    lead = tuple(packed_tiled.shape[:-5])
    k = packed_tiled.shape[-3]
    return (packed_tiled.new_empty(lead + (N, K // 32, k)), absmax_tiled.new_empty(lead + (N, K // 32)))


@register_fake("kbit::dequantize_tiled")
def _dequantize_tiled(packed_tiled, absmax_tiled, row_scale, codebook, k, K, dtype):
    torch._check(packed_tiled.dim() in (5, 6), lambda: "kbit: packed (tiled) must be 5-D or 6-D")
    return packed_tiled.new_empty(tuple(row_scale.shape) + (K,), dtype=dtype)


def _check_same_device(x, *weight, **named):
    # As the real ops do (a meta x with CPU weights would otherwise come here and pass): the weight's tensors, and
    # the other tensor arguments by name.
    for name, t in [("the weight", t) for t in weight] + list(named.items()):
        torch._check(t.device == x.device, lambda: f"kbit: x is on {x.device} but {name} is on {t.device}")


@register_fake("kbit::gemm")
def _gemm(x, packed_tiled, absmax_tiled, row_scale, codebook, k):
    torch._check(x.dim() == 2, lambda: "kbit: x must be 2-D [M, K]")
    torch._check(x.dtype in (torch.float16, torch.bfloat16), lambda: "kbit: x must be fp16 or bf16")
    torch._check(packed_tiled.dim() == 5, lambda: "kbit: gemm needs a 2-D weight")
    _check_same_device(x, packed_tiled, absmax_tiled, row_scale, codebook)
    return x.new_empty((x.shape[0], row_scale.shape[-1]))


@register_fake("kbit::gemm_silu_and_mul")
def _gemm_silu_and_mul(x, packed_tiled, absmax_tiled, row_scale, codebook, k):
    y = _gemm(x, packed_tiled, absmax_tiled, row_scale, codebook, k)
    torch._check(y.shape[1] % 16 == 0, lambda: "kbit.gemm_silu_and_mul: the weight's N must be a multiple of 16 "
                 f"(gate and up rows interleaved in 8s; got N={y.shape[1]})")
    return y.new_empty((y.shape[0], y.shape[1] // 2))


@register_fake("kbit::grouped_gemm")
def _grouped_gemm(x, packed_tiled, absmax_tiled, row_scale, codebook, expert_offsets, k):
    torch._check(x.dim() == 2, lambda: "kbit: x must be 2-D [T, K]")
    torch._check(x.dtype in (torch.float16, torch.bfloat16), lambda: "kbit: x must be fp16 or bf16")
    torch._check(packed_tiled.dim() == 6, lambda: "kbit: grouped_gemm needs an expert stack")
    torch._check(expert_offsets.shape[0] == packed_tiled.shape[0] + 1,
                 lambda: "kbit: expert_offsets must have E+1 entries")
    _check_same_device(x, packed_tiled, absmax_tiled, row_scale, codebook, expert_offsets=expert_offsets)
    return x.new_empty((x.shape[0], row_scale.shape[-1]))


@register_fake("kbit::grouped_gemm_silu_and_mul")
def _grouped_gemm_silu_and_mul(x, packed_tiled, absmax_tiled, row_scale, codebook, expert_offsets, k):
    y = _grouped_gemm(x, packed_tiled, absmax_tiled, row_scale, codebook, expert_offsets, k)
    torch._check(y.shape[1] % 16 == 0, lambda: "kbit.grouped_gemm_silu_and_mul: the weight's N must be a multiple "
                 f"of 16 (gate and up rows interleaved in 8s; got N={y.shape[1]})")
    return y.new_empty((y.shape[0], y.shape[1] // 2))


@register_fake("kbit::grouped_gemm_slots")
def _grouped_gemm_slots(x, packed_tiled, absmax_tiled, row_scale, codebook, top_k_index, k, silu_and_mul=False):
    torch._check(x.dim() == 2, lambda: "kbit: x must be 2-D [T, K]")
    torch._check(x.dtype in (torch.float16, torch.bfloat16), lambda: "kbit: x must be fp16 or bf16")
    torch._check(packed_tiled.dim() == 6, lambda: "kbit: grouped_gemm_slots needs an expert stack")
    torch._check(top_k_index.dim() == 2 and top_k_index.shape[0] == x.shape[0],
                 lambda: "kbit.grouped_gemm_slots: top_k_index must be 2-D [T, r] with x's T rows")
    torch._check(top_k_index.dtype in (torch.int32, torch.int64),
                 lambda: "kbit.grouped_gemm_slots: top_k_index must be int64 or int32")
    _check_same_device(x, packed_tiled, absmax_tiled, row_scale, codebook, top_k_index=top_k_index)
    N = row_scale.shape[-1]
    torch._check(not silu_and_mul or N % 16 == 0, lambda: "kbit.grouped_gemm_slots: the weight's N must be a "
                 f"multiple of 16 with silu_and_mul (gate and up rows interleaved in 8s; got N={N})")
    return x.new_empty((top_k_index.numel(), N // 2 if silu_and_mul else N))


@register_fake("kbit::mma_gemm")
def _mma_gemm(x, packed_tiled, absmax_tiled, row_scale, codebook, k, warps_per_unit=0):
    return _gemm(x, packed_tiled, absmax_tiled, row_scale, codebook, k)


def _check_gemv_decode(op, decode):
    """The GEMV ops' decode argument, refused as the CUDA op refuses it (parse_gemv_decode)."""
    torch._check(decode in ("auto", "mma", "shuffle"),
                 lambda: f"kbit: {op}: decode must be 'auto', 'mma' or 'shuffle'; got {decode!r}")


@register_fake("kbit::gemv_gemm")
def _gemv_gemm(x, packed_tiled, absmax_tiled, row_scale, codebook, k, decode="auto"):
    _check_gemv_decode("gemv_gemm", decode)
    torch._check(x.dim() != 2 or x.shape[0] <= GEMV_MAX_ROWS,
                 lambda: f"kbit: gemv_gemm takes at most {GEMV_MAX_ROWS} rows of x (M <= {GEMV_MAX_ROWS}); got M={x.shape[0]}")
    torch._check(x.dim() != 2 or decode != "shuffle" or x.shape[0] <= 4,
                 lambda: f"kbit: gemv_gemm with decode='shuffle' takes at most 4 rows of x; got M={x.shape[0]}")
    return _gemm(x, packed_tiled, absmax_tiled, row_scale, codebook, k)


@register_fake("kbit::tile_gemm")
def _tile_gemm(x, packed_tiled, absmax_tiled, row_scale, codebook, k):
    return _gemm(x, packed_tiled, absmax_tiled, row_scale, codebook, k)


@register_fake("kbit::wgmma_gemm")
def _wgmma_gemm(x, packed_tiled, absmax_tiled, row_scale, codebook, k):
    return _gemm(x, packed_tiled, absmax_tiled, row_scale, codebook, k)


@register_fake("kbit::dequant_cublas_gemm")
def _dequant_cublas_gemm(x, packed_tiled, absmax_tiled, row_scale, codebook, k):
    return _gemm(x, packed_tiled, absmax_tiled, row_scale, codebook, k)


@register_fake("kbit::grouped_mma_gemm")
def _grouped_mma_gemm(x, packed_tiled, absmax_tiled, row_scale, codebook, expert_offsets, k):
    return _grouped_gemm(x, packed_tiled, absmax_tiled, row_scale, codebook, expert_offsets, k)


@register_fake("kbit::grouped_gemv_gemm")
def _grouped_gemv_gemm(x, packed_tiled, absmax_tiled, row_scale, codebook, expert_offsets, k, decode="auto"):
    _check_gemv_decode("grouped_gemv_gemm", decode)
    return _grouped_gemm(x, packed_tiled, absmax_tiled, row_scale, codebook, expert_offsets, k)


@register_fake("kbit::grouped_tile_gemm")
def _grouped_tile_gemm(x, packed_tiled, absmax_tiled, row_scale, codebook, expert_offsets, k):
    return _grouped_gemm(x, packed_tiled, absmax_tiled, row_scale, codebook, expert_offsets, k)


# The MoE glue ops (csrc/common/moe_checks.cpp's rules on metadata).
def _check_moe_ids(op, top_k_index, num_experts):
    torch._check(top_k_index.dim() == 2, lambda: f"kbit.{op}: top_k_index must be 2-D [tokens, topk]")
    torch._check(top_k_index.dtype in (torch.int64, torch.int32),
                 lambda: f"kbit.{op}: top_k_index must be int64 or int32 (got {top_k_index.dtype})")
    torch._check(1 <= num_experts <= 2**31 - 1, lambda: f"kbit.{op}: num_experts must be 1 to 2147483647")


@register_fake("kbit::moe_route")
def _moe_route(top_k_index, num_experts):
    _check_moe_ids("moe_route", top_k_index, num_experts)
    P = top_k_index.numel()
    torch._check(P <= 2**31 - 1, lambda: f"kbit.moe_route: at most 2147483647 (token, slot) pairs (got {P})")
    return (top_k_index.new_empty((num_experts + 1,), dtype=torch.int32),
            top_k_index.new_empty((P,), dtype=torch.int64),
            top_k_index.new_empty((P,), dtype=torch.int32))


@register_fake("kbit::moe_gather")
def _moe_gather(x, row_token):
    torch._check(x.dim() == 2 and x.dtype in (torch.float16, torch.bfloat16, torch.float32),
                 lambda: "kbit.moe_gather: x must be 2-D [tokens, H] float16, bfloat16 or float32")
    torch._check(row_token.dim() == 1 and row_token.dtype in (torch.int64, torch.int32),
                 lambda: "kbit.moe_gather: row_token must be 1-D int64 or int32 (moe_route's)")
    return x.new_empty((row_token.shape[0], x.shape[1]))


@register_fake("kbit::moe_route_gather")
def _moe_route_gather(top_k_index, num_experts, x):
    _check_moe_ids("moe_route_gather", top_k_index, num_experts)
    P = top_k_index.numel()
    torch._check(P <= 2**31 - 1, lambda: f"kbit.moe_route_gather: at most 2147483647 (token, slot) pairs (got {P})")
    torch._check(x.dim() == 2 and x.dtype in (torch.float16, torch.bfloat16, torch.float32),
                 lambda: "kbit.moe_route_gather: x must be 2-D [tokens, H] float16, bfloat16 or float32")
    torch._check(x.shape[0] == top_k_index.shape[0],
                 lambda: "kbit.moe_route_gather: x must have one row per token of top_k_index")
    torch._check(x.device == top_k_index.device,
                 lambda: f"kbit: all tensors must be on one device: top_k_index is on {top_k_index.device} but x is on "
                         f"{x.device}")
    return (*_moe_route(top_k_index, num_experts), x.new_empty((P, x.shape[1])))


@register_fake("kbit::silu_and_mul")
def _silu_and_mul(h, interleaved=False):
    torch._check(h.dim() == 2, lambda: "kbit.silu_and_mul: h must be 2-D [rows, 2 I]")
    torch._check(h.shape[1] % 2 == 0, lambda: "kbit.silu_and_mul: h's last dim must be even")
    torch._check(h.dtype in (torch.float16, torch.bfloat16, torch.float32),
                 lambda: f"kbit.silu_and_mul: h must be float16, bfloat16 or float32 (got {h.dtype})")
    torch._check(not interleaved or h.shape[1] % 16 == 0,
                 lambda: "kbit.silu_and_mul: interleaved h's last dim must be a multiple of 16")
    return h.new_empty((h.shape[0], h.shape[1] // 2))


@register_fake("kbit::moe_combine")
def _moe_combine(y, top_k_weights, top_k_index, pair_row, num_experts):
    _check_moe_ids("moe_combine", top_k_index, num_experts)
    torch._check(y.dim() == 2 and y.dtype in (torch.float16, torch.bfloat16, torch.float32),
                 lambda: "kbit.moe_combine: y must be 2-D [tokens x topk, H] float16, bfloat16 or float32")
    torch._check(y.shape[0] == top_k_index.numel(),
                 lambda: "kbit.moe_combine: y must have one row per (token, slot) pair of top_k_index")
    torch._check(top_k_weights.shape == top_k_index.shape and
                 top_k_weights.dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64),
                 lambda: "kbit.moe_combine: top_k_weights must be float16, bfloat16, float32 or float64 with "
                         "top_k_index's shape")
    torch._check(pair_row is None or (pair_row.dim() == 1 and pair_row.shape[0] == top_k_index.numel() and
                                      pair_row.dtype == torch.int32),
                 lambda: "kbit.moe_combine: pair_row must be moe_route's int32 [tokens x topk] or None")
    return y.new_empty((top_k_index.shape[0], y.shape[1]))


@register_fake("kbit::router_topk")
def _router_topk(logits, top_k, normalize=True):
    torch._check(logits.dim() == 2 and logits.dtype in (torch.float16, torch.bfloat16, torch.float32),
                 lambda: "kbit.router_topk: logits must be 2-D [tokens, experts] float16, bfloat16 or float32")
    torch._check(0 <= top_k <= logits.shape[1],
                 lambda: f"kbit.router_topk: top_k must be 0 to the number of experts {logits.shape[1]} (got {top_k})")
    T = logits.shape[0]
    return logits.new_empty((T, top_k)), logits.new_empty((T, top_k), dtype=torch.int64)

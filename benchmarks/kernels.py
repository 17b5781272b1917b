"""Every benchmark column, registered in this one place (see registry.py for the contract).

Registration order is column order: kbit kernels first, then the peers.
A future kbit op that takes the same arguments as kbit::gemm (dense) or kbit::grouped_gemm
(MoE) joins by adding one line to FUTURE_KBIT_OPS; until torch.ops.kbit.<op> exists with a
kernel for the device, its column is skipped with the reason in the report's notes.
"""
from __future__ import annotations

import dataclasses

import torch

import kbit

from .cases import Case, Inputs, Layer
from .check import reference_matmul
from .ops import schema_types
from .peer_formats import INT4_GROUP, INT4_INNER_K_TILES, fp8_rowwise, int4_pack_cuda, int4_quantize
from .registry import KBIT, PEER, REFERENCE, Setup, register
from .weights import LayerWeights


# ---- applicability -------------------------------------------------------------------------
def dense_only(case: Case) -> bool:
    return not case.layer.moe


def moe_only(case: Case) -> bool:
    return case.layer.moe


def at_most(max_m, moe: bool):
    """Applies to dense (moe=False) or MoE (moe=True) cases with m <= max_m (None: any m)."""
    return lambda case: case.layer.moe == moe and (max_m is None or case.m <= max_m)


# ---- shared pieces -------------------------------------------------------------------------
def kbit_reference(layer: Layer, lw: LayerWeights):
    """What every kbit kernel must compute: x @ dequantize(W)^T in float32."""
    return lambda inp: reference_matmul(inp.x, lw.dequantized(layer.k), inp)


def matmul_any(inp: Inputs, w: torch.Tensor) -> torch.Tensor:
    """cuBLAS: x @ w^T for w [N, K]; a batched bmm for an expert stack with equal tokens per
    expert; one matmul per non-empty expert otherwise (irregular routing)."""
    if w.dim() == 2:
        return torch.matmul(inp.x, w.t())
    m = inp.uniform_m
    if m is not None:
        e, n, kdim = w.shape
        return torch.bmm(inp.x.view(e, m, kdim), w.transpose(1, 2)).view(e * m, n)
    out = inp.x.new_empty(inp.x.shape[0], w.shape[1])
    start = 0
    for e, count in enumerate(inp.counts):
        if count:
            torch.mm(inp.x[start:start + count], w[e].t(), out=out[start:start + count])
        start += count
    return out


# ---- kbit ------------------------------------------------------------------------------------
@register("kbit", family=KBIT, per_k=True,
          requires=lambda layer: ("kbit::grouped_gemm",) if layer.moe else ("kbit::gemm",),
          doc="kbit's dispatcher: kbit.gemm (dense) or kbit.grouped_gemm (MoE), whatever kernel it picks")
def kbit_dispatch(layer: Layer, lw: LayerWeights) -> Setup:
    if layer.moe:
        call = lambda w, inp: kbit.grouped_gemm(inp.x, w, inp.offsets)  # noqa: E731
    else:
        call = lambda w, inp: kbit.gemm(inp.x, w)  # noqa: E731
    return Setup(lw.quantized(layer.k), call, kbit_reference(layer, lw))


# (column, torch.ops.kbit op, MoE?, largest m it is timed at (None: any), doc)
FUTURE_KBIT_OPS = [
    ("Scalar", "gemv_gemm", False, 16, "kbit scalar GEMV kernel (torch.ops.kbit.gemv_gemm)"),
    ("MMA", "mma_gemm", False, None, "kbit tensor-core kernel (torch.ops.kbit.mma_gemm)"),
    ("Grouped", "grouped_gemv_gemm", True, 16, "kbit grouped scalar GEMV (torch.ops.kbit.grouped_gemv_gemm)"),
    ("Grp MMA", "grouped_mma_gemm", True, None, "kbit grouped tensor-core kernel (torch.ops.kbit.grouped_mma_gemm)"),
    ("Tile", "tile_gemm", False, None, "kbit tile kernel (torch.ops.kbit.tile_gemm)"),
    ("Wgmma", "wgmma_gemm", False, None, "kbit wgmma tile kernel (torch.ops.kbit.wgmma_gemm; Hopper, sm_90a build)"),
    ("Grp Tile", "grouped_tile_gemm", True, None, "kbit grouped tile kernel (torch.ops.kbit.grouped_tile_gemm)"),
]


def _register_kbit_op(column: str, op: str, moe: bool, max_m, doc: str) -> None:
    qualified, template = f"kbit::{op}", ("kbit::grouped_gemm" if moe else "kbit::gemm")

    def same_arguments(device):
        types = schema_types(qualified)
        if types is not None and types != schema_types(template):
            return (f"torch.ops.kbit.{op} takes {types}, not {template}'s arguments: "
                    f"give it its own entry in benchmarks/kernels.py")
        runs = getattr(kbit._C, "wgmma_gemm_runs", None)
        if op == "wgmma_gemm" and types is not None and not (runs and device.type == "cuda"
                                                             and runs(4, 64, device.index or 0)):
            return "torch.ops.kbit.wgmma_gemm runs on Hopper GPUs with an sm_90a build only"
        return None

    @register(column, family=KBIT, per_k=True, requires=(qualified, same_arguments),
              applies=at_most(max_m, moe), doc=doc)
    def setup(layer: Layer, lw: LayerWeights) -> Setup:
        fn = getattr(torch.ops.kbit, op)
        if moe:
            call = lambda w, inp: fn(inp.x, w.packed, w.absmax, w.row_scale, w.codebook, inp.offsets, w.k)  # noqa: E731
        else:
            call = lambda w, inp: fn(inp.x, w.packed, w.absmax, w.row_scale, w.codebook, w.k)  # noqa: E731
        return Setup(lw.quantized(layer.k), call, kbit_reference(layer, lw))


for _spec in FUTURE_KBIT_OPS:
    _register_kbit_op(*_spec)


@register("dq+cuBLAS", family=KBIT, per_k=True, requires=("kbit::dequantize_tiled",),
          doc="baseline written out: torch.ops.kbit.dequantize_tiled into a workspace of the activation "
              "dtype, then cuBLAS (torch.matmul / torch.bmm)")
def dequant_then_cublas(layer: Layer, lw: LayerWeights) -> Setup:
    op = torch.ops.kbit.dequantize_tiled
    kdim, dtype = layer.shape.K, layer.dtype
    if "out" in op.overloads():  # write into one preallocated workspace when the op allows it
        lead = (layer.experts,) if layer.moe else ()
        workspace = torch.empty(*lead, layer.shape.N, kdim, dtype=dtype, device=lw.device)
        dequant = lambda w: op.out(w.packed, w.absmax, w.row_scale, w.codebook, w.k, kdim, dtype,  # noqa: E731
                                   out=workspace)
        note = "workspace preallocated (dequantize_tiled.out)"
    else:  # inside a CUDA graph the per-call allocation comes from the graph's private pool
        dequant = lambda w: op(w.packed, w.absmax, w.row_scale, w.codebook, w.k, kdim, dtype)  # noqa: E731
        note = "workspace from the allocator (no dequantize_tiled.out overload)"
    return Setup(lw.quantized(layer.k), lambda w, inp: matmul_any(inp, dequant(w)),
                 kbit_reference(layer, lw), note=note)


# ---- peers -----------------------------------------------------------------------------------
def _cublas(layer: Layer, lw: LayerWeights) -> Setup:
    w = lw.dense(layer.dtype)
    return Setup(w, lambda wc, inp: matmul_any(inp, wc), lambda inp: reference_matmul(inp.x, w, inp))


for _dtype, _name in ((torch.float16, "fp16"), (torch.bfloat16, "bf16")):
    register(_name, family=REFERENCE, per_k=False, dtype=_dtype,
             doc=f"cuBLAS with {_name} weights: torch.matmul (dense), torch.bmm (MoE, equal tokens per "
                 f"expert) or one matmul per expert (irregular routing)")(_cublas)


def _int4_shape_ok(case: Case) -> bool:
    kdim, n = case.layer.shape.K, case.layer.shape.N
    return dense_only(case) and kdim % max(INT4_GROUP, 16 * INT4_INNER_K_TILES) == 0 and n % 8 == 0


@register("int4", family=PEER, per_k=False, per_dtype=False, applies=_int4_shape_ok,
          requires=("aten::_convert_weight_to_int4pack", "aten::_weight_int4pack_mm"),
          doc=f"PyTorch int4 weight-only GEMM (torch.ops.aten._weight_int4pack_mm, tinygemm), bf16 "
              f"activations, group {INT4_GROUP} (4.25 bits/weight)")
def int4_tinygemm(layer: Layer, lw: LayerWeights) -> Setup:
    q, scales_and_zeros, deq = int4_quantize(lw.float())
    packed = int4_pack_cuda(q)
    prepare = lambda inp: dataclasses.replace(inp, x=inp.x.to(torch.bfloat16))  # noqa: E731
    call = lambda w, inp: torch.ops.aten._weight_int4pack_mm(inp.x, w[0], INT4_GROUP, w[1])  # noqa: E731
    return Setup((packed, scales_and_zeros), call, lambda inp: reference_matmul(inp.x, deq, inp),
                 prepare=prepare)


@dataclasses.dataclass
class _Fp8Inputs:
    x: torch.Tensor          # e4m3 [M, K]
    scale: torch.Tensor      # float32 [M, 1]
    x_float: torch.Tensor    # the float32 value x represents


def _fp8_shape_ok(case: Case) -> bool:
    return dense_only(case) and case.layer.shape.K % 16 == 0 and case.layer.shape.N % 16 == 0


@register("fp8", family=PEER, per_k=False, per_dtype=False, applies=_fp8_shape_ok,
          requires=("aten::_scaled_mm",),
          doc="fp8 W8A8: torch._scaled_mm, e4m3 weights and activations (quantized outside the timed "
              "region), row-wise float32 scales, bf16 output")
def fp8_scaled_mm(layer: Layer, lw: LayerWeights) -> Setup:
    w8, w_scale, w_float = fp8_rowwise(lw.float())
    scale_b = w_scale.reshape(1, -1).contiguous()

    def prepare(inp: Inputs) -> _Fp8Inputs:
        return _Fp8Inputs(*fp8_rowwise(inp.x))

    call = lambda w, inp: torch._scaled_mm(inp.x, w[0].t(), scale_a=inp.scale, scale_b=w[1],  # noqa: E731
                                           out_dtype=torch.bfloat16)
    return Setup((w8, scale_b), call, lambda inp: inp.x_float @ w_float.t(), prepare=prepare)


@register("gmm bf16", family=PEER, per_k=False, per_dtype=False, applies=moe_only,
          requires=("aten::_grouped_mm",),
          doc="PyTorch grouped GEMM torch._grouped_mm (bf16 weights and activations, offsets on the device)")
def grouped_mm_bf16(layer: Layer, lw: LayerWeights) -> Setup:
    w = lw.dense(torch.bfloat16)

    def prepare(inp: Inputs) -> Inputs:
        return dataclasses.replace(inp, x=inp.x.to(torch.bfloat16), offsets=inp.offsets[1:].clone())

    call = lambda wc, inp: torch._grouped_mm(inp.x, wc.transpose(-2, -1), offs=inp.offsets)  # noqa: E731
    return Setup(w, call, lambda inp: reference_matmul(inp.x, w, inp), prepare=prepare)

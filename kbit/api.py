"""The functional API: quantize, dequantize, gemm, grouped_gemm."""
from __future__ import annotations

from typing import Optional

import torch

from . import _C  # registers torch.ops.kbit
from .codebooks import _check_k, check_codebook, codebook as default_codebook
from .quantized import QuantizedWeight

__all__ = ["quantize", "dequantize", "gemm", "grouped_gemm", "router_topk"]

_ACT_DTYPES = (torch.float16, torch.bfloat16)
# The op's one overload, called directly: skips the overload-packet lookup on every call
# (benchmarks/bench_dispatch.py measures what a call costs on the host).
_GEMM = torch.ops.kbit.gemm.default
# The same op through the C++ dispatcher from a plain binding (no Python-side schema parsing):
# what eager calls with plain tensors use; torch.compile and __torch_function__ overrides
# (subclasses, modes) get the torch.ops overload.
_GEMM_DIRECT = _C.gemm_direct
# kbit.nn.GatedMLP's gate/up call (gate and up rows interleaved in 8s -> silu(gate) * up), the same two ways.
_GEMM_SILU = torch.ops.kbit.gemm_silu_and_mul.default
_GEMM_SILU_DIRECT = _C.gemm_silu_and_mul_direct
_has_torch_function = torch._C._has_torch_function
_is_compiling = torch.compiler.is_compiling


def quantize(W: torch.Tensor, k: int = 4, codebook=None, layout: str = "tiled") -> QuantizedWeight:
    """Quantize W ``[N, K]`` (or an expert stack ``[E, N, K]``) to k bits per weight.

    W is float16, bfloat16 or float32 with K a multiple of 32 and finite values; it is
    not modified. ``codebook`` is 2^k strictly ascending values in [-1, 1] (default:
    :func:`kbit.codebook`). ``layout="tiled"`` (default) is ready for :func:`gemm`;
    ``"flat"`` is the plain bit-plane format. Runs on W's device.
    """
    _check_k(k)
    if not isinstance(W, torch.Tensor):
        raise TypeError(f"kbit.quantize: W must be a torch.Tensor (got {type(W).__name__})")
    if W.dim() not in (2, 3):
        raise ValueError(f"kbit.quantize: W must be 2-D [N, K] or 3-D [E, N, K] (got shape {tuple(W.shape)})")
    if W.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"kbit.quantize: W must be float16, bfloat16 or float32 (got {W.dtype})")
    if W.shape[-1] % 32 != 0 or W.shape[-1] == 0:
        raise ValueError(f"kbit.quantize: K = W.shape[-1] must be a positive multiple of 32, the block "
                         f"size (got K={W.shape[-1]})")
    if W.shape[-2] == 0 or (W.dim() == 3 and W.shape[0] == 0):
        raise ValueError(f"kbit.quantize: W must have N >= 1 rows and E >= 1 experts (got shape "
                         f"{tuple(W.shape)})")
    cb = default_codebook(k) if codebook is None else check_codebook(codebook, k)
    cb = cb.to(W.device)
    packed, absmax, row_scale = torch.ops.kbit.quantize(W.detach(), cb, k)
    bad = torch.isnan(row_scale)  # the op marks rows holding NaN or Inf
    if bad.any():
        first = tuple(int(i) for i in bad.nonzero()[0].tolist())
        raise ValueError(f"kbit.quantize: W holds non-finite values (NaN or Inf), e.g. in row {first}")
    qw = QuantizedWeight(packed, absmax, row_scale, cb, k, tuple(W.shape), W.dtype, "flat")
    return qw.to_layout(layout)


def dequantize(qw: QuantizedWeight, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """The dequantized weight ``[N, K]`` (or ``[E, N, K]``) in ``dtype`` (default: qw.dtype)."""
    _check_qw(qw, "dequantize")
    dtype = qw.dtype if dtype is None else dtype
    if dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"kbit.dequantize: dtype must be float16, bfloat16 or float32 (got {dtype})")
    if qw.layout == "flat":
        return torch.ops.kbit.dequantize(qw.packed, qw.absmax, qw.row_scale, qw.codebook, qw.k, dtype)
    return torch.ops.kbit.dequantize_tiled(qw.packed, qw.absmax, qw.row_scale, qw.codebook, qw.k,
                                           qw.in_features, dtype)


def gemm(x: torch.Tensor, qw: QuantizedWeight) -> torch.Tensor:
    """``x @ W^T``: x ``[..., K]`` float16/bfloat16 -> ``[..., N]`` of the same dtype.

    W is a 2-D QuantizedWeight in the tiled layout on x's device. Accumulates in fp32.
    """
    _check_qw(qw, "gemm")
    shape = qw.shape
    if len(shape) != 2:
        raise ValueError(f"kbit.gemm: qw is an expert stack {shape}; use kbit.grouped_gemm")
    if qw.layout != "tiled":
        raise ValueError("kbit.gemm: the weight must be in the tiled layout; use qw.to_layout('tiled')")
    return gemm_tiled(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, qw.k, shape, "gemm")


def gemm_tiled(x, packed, absmax, row_scale, codebook, k: int, shape, fn: str,
               silu_and_mul: bool = False) -> torch.Tensor:
    """gemm on the tiled tensors of a weight of ``shape`` (N, K), x ``[..., K]``, with nothing else
    on the host path (kbit.Linear uses it). Here only x's last dim is checked against K; the op
    checks the rest, and only when it refuses are the Python checks run, for an error that names
    the function and the rule. ``silu_and_mul``: the weight's rows are gate and up interleaved in 8s
    (kbit.nn.GatedMLP) and the result is silu(gate) * up, ``[..., N / 2]`` (kbit::gemm_silu_and_mul)."""
    try:
        if x.shape[-1] != shape[1]:  # the tiled tensors hold K rounded up to 256: the op cannot tell
            raise ValueError
        plain = _is_compiling() or _has_torch_function((x, packed, absmax, row_scale, codebook))
        if silu_and_mul:
            op, n = (_GEMM_SILU if plain else _GEMM_SILU_DIRECT), shape[0] // 2
        else:
            op, n = (_GEMM if plain else _GEMM_DIRECT), shape[0]
        if x.dim() == 2:
            return op(x, packed, absmax, row_scale, codebook, k)
        y = op(x.reshape(-1, shape[1]), packed, absmax, row_scale, codebook, k)
        return y.view(*x.shape[:-1], n)
    except (RuntimeError, TypeError, ValueError, AttributeError, IndexError):
        try:
            _check_activations(x, shape[1], packed.device, fn)
        except (TypeError, ValueError) as clear:
            raise clear from None
        raise


def grouped_gemm(x: torch.Tensor, qw: QuantizedWeight, expert_offsets: torch.Tensor, *,
                 check_offsets: bool = False) -> torch.Tensor:
    """Mixture-of-experts matmul: ``y[t] = x[t] @ W[e]^T`` for tokens sorted by expert.

    x ``[T, K]`` float16/bfloat16; qw an expert stack ``[E, N, K]`` (tiled layout);
    expert_offsets int32 ``[E + 1]`` on x's device: expert e owns rows
    ``expert_offsets[e] : expert_offsets[e + 1]`` (non-decreasing, from 0 to T).
    Returns ``[T, N]`` in x's dtype.

    On CUDA the offsets are read by the kernel (no host sync, CUDA-graph capturable), so their
    values are not validated there: invalid values never fault or touch memory outside x and
    y, each row belongs to at most one expert (expert e starts at the running maximum of the
    offsets clamped to [0, T]), and rows no expert owns are NaN. ``check_offsets=True``
    validates the values first (one device sync; not for graph capture). The CPU path always
    validates.
    """
    _check_qw(qw, "grouped_gemm")
    if not qw.num_experts:
        raise ValueError(f"kbit.grouped_gemm: qw must be an expert stack [E, N, K] (got shape {qw.shape})")
    _check_x(x, qw, "grouped_gemm")
    if x.dim() != 2:
        raise ValueError(f"kbit.grouped_gemm: x must be 2-D [T, K] (got shape {tuple(x.shape)})")
    if not isinstance(expert_offsets, torch.Tensor):
        raise TypeError("kbit.grouped_gemm: expert_offsets must be an int32 tensor")
    if expert_offsets.device != x.device:
        raise ValueError(f"kbit.grouped_gemm: expert_offsets is on {expert_offsets.device} but x is on {x.device}")
    if check_offsets:
        _check_offsets_values(expert_offsets, qw.num_experts, x.shape[0])
    return torch.ops.kbit.grouped_gemm(x.contiguous(), qw.packed, qw.absmax, qw.row_scale, qw.codebook,
                                       expert_offsets, qw.k)


def router_topk(logits: torch.Tensor, top_k: int, normalize: bool = True):
    """An MoE router's top-k over ``logits [T, E]`` (float16/bfloat16/float32): ``(weights, ids)``, both
    ``[T, top_k]``.

    ids (int64): the experts by logit, descending; ties go to the lower expert index, NaN ranks first
    (``torch.topk``'s order, which leaves ties unspecified). weights (logits' dtype): ``softmax(logits)`` in fp32
    at ids, divided by their sum when ``normalize`` (a Qwen3-MoE router with ``norm_topk_prob``). On CUDA one
    kernel for E <= 1024 and top_k <= 32 (ATen ops past that), no host sync.
    """
    if not isinstance(logits, torch.Tensor):
        raise TypeError("kbit.router_topk: logits must be a tensor")
    return torch.ops.kbit.router_topk(logits, int(top_k), bool(normalize))


def _check_offsets_values(offsets: torch.Tensor, experts: int, tokens: int) -> None:
    o = offsets.detach().to("cpu", torch.int64)
    if o.dim() != 1 or o.numel() != experts + 1:
        raise ValueError(f"kbit.grouped_gemm: expert_offsets must have E+1 = {experts + 1} entries "
                         f"(got shape {tuple(offsets.shape)})")
    if o[0] != 0 or o[-1] != tokens or bool((o[1:] < o[:-1]).any()):
        raise ValueError(f"kbit.grouped_gemm: expert_offsets must be non-decreasing from 0 to T={tokens} "
                         f"(got {o.tolist() if o.numel() <= 16 else 'a tensor that is not'})")


def _check_qw(qw, fn: str) -> None:
    if not isinstance(qw, QuantizedWeight):
        raise TypeError(f"kbit.{fn}: expected a kbit.QuantizedWeight (got {type(qw).__name__})")


def _check_activations(x, K: int, device: torch.device, fn: str) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"kbit.{fn}: x must be a torch.Tensor (got {type(x).__name__})")
    if x.dtype not in _ACT_DTYPES:
        raise TypeError(f"kbit.{fn}: x must be float16 or bfloat16 (got {x.dtype})")
    if x.dim() < 1 or x.shape[-1] != K:
        raise ValueError(f"kbit.{fn}: x's last dim must equal K={K} (got x of shape {tuple(x.shape)})")
    if x.device != device:
        raise ValueError(f"kbit.{fn}: x is on {x.device} but the weight is on {device}")


def _check_x(x, qw: QuantizedWeight, fn: str) -> None:
    _check_activations(x, qw.in_features, qw.device, fn)
    if qw.layout != "tiled":
        raise ValueError(f"kbit.{fn}: the weight must be in the tiled layout; use qw.to_layout('tiled')")

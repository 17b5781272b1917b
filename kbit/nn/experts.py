"""kbit.Experts: mixture-of-experts SwiGLU MLPs with k-bit quantized, stacked expert weights."""
from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from .. import api
from ..quantized import QuantizedWeight
from .buffers import QuantizedBuffers
from .linear import FollowsDtypeCasts, compute_dtype_for

__all__ = ["Experts"]

ACTIVATIONS = ("silu_and_mul",)


def _gate_up_interleaving(rows: int, device) -> torch.Tensor:
    """The interleaved row order of a gate/up stack's ``rows = 2I`` rows: new row -> old row. Each 16 rows are the
    gate rows of 8 outputs, then their up rows (kbit::grouped_gemm_silu_and_mul's layout: a 16-row tile's rows g and
    g + 8 are one output's gate and up)."""
    if rows % 16:
        raise ValueError(f"kbit: gate/up rows interleaved in 8s need 2I a multiple of 16 (got {rows} rows)")
    j = torch.arange(rows // 2, device=device).view(-1, 8)
    return torch.stack([j, j + rows // 2], dim=1).reshape(-1)


def _rows_in_order(qw: QuantizedWeight, order: torch.Tensor) -> QuantizedWeight:
    """qw (flat: each row's blocks, absmax and row scale its own) with its rows taken in ``order``."""
    assert qw.layout == "flat"
    return QuantizedWeight(qw.packed.index_select(-3, order), qw.absmax.index_select(-2, order),
                           qw.row_scale.index_select(-1, order), qw.codebook, qw.k, qw.shape, qw.dtype, "flat")


def gate_up_in_order(interleaved: QuantizedWeight) -> QuantizedWeight:
    """A gate/up weight (or a slice of experts of it) with rows interleaved in 8s, in the natural order (flat)."""
    flat = interleaved.to_layout("flat")
    return _rows_in_order(flat, torch.argsort(_gate_up_interleaving(flat.shape[-2], flat.device)))


class GateUpBuffers(QuantizedBuffers):
    """kbit.Experts' ``gate_up_proj [E, 2I, H]``: its buffers hold the rows interleaved in 8s
    (:func:`_gate_up_interleaving`), the layout ``kbit::grouped_gemm_silu_and_mul`` reads, so that the
    decode step's gate/up call writes silu(gate) * up itself (session 58). :meth:`quantized` and the state
    dict are in the natural order (rows ``0 : I`` the gate, ``I : 2I`` the up projection: checkpoints are
    unchanged); :meth:`interleaved` is the buffers themselves."""

    _load_layout = "flat"  # (the checkpoint's rows permuted before the one repack)

    def _set(self, qw: QuantizedWeight) -> None:  # qw in the natural order
        flat = qw.to_layout("flat")
        super()._set(_rows_in_order(flat, _gate_up_interleaving(qw.shape[-2], flat.device)))

    def interleaved(self) -> QuantizedWeight:
        """The buffers as a tiled :class:`kbit.QuantizedWeight`, rows interleaved (shares their storage)."""
        return super().quantized()

    def quantized(self) -> QuantizedWeight:
        """The weight in the natural row order (tiled; a copy: the buffers are interleaved)."""
        return gate_up_in_order(self.interleaved()).to_layout("tiled")

    def _state_weight(self) -> QuantizedWeight:
        return gate_up_in_order(self.interleaved())  # flat, as the state dict holds it


class Experts(FollowsDtypeCasts, nn.Module):
    """Routed experts: ``out[t] = sum_j w[t, j] * down[e] @ act(gate_up[e] @ x[t])``, ``e = ids[t, j]``.

    Weights follow Hugging Face's ``Qwen3MoeExperts`` (and Mixtral/Qwen2-MoE fused) layout:
    ``gate_up_proj [E, 2I, H]`` whose rows ``0 : I`` are the gate projection and ``I : 2I``
    the up projection, and ``down_proj [E, H, I]``. ``activation="silu_and_mul"``:
    ``silu(gate) * up`` (HF: ``gate, up = linear(x, gate_up_proj[e]).chunk(2, dim=-1)``).

    forward(hidden_states ``[*, H]``, top_k_index ``[*, topk]`` int, top_k_weights
    ``[*, topk]`` float) -> ``[*, H]`` in the compute dtype. An id outside ``[0, E)`` (HF uses
    ``E`` for "expert not on this rank") contributes nothing. The forward pass runs
    only device-side ops, on CUDA four kernels at decode (up to 1024 (token, slot) pairs and
    1024 experts; past 1024 pairs the route and gather are two, past 4096 ATen's sort too; where
    grouped_gemm takes other kernels than the grouped GEMV the activation is its own kernel):
    ``kbit::moe_route_gather`` (a stable sort of the pairs by expert, the expert offsets and x's
    rows in that order), ``kbit::grouped_gemm_silu_and_mul`` (the gate/up call, whose output is
    silu(gate) * up in fp32 math: the buffers hold gate_up_proj's rows interleaved in 8s, see
    ``GateUpBuffers``), the down call (:func:`kbit.grouped_gemm`) and ``kbit::moe_combine`` (the
    weighted sum over the top-k slots in fp32 in a fixed order: deterministic, no atomics).
    At decode on CUDA (``slot_path``: up to 32 (token, slot) pairs, and one token or at least 4
    experts a pair) there is no routing: ``kbit::grouped_gemm_slots`` runs the gate/up and down
    calls slot by slot (one grouped GEMV kernel each, every pair's own expert, one row each) and
    ``kbit::moe_combine`` sums the pairs' rows in order: three kernels. It never reads a tensor
    on the host; whether it can be captured in a CUDA graph is then up to
    :func:`kbit.grouped_gemm`.
    Inference only: the glue ops have no autograd formulas.

    Build with :meth:`from_weights`; ``Experts(E, H, I, k=..., dtype=...)`` is an all-zero
    placeholder to ``load_state_dict`` into. State dict: ``gate_up_proj.*`` and ``down_proj.*``
    in the flat format (see :class:`kbit.nn.QuantizedBuffers`). ``.to()`` behaves as for
    :class:`kbit.Linear`.
    """

    def __init__(self, num_experts: int, hidden_size: int, intermediate_size: int, k: int = 4,
                 dtype: torch.dtype = torch.float16, activation: str = "silu_and_mul", device=None):
        super().__init__()
        self._init(num_experts, hidden_size, intermediate_size, dtype, activation)
        if hidden_size % 32 or intermediate_size % 32 or min(num_experts, hidden_size, intermediate_size) < 1:
            raise ValueError(f"kbit.Experts: num_experts, hidden_size and intermediate_size must be positive, the "
                             f"sizes multiples of 32 (the block size; got {num_experts}, {hidden_size}, "
                             f"{intermediate_size})")
        self.gate_up_proj = GateUpBuffers((num_experts, 2 * intermediate_size, hidden_size), k, dtype, device)
        self.down_proj = QuantizedBuffers((num_experts, hidden_size, intermediate_size), k, dtype, device)

    def _init(self, num_experts, hidden_size, intermediate_size, dtype, activation):
        if activation not in ACTIVATIONS:
            raise ValueError(f"kbit.Experts: activation must be one of {ACTIVATIONS} (got {activation!r})")
        self.num_experts, self.hidden_size = int(num_experts), int(hidden_size)
        self.intermediate_size, self.dtype, self.activation = int(intermediate_size), dtype, activation
        compute_dtype_for(dtype, dtype)  # checks it

    @classmethod
    def from_weights(cls, gate_up_proj: torch.Tensor, down_proj: torch.Tensor, k: int = 4, codebook=None,
                     dtype: Optional[torch.dtype] = None, activation: str = "silu_and_mul") -> "Experts":
        """Quantize ``gate_up_proj [E, 2I, H]`` and ``down_proj [E, H, I]`` (not modified).

        H and I must be multiples of 32. ``dtype``: the compute dtype (default: the weights'
        dtype if float16/bfloat16, else bfloat16).
        """
        if gate_up_proj.dim() != 3 or down_proj.dim() != 3:
            raise ValueError(f"kbit.Experts.from_weights: gate_up_proj and down_proj must be 3-D (got shapes "
                             f"{tuple(gate_up_proj.shape)} and {tuple(down_proj.shape)})")
        E, two_i, H = gate_up_proj.shape
        I = two_i // 2
        if two_i % 2 or tuple(down_proj.shape) != (E, H, I):
            raise ValueError(f"kbit.Experts.from_weights: expected gate_up_proj [E, 2I, H] and down_proj "
                             f"[E, H, I] (got {tuple(gate_up_proj.shape)} and {tuple(down_proj.shape)})")
        if H % 32 or I % 32:
            raise ValueError(f"kbit.Experts.from_weights: hidden size H={H} and intermediate size I={I} must "
                             f"be multiples of 32 (the block size)")
        dtype = compute_dtype_for(gate_up_proj.dtype, dtype)
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        self._init(E, H, I, dtype, activation)
        with torch.no_grad():
            self.gate_up_proj = GateUpBuffers.from_quantized(
                api.quantize(gate_up_proj.detach(), k=k, codebook=codebook, layout="flat"))
            self.down_proj = QuantizedBuffers.from_quantized(api.quantize(down_proj.detach(), k=k, codebook=codebook))
        return self

    @property
    def k(self) -> int:
        return self.gate_up_proj.k

    def forward(self, hidden_states: torch.Tensor, top_k_index: torch.Tensor,
                top_k_weights: torch.Tensor) -> torch.Tensor:
        H, E = self.hidden_size, self.num_experts
        if hidden_states.dtype != self.dtype or hidden_states.shape[-1] != H:
            raise TypeError(f"kbit.Experts: hidden_states must be {self.dtype} [*, {H}] (got "
                            f"{hidden_states.dtype} {tuple(hidden_states.shape)})")
        lead = hidden_states.shape[:-1]
        if top_k_index.shape[:-1] != lead or top_k_weights.shape != top_k_index.shape:
            raise ValueError(f"kbit.Experts: top_k_index and top_k_weights must both be [*, topk] with * = "
                             f"{tuple(lead)} (got {tuple(top_k_index.shape)} and {tuple(top_k_weights.shape)})")
        if top_k_index.dtype.is_floating_point or top_k_index.dtype == torch.bool:
            raise TypeError(f"kbit.Experts: top_k_index must be an integer tensor (got {top_k_index.dtype})")
        x = hidden_states.reshape(-1, H)
        T, topk = x.shape[0], top_k_index.shape[-1]
        if T == 0 or topk == 0:
            return hidden_states.new_zeros(hidden_states.shape)

        ids = top_k_index.reshape(T, topk)
        if ids.dtype not in (torch.int32, torch.int64):
            ids = ids.long()
        w = top_k_weights.reshape(T, topk)
        if w.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
            w = w.float()
        gu = self.gate_up_proj.interleaved()
        if self.slot_path(T, topk, x.device):
            # every pair its own row and expert (no routing), the pairs' rows in order; an id outside [0, E) gives a
            # NaN row that moe_combine skips
            a = torch.ops.kbit.grouped_gemm_slots(x, gu.packed, gu.absmax, gu.row_scale, gu.codebook, ids, gu.k,
                                                  True)                                 # [T topk, I]
            dn = self.down_proj.quantized()
            y = torch.ops.kbit.grouped_gemm_slots(a, dn.packed, dn.absmax, dn.row_scale, dn.codebook,
                                                  ids.reshape(T * topk, 1), dn.k)       # [T topk, H]
            return torch.ops.kbit.moe_combine(y, w, ids, None, E).reshape(hidden_states.shape)
        # rows = the (token, slot) pairs grouped by expert (stable); pairs of no expert are computed
        # as expert E - 1's and skipped by moe_combine
        offsets, _, pair_row, xs = torch.ops.kbit.moe_route_gather(ids, E, x)  # xs [P, H], grouped by expert
        # silu(gate) * up [P, I], fp32 math
        a = torch.ops.kbit.grouped_gemm_silu_and_mul(xs, gu.packed, gu.absmax, gu.row_scale, gu.codebook, offsets,
                                                     gu.k)
        y = api.grouped_gemm(a, self.down_proj.quantized(), offsets)                   # [P, H]
        out = torch.ops.kbit.moe_combine(y, w, ids, pair_row, E)     # fp32 sum over the slots, in order
        return out.reshape(hidden_states.shape)

    # The slot path's bounds: pairs (the grouped GEMV's slots, a lane each), and experts a pair where a token's pairs
    # can share experts (each pair reads its expert's weights on its own).
    SLOT_MAX_PAIRS = 32
    SLOT_MIN_EXPERTS_PER_PAIR = 4
    SLOT_MAX_EXPERTS = 1024  # (the grouped GEMV's stacked experts, kTcMaxExperts; past it the op is composed: routed)

    def slot_path(self, tokens: int, topk: int, device: torch.device) -> bool:
        """Whether forward runs the decode form (``kbit::grouped_gemm_slots``, no routing) for
        ``tokens`` x ``topk`` pairs on ``device``: CUDA, at most 32 pairs and 1024 experts, and one
        token (its pairs' experts differ) or at least 4 experts a pair."""
        pairs = tokens * topk
        return (device.type == "cuda" and 0 < pairs <= self.SLOT_MAX_PAIRS and
                self.num_experts <= self.SLOT_MAX_EXPERTS and
                (tokens == 1 or self.num_experts >= self.SLOT_MIN_EXPERTS_PER_PAIR * pairs))

    def __repr__(self) -> str:  # one line, like nn.Linear (the buffers child is an implementation detail)
        return f"{self._get_name()}({self.extra_repr()})"

    def extra_repr(self) -> str:
        return (f"num_experts={self.num_experts}, hidden_size={self.hidden_size}, "
                f"intermediate_size={self.intermediate_size}, k={self.k}, activation={self.activation}, "
                f"dtype={str(self.dtype).replace('torch.', '')}")


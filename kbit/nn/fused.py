"""Sibling kbit.Linear layers that read the same input, fused into one GEMM (``kbit.nn.fuse_projections``).

An attention block's q, k and v projections (and a gated MLP's gate and up projections) are called on the same
hidden states. At decode each is a GEMV whose time is mostly its start and ramp, not its bytes: on an H200 the M = 1
GEMV takes 3.4 us for a Qwen3 q projection (4096 x 2048), 2.2 us for each k / v (512 x 2048) and 3.8 us for the
three as one 5120 x 2048 weight (docs/design.md, session 64). :func:`fuse_projections` replaces such a group with
one :class:`kbit.Linear` over the concatenated rows, registered on the parent under the group's fused name (e.g.
``qkv_proj``), and the members with :class:`LinearSlice` modules that return their rows of it.

How the slices share one call: the first slice called on a tensor ``x`` runs the fused layer on it and keeps the
other members' rows (views of one output) with ``x``; a member called on that same tensor object takes its rows
and drops them; when all are taken nothing is kept. A member called on another tensor runs the fused layer anew
(right, but the fused rows of the others are computed again: fuse only groups that are called on one tensor, as a
decoder's self-attention and gated MLPs are; a cross-attention's k and v read another tensor than its q). Under
torch.compile the bookkeeping is traced (it is Python attribute state); the graph holds one fused call.

Tiles: the tiled layout stores 16 rows a tile, rows in order, so the fused weight is the members' tiled tensors
concatenated along N, which needs every member but the last to have a multiple of 16 rows. The members must share
in_features, k, codebook, compute dtype, device and whether they have a bias, and carry no hooks.

State dict: the fused layer's keys (``<parent>.qkv_proj.weight.*``, ``.bias``) replace the members'; load a saved
fused model into a model fused the same way (a strict load of unfused keys names every key it misses).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn

from ..quantized import QuantizedWeight
from .buffers import QuantizedBuffers
from .linear import Linear

__all__ = ["fuse_projections", "LinearSlice", "FuseResult", "DEFAULT_GROUPS"]

# fused name -> the members, in row order
DEFAULT_GROUPS: Dict[str, Tuple[str, ...]] = {
    "qkv_proj": ("q_proj", "k_proj", "v_proj"),
    "gate_up_proj": ("gate_proj", "up_proj"),
}


class _SharedCall:
    """The fused output one call left for the other members: the input it was computed on and each member's rows
    (None once taken)."""

    __slots__ = ("x", "parts")

    def __init__(self):
        self.x: Optional[torch.Tensor] = None
        self.parts: Optional[List[Optional[torch.Tensor]]] = None


class LinearSlice(nn.Module):
    """Rows ``start : stop`` of a fused :class:`kbit.Linear` (``fused``, registered on the parent, not here), as
    the member layer it replaced: ``forward(x) -> [..., stop - start]``. It holds no parameters or buffers."""

    def __init__(self, fused: Linear, shared: _SharedCall, index: int, bounds: Sequence[int]):
        super().__init__()
        # (plain attributes, not submodules: the fused layer is the parent's child, saved and moved once)
        self.__dict__["fused"] = fused
        self.__dict__["_shared"] = shared
        self.index, self.bounds = index, tuple(int(b) for b in bounds)
        self.in_features, self.out_features = fused.in_features, self.bounds[index + 1] - self.bounds[index]

    @property
    def dtype(self) -> torch.dtype:
        return self.fused.dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shared = self._shared
        if shared.x is not x or shared.parts is None or shared.parts[self.index] is None:
            y = self.fused(x)
            shared.x = x
            shared.parts = [y[..., a:b] for a, b in zip(self.bounds[:-1], self.bounds[1:])]
        parts = shared.parts
        mine = parts[self.index]
        parts[self.index] = None
        if all(p is None for p in parts):
            shared.x, shared.parts = None, None
        return mine.contiguous()  # (a view at one token; prefill rows are copied, as nn.Linear's are contiguous)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, rows "
                f"{self.bounds[self.index]}:{self.bounds[self.index + 1]} of a fused kbit.Linear")


@dataclass
class FuseResult:
    """What :func:`fuse_projections` did: the fused layers (name -> members) and the groups left (name -> why)."""
    fused: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    declined: Dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        lines = [f"kbit fused projections: {len(self.fused)} groups fused"]
        lines += [f"  left {name}: {why}" for name, why in self.declined.items()]
        return "\n".join(lines)


def _why_not(parent: nn.Module, fused_name: str, members: Sequence[nn.Module], names: Sequence[str]) -> Optional[str]:
    for n, m in zip(names, members):
        if not isinstance(m, Linear):
            return f"{n} is {type(m).__name__}, not kbit.Linear"
        if m._forward_hooks or m._forward_pre_hooks:
            return f"{n} has forward hooks"
    first = members[0]
    for n, m in zip(names[1:], members[1:]):
        for what, a, b in (("in_features", first.in_features, m.in_features), ("k", first.k, m.k),
                           ("compute dtype", first.dtype, m.dtype), ("device", first.weight.device, m.weight.device),
                           ("bias", first.bias is not None, m.bias is not None),
                           ("quantized weight dtype", first.weight.weight_dtype, m.weight.weight_dtype)):
            if a != b:
                return f"{names[0]} and {n} differ in {what} ({a} / {b})"
        if not torch.equal(first.weight.codebook, m.weight.codebook):
            return f"{names[0]} and {n} have different codebooks"
    for n, m in zip(names[:-1], members[:-1]):
        if m.out_features % 16:
            return f"{n} has {m.out_features} rows, not a multiple of 16 (the tiled layout's tile)"
    if fused_name in parent._modules or hasattr(parent, fused_name):
        return f"the parent already has an attribute {fused_name}"
    return None


def _fused_linear(members: Sequence[Linear]) -> Linear:
    """One kbit.Linear over the members' rows in order (their tiled tensors concatenated along N)."""
    qws = [m.weight.quantized() for m in members]
    first = qws[0]
    n = sum(q.shape[0] for q in qws)
    qw = QuantizedWeight(torch.cat([q.packed for q in qws]), torch.cat([q.absmax for q in qws]),
                         torch.cat([q.row_scale for q in qws]), first.codebook.clone(), first.k,
                         (n, first.shape[1]), first.dtype, "tiled")
    fused = Linear.__new__(Linear)
    nn.Module.__init__(fused)
    fused.in_features, fused.out_features, fused.dtype = first.shape[1], n, members[0].dtype
    fused.weight = QuantizedBuffers.from_quantized(qw)
    bias = members[0].bias
    fused.register_parameter("bias", None if bias is None else nn.Parameter(
        torch.cat([m.bias.detach() for m in members]), requires_grad=False))
    return fused


def fuse_projections(model: nn.Module, groups: Optional[Dict[str, Sequence[str]]] = None) -> FuseResult:
    """Fuses, in every module of ``model`` that has all members of a group as children, those kbit.Linear members
    into one kbit.Linear (in place; see the module's docs). ``groups``: fused name -> member names in row order
    (default :data:`DEFAULT_GROUPS`: ``qkv_proj`` from ``q_proj, k_proj, v_proj`` and ``gate_up_proj`` from
    ``gate_proj, up_proj``). Members already fused are skipped; a group that cannot be fused is left as it is and
    named in the result with the reason. Run it after :func:`kbit.quantize_model`."""
    groups = DEFAULT_GROUPS if groups is None else {k: tuple(v) for k, v in groups.items()}
    result = FuseResult()
    for parent_name, parent in list(model.named_modules()):
        for fused_name, names in groups.items():
            if len(names) < 2 or not all(n in parent._modules for n in names):
                continue
            members = [parent._modules[n] for n in names]
            if all(isinstance(m, LinearSlice) for m in members):
                continue  # (fused before)
            where = f"{parent_name}.{fused_name}" if parent_name else fused_name
            why = _why_not(parent, fused_name, members, names)
            if why:
                result.declined[where] = why
                continue
            fused = _fused_linear(members)
            bounds = [0]
            for m in members:
                bounds.append(bounds[-1] + m.out_features)
            parent.add_module(fused_name, fused)
            shared = _SharedCall()
            for i, n in enumerate(names):
                setattr(parent, n, LinearSlice(fused, shared, i, bounds))
            result.fused[where] = tuple(names)
    return result

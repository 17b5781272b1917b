"""Sibling kbit.Linear layers that read the same input, fused into one GEMM (``kbit.nn.fuse_projections``).

An attention block's q, k and v projections (and a gated MLP's gate and up projections) are called on the same
hidden states. At decode each is a GEMV whose time is mostly its start and ramp, not its bytes: on an H200 the M = 1
GEMV takes 3.4 us for a Qwen3 q projection (4096 x 2048), 2.2 us for each k / v (512 x 2048) and 3.8 us for the
three as one 5120 x 2048 weight (docs/design.md, session 64). :func:`fuse_projections` replaces such a group with
one :class:`kbit.Linear` over the concatenated rows, registered on the parent under the group's fused name (e.g.
``qkv_proj``), and the members with :class:`LinearSlice` modules that return their rows of it.

How the slices share one call: the first slice called on a tensor ``x`` runs the fused layer on it and keeps the
other members' rows (views of one output) with ``x``, its version counter and the calling thread; a member called
on that same tensor object, unchanged since, from that thread, takes its rows and drops them; when all are taken
nothing is kept. A member called otherwise runs the fused layer anew: right, but the fused rows of the others are
computed again, and where other members' rows were still kept, a warning (once a group) says so. Fuse only groups
that are called on one tensor, as a decoder's self-attention and gated MLPs are; a cross-attention's k and v read
another tensor than its q (``skip`` it). Under torch.compile the bookkeeping is traced (Python attribute state,
decided at trace time on the traced tensors; a compiled graph runs as one call); the graph holds one fused call.
Copies and pickles of a module start with nothing kept.

Tiles: the tiled layout stores 16 rows a tile, rows in order, so the fused weight is the members' tiled tensors
concatenated along N, which needs every member but the last to have a multiple of 16 rows. The members must share
in_features, k, codebook, compute dtype, device and whether they have a bias, and carry no hooks.

State dict: the fused layer's keys (``<parent>.qkv_proj.weight.*``, ``.bias``) replace the members'; load a saved
fused model into a model fused the same way (a strict load of unfused keys names every key it misses).

Gated MLPs (``gated_mlp=True``, the default): a module whose children ``gate_proj``, ``up_proj`` and ``down_proj``
are kbit.Linear layers and whose forward is ``down_proj(silu(gate_proj(x)) * up_proj(x))`` (checked by running it)
is replaced, in its parent (in each, where it is shared), by a :class:`kbit.nn.GatedMLP`, whose gate/up call writes
the activation itself (one kernel fewer a layer at decode); the replaced module's ``gate_proj`` and ``up_proj`` are
gone (the GatedMLP has ``gate_up_proj`` and ``down_proj``). Its state dict has the ``gate_up_proj`` fusion's keys
and values, so checkpoints of either form load into the other. A module that does not pass keeps the plain
``gate_up_proj`` fusion, and the result names why in ``gated_declined``.
"""
from __future__ import annotations

import itertools
import threading
import warnings
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn

from ..quantized import QuantizedWeight
from .convert import _skip_matcher
from .gated_mlp import gated_mlp_from
from .linear import Linear, NotConvertible, why_not_fusable

__all__ = ["fuse_projections", "LinearSlice", "FuseResult", "DEFAULT_GROUPS"]

# fused name -> the members, in row order
DEFAULT_GROUPS: Dict[str, Tuple[str, ...]] = {
    "qkv_proj": ("q_proj", "k_proj", "v_proj"),
    "gate_up_proj": ("gate_proj", "up_proj"),
}


class _SharedCall:
    """The fused output one call left for the other members: the input it was computed on (with its version counter
    and the calling thread, eager only) and each member's rows (None once taken)."""

    __slots__ = ("x", "version", "thread", "parts", "warned", "group")

    def __init__(self, group: str = ""):
        self.group = group
        self.warned = False
        self.clear()

    def clear(self) -> None:
        self.x: Optional[torch.Tensor] = None
        self.version, self.thread = -1, -1
        self.parts: Optional[List[Optional[torch.Tensor]]] = None

    def __reduce__(self):  # (copies and pickles keep no input or rows)
        return (_SharedCall, (self.group,))


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
        eager = not torch.compiler.is_compiling()  # (compiled: the graph runs as one call, its input unchanged)
        kept = (shared.x is x and shared.parts is not None and shared.parts[self.index] is not None
                and (not eager or (shared.version == x._version and shared.thread == threading.get_ident())))
        if not kept:
            if eager and shared.parts is not None and not shared.warned and any(
                    p is not None for i, p in enumerate(shared.parts) if i != self.index):
                shared.warned = True
                warnings.warn(f"kbit.fuse_projections: a member of {shared.group} ran the fused layer again while "
                              f"the rows kept for the others were unused (called twice, or on another input, one "
                              f"changed in place or from another thread; fuse only groups called once each on one "
                              f"tensor, e.g. skip cross-attention)", stacklevel=2)
            y = self.fused(x)
            shared.x = x
            if eager:
                shared.version, shared.thread = x._version, threading.get_ident()
            shared.parts = [y[..., a:b] for a, b in zip(self.bounds[:-1], self.bounds[1:])]
        parts = shared.parts
        mine = parts[self.index]
        parts[self.index] = None
        if all(p is None for p in parts):
            shared.clear()
        return mine.contiguous()  # (a view at one token; prefill rows are copied, as nn.Linear's are contiguous)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, rows "
                f"{self.bounds[self.index]}:{self.bounds[self.index + 1]} of a fused kbit.Linear")


@dataclass
class FuseResult:
    """What :func:`fuse_projections` did: the fused layers (name -> members) and the groups left (name -> why)."""
    fused: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    declined: Dict[str, str] = field(default_factory=dict)
    gated_mlps: List[str] = field(default_factory=list)  # modules replaced by a kbit.nn.GatedMLP
    gated_declined: Dict[str, str] = field(default_factory=dict)  # modules left as they are (name -> why)

    def __str__(self) -> str:
        lines = [f"kbit fused projections: {len(self.fused)} groups fused, {len(self.gated_mlps)} gated MLPs"]
        lines += [f"  left {name}: {why}" for name, why in self.declined.items()]
        lines += [f"  not a GatedMLP: {name}: {why}" for name, why in self.gated_declined.items()]
        return "\n".join(lines)


def _why_not(parent: nn.Module, fused_name: str, members: Sequence[nn.Module], names: Sequence[str]) -> Optional[str]:
    why = why_not_fusable(list(zip(names, members)))
    if why:
        return why
    for n, m in zip(names[:-1], members[:-1]):
        if m.out_features % 16:
            return f"{n} has {m.out_features} rows, not a multiple of 16 (the tiled layout's tile)"
    if hasattr(parent, fused_name):
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
    bias = None if members[0].bias is None else torch.cat([m.bias for m in members])
    return Linear._from_quantized(qw, bias, members[0].dtype)


def fuse_projections(model: nn.Module, groups: Optional[Dict[str, Sequence[str]]] = None, skip=None,
                     gated_mlp: bool = True) -> FuseResult:
    """Fuses, in every module of ``model`` that has all members of a group as children, those kbit.Linear members
    into one kbit.Linear (in place; see the module's docs). ``groups``: fused name -> member names in row order
    (default :data:`DEFAULT_GROUPS`: ``qkv_proj`` from ``q_proj, k_proj, v_proj`` and ``gate_up_proj`` from
    ``gate_proj, up_proj``). ``skip``: parent modules to leave, by qualified name, as :func:`kbit.quantize_model`'s
    ``skip`` (fnmatch patterns or a callable; e.g. ``"*encoder_attn"`` for cross-attention). Members already fused
    are skipped; a group that cannot be fused is left as it is and named in the result with the reason.
    ``gated_mlp``: first replace each module that computes ``down_proj(silu(gate_proj(x)) * up_proj(x))`` from
    kbit.Linear children by a :class:`kbit.nn.GatedMLP` (see the module's docs; the model itself is not replaced).
    Run it after :func:`kbit.quantize_model`."""
    groups = DEFAULT_GROUPS if groups is None else {k: tuple(v) for k, v in groups.items()}
    skipped = _skip_matcher(skip, "kbit.fuse_projections")
    result = FuseResult()
    if gated_mlp:
        _replace_gated_mlps(model, skipped, result)
    for parent_name, parent in list(model.named_modules()):
        for fused_name, names in groups.items():
            if len(names) < 2 or not all(n in parent._modules for n in names):
                continue
            members = [parent._modules[n] for n in names]
            if all(isinstance(m, LinearSlice) for m in members):
                continue  # (fused before)
            where = f"{parent_name}.{fused_name}" if parent_name else fused_name
            why = skipped(parent_name) or _why_not(parent, fused_name, members, names)
            if why:
                result.declined[where] = why
                continue
            fused = _fused_linear(members)
            bounds = list(itertools.accumulate((m.out_features for m in members), initial=0))
            parent.add_module(fused_name, fused)
            shared = _SharedCall(where)
            for i, n in enumerate(names):
                setattr(parent, n, LinearSlice(fused, shared, i, bounds))
            result.fused[where] = tuple(names)
    return result


def _replace_gated_mlps(model: nn.Module, skipped, result: FuseResult) -> None:
    # every place a module is registered (a module shared by two parents gets one GatedMLP in both)
    places = list(model.named_modules(remove_duplicate=False))
    modules = dict(places)
    done: Dict[int, Optional[nn.Module]] = {}  # id(module) -> its GatedMLP, or None where declined
    for name, module in places:
        kids = module._modules
        if not name or not all(n in kids for n in ("gate_proj", "up_proj", "down_proj")):
            continue  # (the model itself is left: it has no parent to hold the replacement)
        if not all(isinstance(kids[n], Linear) for n in ("gate_proj", "up_proj")):
            continue  # (not quantized, or fused before: nothing to say)
        if id(module) not in done:
            why = skipped(name)
            if not why:
                try:
                    done[id(module)] = gated_mlp_from(module)
                except NotConvertible as e:
                    why = str(e)
            if why:
                done[id(module)] = None
                result.gated_declined[name] = why
        new = done[id(module)]
        if new is not None:
            parent_name, _, attr = name.rpartition(".")
            setattr(modules[parent_name], attr, new)
            result.gated_mlps.append(name)

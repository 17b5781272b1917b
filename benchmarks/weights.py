"""Weights for one layer group, built once and shared by every kernel, M and L2 state.

LayerWeights holds the float weight of a (shape, E) group and everything derived from it:
quantized weights per k, their float dequantization (for references), the weight in an
activation dtype, any kernel-specific format (int4, fp8, ...), and the activations per case.
CopyCache makes the extra copies that a cold-L2 timing rotates through.
"""
from __future__ import annotations

import math
import zlib
from typing import Any, Callable, Dict, Hashable, List, Tuple

import torch

import kbit

from .cases import Case, Inputs, make_inputs
from .ops import has_kernel
from .shapes import Shape

#: On the CPU fallback an expert stack quantizes this many distinct experts and repeats them.
CPU_DISTINCT_EXPERTS = 8


# ---- generic helpers for "a tree of tensors" (a weight in any kernel's format) ----------
def tree_tensors(tree: Any) -> List[torch.Tensor]:
    if isinstance(tree, torch.Tensor):
        return [tree]
    if isinstance(tree, kbit.QuantizedWeight):
        return [tree.packed, tree.absmax, tree.row_scale, tree.codebook]
    if isinstance(tree, (list, tuple)):
        return [t for item in tree for t in tree_tensors(item)]
    if isinstance(tree, dict):
        return [t for item in tree.values() for t in tree_tensors(item)]
    return []


def tree_nbytes(tree: Any) -> int:
    return sum(t.numel() * t.element_size() for t in tree_tensors(tree))


def tree_clone(tree: Any) -> Any:
    """A copy of tree in new memory (same structure, same values)."""
    if isinstance(tree, torch.Tensor):
        return tree.clone()
    if isinstance(tree, kbit.QuantizedWeight):
        return kbit.QuantizedWeight(tree.packed.clone(), tree.absmax.clone(), tree.row_scale.clone(),
                                    tree.codebook.clone(), tree.k, tree.shape, tree.dtype, tree.layout)
    if isinstance(tree, tuple):
        return tuple(tree_clone(t) for t in tree)
    if isinstance(tree, list):
        return [tree_clone(t) for t in tree]
    if isinstance(tree, dict):
        return {key: tree_clone(v) for key, v in tree.items()}
    return tree


def kbit_nbytes(shape: Shape, experts: int, k: int) -> int:
    """Bytes of a tiled kbit weight (docs/format.md section 5): indices, absmax, row scales, codebook."""
    e = max(experts, 1)
    tiles = math.ceil(shape.N / 16) * math.ceil(shape.K / 256)
    return e * (tiles * k * 32 * 4 * 4 + tiles * 128 + shape.N * 4) + (1 << k) * 4


def cold_copies(weight_bytes: int, l2_bytes: int) -> int:
    """Copies to rotate through so the weights touched between two uses of one copy are >= 4x L2.

    A single buffer already larger than 4x L2 is cold by itself (every call streams it)."""
    return max(1, math.ceil(4 * l2_bytes / max(weight_bytes, 1)))


def rotated_copies(tensors: Any, l2_bytes: int) -> List[Any]:
    """`tensors` (one tensor or a tuple of them: a weight's arguments) and enough clones that timing calls which
    rotate through the list reads them cold (cold_copies of their bytes)."""
    n = cold_copies(tree_nbytes(tensors), l2_bytes)
    return [tensors] + [tree_clone(tensors) for _ in range(n - 1)]


def shape_weight_copies(shape: Shape, k: int, device: Any, l2_bytes: int) -> Tuple[torch.Tensor, List[Any], List[Any]]:
    """A random fp16 weight of `shape` (N x K, scaled by K^-1/2) on `device`, its rotated_copies, and those of
    its k-bit quantization's arguments (packed, absmax, row_scale, codebook): the probes' cold-L2 inputs."""
    W = torch.randn(shape.N, shape.K, device=device, dtype=torch.float16) * shape.K ** -0.5
    qw = kbit.quantize(W, k=k)
    return W, rotated_copies(W, l2_bytes), rotated_copies((qw.packed, qw.absmax, qw.row_scale, qw.codebook), l2_bytes)


def _seed(*parts: Hashable) -> int:
    return zlib.crc32(repr(parts).encode()) & 0x7FFFFFFF


# ---- the weights of one layer group -------------------------------------------------------
class LayerWeights:
    def __init__(self, shape: Shape, experts: int, device: torch.device):
        self.shape, self.experts, self.device = shape, experts, torch.device(device)
        self._cache: Dict[Hashable, Any] = {}
        on_device = all(has_kernel(op, self.device) for op in ("kbit::quantize", "kbit::repack"))
        self.quantize_on_device = on_device or self.device.type == "cpu"
        self.dequantize_on_device = has_kernel("kbit::dequantize_tiled", self.device)

    # -- generic memo ----------------------------------------------------------------------
    def cached(self, key: Hashable, build: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def release(self, predicate: Callable[[Hashable], bool]) -> None:
        for key in [k for k in self._cache if predicate(k)]:
            del self._cache[key]

    @property
    def lead(self) -> Tuple[int, ...]:
        return (self.experts,) if self.experts else ()

    # -- the float weight and its derived formats -------------------------------------------
    def float(self) -> torch.Tensor:
        """W [N, K] or [E, N, K], float32, ~N(0, 1/K): outputs of O(1) for N(0, 1) inputs."""
        def build():
            gen = torch.Generator(device=self.device)
            gen.manual_seed(_seed(self.shape.name, self.experts))
            w = torch.randn(*self.lead, self.shape.N, self.shape.K, generator=gen, device=self.device)
            return w.mul_(self.shape.K ** -0.5)
        return self.cached("float", build)

    def dense(self, dtype: torch.dtype) -> torch.Tensor:
        return self.cached(("dense", dtype), lambda: self.float().to(dtype).contiguous())

    def quantized(self, k: int) -> kbit.QuantizedWeight:
        return self.cached(("q", k), lambda: self._quantize(k))

    def dequantized(self, k: int) -> torch.Tensor:
        """The quantized weight decoded to float32 (what a correct kbit kernel multiplies by)."""
        return self.cached(("dq", k), lambda: self._dequantize(k))

    def _quantize(self, k: int) -> kbit.QuantizedWeight:
        w = self.float()
        if self.quantize_on_device:
            return kbit.quantize(w, k=k)
        # No CUDA quantize in this build: quantize on the CPU (an expert stack: a few distinct
        # experts, repeated; the bytes each kernel reads are the same).
        if self.experts > CPU_DISTINCT_EXPERTS:
            distinct = kbit.quantize(w[:CPU_DISTINCT_EXPERTS].cpu(), k=k)
            self._cache[("q_distinct", k)] = distinct
            reps = math.ceil(self.experts / CPU_DISTINCT_EXPERTS)
            grow = lambda t: t.repeat(reps, *([1] * (t.dim() - 1)))[: self.experts].contiguous()  # noqa: E731
            q = kbit.QuantizedWeight(grow(distinct.packed), grow(distinct.absmax), grow(distinct.row_scale),
                                     distinct.codebook, k, (self.experts, self.shape.N, self.shape.K),
                                     distinct.dtype, distinct.layout)
        else:
            q = kbit.quantize(w.cpu(), k=k)
        return q.to(self.device)

    def _dequantize(self, k: int) -> torch.Tensor:
        if self.dequantize_on_device:
            return kbit.dequantize(self.quantized(k), torch.float32)
        distinct = self._cache.get(("q_distinct", k))
        if distinct is not None:
            d = kbit.dequantize(distinct, torch.float32)
            reps = math.ceil(self.experts / d.shape[0])
            return d.repeat(reps, 1, 1)[: self.experts].contiguous().to(self.device)
        return kbit.dequantize(self.quantized(k).cpu(), torch.float32).to(self.device)

    def release_k(self, k: int) -> None:
        self.release(lambda key: isinstance(key, tuple) and len(key) >= 2 and key[1] == k
                     and key[0] in ("q", "dq", "q_distinct"))

    # -- activations ------------------------------------------------------------------------
    def inputs(self, case: Case) -> Inputs:
        """Fresh random activations for case (one set per token layout and dtype, shared by all kernels)."""
        key = ("inputs", case.m, case.counts, case.layer.dtype)
        seed = _seed(self.shape.name, self.experts, case.m, case.counts, str(case.layer.dtype))
        return self.cached(key, lambda: make_inputs(case, self.device, seed))


class CopyCache:
    """Copies of a weight tree for cold-L2 rotation, made once and shared by kernels that use the
    same weight object (e.g. every kbit kernel at one k)."""

    def __init__(self):
        self._copies: Dict[int, Tuple[Any, List[Any]]] = {}

    def get(self, tree: Any, n: int) -> List[Any]:
        held, copies = self._copies.get(id(tree), (tree, [tree]))
        while len(copies) < n:
            copies.append(tree_clone(tree))
        self._copies[id(tree)] = (held, copies)
        return copies[:n]

    def clear(self) -> None:
        self._copies.clear()

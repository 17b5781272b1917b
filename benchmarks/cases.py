"""Layer (one weight in one format) and Case (that layer at one token count), plus inputs."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import torch

from .shapes import Shape


@dataclass(frozen=True)
class Layer:
    """What a kernel's setup depends on: the weight, its bit width and the activation dtype."""
    shape: Shape
    experts: int                 # 0 = dense [N, K]; E = expert stack [E, N, K]
    k: Optional[int]             # None for kernels whose format does not depend on k
    dtype: torch.dtype           # activation (and output) dtype

    @property
    def moe(self) -> bool:
        return self.experts > 0


@dataclass(frozen=True)
class Case:
    """A layer at one token count.

    Dense: m rows of A. MoE: every expert gets m tokens (counts=None), or counts gives the
    tokens of each expert (irregular routing; m is then the largest count).
    """
    layer: Layer
    m: int
    counts: Optional[Tuple[int, ...]] = None

    @property
    def tokens(self) -> int:
        if self.counts is not None:
            return sum(self.counts)
        return self.m * max(self.layer.experts, 1)

    @property
    def uniform(self) -> bool:
        return self.counts is None


@dataclass
class Inputs:
    """Activations for one case: x [T, K] (fresh random, never zeros), and for MoE the
    int32 expert_offsets [E + 1] on x's device plus the host copy of the counts."""
    x: torch.Tensor
    offsets: Optional[torch.Tensor] = None
    counts: Optional[Tuple[int, ...]] = None

    @property
    def uniform_m(self) -> Optional[int]:
        """Tokens per expert when every expert has the same number, else None."""
        if self.counts is None or len(set(self.counts)) != 1:
            return None
        return self.counts[0]


def make_inputs(case: Case, device: torch.device, seed: int) -> Inputs:
    layer = case.layer
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    x = torch.randn(case.tokens, layer.shape.K, generator=gen, device=device, dtype=torch.float32)
    x = x.to(layer.dtype)
    if not layer.moe:
        return Inputs(x)
    counts = case.counts if case.counts is not None else (case.m,) * layer.experts
    offsets = [0]
    for c in counts:
        offsets.append(offsets[-1] + c)
    return Inputs(x, torch.tensor(offsets, dtype=torch.int32, device=device), tuple(counts))

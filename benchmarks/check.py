"""Correctness before timing: every kernel's output against a float32 reference."""
from __future__ import annotations

from typing import Optional, Tuple

import torch

from .cases import Inputs

#: ||out - ref|| / ||ref|| above this (or NaN) marks the result "(wrong)".
TOLERANCE = 1e-2


def reference_matmul(x: torch.Tensor, w: torch.Tensor, inputs: Inputs) -> torch.Tensor:
    """float32 x @ w^T for a dense w [N, K], or per expert for a stack w [E, N, K] with
    tokens laid out by inputs.counts."""
    x = x.float()
    w = w.float()
    if w.dim() == 2:
        return x @ w.t()
    m = inputs.uniform_m
    if m is not None:
        return torch.bmm(x.view(w.shape[0], m, -1), w.transpose(1, 2)).reshape(-1, w.shape[1])
    out = x.new_empty(x.shape[0], w.shape[1])
    start = 0
    for e, count in enumerate(inputs.counts):
        if count:
            out[start:start + count] = x[start:start + count] @ w[e].t()
        start += count
    return out


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> Tuple[float, Optional[str]]:
    """(error, problem) where problem names a shape mismatch or non-finite output."""
    if tuple(out.shape) != tuple(ref.shape):
        return float("nan"), f"output shape {tuple(out.shape)} != expected {tuple(ref.shape)}"
    out = out.float()
    if not bool(torch.isfinite(out).all()):
        return float("nan"), "output holds NaN or Inf"
    denom = ref.norm().clamp_min(1e-30)
    return float((out - ref).norm() / denom), None


def is_correct(err: Optional[float]) -> bool:
    return err is not None and err == err and err < TOLERANCE

"""Codebooks: the 2^k reconstruction values a k-bit index selects (docs/format.md)."""
from __future__ import annotations

import functools

import torch

__all__ = ["codebook", "check_codebook"]


@functools.lru_cache(maxsize=None)
def _normal_float(k: int) -> torch.Tensor:
    # Normal-float quantiles: level i sits at the (i + 1/2) / 2^k quantile of N(0, 1),
    # scaled so the largest magnitude is exactly 1. (Computed in float64, stored float32.)
    n = 1 << k
    p = (torch.arange(n, dtype=torch.float64) + 0.5) / n
    q = torch.special.ndtri(p)
    return (q / q.abs().max()).to(torch.float32)


def codebook(k: int) -> torch.Tensor:
    """The default codebook for k-bit quantization: 2^k ascending float32 values in [-1, 1].

    Normal-float quantiles (level i at the (i + 0.5) / 2^k quantile of a standard normal,
    normalized to max |level| = 1). Returns a new CPU tensor each call.
    """
    _check_k(k)
    return _normal_float(int(k)).clone()


def _check_k(k) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k not in (2, 3, 4, 5):
        raise ValueError(f"kbit: k must be one of 2, 3, 4, 5 (got k={k!r})")


def check_codebook(cb, k: int) -> torch.Tensor:
    """Validate a user codebook for k bits; return it as a contiguous float32 CPU tensor.

    Rules: a 1-D tensor (or sequence) of exactly 2^k finite values, strictly ascending,
    all within [-1, 1].
    """
    _check_k(k)
    if not isinstance(cb, torch.Tensor):
        try:
            cb = torch.as_tensor(cb, dtype=torch.float32)
        except (TypeError, ValueError) as e:
            raise TypeError(f"kbit: codebook must be a tensor or a sequence of numbers ({e})") from None
    if not cb.is_floating_point():
        raise TypeError(f"kbit: codebook must hold floating-point values (got {cb.dtype})")
    n = 1 << k
    if cb.dim() != 1 or cb.numel() != n:
        raise ValueError(f"kbit: codebook for k={k} must be 1-D with 2^k = {n} entries "
                         f"(got shape {tuple(cb.shape)})")
    # A private copy: later changes to the caller's tensor must not reach the weights.
    cb = cb.detach().to(device="cpu", dtype=torch.float32, copy=True).contiguous()
    if not torch.isfinite(cb).all():
        raise ValueError(f"kbit: codebook values must be finite (got {cb.tolist()})")
    if (cb.abs() > 1).any():
        raise ValueError(f"kbit: codebook values must lie in [-1, 1] (got max |value| "
                         f"{cb.abs().max().item():.6g})")
    if not (cb[1:] > cb[:-1]).all():
        raise ValueError(f"kbit: codebook must be strictly ascending (got {cb.tolist()})")
    return cb


def is_default_codebook(cb: torch.Tensor, k: int) -> bool:
    return torch.equal(cb.detach().cpu(), _normal_float(k))

"""Hugging Face transformers (5.x) MoE top-k routers -> :func:`kbit.router_topk` (a speed patch; no weight changes).

A Qwen3-MoE style router (``Qwen3MoeTopKRouter``, ``Qwen2MoeTopKRouter``, ...) holds ``weight [E, H]`` and
computes ``logits = hidden @ weight^T``, ``softmax`` in fp32, ``torch.topk`` and, with ``norm_topk_prob``, a
renormalisation of the top-k, returning ``(logits, scores, indices)``. In a decode step that is five kernels a layer,
``torch.topk``'s gatherTopK and sort among them (~12 us a layer on an H200). :func:`use_kbit_routers` swaps such a
module for :class:`HFTopKRouter`: the same weight (shared, not copied) and linear, then one ``kbit.router_topk``.

A module is swapped only when it has that structure (``weight`` 2-D ``[num_experts, H]``, no bias, an int
``top_k`` and a bool ``norm_topk_prob``) and, on random hidden states at three scales, its own ``forward`` and the
replacement agree: the same logits bit for bit, the same top-k probabilities (expert sets may differ only between
experts of equal probability, which ``torch.topk`` orders as it likes) and the same scores within 2 units in the
last place of the logits' dtype (1e-5 relative in float32: the two softmaxes' own rounding). Anything else is left as it is and named in the result with the reason. This
changes what a model computes only in the order of such ties.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

import torch
from torch import nn
from torch.nn import functional as F

from .. import api

__all__ = ["HFTopKRouter", "use_kbit_routers", "RouterSwap"]

_VERIFY_TOKENS = 16
_VERIFY_SCALES = (0.5, 4.0, 32.0)


class HFTopKRouter(nn.Module):
    """A top-k softmax router on :func:`kbit.router_topk`: ``forward(hidden_states) -> (logits [T, E], scores
    [T, top_k], indices [T, top_k] int64)`` with ``T`` = hidden_states' rows (any leading shape, flattened)."""

    def __init__(self, weight: nn.Parameter, top_k: int, norm_topk_prob: bool):
        super().__init__()
        self.weight = weight
        self.top_k = int(top_k)
        self.norm_topk_prob = bool(norm_topk_prob)
        self.num_experts, self.hidden_dim = weight.shape

    def forward(self, hidden_states: torch.Tensor):
        logits = F.linear(hidden_states.reshape(-1, self.hidden_dim), self.weight)
        scores, indices = api.router_topk(logits, self.top_k, self.norm_topk_prob)
        return logits, scores, indices

    def extra_repr(self) -> str:
        return (f"experts={self.num_experts}, hidden={self.hidden_dim}, top_k={self.top_k}, "
                f"norm_topk_prob={self.norm_topk_prob}, kbit.router_topk")


@dataclass
class RouterSwap:
    """What :func:`use_kbit_routers` did: the modules swapped, and those left (name -> why)."""
    swapped: List[str] = field(default_factory=list)
    declined: Dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        lines = [f"kbit routers: {len(self.swapped)} swapped for kbit.router_topk"]
        lines += [f"  left {name}: {why}" for name, why in self.declined.items()]
        return "\n".join(lines)


def _looks_like_router(m: nn.Module) -> bool:
    return type(m).__name__.endswith("TopKRouter") and not isinstance(m, HFTopKRouter)


def _why_not(m: nn.Module) -> Optional[str]:
    w = getattr(m, "weight", None)
    if not isinstance(w, torch.Tensor) or w.dim() != 2:
        return "no 2-D weight [num_experts, H]"
    if getattr(m, "bias", None) is not None:
        return "it has a bias"
    if {n for n, _ in m.named_parameters(recurse=True)} != {"weight"}:
        return "parameters other than weight"
    top_k, norm = getattr(m, "top_k", None), getattr(m, "norm_topk_prob", None)
    if not isinstance(top_k, int) or not 0 < top_k <= w.shape[0]:
        return f"top_k {top_k!r} is not an int in 1..{w.shape[0]}"
    if not isinstance(norm, bool):
        return f"norm_topk_prob {norm!r} is not a bool"
    if w.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        return f"weight dtype {w.dtype}"
    return None


def _ulp(dtype: torch.dtype) -> float:
    return {torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7, torch.float32: 2.0 ** -23}[dtype]


def _disagreement(m: nn.Module, new: HFTopKRouter) -> Optional[str]:
    """Why new's forward differs from m's own on random hidden states (None: it does not)."""
    w = m.weight
    gen = torch.Generator().manual_seed(0)
    for scale in _VERIFY_SCALES:
        h = (torch.randn(_VERIFY_TOKENS, w.shape[1], generator=gen) * scale / w.shape[1] ** 0.5).to(w.device, w.dtype)
        with torch.no_grad():
            want = m(h)
            got = new(h)
        if not (isinstance(want, tuple) and len(want) == 3):
            return "its forward does not return (logits, scores, indices)"
        logits, scores, idx = want
        if logits.shape != got[0].shape or not torch.equal(logits, got[0]):
            return "its logits differ from F.linear(hidden, weight)"
        if scores.shape != got[1].shape or scores.dtype != got[1].dtype or idx.shape != got[2].shape:
            return f"its scores / indices are not [T, top_k] in the logits' dtype (got {tuple(scores.shape)})"
        probs = torch.softmax(logits.float(), -1)
        if not torch.equal(probs.gather(1, idx.long()).sort(-1).values, probs.gather(1, got[2]).sort(-1).values):
            return "it selects other experts than the top-k by probability"
        a, b = scores.float().sort(-1).values, got[1].float().sort(-1).values
        if not torch.allclose(a, b, rtol=max(2 * _ulp(scores.dtype), 1e-5), atol=0.0):
            err = ((a - b).abs() / b.abs().clamp_min(1e-30)).max().item()
            return f"its scores differ (relative {err:.2e}): another normalisation or activation"
    return None


def use_kbit_routers(model: nn.Module) -> RouterSwap:
    """Swaps every HF top-k softmax router module of ``model`` (class name ending in ``TopKRouter``) that
    :class:`HFTopKRouter` computes the same as for one, in place; returns what it did. The weight stays the
    module's own parameter (state_dict keys unchanged)."""
    result = RouterSwap()
    for name, m in list(model.named_modules()):
        if not _looks_like_router(m):
            continue
        why = _why_not(m)
        new = None if why else HFTopKRouter(m.weight, m.top_k, m.norm_topk_prob)
        if new is not None:
            why = _disagreement(m, new)
        if why:
            result.declined[name] = why
            continue
        parent_name, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent_name) if parent_name else model, child, new)
        result.swapped.append(name)
    return result

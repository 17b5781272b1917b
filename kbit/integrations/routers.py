"""Hugging Face transformers (5.x) MoE top-k routers -> :func:`kbit.router_topk` (a speed patch; no weight changes).

A Qwen3-MoE style router (``Qwen3MoeTopKRouter``, ``Qwen2MoeTopKRouter``, ...) holds ``weight [E, H]`` and
computes ``logits = hidden @ weight^T``, ``softmax`` in fp32, ``torch.topk`` and, with ``norm_topk_prob``, a
renormalisation of the top-k, returning ``(logits, scores, indices)``. In a decode step that is five kernels a layer,
``torch.topk``'s gatherTopK and sort among them (17-22 us a call alone on an H200, ~10 us a layer less in a compiled,
graph-captured decode step with the swap; docs/design.md, session 62). :func:`use_kbit_routers` gives such a module
the forward of :class:`HFTopKRouter`: the same linear, then one ``kbit.router_topk``. The module stays the same object
(its class becomes a subclass of its own, so ``isinstance`` checks, hooks such as transformers' router-logit recorders,
parameters and state_dict keys are kept). Where autograd would record the call (grad mode on and the weight or the
input requiring grad) the module runs its own forward: ``kbit.router_topk`` has no backward.

A module is swapped only when it has that structure (``weight`` 2-D ``[num_experts, H]``, no bias, no other
parameters, an int ``top_k`` and a bool ``norm_topk_prob``) and, on random hidden states at three scales in each
dtype its own forward accepts (float32, bfloat16, float16), the replacement accepts them too and agrees: the same
logits bit for bit, the same top-k probabilities (expert sets may differ only between experts of equal probability,
which ``torch.topk`` orders as it likes; kbit ranks by the logit, ties to the lower index), and each slot's score
equal, within 2 units in the last place of the scores' dtype (1e-5 relative in float32), to the softmax probability of
that slot's expert (divided by the top-k's sum where ``norm_topk_prob``), for both forwards. Anything else is left as
it is and named in the result with the reason.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import torch
from torch import nn
from torch.nn import functional as F

from .. import api

__all__ = ["HFTopKRouter", "use_kbit_routers", "RouterSwap"]

_VERIFY_TOKENS = 16
_VERIFY_SCALES = (0.5, 4.0, 32.0)
_VERIFY_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


class HFTopKRouter:
    """The forward a swapped router runs (mixed in before the router's own class by :func:`use_kbit_routers`):
    ``forward(hidden_states) -> (logits [T, E], scores [T, top_k], indices [T, top_k] int64)`` with ``T`` =
    hidden_states' rows (any leading shape, flattened)."""

    def forward(self, hidden_states: torch.Tensor):
        if torch.is_grad_enabled() and (self.weight.requires_grad or hidden_states.requires_grad):
            return super().forward(hidden_states)  # (autograd: the module's own ops)
        return _kbit_forward(self, hidden_states)

    def extra_repr(self) -> str:
        base = super().extra_repr()
        return (base + ", " if base else "") + f"top_k={self.top_k}, norm_topk_prob={self.norm_topk_prob}, " \
                                              "kbit.router_topk"


def _kbit_forward(m: nn.Module, hidden_states: torch.Tensor):
    logits = F.linear(hidden_states.reshape(-1, m.weight.shape[1]), m.weight)
    scores, indices = api.router_topk(logits, m.top_k, m.norm_topk_prob)
    return logits, scores, indices


_SWAPPED_CLASSES: Dict[type, type] = {}


def _swapped_class(cls: type) -> type:
    """HFTopKRouter mixed into cls, made once a class and findable by pickle under this module."""
    if cls not in _SWAPPED_CLASSES:
        name = f"Kbit{cls.__name__}"
        sub = type(name, (HFTopKRouter, cls), {"__module__": __name__, "__qualname__": name})
        setattr(sys.modules[__name__], name, sub)
        _SWAPPED_CLASSES[cls] = sub
    return _SWAPPED_CLASSES[cls]


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
    if w.dtype not in _VERIFY_DTYPES:
        return f"weight dtype {w.dtype}"
    return None


def _ulp(dtype: torch.dtype) -> float:
    return {torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7, torch.float32: 2.0 ** -23}[dtype]


def _scores_off(probs, idx, scores, norm) -> Optional[str]:
    """Why scores are not softmax at idx (renormalised where norm), slot by slot (None: they are)."""
    want = probs.gather(1, idx.long())
    if norm:
        want = want / want.sum(-1, keepdim=True)
    got = scores.float()
    tiny = 2.0 ** -24 if scores.dtype == torch.float16 else 0.0  # (fp16's subnormal step: unnormalised scores)
    if torch.allclose(got, want, rtol=max(2 * _ulp(scores.dtype), 1e-5), atol=tiny):
        return None
    return f"relative {((got - want).abs() / want.abs().clamp_min(1e-30)).max().item():.2e}"


def _disagreement(m: nn.Module) -> Optional[str]:
    """Why _kbit_forward differs from m's own forward on random hidden states (None: it does not)."""
    w = m.weight
    gen = torch.Generator().manual_seed(0)
    ran = False
    for dtype in _VERIFY_DTYPES:
        for scale in _VERIFY_SCALES:
            h = (torch.randn(_VERIFY_TOKENS, w.shape[1], generator=gen) * scale / w.shape[1] ** 0.5).to(w.device, dtype)
            with torch.no_grad():
                try:
                    want = m.forward(h)  # (not m(h): the module's hooks are not this check's business)
                except Exception:  # noqa: BLE001  (not a dtype the module takes: nothing to match)
                    break
                ran = True
                try:
                    got = _kbit_forward(m, h)
                except Exception as e:  # noqa: BLE001
                    return f"the replacement fails on {dtype} hidden states ({type(e).__name__})"
            if not (isinstance(want, tuple) and len(want) == 3):
                return "its forward does not return (logits, scores, indices)"
            logits, scores, idx = want
            if logits.shape != got[0].shape or logits.dtype != got[0].dtype or not torch.equal(logits, got[0]):
                return "its logits differ from F.linear(hidden, weight)"
            if scores.shape != got[1].shape or scores.dtype != got[1].dtype or idx.shape != got[2].shape:
                return f"its scores / indices are not [T, top_k] in the logits' dtype (got {tuple(scores.shape)})"
            probs = torch.softmax(logits.float(), -1)
            if not torch.equal(probs.gather(1, idx.long()).sort(-1).values, probs.gather(1, got[2]).sort(-1).values):
                return "it selects other experts than the top-k by probability"
            for what, s, i in (("its", scores, idx), ("kbit's", got[1], got[2])):
                off = _scores_off(probs, i, s, m.norm_topk_prob)
                if off:
                    return f"{what} scores are not the softmax at its experts{' renormalised' * m.norm_topk_prob} " \
                           f"({off}): another normalisation or activation"
    return None if ran else "its forward did not run on [T, H] hidden states"


def use_kbit_routers(model: nn.Module) -> RouterSwap:
    """Gives every HF top-k softmax router module of ``model`` (class name ending in ``TopKRouter``) that
    :class:`HFTopKRouter` computes the same as for one its forward, in place (the module stays the same object);
    returns what it did."""
    result = RouterSwap()
    for name, m in list(model.named_modules()):
        if not _looks_like_router(m):
            continue
        why = _why_not(m) or _disagreement(m)
        if why:
            result.declined[name or "(the model)"] = why
            continue
        m.__class__ = _swapped_class(type(m))
        result.swapped.append(name or "(the model)")
    return result

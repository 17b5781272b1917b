"""Hugging Face transformers (5.x) fused MoE experts -> kbit.

transformers 5 keeps the routed experts of a MoE layer in one module per layer (``Qwen3MoeExperts``,
``Qwen2MoeExperts``, ``MixtralExperts``, ``Qwen3NextExperts``, ... ~70 model types) holding two
3-D parameters, ``gate_up_proj [E, 2I, H]`` (rows ``0 : I`` the gate, ``I : 2I`` the up
projection) and ``down_proj [E, H, I]``, called as ``experts(hidden_states [T, H], top_k_index
[T, top_k], top_k_weights [T, top_k]) -> [T, H]``. That is exactly :class:`kbit.Experts`'s layout
and signature, so the replacement, :class:`HFExperts`, is a thin subclass of it.

:func:`kbit.quantize_model` calls :func:`register_transformers_converters` on the model it is
given: every class from transformers (or a ``trust_remote_code`` module) whose instances hold
3-D ``gate_up_proj`` and ``down_proj`` parameters gets :func:`convert_experts` as its converter
(an explicit :func:`kbit.nn.register_converter` for the class wins). This needs no import of
transformers. ``register_transformers_converters()`` without a model registers the known classes
up front (that imports transformers).

:func:`convert_experts` converts a module only when kbit computes what its own ``forward`` does;
otherwise it raises :class:`kbit.nn.NotConvertible` and the module stays as it is, named with the
reason in the summary of ``quantize_model`` (never silently left in 16 bits, never silently wrong):

1. structure: exactly the two 3-D parameters (no biases, no post-expert norm), shapes
   ``[E, 2I, H]`` / ``[E, H, I]`` with H and I multiples of 32, and transformers' layout flags
   (``use_experts_implementation``) at their defaults: not transposed, gate and up concatenated
   (not interleaved), a gate, no bias, not sharded for expert parallelism;
2. semantics: the module's own ``forward`` (whichever ``config._experts_implementation`` it
   dispatches to), run on a slice of up to three of its experts with the *dequantized* kbit
   weights, must match the converted module on the same tokens, at three input scales
   (relative error <= 2e-2 at each; bf16 rounding gives ~6e-3, GELU instead of SiLU ~0.1,
   swapped gate/up ~0.8). This rejects e.g. another activation, a clamped or scaled gate
   (``_apply_gate`` overrides) or another combination of the routing weights.
"""
from __future__ import annotations

import copy
from collections import OrderedDict
from typing import List, Optional

import torch
from torch import nn

from ..nn.convert import _CONVERTERS, VERIFY_SCALES, VERIFY_TOKENS, register_converter, relative_error
from ..nn.experts import Experts, gate_up_in_order
from ..nn.linear import NotConvertible
from ..quantized import QuantizedWeight
from .. import api

__all__ = ["HFExperts", "convert_experts", "register_transformers_converters", "KNOWN_EXPERT_CLASSES",
           "VERIFY_RTOL"]

# Classes registered by register_transformers_converters() without a model, (module, class),
# each checked with transformers 5.24 (default layout flags; convert_experts's forward check passes).
KNOWN_EXPERT_CLASSES = (
    ("transformers.models.qwen3_moe.modeling_qwen3_moe", "Qwen3MoeExperts"),
    ("transformers.models.qwen2_moe.modeling_qwen2_moe", "Qwen2MoeExperts"),
    ("transformers.models.qwen3_next.modeling_qwen3_next", "Qwen3NextExperts"),
    ("transformers.models.mixtral.modeling_mixtral", "MixtralExperts"),
    ("transformers.models.olmoe.modeling_olmoe", "OlmoeExperts"),
)
_MODULE_PREFIXES = ("transformers.", "transformers_modules.")
VERIFY_RTOL = 2e-2

# transformers' use_experts_implementation flags: (attribute, value kbit cannot compute, why)
_UNSUPPORTED_FLAGS = (
    ("is_transposed", True, "its weights are stored transposed ([E, H, 2I] / [E, I, H])"),
    ("is_concatenated", False, "its gate and up rows are interleaved, not concatenated"),
    ("has_gate", False, "it has no gate projection (up_proj only)"),
    ("has_bias", True, "its experts have biases"),
    ("has_post_expert_norm", True, "it applies a norm after each expert"),
    ("_is_expert_parallel", True, "it is sharded for expert parallelism"),
)


class HFExperts(Experts):
    """A drop-in replacement for a transformers fused-experts module (e.g. ``Qwen3MoeExperts``).

    :class:`kbit.Experts` with transformers' attribute names: ``forward(hidden_states [T, H],
    top_k_index [T, top_k], top_k_weights [T, top_k]) -> [T, H]`` in the compute dtype (the
    dtype of the hidden states of a bf16/fp16 model; an expert id ``E``, transformers' "not on
    this rank", contributes nothing). ``hidden_dim`` and ``intermediate_dim`` alias
    ``hidden_size`` and ``intermediate_size``; ``source`` names the replaced class. State dict:
    ``gate_up_proj.*`` and ``down_proj.*`` in kbit's flat format (load it into a model converted
    the same way). Built by :func:`convert_experts` (``kbit.quantize_model``).
    """

    source: str = ""

    @property
    def hidden_dim(self) -> int:
        return self.hidden_size

    @property
    def intermediate_dim(self) -> int:
        return self.intermediate_size

    def extra_repr(self) -> str:
        return super().extra_repr() + (f", source={self.source}" if self.source else "")


def _why_not_convertible(module: nn.Module) -> Optional[str]:
    """The reason kbit cannot stand in for ``module`` judged from its structure, or None."""
    name = type(module).__name__
    for attr, bad, why in _UNSUPPORTED_FLAGS:
        if getattr(module, attr, not bad) == bad:
            return f"{name}: {why}; kbit.Experts computes silu(gate) * up with gate_up_proj [E, 2I, H]"
    gu, dn = module._parameters.get("gate_up_proj"), module._parameters.get("down_proj")
    if gu is None or dn is None or gu.dim() != 3 or dn.dim() != 3:
        params = ", ".join(f"{n} {list(p.shape)}" for n, p in module.named_parameters())
        return (f"{name}: expert weights in a layout kbit does not convert ({params or 'no parameters'}); "
                f"kbit.Experts needs 3-D gate_up_proj [E, 2I, H] and down_proj [E, H, I]")
    others = [n for n, _ in module.named_parameters() if n not in ("gate_up_proj", "down_proj")]
    others += [n for n, b in module._buffers.items()
               if b is not None and n not in module._non_persistent_buffers_set]
    if others:
        return f"{name}: has tensors kbit.Experts does not model ({', '.join(others)})"
    E, two_i, H = gu.shape
    I = two_i // 2
    if two_i % 2 or tuple(dn.shape) != (E, H, I):
        return (f"{name}: gate_up_proj {list(gu.shape)} and down_proj {list(dn.shape)} are not "
                f"[E, 2I, H] and [E, H, I]")
    declared = (getattr(module, "hidden_dim", H), getattr(module, "intermediate_dim", I))
    if declared != (H, I):  # e.g. a transposed layout without the flag
        return (f"{name}: hidden_dim / intermediate_dim {declared} do not match gate_up_proj "
                f"{list(gu.shape)} (expected [E, 2 * intermediate_dim, hidden_dim])")
    if H % 32 or I % 32:
        return f"{name}: hidden size {H} and intermediate size {I} must be multiples of 32 (the block size)"
    if not (gu.dtype.is_floating_point and dn.dtype.is_floating_point):
        return f"{name}: weights are {gu.dtype} / {dn.dtype}, not floating point (already quantized?)"
    return None


def _expert_slice(qw: QuantizedWeight, idx: torch.Tensor) -> QuantizedWeight:
    """The experts ``idx`` of a tiled expert stack (the tiled layout is per expert)."""
    return QuantizedWeight(qw.packed.index_select(0, idx), qw.absmax.index_select(0, idx),
                           qw.row_scale.index_select(0, idx), qw.codebook, qw.k,
                           (idx.numel(),) + tuple(qw.shape[1:]), qw.dtype, "tiled")


def _verify(module: nn.Module, new: HFExperts) -> None:
    """Run ``module``'s own forward on (up to) three of its experts with kbit's dequantized weights
    and the converted module on the same tokens; raise NotConvertible if they differ."""
    E, H = new.num_experts, new.hidden_size
    dev, wdtype = new.gate_up_proj.device, module.gate_up_proj.dtype
    idx = torch.tensor(sorted({0, E // 2, E - 1}), device=dev)
    n = idx.numel()
    top_k = min(2, n)
    # (the experts' slice of the interleaved buffers, put in order: not the whole stack's copy quantized() makes)
    gu = api.dequantize(gate_up_in_order(_expert_slice(new.gate_up_proj.interleaved(), idx)), wdtype)
    dn = api.dequantize(_expert_slice(new.down_proj.quantized(), idx), wdtype)

    gen = torch.Generator().manual_seed(0)
    # tokens in groups whose gate/up pre-activations have std 0.75 (where SiLU and GELU differ
    # most), 3 and 12 (clamps); each group is checked on its own
    T = VERIFY_TOKENS * len(VERIFY_SCALES)
    scales = torch.tensor(VERIFY_SCALES).repeat_interleave(VERIFY_TOKENS)[:, None]
    row_norm = gu.float().norm(dim=-1).mean().clamp_min(1e-12).item()
    x = torch.randn(T, H, generator=gen) * scales / row_norm
    local = torch.rand(T, n, generator=gen).argsort(dim=-1)[:, :top_k]   # distinct experts per token
    w = torch.rand(T, top_k, generator=gen) + 0.25
    x, local, w = x.to(dev, new.dtype), local.to(dev), w.to(dev)

    probe = copy.copy(module)  # shares everything but the parameters and the expert count
    probe._parameters = OrderedDict(module._parameters)
    probe._parameters["gate_up_proj"] = nn.Parameter(gu, requires_grad=False)
    probe._parameters["down_proj"] = nn.Parameter(dn, requires_grad=False)
    probe.num_experts = n
    name = type(module).__name__
    try:
        ref = type(module).forward(probe, x.to(wdtype), local, w.to(wdtype))  # no hooks
    except Exception as e:  # noqa: BLE001 - any failure means we cannot vouch for the conversion
        raise NotConvertible(f"{name}: could not check kbit against its forward on a slice of experts "
                             f"({type(e).__name__}: {e})") from None
    got = new(x, idx[local], w)
    if not isinstance(ref, torch.Tensor) or ref.shape != got.shape:
        raise NotConvertible(f"{name}: its forward returns {getattr(ref, 'shape', type(ref).__name__)}, "
                             f"kbit.Experts returns {tuple(got.shape)}")
    err = max(relative_error(g, r) for g, r in zip(got.split(VERIFY_TOKENS), ref.split(VERIFY_TOKENS)))
    if not err <= VERIFY_RTOL:
        raise NotConvertible(f"{name}: its forward computes something else than kbit.Experts (relative "
                             f"difference {err:.3g} on the same dequantized weights, tolerance "
                             f"{VERIFY_RTOL}): another activation, gate or routing-weight rule")


def convert_experts(module: nn.Module, k: int = 4, codebook=None, dtype: Optional[torch.dtype] = None,
                    verify: bool = True) -> HFExperts:
    """Quantize a transformers fused-experts module into an :class:`HFExperts` (module unchanged).

    Raises :class:`kbit.nn.NotConvertible` with the reason when kbit cannot compute what the
    module does (see the module docstring); ``verify=False`` skips the forward check.
    """
    why = _why_not_convertible(module)
    if why:
        raise NotConvertible(why)
    new = HFExperts.from_weights(module.gate_up_proj, module.down_proj, k=k, codebook=codebook, dtype=dtype)
    new.source = type(module).__name__
    if verify:
        with torch.no_grad():
            _verify(module, new)
    return new


def _decline(module: nn.Module, **_) -> nn.Module:
    raise NotConvertible(_why_not_convertible(module) or
                         f"{type(module).__name__}: not a fused-experts layout kbit converts")


def _is_hf_class(cls: type) -> bool:
    return cls.__module__.startswith(_MODULE_PREFIXES)


def _has_3d_params(m: nn.Module) -> bool:
    return any(p is not None and p.dim() == 3 for p in m._parameters.values())


def register_transformers_converters(model: Optional[nn.Module] = None) -> List[type]:
    """Register kbit converters for transformers' fused-experts classes; returns the classes newly
    registered (a class that already has a converter keeps it).

    With ``model``: the classes of its modules that come from transformers (or a remote-code
    module) and hold 3-D ``gate_up_proj`` and ``down_proj`` parameters get
    :func:`convert_experts`; other transformers ``*Experts*`` classes with 3-D parameters and no
    sub-modules with parameters get a converter that declines with the reason, so
    ``quantize_model`` reports them as skipped. Imports nothing. Without ``model``:
    :data:`KNOWN_EXPERT_CLASSES` (imports transformers; missing ones are ignored).
    """
    added: List[type] = []
    if model is None:
        import importlib
        for mod_name, cls_name in KNOWN_EXPERT_CLASSES:
            try:
                cls = getattr(importlib.import_module(mod_name), cls_name)
            except (ImportError, AttributeError):
                continue
            if cls not in _CONVERTERS:
                register_converter(cls, convert_experts)
                added.append(cls)
        return added
    for m in model.modules():
        cls = type(m)
        if cls in _CONVERTERS or not _is_hf_class(cls) or not _has_3d_params(m):
            continue
        gu, dn = m._parameters.get("gate_up_proj"), m._parameters.get("down_proj")
        if gu is not None and dn is not None and gu.dim() == 3 and dn.dim() == 3:
            register_converter(cls, convert_experts)
        elif "expert" in cls.__name__.lower() and not any(
                any(True for _ in c.parameters()) for c in m.children()):
            register_converter(cls, _decline)
        else:
            continue
        added.append(cls)
    return added

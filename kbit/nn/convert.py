"""kbit.quantize_model: replace a model's nn.Linear layers (and registered types) in place."""
from __future__ import annotations

import fnmatch
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import torch
from torch import nn

from .linear import Linear, NotConvertible

__all__ = ["quantize_model", "register_converter", "QuantizeSummary"]

# type -> fn(module, *, k, codebook, dtype) -> replacement module. Looked up by exact type
# (a subclass may behave differently: nn.MultiheadAttention reads its out_proj's weight
# directly). A converter raises NotConvertible to decline a module, with the reason.
_CONVERTERS: Dict[type, Callable[..., nn.Module]] = {}


def register_converter(cls: type, fn: Optional[Callable[..., nn.Module]]) -> None:
    """Make :func:`quantize_model` convert modules of exactly type ``cls`` with
    ``fn(module, k=..., codebook=..., dtype=...)`` (returns the replacement; raises
    :class:`kbit.nn.NotConvertible` to skip with a reason). ``fn=None`` removes it.
    E.g. a Hugging Face ``Qwen3MoeExperts`` -> ``kbit.Experts.from_weights(m.gate_up_proj,
    m.down_proj, k=k, codebook=codebook, dtype=dtype)``."""
    if fn is None:
        _CONVERTERS.pop(cls, None)
    else:
        _CONVERTERS[cls] = fn


register_converter(nn.Linear, Linear.from_linear)

# Checks that run a module's own forward against its kbit replacement (kbit.integrations.transformers' experts,
# kbit.nn.GatedMLP): tokens in groups whose pre-activations have std 0.75 (where SiLU and GELU differ most), 3 and 12
# (clamps), each group compared on its own by relative_error.
VERIFY_TOKENS = 8
VERIFY_SCALES = (0.75, 3.0, 12.0)


def relative_error(got: torch.Tensor, ref: torch.Tensor) -> float:
    """||got - ref|| / ||ref|| in float64 (a zero ref: against 1e-30)."""
    ref = ref.double()
    return ((got.double() - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def _nbytes(m: nn.Module) -> int:
    return sum(t.numel() * t.element_size() for t in list(m.parameters()) + list(m.buffers()))


def _fmt(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return ""


@dataclass
class QuantizeSummary:
    """What :func:`quantize_model` did. Byte counts cover the converted modules only: their
    parameters and buffers before, the replacements' (tiled layout in memory) after."""
    k: int
    converted: List[str] = field(default_factory=list)
    skipped: Dict[str, str] = field(default_factory=dict)   # qualified name -> reason
    bytes_before: int = 0
    bytes_after: int = 0
    sources: Dict[str, str] = field(default_factory=dict)   # converted name -> its former type's name

    @property
    def bytes_saved(self) -> int:
        return self.bytes_before - self.bytes_after

    def __str__(self) -> str:
        pct = 100.0 * self.bytes_saved / self.bytes_before if self.bytes_before else 0.0
        lines = [f"kbit.quantize_model: converted {len(self.converted)} modules to k={self.k}, "
                 f"skipped {len(self.skipped)}",
                 f"  converted modules: {_fmt(self.bytes_before)} -> {_fmt(self.bytes_after)} "
                 f"(saved {_fmt(self.bytes_saved)}, {pct:.1f}%)"]
        if self.sources:
            counts = Counter(self.sources.get(name, "?") for name in self.converted)
            lines.append("  converted by type: " + ", ".join(f"{n} {t}" for t, n in counts.items()))
        items = list(self.skipped.items())
        lines += [f"  skipped {name}: {why}" for name, why in items[:20]]
        if len(items) > 20:
            lines.append(f"  ... and {len(items) - 20} more skipped")
        return "\n".join(lines)


def _skip_matcher(skip, fn: str = "kbit.quantize_model"):
    """name -> reason to skip or None (see quantize_model for the semantics of ``skip``)."""
    if skip is None:
        return lambda name: None
    if callable(skip):
        return lambda name: "skip(name) returned True" if skip(name) else None
    patterns = [skip] if isinstance(skip, str) else list(skip)
    if not all(isinstance(p, str) for p in patterns):
        raise TypeError(f"{fn}: skip must be a callable, a string or a collection of "
                        f"strings (got {skip!r})")

    def match(name):
        for p in patterns:
            if fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(name, "*." + p):
                return f"matches skip pattern {p!r}"
        return None
    return match


def _convertible_slots(model: nn.Module, summary: "QuantizeSummary") -> List[List[tuple]]:
    """Every slot (parent, attribute, qualified name) holding a convertible module, grouped by
    module identity (a module shared by two parents is converted once). Returns no reference
    to the modules themselves, so a replaced fp module is freed once its parents let go."""
    groups: Dict[int, List[tuple]] = {}
    modules = dict(model.named_modules(remove_duplicate=False))
    inside: List[str] = []  # names of convertible modules: their descendants are left alone
    for name, child in modules.items():
        if not name or any(name.startswith(p + ".") for p in inside):
            continue
        pname, _, attr = name.rpartition(".")
        parent = modules[pname]
        if type(child) in _CONVERTERS:
            inside.append(name)
            groups.setdefault(id(child), []).append((parent, attr, name))
        elif isinstance(child, nn.Linear):
            summary.skipped[name] = (f"{type(child).__name__} is a subclass of nn.Linear, not converted "
                                     f"(kbit.nn.register_converter adds types)")
    return list(groups.values())


def quantize_model(model: nn.Module, k: int = 4, codebook=None, skip=None,
                   dtype: Optional[torch.dtype] = None, progress: bool = True) -> QuantizeSummary:
    """Replace, in place, every ``nn.Linear`` of ``model`` (at any depth) by a :class:`kbit.Linear`.

    Layers whose in_features is not a multiple of 32, or whose qualified name ``skip``
    matches (a callable ``name -> bool``, or fnmatch patterns matched against the name or a
    dotted suffix of it, see below), stay as they are. Types added with
    :func:`register_converter` are converted too; exact types only (an ``nn.Linear``
    subclass is skipped with a reason). Hugging Face transformers' fused MoE experts
    (``Qwen3MoeExperts`` and the like, 3-D ``gate_up_proj`` / ``down_proj``) are converted to
    :class:`kbit.integrations.transformers.HFExperts`, or skipped with the reason when kbit
    cannot compute what they do (see :mod:`kbit.integrations.transformers`). One layer at a time: quantize (on the layer's
    device), swap into every parent that holds it, drop the fp module, so the extra memory
    is about one layer (the fp weights are freed unless referenced elsewhere, e.g. tied).
    ``dtype``: the compute dtype of the new layers (default: each weight's dtype when
    float16/bfloat16, else bfloat16). ``progress``: a tqdm bar. Returns a
    :class:`QuantizeSummary` (print it for a readable report).

    ``skip`` patterns (fnmatch, case-sensitive) match a module when they match its whole
    qualified name or a dotted suffix of it: ``"lm_head"`` matches ``lm_head`` and
    ``model.lm_head``, ``"mlp.down_proj"`` matches ``layers.3.mlp.down_proj``,
    ``"layers.0.*"`` everything under ``layers.0``; ``"proj"`` does not match ``q_proj``
    (write ``"*proj"``).
    """
    from tqdm.auto import tqdm

    if type(model) in _CONVERTERS:
        raise TypeError(f"kbit.quantize_model: the model itself is a {type(model).__name__} and cannot be "
                        f"replaced in place; convert it directly (e.g. kbit.Linear.from_linear)")
    match = _skip_matcher(skip)
    summary = QuantizeSummary(k=k)
    # Hugging Face fused MoE experts (Qwen3MoeExperts, ...): registers converters for the types
    # found in this model; imports nothing from transformers.
    from ..integrations.transformers import register_transformers_converters
    register_transformers_converters(model)
    groups = _convertible_slots(model, summary)
    todo = []
    for slots in groups:
        why = next((r for r in (match(s[2]) for s in slots) if r), None)
        if why:
            summary.skipped[slots[0][2]] = why
        else:
            todo.append(slots)

    bar = tqdm(total=len(todo), desc="kbit.quantize_model", unit="module", disable=not progress)
    with torch.no_grad():
        for slots in todo:
            parent, attr, name = slots[0]
            bar.set_postfix_str(name, refresh=False)
            old = parent._modules[attr]
            try:
                new = _CONVERTERS[type(old)](old, k=k, codebook=codebook, dtype=dtype)
            except NotConvertible as e:
                summary.skipped[name] = str(e)
            else:
                summary.bytes_before += _nbytes(old)
                summary.bytes_after += _nbytes(new)
                for p, a, _ in slots:
                    p._modules[a] = new
                summary.converted.append(name)
                summary.sources[name] = type(old).__name__
            del old
            bar.update(1)
    bar.close()
    return summary


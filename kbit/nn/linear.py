"""kbit.Linear: a drop-in nn.Linear replacement with k-bit quantized weights."""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import torch
from torch import nn

from .. import api
from .buffers import QuantizedBuffers, apply_keep_dtype, probe_dtype

__all__ = ["Linear", "NotConvertible", "compute_dtype_for", "check_compute_dtype", "FollowsDtypeCasts",
           "why_not_fusable"]

ACT_DTYPES = (torch.float16, torch.bfloat16)


class NotConvertible(ValueError):
    """A module cannot be quantized (e.g. K not a multiple of 32). ``kbit.quantize_model``
    skips such modules and reports the message as the reason."""


def compute_dtype_for(weight_dtype: torch.dtype, dtype: Optional[torch.dtype]) -> torch.dtype:
    """The compute dtype of a converted layer: ``dtype`` if given (float16 or bfloat16), else
    the weight's dtype when it is float16/bfloat16, else bfloat16 (an fp32 model: bfloat16
    keeps fp32's exponent range, so activations that fit in fp32 do not overflow, and its
    rounding (2^-9) is far below the k-bit quantization error)."""
    if dtype is None:
        return weight_dtype if weight_dtype in ACT_DTYPES else torch.bfloat16
    if dtype not in ACT_DTYPES:
        raise TypeError(f"kbit: the compute dtype must be torch.float16 or torch.bfloat16 (got {dtype})")
    return dtype


def check_compute_dtype(x, dtype: torch.dtype, who: str) -> None:
    """Raise TypeError unless x is a tensor of the layer's compute dtype."""
    if not isinstance(x, torch.Tensor) or x.dtype != dtype:
        got = x.dtype if isinstance(x, torch.Tensor) else type(x).__name__
        raise TypeError(f"{who}: x must be {dtype}, the layer's compute dtype (got {got}); "
                        f"cast the input, or the layer with .to(torch.float16 / torch.bfloat16)")


class FollowsDtypeCasts:
    """Mixin for kbit modules with a compute dtype ``self.dtype``: a model-wide cast to float16 / bfloat16
    (``.to(dtype)``, ``.half()``) sets it; other casts leave it (the quantized buffers are never cast)."""

    def _apply(self, fn, recurse=True):
        super()._apply(fn, recurse)
        target = probe_dtype(fn, self.dtype)
        if target in ACT_DTYPES:
            self.dtype = target
        return self


class Linear(nn.Module):
    """``y = x @ W_hat^T + bias`` with W stored in k bits (k = 2..5) and fused dequantize + matmul.

    Build one with :meth:`from_linear` (or :func:`kbit.quantize_model`);
    ``Linear(in_features, out_features, bias, k=k, dtype=dtype)`` makes an all-zero
    placeholder to ``load_state_dict`` into.

    * ``weight``: a :class:`kbit.nn.QuantizedBuffers` child (tiled buffers in memory).
      ``self.weight.quantized()`` is the :class:`kbit.QuantizedWeight`.
    * ``bias``: a Parameter (``requires_grad=False``) in the compute dtype, or None.
    * ``dtype``: the compute dtype, float16 or bfloat16; ``x`` must have it.
    * State dict: ``weight.packed, weight.absmax, weight.row_scale, weight.codebook,
      weight.meta`` (the stable flat format of docs/format.md) and ``bias``. Works with
      ``torch.save`` and ``safetensors.torch.save_file``; loading is bit-exact.
    * ``.to(device)`` moves everything. ``.to(torch.float16 / torch.bfloat16)`` (also
      ``.half()``, ``.bfloat16()``) changes the compute dtype and casts the bias; other dtype
      casts (``model.float()``) leave the layer unchanged. The quantized tensors are never cast.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, k: int = 4,
                 dtype: torch.dtype = torch.float16, device=None):
        super().__init__()
        dtype = compute_dtype_for(dtype, dtype)
        if in_features % 32 or in_features < 32 or out_features < 1:
            raise NotConvertible(f"kbit.Linear: in_features must be a positive multiple of 32 (the "
                                 f"block size) and out_features >= 1 (got weight shape "
                                 f"({out_features}, {in_features}))")
        self.in_features, self.out_features, self.dtype = int(in_features), int(out_features), dtype
        self.weight = QuantizedBuffers((out_features, in_features), k, dtype, device)
        self.register_parameter("bias", nn.Parameter(torch.zeros(out_features, dtype=dtype, device=device),
                                                     requires_grad=False) if bias else None)

    @classmethod
    def from_linear(cls, linear: nn.Linear, k: int = 4, codebook=None,
                    dtype: Optional[torch.dtype] = None) -> "Linear":
        """Quantize ``linear`` (any float dtype, on any device; not modified).

        The weight is quantized from its own dtype (an fp32 weight is not rounded to 16 bits
        first). ``dtype``: the compute dtype (see :func:`compute_dtype_for`: default the
        weight's dtype if float16/bfloat16, else bfloat16). Raises :class:`NotConvertible`
        (a ValueError) when in_features is not a multiple of 32.
        """
        W = linear.weight
        if W.dim() != 2:
            raise TypeError(f"kbit.Linear.from_linear: expected an nn.Linear with a 2-D weight (got "
                            f"{type(linear).__name__} with weight shape {tuple(W.shape)})")
        n, kdim = W.shape
        if kdim % 32 or kdim == 0:
            raise NotConvertible(f"kbit.Linear.from_linear: in_features={kdim} is not a multiple of 32 "
                                 f"(the block size) for the layer with weight shape ({n}, {kdim})")
        dtype = compute_dtype_for(W.dtype, dtype)
        with torch.no_grad():
            qw = api.quantize(W.detach(), k=k, codebook=codebook)
        return cls._from_quantized(qw, linear.bias, dtype)

    @classmethod
    def _from_quantized(cls, qw, bias: Optional[torch.Tensor], dtype: torch.dtype) -> "Linear":
        """A layer over the quantized weight ``qw`` ([N, K]) with a copy of ``bias`` (or None) in ``dtype``."""
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        self.in_features, self.out_features, self.dtype = qw.shape[1], qw.shape[0], dtype
        self.weight = QuantizedBuffers.from_quantized(qw)
        self.register_parameter("bias", nn.Parameter(bias.detach().to(dtype=dtype, copy=True), requires_grad=False)
                                if bias is not None else None)
        return self

    @property
    def k(self) -> int:
        return self.weight.k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_compute_dtype(x, self.dtype, "kbit.Linear")
        # The buffers straight from their dicts (no QuantizedWeight built per call; Module
        # attribute lookups are the slow part of a small layer's host time).
        qb = self._modules["weight"]
        b = qb._buffers
        y = api.gemm_tiled(x, b["packed"], b["absmax"], b["row_scale"], b["codebook"], qb.k, qb.shape,
                           "Linear")
        bias = self._parameters["bias"]
        return y if bias is None else y.add_(bias)

    def __repr__(self) -> str:  # one line, like nn.Linear (the buffers child is an implementation detail)
        return f"{self._get_name()}({self.extra_repr()})"

    def extra_repr(self) -> str:
        nbytes = self.weight.nbytes
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, k={self.k}, dtype={str(self.dtype).replace('torch.', '')}, "
                f"size={nbytes / 2**20:.3f} MiB ({8 * nbytes / (self.in_features * self.out_features):.2f} "
                f"bits/weight)")

    def _apply(self, fn, recurse=True):
        if recurse:
            for m in self.children():
                m._apply(fn)
        target = probe_dtype(fn, self.dtype)
        if target in ACT_DTYPES:
            self.dtype = target
        if self.bias is not None:
            b = apply_keep_dtype(fn, self.bias.data, "kbit.Linear.bias").to(self.dtype)
            if (torch._has_compatible_shallow_copy_type(self.bias, b)
                    and not torch.__future__.get_overwrite_module_params_on_conversion()):
                self.bias.data = b  # keeps the Parameter object, as nn.Module._apply does
            else:  # e.g. to/from the meta device
                self._parameters["bias"] = nn.Parameter(b, requires_grad=self.bias.requires_grad)
        return self


# What layers fused into one (kbit.fuse_projections, kbit.nn.GatedMLP) must share: name -> the layer's value
_SHARED = {
    "in_features": lambda m: m.in_features,
    "k": lambda m: m.k,
    "compute dtype": lambda m: m.dtype,
    "device": lambda m: m.weight.device,
    "bias": lambda m: m.bias is not None,
    "quantized weight dtype": lambda m: m.weight.weight_dtype,
}


def why_not_fusable(named: Sequence[Tuple[str, nn.Module]], same: Sequence[str] = tuple(_SHARED) + ("codebook",),
                    first: Optional[Tuple[str, nn.Module]] = None) -> Optional[str]:
    """Why the layers ``named`` ((name, module) pairs) cannot be fused into one, or None: one that is not exactly a
    kbit.Linear (a subclass's own forward would be lost), has forward hooks or a forward of its own set on the
    instance; one that differs from ``first`` (default: the first layer) in a property of ``same`` (``_SHARED``'s
    names and "codebook")."""
    for n, m in named:
        if type(m) is not Linear:
            return f"{n} is {type(m).__module__}.{type(m).__qualname__}, not kbit.Linear"
        if m._forward_hooks or m._forward_pre_hooks:
            return f"{n} has forward hooks"
        if "forward" in m.__dict__:
            return f"{n} has its own forward"
    n0, m0 = first or named[0]
    for n, m in named:
        if m is m0:
            continue
        for what in same:
            if what == "codebook":
                a, b = m0.weight.codebook, m.weight.codebook
                comparable = a.device.type != "meta" and b.device.type != "meta"
                if a.shape != b.shape or (comparable and not torch.equal(a, b)):
                    return f"{n0} and {n} have different codebooks"
            elif _SHARED[what](m0) != _SHARED[what](m):
                return f"{n0} and {n} differ in {what} ({_SHARED[what](m0)} / {_SHARED[what](m)})"
    return None

"""QuantizedBuffers: one QuantizedWeight held as module buffers (the building block of kbit.nn).

Why a child module and these hooks: the GEMM kernels want the private *tiled* layout in
memory, while checkpoints must hold the stable *flat* layout (docs/format.md). Keeping the
tiled tensors as ordinary buffers lets ``model.to(device)``, ``copy.deepcopy`` and
``share_memory()`` work through normal PyTorch machinery, and two hooks translate at the
edges: ``_save_to_state_dict`` writes ``QuantizedWeight.state_dict()`` (flat ``packed``,
``absmax``, ``row_scale``, ``codebook`` and the int64 ``meta``; every tensor its own
contiguous storage, so safetensors can store it) and ``_load_from_state_dict`` validates the
flat tensors with ``QuantizedWeight.from_state_dict`` and repacks them. Storing flat buffers
and repacking lazily instead would need a tiled cache outside the buffers, which
``.to(device)`` would not move. The flat -> tiled -> flat round trip is lossless, so a saved
and reloaded layer is bit-identical.
"""
from __future__ import annotations

import torch
from torch import nn

from ..codebooks import codebook as default_codebook, is_default_codebook
from ..quantized import QuantizedWeight

__all__ = ["QuantizedBuffers"]

_NAMES = ("packed", "absmax", "row_scale", "codebook")
_STATE_KEYS = _NAMES + ("meta",)
# Floating tensors are passed to Module._apply's function as same-size integer views, so a
# model-wide dtype cast (``model.half()``, ``model.to(torch.bfloat16)``) moves them between
# devices but never rounds them.
_INT_VIEW = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}


def apply_keep_dtype(fn, t: torch.Tensor, what: str) -> torch.Tensor:
    """``fn(t)`` (a Module._apply function) with t's dtype preserved: device moves,
    ``share_memory_``, ``to_empty`` etc. apply, floating-point casts do not."""
    view = _INT_VIEW.get(t.dtype)
    out = fn(t.view(view) if view is not None else t)
    if out.dtype != (view or t.dtype):
        raise TypeError(f"kbit: {what} cannot change dtype (a quantized tensor is {t.dtype}); "
                        f"move the module with .to(device) or .to(torch.float16 / torch.bfloat16)")
    if not out.is_contiguous():  # e.g. Module.to(memory_format=...) on the 5-D packed words
        out = out.contiguous()
    return out.view(t.dtype) if view is not None else out


def probe_dtype(fn, dtype: torch.dtype) -> torch.dtype:
    """The dtype Module._apply's function turns a floating ``dtype`` tensor into."""
    return fn(torch.empty(0, dtype=dtype)).dtype


def _tiled_shapes(shape, k):
    *lead, n, kdim = shape
    nt, g = (n + 15) // 16, (kdim + 255) // 256
    return tuple(lead) + (nt, g, k, 32, 4), tuple(lead) + (nt, g, 128), tuple(lead) + (n,)


class QuantizedBuffers(nn.Module):
    """A ``[N, K]`` matrix or ``[E, N, K]`` expert stack quantized to k bits, as buffers.

    Buffers (tiled layout, the GEMM's): ``packed`` int32, ``absmax`` uint8, ``row_scale``
    float32 ``[*, N]``, ``codebook`` float32 ``[2^k]``. Attributes: ``k``, ``shape``,
    ``weight_dtype`` (the dtype of the weight that was quantized; saved in ``meta``).
    State dict keys: ``packed, absmax, row_scale, codebook, meta`` in the flat layout
    (exactly :meth:`kbit.QuantizedWeight.state_dict`). Loading accepts a different k or
    codebook (the buffers are replaced) but not a different shape.

    ``QuantizedBuffers(shape, k)`` holds an all-zero weight (a placeholder to load into).
    """

    _load_layout = "tiled"  # the layout _load_from_state_dict hands _set

    def __init__(self, shape, k: int = 4, weight_dtype: torch.dtype = torch.float16, device=None):
        super().__init__()
        shape = tuple(int(s) for s in shape)
        if len(shape) not in (2, 3) or min(shape) < 1 or shape[-1] % 32:
            raise ValueError(f"kbit: a quantized weight needs shape [N, K] or [E, N, K] with K a "
                             f"positive multiple of 32 (got {shape})")
        cb = default_codebook(k)  # also checks k
        p_shape, a_shape, rs_shape = _tiled_shapes(shape, k)
        # (QuantizedBuffers._set itself: an all-zero weight with row scales 1 is the same in any row order)
        QuantizedBuffers._set(self, QuantizedWeight(torch.zeros(p_shape, dtype=torch.int32, device=device),
                                                    torch.zeros(a_shape, dtype=torch.uint8, device=device),
                                                    torch.ones(rs_shape, dtype=torch.float32, device=device),
                                                    cb.to(device), k, shape, weight_dtype, "tiled"))

    @classmethod
    def from_quantized(cls, qw: QuantizedWeight) -> "QuantizedBuffers":
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        self._set(qw)
        return self

    def _set(self, qw: QuantizedWeight) -> None:
        qw = qw.to_layout("tiled")
        for name in _NAMES:
            self.register_buffer(name, getattr(qw, name).contiguous())
        self.k, self.shape, self.weight_dtype = qw.k, qw.shape, qw.dtype

    def quantized(self) -> QuantizedWeight:
        """The buffers as a :class:`kbit.QuantizedWeight` (tiled; shares their storage)."""
        return QuantizedWeight(self.packed, self.absmax, self.row_scale, self.codebook, self.k,
                               self.shape, self.weight_dtype, "tiled")

    @property
    def device(self) -> torch.device:
        return self.packed.device

    @property
    def nbytes(self) -> int:
        """Bytes held in memory (tiled layout, including tile padding)."""
        return sum(b.numel() * b.element_size() for b in self.buffers())

    def extra_repr(self) -> str:
        n = 1
        for s in self.shape:
            n *= s
        cb = "normal-float" if is_default_codebook(self.codebook, self.k) else "custom"
        return (f"shape={self.shape}, k={self.k}, codebook={cb}, size={self.nbytes / 2**20:.3f} MiB "
                f"({8 * self.nbytes / n:.2f} bits/weight)")

    # ---- PyTorch machinery ------------------------------------------------------------
    def _apply(self, fn, recurse=True):
        for name in _NAMES:
            self._buffers[name] = apply_keep_dtype(fn, self._buffers[name], f"{type(self).__name__}.{name}")
        return self

    def _state_weight(self) -> QuantizedWeight:
        """The weight the state dict holds (any layout: state_dict() writes the flat one)."""
        return self.quantized()

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for key, t in self._state_weight().state_dict().items():
            destination[prefix + key] = t

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        missing = [prefix + key for key in _STATE_KEYS if prefix + key not in state_dict]
        missing_keys.extend(missing)
        if strict:
            unexpected_keys.extend(key for key in state_dict
                                   if key.startswith(prefix) and key[len(prefix):] not in _STATE_KEYS)
        if missing:
            return
        sd = {key: state_dict[prefix + key] for key in _STATE_KEYS}
        try:
            qw = QuantizedWeight.from_state_dict(sd, layout=self._load_layout)
        except ValueError as e:
            error_msgs.append(f"While loading the quantized weight {prefix[:-1] or '(root)'}: {e}")
            return
        if qw.shape != self.shape:
            error_msgs.append(f"size mismatch for {prefix[:-1] or '(root)'}: the checkpoint holds a "
                              f"quantized weight of shape {qw.shape}, this module has {self.shape}")
            return
        if not local_metadata.get("assign_to_params_buffers", False):
            qw = qw.to(self.device)  # load_state_dict keeps the module's device
        self._set(qw)

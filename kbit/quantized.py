"""QuantizedWeight: a k-bit quantized [N, K] matrix or [E, N, K] expert stack."""
from __future__ import annotations

from typing import Dict, Tuple

import torch

from . import _C  # noqa: F401  (registers torch.ops.kbit)
from .codebooks import check_codebook, is_default_codebook

__all__ = ["QuantizedWeight", "FORMAT_VERSION"]

#: Version of the flat, serialized format (docs/format.md). Bumped on any change.
FORMAT_VERSION = 1
LAYOUTS = ("flat", "tiled")
_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
_DTYPE_CODE = {torch.float16: 0, torch.bfloat16: 1, torch.float32: 2}
_CODE_DTYPE = {v: k for k, v in _DTYPE_CODE.items()}


class QuantizedWeight:
    """Quantized weights plus everything needed to use them.

    Attributes:
        packed: int32 indices, flat ``[*, N, K/32, k]`` (bit-planes) or tiled (the GEMM layout).
        absmax: uint8 E4M4 block scales, flat ``[*, N, K/32]`` or tiled.
        row_scale: float32 ``[*, N]`` power-of-two per-row scales.
        codebook: float32 ``[2^k]``.
        k: bits per weight index (2..5).
        shape: ``(N, K)`` or ``(E, N, K)`` of the original weight.
        dtype: the original weight dtype (the default of :func:`kbit.dequantize`).
        layout: ``"flat"`` or ``"tiled"``.

    Build one with :func:`kbit.quantize`; move with :meth:`to`; save with ``torch.save``
    or :meth:`state_dict` (always written in the stable flat layout).
    """

    __slots__ = ("packed", "absmax", "row_scale", "codebook", "k", "shape", "dtype", "layout")

    def __init__(self, packed, absmax, row_scale, codebook, k, shape, dtype, layout):
        if layout not in LAYOUTS:
            raise ValueError(f"kbit: layout must be one of {LAYOUTS} (got {layout!r})")
        self.packed = packed
        self.absmax = absmax
        self.row_scale = row_scale
        self.codebook = codebook
        self.k = int(k)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype
        self.layout = layout

    # ---- shape and size -------------------------------------------------------------
    @property
    def num_experts(self) -> int:
        """E for an expert stack, 0 for a plain matrix."""
        return self.shape[0] if len(self.shape) == 3 else 0

    @property
    def out_features(self) -> int:
        return self.shape[-2]

    @property
    def in_features(self) -> int:
        return self.shape[-1]

    @property
    def device(self) -> torch.device:
        return self.packed.device

    @property
    def nbytes(self) -> int:
        """Bytes held by the quantized tensors (indices, absmax, row scales, codebook)."""
        return sum(t.numel() * t.element_size()
                   for t in (self.packed, self.absmax, self.row_scale, self.codebook))

    @property
    def bits_per_weight(self) -> float:
        n = 1
        for s in self.shape:
            n *= s
        return 8.0 * self.nbytes / max(n, 1)

    def __repr__(self) -> str:
        cb = "normal-float" if is_default_codebook(self.codebook, self.k) else "custom"
        mib = self.nbytes / 2**20
        return (f"QuantizedWeight(shape={self.shape}, k={self.k}, codebook={cb}, "
                f"layout={self.layout}, dtype={str(self.dtype).replace('torch.', '')}, "
                f"device={self.device}, size={mib:.3f} MiB, {self.bits_per_weight:.3f} bits/weight)")

    # ---- movement and layout --------------------------------------------------------
    def _replace(self, **kw) -> "QuantizedWeight":
        fields = {s: getattr(self, s) for s in self.__slots__}
        fields.update(kw)
        return QuantizedWeight(**fields)

    def to(self, device=None, non_blocking: bool = False) -> "QuantizedWeight":
        """The same weight on another device (a new object; self is unchanged)."""
        if device is None:
            return self
        mv = lambda t: t.to(device=device, non_blocking=non_blocking)  # noqa: E731
        return self._replace(packed=mv(self.packed), absmax=mv(self.absmax),
                             row_scale=mv(self.row_scale), codebook=mv(self.codebook))

    def cuda(self, device=None) -> "QuantizedWeight":
        return self.to(torch.device("cuda", device) if isinstance(device, int) else (device or "cuda"))

    def cpu(self) -> "QuantizedWeight":
        return self.to("cpu")

    def to_layout(self, layout: str) -> "QuantizedWeight":
        """This weight in the ``"flat"`` or ``"tiled"`` layout (self if already there)."""
        if layout not in LAYOUTS:
            raise ValueError(f"kbit: layout must be one of {LAYOUTS} (got {layout!r})")
        if layout == self.layout:
            return self
        if layout == "tiled":
            p, a = torch.ops.kbit.repack(self.packed, self.absmax)
        else:
            p, a = torch.ops.kbit.unrepack(self.packed, self.absmax, self.shape[-2], self.shape[-1])
        return self._replace(packed=p, absmax=a, layout=layout)

    # ---- serialization --------------------------------------------------------------
    def state_dict(self) -> Dict[str, torch.Tensor]:
        """Tensors only (safetensors-compatible), in the stable flat layout.

        Keys: packed, absmax, row_scale, codebook, meta. ``meta`` is int64
        ``[FORMAT_VERSION, k, E (0 if 2-D), N, K, dtype code]``.
        """
        flat = self.to_layout("flat")
        e = self.num_experts
        meta = torch.tensor([FORMAT_VERSION, self.k, e, self.shape[-2], self.shape[-1],
                             _DTYPE_CODE[self.dtype]], dtype=torch.int64)
        return {"packed": flat.packed, "absmax": flat.absmax, "row_scale": flat.row_scale,
                "codebook": flat.codebook, "meta": meta}

    @classmethod
    def from_state_dict(cls, sd: Dict[str, torch.Tensor], layout: str = "tiled") -> "QuantizedWeight":
        """Rebuild from :meth:`state_dict` output, checking every tensor against ``meta``.

        A truncated, corrupted or mismatched state dict raises ValueError naming the problem.
        """
        missing = [key for key in ("packed", "absmax", "row_scale", "codebook", "meta") if key not in sd]
        if missing:
            raise ValueError(f"kbit: QuantizedWeight state dict is missing {missing}")
        meta = sd["meta"]
        if not isinstance(meta, torch.Tensor) or meta.dtype != torch.int64 or meta.shape != (6,):
            raise ValueError("kbit: QuantizedWeight state dict 'meta' must be an int64 tensor of 6 values")
        version, k, e, n, kdim, dcode = (int(v) for v in meta.tolist())
        if version != FORMAT_VERSION:
            raise ValueError(f"kbit: state dict has format version {version}; this kbit reads "
                             f"version {FORMAT_VERSION}")
        if k not in (2, 3, 4, 5) or dcode not in _CODE_DTYPE or n < 1 or kdim < 32 or kdim % 32 or e < 0:
            raise ValueError(f"kbit: QuantizedWeight state dict has invalid meta {meta.tolist()}")
        lead = (e, n) if e else (n,)
        expect = {"packed": (lead + (kdim // 32, k), torch.int32),
                  "absmax": (lead + (kdim // 32,), torch.uint8),
                  "row_scale": (lead, torch.float32)}
        for key, (shape, dtype) in expect.items():
            t = sd[key]
            if not isinstance(t, torch.Tensor) or tuple(t.shape) != shape or t.dtype != dtype:
                got = (tuple(t.shape), t.dtype) if isinstance(t, torch.Tensor) else type(t).__name__
                raise ValueError(f"kbit: state dict '{key}' must be {dtype} of shape {shape} "
                                 f"(got {got}): truncated or corrupted?")
        rs = sd["row_scale"]
        ok = (rs > 0) & torch.isfinite(rs) & (torch.frexp(rs).mantissa == 0.5)
        if not ok.all():
            raise ValueError("kbit: state dict 'row_scale' holds values that are not positive powers "
                             "of two: corrupted?")
        if not isinstance(sd["codebook"], torch.Tensor) or sd["codebook"].dtype != torch.float32:
            raise ValueError("kbit: state dict 'codebook' must be a float32 tensor: corrupted?")
        cb = check_codebook(sd["codebook"], k).to(rs.device)
        shape = (e, n, kdim) if e else (n, kdim)
        qw = cls(sd["packed"].contiguous(), sd["absmax"].contiguous(), rs.contiguous(), cb, k, shape,
                 _CODE_DTYPE[dcode], "flat")
        return qw.to_layout(layout)

    def __reduce__(self):
        return (_rebuild_quantized_weight, ({k: v.cpu() for k, v in self.state_dict().items()},
                                            self.layout, str(self.device)))


def _rebuild_quantized_weight(sd, layout, device):
    # Back on the device it was saved from when that device exists here, else on the CPU.
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        dev = torch.device("cpu")
    return QuantizedWeight.from_state_dict(sd, layout=layout).to(dev)


# torch.load(weights_only=True) may rebuild QuantizedWeight objects.
torch.serialization.add_safe_globals([_rebuild_quantized_weight])

"""kbit.nn: modules with k-bit quantized weights.

* :class:`Linear` - nn.Linear replacement (``kbit.Linear.from_linear(linear, k=4)``).
* :class:`Experts` - routed MoE experts over stacked quantized gate/up and down weights.
* :func:`quantize_model` - replace a model's nn.Linear layers in place, with a summary.
* :func:`fuse_projections` - fuse sibling kbit.Linear layers read on one input (q/k/v, gate/up) into one, and
  gated MLPs into :class:`GatedMLP` (the gate/up call writes silu(gate) * up).
* :class:`QuantizedBuffers` - one quantized weight as buffers (tiled in memory, flat in the
  state dict); :func:`register_converter` - teach quantize_model a new module type.
"""
from .buffers import QuantizedBuffers
from .convert import QuantizeSummary, quantize_model, register_converter
from .experts import Experts
from .fused import LinearSlice, fuse_projections
from .gated_mlp import GatedMLP, SiluGateUp
from .linear import Linear, NotConvertible

__all__ = ["Linear", "Experts", "quantize_model", "register_converter", "QuantizeSummary",
           "QuantizedBuffers", "NotConvertible", "fuse_projections", "LinearSlice", "GatedMLP", "SiluGateUp"]

"""kbit: k-bit (k = 2..5) codebook weight quantization with fused dequantize + matmul.

    import kbit
    qw = kbit.quantize(W, k=4)          # W [N, K] -> QuantizedWeight
    y = kbit.gemm(x, qw)                # x [..., K] -> [..., N]
    W_hat = kbit.dequantize(qw)

All ops are registered as ``torch.ops.kbit.*`` (CPU always; CUDA when built with nvcc).
"""
import torch  # noqa: F401  (loads libtorch before our extension)

from . import _C  # noqa: F401  (registers torch.ops.kbit)
from . import _fake  # noqa: F401  (fake kernels for torch.compile)
from .api import dequantize, gemm, grouped_gemm, quantize, router_topk
from .codebooks import codebook
from .nn import Experts, Linear, fuse_projections, quantize_model
from .quantized import FORMAT_VERSION, QuantizedWeight

__version__ = "0.1.0"

__all__ = ["quantize", "dequantize", "gemm", "grouped_gemm", "router_topk", "codebook", "QuantizedWeight",
           "FORMAT_VERSION", "cuda_kernels_compiled", "Linear", "Experts", "quantize_model", "fuse_projections"]


def cuda_kernels_compiled() -> bool:
    """True when this build of kbit contains the CUDA kernels."""
    return bool(_C.cuda_kernels_compiled())

"""Weight formats of the peer kernels (PyTorch int4 tinygemm, fp8 row-wise), with the float
values each format really holds, so their outputs can be checked like kbit's."""
from __future__ import annotations

from typing import Tuple

import torch

INT4_GROUP = 128
INT4_INNER_K_TILES = 8
FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0


def int4_quantize(w: torch.Tensor, group: int = INT4_GROUP) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Asymmetric 4-bit, one (scale, zero) per `group` weights along K (tinygemm's convention).

    Returns q int32 [N, K] in 0..15, scales_and_zeros bf16 [K/group, N, 2], and the float32
    weight they represent: (q - 8) * scale + zero, computed from the bf16 scale and zero.
    """
    n, kdim = w.shape
    g = w.float().reshape(n, kdim // group, group)
    lo = g.amin(-1, keepdim=True)
    hi = g.amax(-1, keepdim=True)
    scale = (hi - lo).clamp(min=1e-6) / 15
    q = ((g - lo) / scale).round().clamp(0, 15)
    zero = lo + 8 * scale
    sz = torch.cat([scale, zero], dim=-1).transpose(0, 1).contiguous().to(torch.bfloat16)  # [G, N, 2]
    s16 = sz[..., 0].transpose(0, 1).float().unsqueeze(-1)
    z16 = sz[..., 1].transpose(0, 1).float().unsqueeze(-1)
    deq = ((q - 8) * s16 + z16).reshape(n, kdim)
    return q.to(torch.int32).reshape(n, kdim), sz, deq


def int4_pack_cuda(q: torch.Tensor, inner_k_tiles: int = INT4_INNER_K_TILES) -> torch.Tensor:
    """q int32 [N, K] -> the tiled int32 tensor _weight_int4pack_mm reads on CUDA (two 4-bit values
    per byte, the even-k one in the high nibble, then _convert_weight_to_int4pack)."""
    pairs = ((q[:, ::2] << 4) | q[:, 1::2]).to(torch.uint8)
    return torch.ops.aten._convert_weight_to_int4pack(pairs, inner_k_tiles)


def fp8_rowwise(t: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-row scaled e4m3: (t8 [R, C] fp8, scale [R, 1] float32, the float32 value t8 * scale)."""
    tf = t.float()
    scale = tf.abs().amax(dim=1, keepdim=True).clamp_min(1e-12) / FP8_MAX
    t8 = (tf / scale).to(FP8)
    return t8, scale, t8.float() * scale

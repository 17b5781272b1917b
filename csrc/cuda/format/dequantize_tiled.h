#pragma once
// Entry points of dequantize.cu for other CUDA host code (the dequantize + cuBLAS path).
#include <ATen/ATen.h>

#include "../../common/checks.h"

namespace kbit {
namespace cuda {

// The tiled weight of geometry g dequantized with each row scale taken as min(row_scale, scale_cap) (a NaN scale
// stays NaN): cb[i] * e4m4(code) * that, [E, N, K] or [N, K] in dtype, on the current stream. Row scales are powers
// of two, so with a power-of-two cap the rows past it are the weights over row_scale / scale_cap, exactly (the
// caller multiplies their outputs back). The caller has checked the tensors against g; row_scale and codebook are
// contiguous.
at::Tensor dequantize_tiled_capped(const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                  const at::Tensor& row_scale, const at::Tensor& codebook, const WeightGeometry& g,
                                  float scale_cap, at::ScalarType dtype);

// Tuning aid (kbit._C._set_dequant_parts): each tile of the tiled dequantize split into `parts` work items (1, 2, 4
// or 8; 0, the default: the rule, the most parts whose items the GPU's resident warps take in one round).
// Returns the previous setting.
int set_dequant_tiled_parts(int64_t parts);
// The work items a launch over `tiles` tiles splits each into on the current device (the rule or the aid's count):
// kbit._C._dequant_parts.
int dequant_tiled_parts(int64_t tiles);

}  // namespace cuda
}  // namespace kbit

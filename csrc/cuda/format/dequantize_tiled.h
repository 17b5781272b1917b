#pragma once
// Entry points of dequantize.cu for other CUDA host code (the dequantize + cuBLAS path).
#include <ATen/ATen.h>

#include "../../common/checks.h"

namespace kbit {
namespace cuda {

// The tiled weight of geometry g dequantized *without* its row scales (cb[i] * e4m4(code):
// the row-normalized weights, |w| <= 248), [E, N, K] or [N, K] in dtype, on the current
// stream. The caller has checked the tensors against g; codebook is contiguous.
at::Tensor dequantize_tiled_unscaled(const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                     const at::Tensor& codebook, const WeightGeometry& g, at::ScalarType dtype);

}  // namespace cuda
}  // namespace kbit

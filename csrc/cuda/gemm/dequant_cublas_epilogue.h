#pragma once
#include <ATen/ATen.h>

namespace kbit {
namespace cuda {

// The epilogue of the dequantize + cuBLAS path, one launch after cuBLAS: y[m, n] *= row_scale[n] / scale_cap for
// the columns whose row scale is above scale_cap (both powers of two: an exact factor of 2 or more), where the
// dequantize pass took the cap for the row scale (dequantize_tiled_capped). Each CTA checks its columns' scales and
// returns at once when none is past the cap (every row of a weight whose values fit y's dtype).
// y: contiguous [M, N] (fp16 or bf16); row_scale: contiguous fp32 [N]. Current stream.
void dequant_cublas_epilogue(at::Tensor& y, const at::Tensor& row_scale, float scale_cap);

}  // namespace cuda
}  // namespace kbit

#pragma once
#include <ATen/ATen.h>

namespace kbit {
namespace cuda {

// The epilogue of the dequantize + cuBLAS path, one launch after cuBLAS:
// - y[m, n] *= row_scale[n] / scale_cap for the columns whose row scale is above scale_cap (both powers of two: an
//   exact factor of 2 or more), where the dequantize pass took the cap for the row scale (dequantize_tiled_capped).
//   Each CTA checks its columns' scales and skips this at once when none is past the cap (every row of a weight
//   whose values fit y's dtype).
// - the dequantized weight's L2 lines are discarded (discard.global.L2: dropped without a write-back to DRAM; W is
//   dead once cuBLAS has read it), where the aid below allows it and W is at most twice L2's size.
// y: contiguous [M, N] (fp16 or bf16); row_scale: contiguous fp32 [N]; W: the workspace cuBLAS read. Current stream.
void dequant_cublas_epilogue(at::Tensor& y, const at::Tensor& row_scale, float scale_cap, const at::Tensor& W);

// Tuning aid (kbit._C._set_dequant_cublas_l2_discard): whether the epilogue discards W's L2 lines (default true);
// returns the previous setting.
bool set_dequant_cublas_l2_discard(bool discard);

}  // namespace cuda
}  // namespace kbit

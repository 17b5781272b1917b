#pragma once
// One cuBLASLt matmul that applies the weights' row scales in its epilogue (the dequantize + cuBLAS path).
#include <ATen/ATen.h>

namespace kbit {
namespace cuda {

// y[m, n] = row_scale[n] * sum_k x[m, k] Wn[n, k], accumulated in fp32 and rounded once to y's dtype, where cuBLASLt
// has an algorithm for it: x [M, K] with unit column stride, Wn [N, K] and y [M, N] contiguous, all fp16 or all bf16,
// row_scale contiguous fp32 [N], M, N, K > 0. Split-K partial sums are kept in fp32 (the compute-type reduction
// scheme only). Returns false without launching anything where it does not apply or no algorithm is found; the
// caller then takes the unfused form. Current stream; PyTorch's cuBLASLt handle and workspace.
bool lt_scaled_gemm_into(const at::Tensor& x, const at::Tensor& Wn, const at::Tensor& row_scale, at::Tensor& y);

// Whether the dequantize + cuBLAS path tries lt_scaled_gemm_into first (default on; the tuning aid
// kbit._C._set_dequant_lt_epilogue turns it off for A/B runs and tests of the unfused form).
bool lt_epilogue_enabled();

}  // namespace cuda
}  // namespace kbit

#pragma once
// The CUDA implementations behind the `gemm` op; gemm_cuda.cpp picks one per call.
#include <ATen/ATen.h>

#include "../../common/checks.h"

namespace kbit {
namespace cuda {

// Dequantize W into x's dtype, then cuBLAS (any M).
at::Tensor gemm_dequant_cublas(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                               const at::Tensor& row_scale, const at::Tensor& codebook, int64_t k,
                               const WeightGeometry& g);

// Grouped: read expert_offsets on the host (validated there), then dequantize + cuBLAS
// per expert with tokens. Synchronizes with the host: not CUDA-graph capturable.
at::Tensor grouped_gemm_dequant_cublas(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                       const at::Tensor& row_scale, const at::Tensor& codebook,
                                       const at::Tensor& expert_offsets, int64_t k, const WeightGeometry& g);

}  // namespace cuda
}  // namespace kbit

#pragma once
// The CUDA implementations behind the `gemm` op; gemm_cuda.cpp picks one per call.
#include <ATen/ATen.h>

#include <optional>

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

// kbit::grouped_gemm_slots' kernel: the grouped GEMV by slot (TcGemmArgs::slot_x_div) over top_k_index [T, r]
// (checked by the caller: x [T, K], S = T r slots of one row each, y row s = x row s / r @ W[top_k_index.flatten()[s]]^T,
// NaN for an id outside [0, E); gated_silu: grouped_gemm_silu_and_mul's epilogue, [S, N / 2]). nullopt where it does
// not take the call: no slots, more than kGemvMaxSlots (32) slots, more than kTcMaxExperts stacked experts, or a GEMV
// plan other than its kernel's (the tuning aids); the caller composes the op then.
std::optional<at::Tensor> grouped_gemv_slots(const at::Tensor& x, const at::Tensor& packed_t,
                                             const at::Tensor& absmax_t, const at::Tensor& row_scale,
                                             const at::Tensor& codebook, const at::Tensor& top_k_index,
                                             const WeightGeometry& g, bool gated_silu);

}  // namespace cuda
}  // namespace kbit

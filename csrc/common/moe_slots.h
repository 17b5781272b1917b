#pragma once
// kbit::grouped_gemm_slots (schema and what it computes: csrc/registration.cpp): its argument rules, and its form
// composed of other kbit ops on any device (the CPU kernel; CUDA where the grouped GEMV by slot does not take the
// call, csrc/cuda/gemm/gemm_paths.h grouped_gemv_slots).
#include <torch/types.h>

#include <cstdint>

#include "checks.h"

namespace kbit {

// grouped_gemm's rules on x [T, K] and the stacked weight, top_k_index [T, r] int32 / int64 on x's device, and with
// silu_and_mul grouped_gemm_silu_and_mul's on the weight's rows (N % 16 == 0). Returns the weight's geometry.
WeightGeometry check_grouped_gemm_slots_args(const at::Tensor& x, const at::Tensor& packed_t,
                                             const at::Tensor& absmax_t, const at::Tensor& row_scale,
                                             const at::Tensor& codebook, const at::Tensor& top_k_index, int64_t k,
                                             bool silu_and_mul);

// The op through moe_route_gather, grouped_gemm (or grouped_gemm_silu_and_mul) and the rows put back in slot order;
// the rows of ids outside [0, E) NaN. Checks its arguments.
at::Tensor grouped_gemm_slots_composite(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                        const at::Tensor& row_scale, const at::Tensor& codebook,
                                        const at::Tensor& top_k_index, int64_t k, bool silu_and_mul);

}  // namespace kbit

#pragma once
// The MoE glue ops (kbit.Experts' forward around its two grouped GEMMs) in ATen ops, on any device:
// the CPU kernels, and the CUDA moe_route's path past its one-CTA kernel's sizes. Rules in
// moe_checks.h; the schemas and what they compute in csrc/registration.cpp.
#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <tuple>

namespace kbit {

std::tuple<at::Tensor, at::Tensor, at::Tensor> moe_route_aten(const at::Tensor& top_k_index, int64_t num_experts);
at::Tensor moe_gather_aten(const at::Tensor& x, const at::Tensor& row_token);
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> moe_route_gather_aten(const at::Tensor& top_k_index,
                                                                                  int64_t num_experts,
                                                                                  const at::Tensor& x);
at::Tensor silu_and_mul_aten(const at::Tensor& h, bool interleaved);
// kbit::silu_and_mul(h, interleaved=true) on h's device (the dispatcher's op): h [T, N] a gate/up GEMM's output whose
// columns are interleaved in 8s (kbit.Experts' gate/up rows: 8 gate columns, then the same 8 outputs' up columns,
// ...; N % 16 == 0). grouped_gemm_silu_and_mul where no kernel fuses it.
at::Tensor silu_and_mul_interleaved(const at::Tensor& h);
// grouped_gemm_silu_and_mul's rule on the weight's rows (N = rows).
void check_gated_rows(int64_t rows, const char* op);
// kbit::router_topk: the ranking by a stable descending sort of the fp32 logits (NaN first), the weights from
// at::softmax.
std::tuple<at::Tensor, at::Tensor> router_topk_aten(const at::Tensor& logits, int64_t top_k, bool normalize);
at::Tensor moe_combine_aten(const at::Tensor& y, const at::Tensor& top_k_weights, const at::Tensor& top_k_index,
                            const std::optional<at::Tensor>& pair_row, int64_t num_experts);

}  // namespace kbit

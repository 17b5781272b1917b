#pragma once
// Argument rules of the MoE glue ops (moe_route, moe_gather, moe_route_gather, silu_and_mul, moe_combine), shared by the CPU and
// CUDA kernels; kbit/_fake.py mirrors the metadata ones. Each message names the argument and the rule.
#include <torch/types.h>

#include <cstdint>
#include <optional>

namespace kbit {

// moe_route: top_k_index [T, topk] int32 / int64, num_experts >= 1.
void check_moe_route_args(const at::Tensor& top_k_index, int64_t num_experts);
// moe_route_gather: moe_route's, and x [T, H] float16 / bfloat16 / float32 on top_k_index's device, T its rows.
void check_moe_route_gather_args(const at::Tensor& top_k_index, int64_t num_experts, const at::Tensor& x);
// moe_gather: x [T, H] float16 / bfloat16 / float32, row_token [P] int64 / int32, on x's device.
void check_moe_gather_args(const at::Tensor& x, const at::Tensor& row_token);
// silu_and_mul: h [R, 2 I] float16 / bfloat16 / float32; interleaved: 2 I % 16 == 0.
void check_silu_and_mul_args(const at::Tensor& h, bool interleaved);
// moe_combine: y [T topk, H] float16 / bfloat16 / float32, top_k_weights [T, topk] float16 / bfloat16 /
// float32 / float64,
// top_k_index [T, topk] int32 / int64, pair_row [T topk] int32 (moe_route's) or none, all on y's device.
void check_moe_combine_args(const at::Tensor& y, const at::Tensor& top_k_weights, const at::Tensor& top_k_index,
                            const std::optional<at::Tensor>& pair_row, int64_t num_experts);
// router_topk: logits [T, E] float16 / bfloat16 / float32, 0 <= top_k <= E.
void check_router_topk_args(const at::Tensor& logits, int64_t top_k);

}  // namespace kbit

#pragma once
// The CUDA kernels of the MoE glue ops that other glue ops fall back on (moe_route_gather past its fused kernel's
// sizes runs moe_route's and moe_gather's). Rules in ../../common/moe_checks.h.
#include <ATen/ATen.h>
#include <vector_types.h>

#include <cstdint>
#include <tuple>

namespace kbit {
namespace cuda {

std::tuple<at::Tensor, at::Tensor, at::Tensor> moe_route_cuda(const at::Tensor& top_k_index, int64_t num_experts);
at::Tensor moe_gather_cuda(const at::Tensor& x, const at::Tensor& row_token);

// The widest bit-copy unit (16, 8, 4 or 2 bytes) that divides a row's bytes and both rows' starts.
int row_copy_bytes(int64_t row_bytes, const void* src, const void* dst);

// Calls launch(V{}) with V the type of that unit (uint4, uint2, uint32_t or uint16_t): the row-copy kernels'
// template argument.
template <typename Launch>
void with_row_copy_unit(int64_t row_bytes, const void* src, const void* dst, Launch&& launch) {
  switch (row_copy_bytes(row_bytes, src, dst)) {
    case 16: launch(uint4{}); break;
    case 8: launch(uint2{}); break;
    case 4: launch(uint32_t{}); break;
    default: launch(uint16_t{});
  }
}

}  // namespace cuda
}  // namespace kbit

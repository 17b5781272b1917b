// kbit::moe_route on CUDA: kbit.Experts' token sort in one single-CTA kernel (it was nine torch ops:
// validity masks, a stable sort, searchsorted, a division; ~2 us each at decode in a CUDA graph).
//   offsets[e]  = first row of expert e, offsets[E] = T topk
//   row_token[r] = the token of row r's pair (for moe_gather), pair_row[p] = the row of pair p.
// The sort (route_sort.cuh) places pairs serially in P / 32, so past kMaxFusedPairs pairs (prefill) and
// past kMaxFusedExperts the op runs moe_route_aten (ATen's sort) instead.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "../../common/moe_aten.h"
#include "../../common/moe_checks.h"
#include "../common/dependent_launch.cuh"
#include "../common/dependent_launch.h"
#include "moe_cuda.h"
#include "route_sort.cuh"

namespace kbit {
namespace cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int64_t kMaxFusedPairs = 4096;
constexpr int64_t kMaxFusedExperts = 8191;

// Shared memory: route_sort.cuh's (cursor, warp_base, key).
template <typename Id>
__global__ void __launch_bounds__(kThreads) moe_route_kernel(const Id* __restrict__ ids, int32_t P, int32_t E,
                                                             int32_t topk, int32_t* __restrict__ offsets,
                                                             int64_t* __restrict__ row_token,
                                                             int32_t* __restrict__ pair_row) {
  extern __shared__ int32_t smem[];
  // Launched with PDL (dependent_launch.cuh): the ids (the router's output) are read after the wait.
  allow_dependents();
  route_sort_zero<kThreads>(smem, E);
  grid_dependency_wait();
  route_sort<kThreads>(
      ids, P, E, smem, [&](int32_t e, int32_t row) { offsets[e] = row; },
      [&](int32_t p, int32_t row) {
        pair_row[p] = row;
        row_token[row] = p / topk;
      });
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> moe_route_cuda(const at::Tensor& top_k_index, int64_t num_experts) {
  check_moe_route_args(top_k_index, num_experts);
  const int64_t P = top_k_index.numel();
  if (P > kMaxFusedPairs || num_experts > kMaxFusedExperts || P == 0) return moe_route_aten(top_k_index, num_experts);
  const c10::cuda::CUDAGuard guard(top_k_index.device());
  const at::Tensor ids = top_k_index.contiguous();
  const auto opts = ids.options();
  at::Tensor offsets = at::empty({num_experts + 1}, opts.dtype(at::kInt));
  at::Tensor row_token = at::empty({P}, opts.dtype(at::kLong));
  at::Tensor pair_row = at::empty({P}, opts.dtype(at::kInt));
  const int smem = static_cast<int>(4 * route_sort_ints(num_experts, P));  // <= 49 KB at the limits above
  const auto stream = at::cuda::getCurrentCUDAStream();
  const bool dependent = dependent_launch_enabled();
  const auto launch = [&](auto kernel, const auto* id_ptr) {
    if (smem > 48 * 1024)
      C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    launch_kernel(kernel, dim3(1), dim3(kThreads), smem, stream, dependent, id_ptr, static_cast<int32_t>(P),
                  static_cast<int32_t>(num_experts), static_cast<int32_t>(ids.size(1)), offsets.data_ptr<int32_t>(),
                  row_token.data_ptr<int64_t>(), pair_row.data_ptr<int32_t>());
  };
  if (ids.scalar_type() == at::kLong) launch(moe_route_kernel<int64_t>, ids.data_ptr<int64_t>());
  else launch(moe_route_kernel<int32_t>, ids.data_ptr<int32_t>());
  return {offsets, row_token, pair_row};
}

}  // namespace cuda

TORCH_LIBRARY_IMPL(kbit, CUDA, m) { m.impl("moe_route", &cuda::moe_route_cuda); }

}  // namespace kbit

// kbit::moe_route_gather on CUDA: moe_route and moe_gather in one kernel, one link fewer in kbit.Experts' PDL chain
// at decode (session 58: the gather's kernel cost a decode step 0.4-1.9 us, the route's 0.8-3.1).
//   offsets, row_token, pair_row: moe_route's; out[r] = x[row_token[r]] (moe_gather's, every row_token in range).
// One CTA a token: CTA t loads x[t]'s first kPreloaded vectors a thread right after the PDL wait, so that their read
// overlaps the sort; every CTA sorts the pairs itself (route_sort.cuh, at most kMaxPairs ids: cheaper than a second
// launch); then CTA t stores x[t] to its topk rows (pair_row of pairs t topk .. + topk - 1), CTA 0 writes the route's
// outputs. Each thread moves one V (16, 8, 4 or 2 bytes: row_copy_bytes) at a time. Past kMaxPairs pairs or kMaxTopk
// slots (one CTA would store too many rows) or kMaxExperts, and for no pairs, the op runs moe_route's and moe_gather's
// kernels.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <type_traits>

#include "../../common/moe_checks.h"
#include "../common/dependent_launch.cuh"
#include "../common/dependent_launch.h"
#include "moe_cuda.h"
#include "route_sort.cuh"

namespace kbit {
namespace cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxPairs = 1024;
constexpr int64_t kMaxExperts = 8191;  // shared memory: 4 (E + 1 + 32 + 2 P) bytes <= 41 KB
constexpr int64_t kMaxTopk = 64;
constexpr int kPreloaded = 4;  // vectors of x[t] a thread holds across the sort (rows of up to 4 kThreads V)

// Shared memory: route_sort.cuh's (cursor, warp_base, key), then row_of[P] (pair p's row).
template <typename V, typename Id>
__global__ void __launch_bounds__(kThreads)
moe_route_gather_kernel(const Id* __restrict__ ids, int32_t P, int32_t E, int32_t topk, const V* __restrict__ x,
                        int64_t row_vecs, int32_t* __restrict__ offsets, int64_t* __restrict__ row_token,
                        int32_t* __restrict__ pair_row, V* __restrict__ out) {
  extern __shared__ int32_t smem[];
  int32_t* row_of = smem + route_sort_ints(E, P);
  const bool writer = blockIdx.x == 0;
  const int tid = threadIdx.x;
  const V* x_t = x + int64_t(blockIdx.x) * row_vecs;
  // Launched with PDL (dependent_launch.cuh): the ids (the router's output) and x are read after the wait.
  allow_dependents();
  route_sort_zero<kThreads>(smem, E);
  grid_dependency_wait();
  V pre[kPreloaded];
#pragma unroll
  for (int i = 0; i < kPreloaded; ++i)
    if (tid + i * kThreads < row_vecs) pre[i] = x_t[tid + i * kThreads];
  route_sort<kThreads>(
      ids, P, E, smem,
      [&](int32_t e, int32_t row) {
        if (writer) offsets[e] = row;
      },
      [&](int32_t p, int32_t row) {
        row_of[p] = row;
        if (writer) {
          pair_row[p] = row;
          row_token[row] = p / topk;
        }
      });
  __syncthreads();  // row_of placed by warp 0
  const int32_t* rows = row_of + int64_t(blockIdx.x) * topk;
  for (int j = 0; j < topk; ++j) {
    V* dst = out + int64_t(rows[j]) * row_vecs;
#pragma unroll
    for (int i = 0; i < kPreloaded; ++i)
      if (tid + i * kThreads < row_vecs) dst[tid + i * kThreads] = pre[i];
  }
  // columns past the preloaded ones (rows of more than kPreloaded kThreads V): read and stored row by row
  for (int64_t c = tid + kPreloaded * kThreads; c < row_vecs; c += kThreads) {
    const V v = x_t[c];
    for (int j = 0; j < topk; ++j) out[int64_t(rows[j]) * row_vecs + c] = v;
  }
}

template <typename V>
void launch_route_gather(const at::Tensor& ids, int64_t E, const at::Tensor& x, at::Tensor& offsets,
                         at::Tensor& row_token, at::Tensor& pair_row, at::Tensor& out) {
  const int64_t P = ids.numel(), row_vecs = x.size(1) * x.element_size() / int64_t(sizeof(V));
  const int64_t ctas = x.size(0);  // one a token
  const int smem = static_cast<int>(4 * (route_sort_ints(E, P) + P));
  const auto stream = at::cuda::getCurrentCUDAStream();
  const bool dependent = dependent_launch_enabled();
  const auto launch = [&](const auto* id_ptr) {
    using Id = std::remove_cv_t<std::remove_pointer_t<decltype(id_ptr)>>;
    launch_kernel(moe_route_gather_kernel<V, Id>, dim3(static_cast<unsigned>(ctas)), dim3(kThreads), smem, stream,
                  dependent, id_ptr, static_cast<int32_t>(P), static_cast<int32_t>(E),
                  static_cast<int32_t>(ids.size(1)), static_cast<const V*>(x.const_data_ptr()), row_vecs,
                  offsets.data_ptr<int32_t>(), row_token.data_ptr<int64_t>(), pair_row.data_ptr<int32_t>(),
                  static_cast<V*>(out.data_ptr()));
  };
  if (ids.scalar_type() == at::kLong) launch(ids.const_data_ptr<int64_t>());
  else launch(ids.const_data_ptr<int32_t>());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> moe_route_gather_cuda(const at::Tensor& top_k_index,
                                                                                  int64_t num_experts,
                                                                                  const at::Tensor& x_in) {
  check_moe_route_gather_args(top_k_index, num_experts, x_in);
  const int64_t P = top_k_index.numel();
  if (P > kMaxPairs || top_k_index.size(1) > kMaxTopk || num_experts > kMaxExperts || P == 0 || x_in.size(1) == 0) {
    auto [offsets, row_token, pair_row] = moe_route_cuda(top_k_index, num_experts);
    at::Tensor out = moe_gather_cuda(x_in, row_token);
    return {offsets, row_token, pair_row, out};
  }
  const c10::cuda::CUDAGuard guard(top_k_index.device());
  const at::Tensor ids = top_k_index.contiguous(), x = x_in.contiguous();
  const auto opts = ids.options();
  at::Tensor offsets = at::empty({num_experts + 1}, opts.dtype(at::kInt));
  at::Tensor row_token = at::empty({P}, opts.dtype(at::kLong));
  at::Tensor pair_row = at::empty({P}, opts.dtype(at::kInt));
  at::Tensor out = at::empty({P, x.size(1)}, x.options());
  switch (row_copy_bytes(x.size(1) * x.element_size(), x.const_data_ptr(), out.data_ptr())) {
    case 16: launch_route_gather<uint4>(ids, num_experts, x, offsets, row_token, pair_row, out); break;
    case 8: launch_route_gather<uint2>(ids, num_experts, x, offsets, row_token, pair_row, out); break;
    case 4: launch_route_gather<uint32_t>(ids, num_experts, x, offsets, row_token, pair_row, out); break;
    default: launch_route_gather<uint16_t>(ids, num_experts, x, offsets, row_token, pair_row, out);
  }
  return {offsets, row_token, pair_row, out};
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(kbit, CUDA, m) { m.impl("moe_route_gather", &cuda::moe_route_gather_cuda); }

}  // namespace kbit

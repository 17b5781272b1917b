// kbit::moe_route_gather on CUDA: moe_route and moe_gather in one kernel, one link fewer in kbit.Experts' PDL chain
// at decode (session 58: the gather's kernel cost a decode step 0.4-1.9 us, the route's 0.8-3.1; this kernel saves
// 0.3-0.55 us of it at one token, nothing measurable at 4-16). One CTA a token with x[t] loaded before the sort, so
// that its read overlapped the sort's, measured no faster at 1 token and 0.1-0.5 us slower at 4 (fewer CTAs storing
// the rows): not kept (docs/design.md, session 58).
//   offsets, row_token, pair_row: moe_route's; out[r] = x[row_token[r]] (moe_gather's, every row_token in range).
// Every CTA sorts the pairs itself (route_sort.cuh, a few hundred ids: cheaper than a second launch), CTA 0 writes
// the route's outputs, and CTA c copies rows c, c + gridDim.x, ... of x in its own rows' order, each thread one V
// (16, 8, 4 or 2 bytes: row_copy_bytes) at a time. Past kMaxPairs pairs (prefill, where the sort's serial placement
// in every CTA would cost more than the launch it saves) or kMaxExperts, and for no pairs, the op runs moe_route's
// and moe_gather's kernels.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <algorithm>
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

// Shared memory: route_sort.cuh's (cursor, warp_base, key), then row_tok[P] (row r's token).
template <typename V, typename Id>
__global__ void __launch_bounds__(kThreads)
moe_route_gather_kernel(const Id* __restrict__ ids, int32_t P, int32_t E, int32_t topk, const V* __restrict__ x,
                        int64_t row_vecs, int32_t* __restrict__ offsets, int64_t* __restrict__ row_token,
                        int32_t* __restrict__ pair_row, V* __restrict__ out) {
  extern __shared__ int32_t smem[];
  int32_t* row_tok = smem + route_sort_ints(E, P);
  const bool writer = blockIdx.x == 0;
  // Launched with PDL (dependent_launch.cuh): the ids (the router's output) and x are read after the wait.
  allow_dependents();
  route_sort_zero<kThreads>(smem, E);
  grid_dependency_wait();
  route_sort<kThreads>(
      ids, P, E, smem,
      [&](int32_t e, int32_t row) {
        if (writer) offsets[e] = row;
      },
      [&](int32_t p, int32_t row) {
        const int32_t t = p / topk;
        row_tok[row] = t;
        if (writer) {
          pair_row[p] = row;
          row_token[row] = t;
        }
      });
  __syncthreads();  // row_tok placed by warp 0
  for (int32_t r = blockIdx.x; r < P; r += gridDim.x) {
    const V* src = x + int64_t(row_tok[r]) * row_vecs;
    V* dst = out + int64_t(r) * row_vecs;
    for (int64_t c = threadIdx.x; c < row_vecs; c += kThreads) dst[c] = src[c];
  }
}

template <typename V>
void launch_route_gather(const at::Tensor& ids, int64_t E, const at::Tensor& x, at::Tensor& offsets,
                         at::Tensor& row_token, at::Tensor& pair_row, at::Tensor& out) {
  const int64_t P = ids.numel(), row_vecs = x.size(1) * x.element_size() / int64_t(sizeof(V));
  // one row a CTA up to two CTAs an SM, then rows strided over them
  const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const int64_t ctas = std::min<int64_t>(P, 2 * int64_t(sms));
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
  if (P > kMaxPairs || num_experts > kMaxExperts || P == 0 || x_in.size(1) == 0) {
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
  with_row_copy_unit(x.size(1) * x.element_size(), x.const_data_ptr(), out.data_ptr(), [&](auto unit) {
    launch_route_gather<decltype(unit)>(ids, num_experts, x, offsets, row_token, pair_row, out);
  });
  return {offsets, row_token, pair_row, out};
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(kbit, CUDA, m) { m.impl("moe_route_gather", &cuda::moe_route_gather_cuda); }

}  // namespace kbit

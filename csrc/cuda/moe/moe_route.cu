// kbit::moe_route on CUDA: kbit.Experts' token sort in one single-CTA kernel (it was nine torch ops:
// validity masks, a stable sort, searchsorted, a division; ~2 us each at decode in a CUDA graph).
//
// Pair p = (token p / topk, slot p % topk) of top_k_index [T, topk] goes to expert key(p) = its id,
// or E - 1 for an id outside [0, E) (no expert: its row is computed with expert E - 1's weights, so
// that every row has an expert, offsets[E] = T topk as grouped_gemm asks, and moe_combine skips it).
// Rows are the pairs grouped by key in pair order within a key (a stable counting sort:
// moe_route_aten's stable sort gives the same rows):
//   offsets[e]  = first row of expert e, offsets[E] = T topk
//   row_token[r] = the token of row r's pair (for moe_gather), pair_row[p] = the row of pair p.
// One CTA of kThreads: keys into shared memory and counted (shared-memory atomics: exact counts), an
// exclusive scan of the E + 1 counts, then warp 0 places the pairs 32 at a time in pair order: lanes
// with one key (__match_any_sync) take consecutive rows from that key's cursor, its lowest lane
// advancing it. Placement is serial in P / 32, so past kMaxFusedPairs pairs (prefill) and past
// kMaxFusedExperts the op runs moe_route_aten (ATen's sort) instead.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "../../common/moe_aten.h"
#include "../../common/moe_checks.h"
#include "../common/dependent_launch.cuh"
#include "../common/dependent_launch.h"
#include "../common/device_utils.cuh"

namespace kbit {
namespace cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int64_t kMaxFusedPairs = 4096;
constexpr int64_t kMaxFusedExperts = 8191;

template <typename Id>
__device__ __forceinline__ int32_t expert_key(Id id, int32_t E) {
  return id >= 0 && id < E ? static_cast<int32_t>(id) : E - 1;
}

// Shared memory: cursor[E + 1] (counts, then each key's next row; key E has none), warp_base[32], key[P].
template <typename Id>
__global__ void __launch_bounds__(kThreads) moe_route_kernel(const Id* __restrict__ ids, int32_t P, int32_t E,
                                                             int32_t topk, int32_t* __restrict__ offsets,
                                                             int64_t* __restrict__ row_token,
                                                             int32_t* __restrict__ pair_row) {
  extern __shared__ int32_t smem[];
  int32_t* cursor = smem;
  int32_t* warp_base = cursor + E + 1;
  int32_t* key = warp_base + 32;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // Launched with PDL (dependent_launch.cuh): the ids (the router's output) are read after the wait.
  allow_dependents();
  for (int e = tid; e <= E; e += kThreads) cursor[e] = 0;
  grid_dependency_wait();
  __syncthreads();
  for (int p = tid; p < P; p += kThreads) {
    const int32_t e = expert_key(ids[p], E);
    key[p] = e;
    atomicAdd(&cursor[e], 1);
  }
  __syncthreads();
  // Exclusive scan of cursor[0 .. E]: thread tid owns entries [first, last).
  const int per = (E + 1 + kThreads - 1) / kThreads;
  const int first = min(tid * per, E + 1), last = min(first + per, E + 1);
  int32_t own = 0;
  for (int e = first; e < last; ++e) own += cursor[e];
  int32_t incl = own;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int32_t n = __shfl_up_sync(kFullMask, incl, d);
    if (lane >= d) incl += n;
  }
  if (lane == 31) warp_base[warp] = incl;
  __syncthreads();
  if (warp == 0) {  // the warps' totals -> each warp's exclusive base (kThreads / 32 == 32 warps)
    const int32_t total = warp_base[lane];
    int32_t run = total;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int32_t n = __shfl_up_sync(kFullMask, run, d);
      if (lane >= d) run += n;
    }
    __syncwarp();
    warp_base[lane] = run - total;
  }
  __syncthreads();
  int32_t row = warp_base[warp] + incl - own;
  for (int e = first; e < last; ++e) {
    const int32_t count = cursor[e];
    cursor[e] = row;
    offsets[e] = row;
    row += count;
  }
  __syncthreads();
  if (warp != 0) return;
  for (int32_t base = 0; base < P; base += 32) {
    const int32_t p = base + lane;
    const bool live = p < P;
    const int32_t e = live ? key[p] : -1;
    const unsigned same = __match_any_sync(kFullMask, e);
    const int leader = __ffs(same) - 1;
    int32_t start = 0;
    if (live && lane == leader) {
      start = cursor[e];
      cursor[e] = start + __popc(same);
    }
    start = __shfl_sync(kFullMask, start, leader);
    if (live) {
      const int32_t r = start + __popc(same & ((1u << lane) - 1u));
      pair_row[p] = r;
      row_token[r] = p / topk;
    }
    __syncwarp();  // the cursors written, before another lane of the next round reads them
  }
}

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
  const int smem = static_cast<int>(4 * (num_experts + 1 + 32 + P));  // <= 49 KB at the limits above
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

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(kbit, CUDA, m) { m.impl("moe_route", &cuda::moe_route_cuda); }

}  // namespace kbit

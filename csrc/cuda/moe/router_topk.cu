// kbit::router_topk on CUDA: an MoE router's softmax, top-k and renormalisation over one token's E logits in one
// warp (HF's Qwen3-MoE router ran it as torch ops: softmax, gatherTopK and a bitonic sort, a division; 17-22 us a
// layer at decode alone, docs/design.md "Session 62").
//   Ranking: by logit, descending, ties to the lower expert index, NaN above +inf (torch.topk's order on the fp32
//   probabilities, whose ties are the logits' ties). Weights: e_i = exp(l_i - max l), w_i = e_i / sum over the
//   top-k of e_j (normalize) or e_i / sum over all E of e_j, in fp32, rounded once to the logits' dtype.
//   Warp w of a CTA takes row kRowsPerCta * blockIdx.x + w; lane l holds experts l + 32 j (j < kPerLane) as order
//   keys (order_key: unsigned order = the floats' order). A selection round is two warp reductions (redux.sync): the
//   largest of the lanes' own best keys, then the lowest expert holding it; that lane clears the entry. (The first
//   form, eight warps a row each selecting its top-k by 64-bit shuffle maxima and warp 0 merging them, ran 3.7-4.6 us
//   a call alone, 5.2 in the HF model's step: two chains of top-k dependent shuffle rounds.) Sums run in a fixed
//   order (same bits every run).
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cmath>
#include <tuple>

#include "../../common/dispatch.h"
#include "../../common/moe_aten.h"
#include "../../common/moe_checks.h"
#include "../common/dependent_launch.cuh"
#include "../common/dependent_launch.h"
#include "../common/device_utils.cuh"

namespace kbit {
namespace cuda {
namespace {

constexpr int kRowsPerCta = 4;
constexpr int kMaxPerLane = 32;
constexpr int64_t kMaxExperts = 32 * kMaxPerLane;  // past this (or kMaxTopK) the op runs router_topk_aten
constexpr int kMaxTopK = 32;                       // (lane r holds the r-th choice)

// The unsigned order of the keys is the floats' order (-0 as +0), NaN above +inf. Key 0 is no float's (it would
// be a negative NaN's): it marks an empty or taken entry.
__device__ __forceinline__ uint32_t order_key(float v) {
  if (isnan(v)) return 0xFFFFFFFFu;
  const uint32_t b = v == 0.0f ? 0u : __float_as_uint(v);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ float key_value(uint32_t key) {  // order_key's inverse (NaN's key: a NaN)
  return __uint_as_float((key & 0x80000000u) ? (key & 0x7FFFFFFFu) : ~key);
}

__device__ __forceinline__ float warp_sum(float v) {  // the same tree in every warp and run
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

template <typename T, int kPerLane>
__global__ void __launch_bounds__(32 * kRowsPerCta) router_topk_kernel(const T* __restrict__ logits, int32_t rows,
                                                                       int32_t E, int32_t top_k, bool normalize,
                                                                       T* __restrict__ weights,
                                                                       int64_t* __restrict__ ids) {
  const int lane = threadIdx.x & 31;
  const int32_t row = kRowsPerCta * blockIdx.x + (threadIdx.x >> 5);
  // Launched with PDL (dependent_launch.cuh): the logits (the router's GEMM output) are read after the wait.
  allow_dependents();
  grid_dependency_wait();
  if (row >= rows) return;  // (a whole warp: the reductions below are the row's warp's alone)
  const T* in = logits + static_cast<int64_t>(row) * E;
  uint32_t key[kPerLane];
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    const int e = lane + 32 * j;
    key[j] = e < E ? order_key(to_float(in[e])) : 0u;
  }
  uint32_t lane_max = 0;
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) lane_max = max(lane_max, key[j]);
  const float row_max = key_value(__reduce_max_sync(kFullMask, lane_max));  // NaN if a logit is: NaN weights
  float total = 0.0f;  // softmax's denominator over all E (unused where normalize)
  if (!normalize) {
#pragma unroll
    for (int j = 0; j < kPerLane; ++j)
      if (key[j]) total += expf(key_value(key[j]) - row_max);
    total = warp_sum(total);
  }
  uint32_t my_key = 0, my_expert = 0;  // lane r < top_k: the r-th choice
  for (int r = 0; r < top_k; ++r) {
    uint32_t best = 0;
    int best_j = 0;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j)
      if (key[j] > best) best = key[j], best_j = j;  // (strict: the lane's lowest expert among equal keys)
    const uint32_t expert = lane + 32u * best_j;
    const uint32_t win_key = __reduce_max_sync(kFullMask, best);
    const uint32_t win_expert = __reduce_min_sync(kFullMask, best == win_key ? expert : 0xFFFFFFFFu);
    if (expert == win_expert) {
#pragma unroll
      for (int j = 0; j < kPerLane; ++j)
        if (j == best_j) key[j] = 0;  // (a static index: the keys stay in registers)
    }
    if (lane == r) my_key = win_key, my_expert = win_expert;
  }
  const float e_mine = lane < top_k ? expf(key_value(my_key) - row_max) : 0.0f;
  const float denominator = normalize ? warp_sum(e_mine) : total;
  if (lane < top_k) {
    const int64_t out = static_cast<int64_t>(row) * top_k + lane;
    weights[out] = from_float<T>(e_mine / denominator);
    ids[out] = my_expert;
  }
}

std::tuple<at::Tensor, at::Tensor> router_topk_cuda(const at::Tensor& logits_in, int64_t top_k, bool normalize) {
  check_router_topk_args(logits_in, top_k);
  const int64_t T = logits_in.size(0), E = logits_in.size(1);
  if (E > kMaxExperts || top_k > kMaxTopK) return router_topk_aten(logits_in, top_k, normalize);
  const c10::cuda::CUDAGuard guard(logits_in.device());
  const at::Tensor logits = logits_in.contiguous();
  at::Tensor weights = at::empty({T, top_k}, logits.options());
  at::Tensor ids = at::empty({T, top_k}, logits.options().dtype(at::kLong));
  if (T == 0 || top_k == 0) return {weights, ids};
  TORCH_CHECK(T <= INT32_MAX, "kbit.router_topk: at most ", INT32_MAX, " rows (got ", T, ")");
  const dim3 grid(static_cast<unsigned>((T + kRowsPerCta - 1) / kRowsPerCta)), block(32 * kRowsPerCta);
  KBIT_DISPATCH_FLOAT_TYPES(logits.scalar_type(), "kbit_router_topk_cuda", [&] {
    // the experts a lane holds: the fewest powers of two for E
    const auto kernel = E <= 128   ? router_topk_kernel<scalar_t, 4>
                        : E <= 256 ? router_topk_kernel<scalar_t, 8>
                        : E <= 512 ? router_topk_kernel<scalar_t, 16>
                                   : router_topk_kernel<scalar_t, kMaxPerLane>;
    launch_kernel(kernel, grid, block, 0, at::cuda::getCurrentCUDAStream(), dependent_launch_enabled(),
                  logits.data_ptr<scalar_t>(), static_cast<int32_t>(T), static_cast<int32_t>(E),
                  static_cast<int32_t>(top_k), normalize, weights.data_ptr<scalar_t>(), ids.data_ptr<int64_t>());
  });
  return {weights, ids};
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(kbit, CUDA, m) { m.impl("router_topk", &cuda::router_topk_cuda); }

}  // namespace kbit

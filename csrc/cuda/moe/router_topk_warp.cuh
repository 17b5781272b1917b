#pragma once
// kbit::router_topk's kernel for up to kWarpMaxExperts experts: one warp a row (router_topk.cu says which kernel).
//   Warp w of a CTA takes row kWarpRowsPerCta * blockIdx.x + w; lane l holds experts l + 32 j (j < kPerLane) as
//   order keys. A selection round is two warp reductions (redux.sync): the largest of the lanes' own best keys, then
//   the lowest expert holding it; that lane clears the entry; lane r keeps the r-th choice. Each round also scans a
//   lane's kPerLane keys, so the cost grows with E: session 64 (H200, one token, top-8, us): 1.1 / 1.7 / 2.0 / 3.1 /
//   4.2 at E = 8 (top-2) / 64 / 128 / 256 / 384 against the CTA kernel's 1.8 / 3.7 / 3.7 / 3.7 / 3.9.
#include <cstdint>

#include "../common/dependent_launch.cuh"
#include "../common/device_utils.cuh"
#include "router_keys.cuh"

namespace kbit {
namespace cuda {
namespace router {

constexpr int kWarpRowsPerCta = 4;
constexpr int kWarpMaxPerLane = 8;
constexpr int64_t kWarpMaxExperts = 32 * kWarpMaxPerLane;

template <typename T, int kPerLane>
__global__ void __launch_bounds__(32 * kWarpRowsPerCta)
    router_topk_warp_kernel(const T* __restrict__ logits, int32_t rows, int32_t E, int32_t top_k, bool normalize,
                            T* __restrict__ weights, int64_t* __restrict__ ids) {
  static_assert(kPerLane <= kWarpMaxPerLane, "a lane holds at most kWarpMaxPerLane experts");
  const int lane = threadIdx.x & 31;
  const int32_t row = kWarpRowsPerCta * blockIdx.x + (threadIdx.x >> 5);
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

}  // namespace router
}  // namespace cuda
}  // namespace kbit

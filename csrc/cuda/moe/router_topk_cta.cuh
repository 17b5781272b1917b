#pragma once
// kbit::router_topk's kernel past kWarpMaxExperts experts (to kCtaMaxExperts): one CTA a row (router_topk.cu says
// which kernel).
//   A logit's rank key is one 64-bit word, order_key(l) << 32 | ~index: its unsigned maximum is the best candidate,
//   so a selection step is one warp max. Thread i holds experts i + kCtaThreads j (j < kCtaPerThread); each warp
//   selects its top-k of its 32 kCtaPerThread experts (top_k warp maxima), then warp 0 selects from the
//   kCtaWarps x top_k candidates: two chains of top_k dependent shuffle rounds, 3.7-4.6 us a call whatever E.
#include <cstdint>

#include "../common/dependent_launch.cuh"
#include "../common/device_utils.cuh"
#include "router_keys.cuh"

namespace kbit {
namespace cuda {
namespace router {

constexpr int kCtaThreads = 256, kCtaWarps = kCtaThreads / 32;
constexpr int kCtaPerThread = 4;
constexpr int64_t kCtaMaxExperts = kCtaThreads * kCtaPerThread;
constexpr int kCtaMaxTopK = 32;

__device__ __forceinline__ uint64_t warp_max(uint64_t v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const uint64_t other = __shfl_xor_sync(kFullMask, v, o);
    v = other > v ? other : v;
  }
  return v;
}

// Takes the warp's top `top_k` of its lanes' kN candidates (in order; 0 where the warp has no more) into
// out[0 .. top_k); a taken candidate is zeroed in its lane.
template <int kN>
__device__ __forceinline__ void warp_select(uint64_t (&c)[kN], int top_k, int lane, uint64_t* out) {
  for (int r = 0; r < top_k; ++r) {
    uint64_t best = 0;
#pragma unroll
    for (int j = 0; j < kN; ++j) best = c[j] > best ? c[j] : best;
    const uint64_t winner = warp_max(best);
#pragma unroll
    for (int j = 0; j < kN; ++j)
      if (c[j] == winner) c[j] = 0;  // (the index part is unique: only the owner's entry matches, or none at 0)
    if (lane == 0) out[r] = winner;
  }
}

template <typename T>
__global__ void __launch_bounds__(kCtaThreads)
    router_topk_cta_kernel(const T* __restrict__ logits, int32_t E, int32_t top_k, bool normalize,
                           T* __restrict__ weights, int64_t* __restrict__ ids) {
  __shared__ uint64_t candidates[kCtaWarps][kCtaMaxTopK];
  __shared__ uint64_t chosen[kCtaMaxTopK];
  __shared__ uint32_t warp_max_key[kCtaWarps];
  __shared__ float warp_total[kCtaWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  // Launched with PDL (dependent_launch.cuh): the logits (the router's GEMM output) are read after the wait.
  allow_dependents();
  grid_dependency_wait();
  const T* row = logits + static_cast<int64_t>(blockIdx.x) * E;
  uint64_t c[kCtaPerThread];
  uint32_t max_key = 0;
#pragma unroll
  for (int j = 0; j < kCtaPerThread; ++j) {
    const int e = threadIdx.x + j * kCtaThreads;
    const uint32_t key = e < E ? order_key(to_float(row[e])) : 0u;
    c[j] = key ? (static_cast<uint64_t>(key) << 32) | ~static_cast<uint32_t>(e) : 0;
    max_key = key > max_key ? key : max_key;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) max_key = max(max_key, __shfl_xor_sync(kFullMask, max_key, o));
  if (lane == 0) warp_max_key[warp] = max_key;
  warp_select(c, top_k, lane, candidates[warp]);
  __syncthreads();
  for (int w = 0; w < kCtaWarps; ++w) max_key = max(max_key, warp_max_key[w]);
  const float row_max = key_value(max_key);  // NaN where a logit is NaN: every weight NaN, as softmax's
  if (!normalize) {  // the softmax's denominator over all E
    float total = 0.0f;
#pragma unroll
    for (int j = 0; j < kCtaPerThread; ++j) {
      const int e = threadIdx.x + j * kCtaThreads;
      if (e < E) total += expf(to_float(row[e]) - row_max);
    }
    total = warp_sum(total);
    if (lane == 0) warp_total[warp] = total;
  }
  if (warp == 0) {
    uint64_t merged[kCtaWarps];
#pragma unroll
    for (int w = 0; w < kCtaWarps; ++w) merged[w] = lane < top_k ? candidates[w][lane] : 0;
    warp_select(merged, top_k, lane, chosen);
  }
  __syncthreads();
  if (warp != 0) return;
  const uint64_t mine = lane < top_k ? chosen[lane] : 0;
  const float e_mine = lane < top_k ? expf(key_value(static_cast<uint32_t>(mine >> 32)) - row_max) : 0.0f;
  float denominator;
  if (normalize) {
    denominator = warp_sum(e_mine);
  } else {
    denominator = 0.0f;
    for (int w = 0; w < kCtaWarps; ++w) denominator += warp_total[w];
  }
  if (lane < top_k) {
    const int64_t out = static_cast<int64_t>(blockIdx.x) * top_k + lane;
    weights[out] = from_float<T>(e_mine / denominator);
    ids[out] = static_cast<int64_t>(~static_cast<uint32_t>(mine));
  }
}

}  // namespace router
}  // namespace cuda
}  // namespace kbit

// kbit::router_topk on CUDA: an MoE router's softmax, top-k and renormalisation over one token's E logits in one
// CTA (HF's Qwen3-MoE router runs it as torch ops: softmax, gatherTopK and a bitonic sort, a division; 17-22 us a
// call alone at decode against this kernel's 3.7-4.6, docs/design.md "Session 62").
//   Ranking: by logit, descending, ties to the lower expert index, NaN above +inf (torch.topk's order on the fp32
//   probabilities, but for distinct logits whose probabilities round equal or underflow to 0: ranked here by the
//   logit, in either order there). Weights: e_i = exp(l_i - max l), w_i = e_i / sum over the
//   top-k of e_j (normalize) or e_i / sum over all E of e_j, in fp32, rounded once to the logits' dtype.
//   A logit's rank key is one 64-bit word, order_key(l) << 32 | ~index: its unsigned maximum is the best
//   candidate, so a selection step is one warp max. Thread i holds experts i + kThreads j (j < kPerThread);
//   each warp selects its top-k of its 32 kPerThread experts (top_k warp maxima), then warp 0 selects from the
//   kWarps x top_k candidates. Sums run in a fixed order (same bits every run).
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

constexpr int kThreads = 256, kWarps = kThreads / 32;
constexpr int kPerThread = 4;
constexpr int64_t kMaxExperts = kThreads * kPerThread;  // past this (or kMaxTopK) the op runs router_topk_aten
constexpr int kMaxTopK = 32;

// The unsigned order of the keys is the floats' order (-0 as +0), NaN above +inf. Key 0 is no float's (it would
// be a negative NaN's), so candidate 0 means none.
__device__ __forceinline__ uint32_t order_key(float v) {
  if (isnan(v)) return 0xFFFFFFFFu;
  const uint32_t b = v == 0.0f ? 0u : __float_as_uint(v);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ float key_value(uint32_t key) {  // order_key's inverse (NaN's key: a NaN)
  return __uint_as_float((key & 0x80000000u) ? (key & 0x7FFFFFFFu) : ~key);
}

__device__ __forceinline__ uint64_t warp_max(uint64_t v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const uint64_t other = __shfl_xor_sync(kFullMask, v, o);
    v = other > v ? other : v;
  }
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {  // the same tree in every warp and run
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
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
__global__ void __launch_bounds__(kThreads) router_topk_kernel(const T* __restrict__ logits, int32_t E, int32_t top_k,
                                                               bool normalize, T* __restrict__ weights,
                                                               int64_t* __restrict__ ids) {
  __shared__ uint64_t candidates[kWarps][kMaxTopK];
  __shared__ uint64_t chosen[kMaxTopK];
  __shared__ uint32_t warp_max_key[kWarps];
  __shared__ float warp_total[kWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  // Launched with PDL (dependent_launch.cuh): the logits (the router's GEMM output) are read after the wait.
  allow_dependents();
  grid_dependency_wait();
  const T* row = logits + static_cast<int64_t>(blockIdx.x) * E;
  uint64_t c[kPerThread];
  uint32_t max_key = 0;
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int e = threadIdx.x + j * kThreads;
    const uint32_t key = e < E ? order_key(to_float(row[e])) : 0u;
    c[j] = key ? (static_cast<uint64_t>(key) << 32) | ~static_cast<uint32_t>(e) : 0;
    max_key = key > max_key ? key : max_key;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) max_key = max(max_key, __shfl_xor_sync(kFullMask, max_key, o));
  if (lane == 0) warp_max_key[warp] = max_key;
  warp_select(c, top_k, lane, candidates[warp]);
  __syncthreads();
  for (int w = 0; w < kWarps; ++w) max_key = max(max_key, warp_max_key[w]);
  const float row_max = key_value(max_key);  // NaN where a logit is NaN: every weight NaN, as softmax's
  if (!normalize) {  // the softmax's denominator over all E
    float total = 0.0f;
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int e = threadIdx.x + j * kThreads;
      if (e < E) total += expf(to_float(row[e]) - row_max);
    }
    total = warp_sum(total);
    if (lane == 0) warp_total[warp] = total;
  }
  if (warp == 0) {
    uint64_t merged[kWarps];
#pragma unroll
    for (int w = 0; w < kWarps; ++w) merged[w] = lane < top_k ? candidates[w][lane] : 0;
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
    for (int w = 0; w < kWarps; ++w) denominator += warp_total[w];
  }
  if (lane < top_k) {
    const int64_t out = static_cast<int64_t>(blockIdx.x) * top_k + lane;
    weights[out] = from_float<T>(e_mine / denominator);
    ids[out] = static_cast<int64_t>(~static_cast<uint32_t>(mine));
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
  KBIT_DISPATCH_FLOAT_TYPES(logits.scalar_type(), "kbit_router_topk_cuda", [&] {
    launch_kernel(router_topk_kernel<scalar_t>, dim3(static_cast<unsigned>(T)), dim3(kThreads), 0,
                  at::cuda::getCurrentCUDAStream(), dependent_launch_enabled(), logits.data_ptr<scalar_t>(),
                  static_cast<int32_t>(E), static_cast<int32_t>(top_k), normalize, weights.data_ptr<scalar_t>(),
                  ids.data_ptr<int64_t>());
  });
  return {weights, ids};
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(kbit, CUDA, m) { m.impl("router_topk", &cuda::router_topk_cuda); }

}  // namespace kbit

#pragma once
// The stable counting sort of kbit.Experts' (token, slot) pairs by expert in one CTA's shared memory: moe_route's
// kernel runs it once, moe_route_gather's in every CTA (each CTA then copies x's rows it owns).
//
// Pair p = (token p / topk, slot p % topk) of top_k_index [T, topk] goes to expert key(p) = its id, or E - 1 for an
// id outside [0, E) (no expert: its row is computed with expert E - 1's weights, so that every row has an expert,
// offsets[E] = T topk as grouped_gemm asks, and moe_combine skips it). Rows are the pairs grouped by key in pair
// order within a key (moe_route_aten's stable sort gives the same rows). Steps: keys into shared memory and counted
// (shared-memory atomics: exact counts), an exclusive scan of the E + 1 counts, then warp 0 places the pairs 32 at a
// time in pair order: lanes with one key (__match_any_sync) take consecutive rows from that key's cursor, its lowest
// lane advancing it. Placement is serial in P / 32 (the callers bound P).
//
// Shared memory (route_sort_ints(E, P) int32s from `smem`): cursor[E + 1] (counts, then each key's next row),
// warp_base[32], key[P].
#include <cstdint>

#include "../common/device_utils.cuh"

namespace kbit {
namespace cuda {

__host__ __device__ constexpr int64_t route_sort_ints(int64_t E, int64_t P) { return E + 1 + 32 + P; }

template <typename Id>
__device__ __forceinline__ int32_t expert_key(Id id, int32_t E) {
  return id >= 0 && id < E ? static_cast<int32_t>(id) : E - 1;
}

// Before the PDL wait (it reads no global memory): the E + 1 counters zeroed.
template <int kThreads>
__device__ __forceinline__ void route_sort_zero(int32_t* smem, int32_t E) {
  for (int e = threadIdx.x; e <= E; e += kThreads) smem[e] = 0;
}

// After route_sort_zero and the PDL wait, by all kThreads threads: the sort of ids [P] (row-major top_k_index).
// expert_first(e, row): once for each e in 0 .. E, the first row of expert e (row P for e = E), by some thread.
// place(p, row): once for each pair, by a lane of warp 0. Ends without a barrier: the caller syncs before it reads
// what place wrote, and warps 1.. may leave while warp 0 places.
template <int kThreads, typename Id, typename ExpertFirst, typename Place>
__device__ __forceinline__ void route_sort(const Id* __restrict__ ids, int32_t P, int32_t E, int32_t* smem,
                                           ExpertFirst&& expert_first, Place&& place) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps, at most 32");
  constexpr int kWarps = kThreads / 32;
  int32_t* cursor = smem;
  int32_t* warp_base = cursor + E + 1;
  int32_t* key = warp_base + 32;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  __syncthreads();  // the zeroed counters
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
  if (warp == 0) {  // the warps' totals -> each warp's exclusive base
    const int32_t total = lane < kWarps ? warp_base[lane] : 0;
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
    expert_first(e, row);
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
    if (live) place(p, start + __popc(same & ((1u << lane) - 1u)));
    __syncwarp();  // the cursors written, before another lane of the next round reads them
  }
}

}  // namespace cuda
}  // namespace kbit

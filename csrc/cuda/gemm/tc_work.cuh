#pragma once
// Work units of the tensor-core GEMM, found on the device (no host sync).
//
// A unit is (expert e, token chunk, 16-row tile nt): up to kTokens rows of x times one
// 16-row tile of W[e], over the split's share of K. Units are numbered expert by
// expert, chunk by chunk, tile by tile; CTA b takes units b, b + gridDim.x, ...
//
// Dense:   one expert, rows 0 .. M of x.
// Grouped: expert e owns x rows row_begin[e] .. row_begin[e+1], where row_begin is the
//          running maximum of expert_offsets clamped to [0, T]. For valid offsets
//          (0 = o[0] <= o[1] <= ... <= o[E] = T) that is exactly o; for any other
//          values every row still belongs to at most one expert and no access leaves
//          x or y, and rows no expert owns are written as NaN (see fill_unowned_rows).
//          Experts with no rows own no units: they cost nothing but their scan entry.
#include <cstdint>

#include "../common/device_utils.cuh"
#include "tc_gemm.h"

namespace kbit {
namespace cuda {

struct TcUnit {
  int64_t expert, tile;
  int64_t row0;  // first x / y row of the chunk
  int rows;      // rows in the chunk, 1 .. kTokens
};

// Exclusive block-wide scan of one value per thread (blockDim.x = 32 * warps), in
// thread order; `identity` is op's neutral element. Every thread must call it.
template <typename Op>
__device__ int64_t block_exclusive_scan(int64_t v, int64_t* scratch /* [32] */, Op op, int64_t identity) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  int64_t incl = v;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int64_t n = __shfl_up_sync(0xffffffffu, incl, d);
    if (lane >= d) incl = op(incl, n);
  }
  int64_t excl = __shfl_up_sync(0xffffffffu, incl, 1);
  if (lane == 0) excl = identity;
  if (lane == 31) scratch[warp] = incl;
  __syncthreads();
  int64_t prefix = identity;  // op over the totals of warps 0 .. warp-1, in order
  for (int w = 0; w < warp && w < warps; ++w) prefix = op(prefix, scratch[w]);
  __syncthreads();  // scratch is reused by the next scan
  return op(prefix, excl);
}

template <int kTokens, bool kGrouped>
struct TcSchedule {
  int64_t row_tiles;
  int64_t tokens;          // rows of x (M, or T when grouped)
  int experts;
  const int64_t* row_begin;  // grouped: [experts + 1], shared memory
  const int64_t* unit_end;   // grouped: [experts], units of experts 0..e, shared memory

  __device__ int64_t units() const {
    if constexpr (kGrouped) return experts > 0 ? unit_end[experts - 1] : 0;
    else return (tokens + kTokens - 1) / kTokens * row_tiles;
  }

  __device__ TcUnit unit(int64_t u) const {
    TcUnit w;
    int64_t local = u, begin = 0, end = tokens;
    if constexpr (kGrouped) {
      int lo = 0, hi = experts - 1;  // first e with unit_end[e] > u
      while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (unit_end[mid] > u) hi = mid;
        else lo = mid + 1;
      }
      w.expert = lo;
      local = u - (lo > 0 ? unit_end[lo - 1] : 0);
      begin = row_begin[lo];
      end = row_begin[lo + 1];
    } else {
      w.expert = 0;
    }
    // No division for the first chunk (decode: M <= kTokens).
    const int64_t chunk = local < row_tiles ? 0 : div_nonneg(local, row_tiles);
    w.tile = local - chunk * row_tiles;
    w.row0 = begin + chunk * kTokens;
    const int64_t left = end - w.row0;
    w.rows = static_cast<int>(left < kTokens ? left : kTokens);
    return w;
  }
};

// Grouped: fill row_begin[0..E] and unit_end[0..E) in shared memory from the device
// offsets. Every thread of the CTA (any multiple of 32 threads) calls this; E <= kTcMaxExperts.
// Thread i owns the consecutive entries [i * per, (i + 1) * per) of each scan; the offsets are
// first copied (coalesced, clamped to [0, T]) into row_begin, which the scans then rewrite.
template <int kTokens>
__device__ void build_grouped_schedule(const int32_t* __restrict__ offsets, int E, int64_t T, int64_t row_tiles,
                                       int64_t* row_begin, int64_t* unit_end, int64_t* scratch) {
  const auto max_op = [](int64_t a, int64_t b) { return a > b ? a : b; };
  const auto sum_op = [](int64_t a, int64_t b) { return a + b; };
  const int threads = static_cast<int>(blockDim.x);
#pragma unroll 8
  for (int j = static_cast<int>(threadIdx.x); j <= E; j += threads) {
    const int64_t o = __ldg(offsets + j);
    row_begin[j] = o < 0 ? 0 : (o > T ? T : o);
  }
  __syncthreads();
  const int per = (E + threads) / threads;  // E + 1 entries
  const int first = static_cast<int>(threadIdx.x) * per;
  const int end_rows = first + per < E + 1 ? first + per : E + 1, end_units = end_rows < E ? end_rows : E;
  // row_begin = running maximum of the clamped offsets.
  int64_t run = 0;
  for (int j = first; j < end_rows; ++j) run = max_op(run, row_begin[j]);
  int64_t prefix = block_exclusive_scan(run, scratch, max_op, int64_t(0));  // its barriers order the reads above
  for (int j = first; j < end_rows; ++j) row_begin[j] = prefix = max_op(prefix, row_begin[j]);
  __syncthreads();
  // unit_end = inclusive sum of each expert's units (chunks of kTokens rows x row tiles).
  const auto units_of = [&](int e) { return (row_begin[e + 1] - row_begin[e] + kTokens - 1) / kTokens * row_tiles; };
  int64_t total = 0;
  for (int e = first; e < end_units; ++e) total += units_of(e);
  prefix = block_exclusive_scan(total, scratch, sum_op, int64_t(0));
  for (int e = first; e < end_units; ++e) unit_end[e] = prefix += units_of(e);
  __syncthreads();
}

// Grouped: rows of y that no expert owns (only for invalid offsets: before row_begin[0] or
// from row_begin[E] on) are written as NaN, never left as stale memory. The CTAs of the
// grid share the rows; every thread calls this after build_grouped_schedule.
template <typename T>
__device__ void fill_unowned_rows(const int64_t* row_begin, int E, int64_t T_rows, int64_t N, T* y) {
  const int64_t lead = row_begin[0], tail = T_rows - row_begin[E];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (lead + tail) * N;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / N;
    y[(r < lead ? r : row_begin[E] + (r - lead)) * N + i % N] = from_float<T>(__int_as_float(0x7fc00000));
  }
}

}  // namespace cuda
}  // namespace kbit

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
  int rows;      // rows in the chunk, 1 .. kTokens (0: WarpSchedule's static first chunk of an expert without rows)
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
  // Grouped, for unit_warp (build_grouped_schedule's group_end): [32], shared memory: entry g is
  // unit_end of expert min(32 g + 31, E - 1), the units of experts 0 .. 32 g + 31; past E, INT64_MAX.
  const int64_t* group_end = nullptr;

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
    return finish(w, local, begin, end);
  }

  // unit(u) for a whole warp asking for the same u (grouped, group_end set; E <= 32 x 32): the
  // group of 32 experts holding u is the first lane whose group_end exceeds u, the expert the first
  // lane of that group whose unit_end does: two ballots and three levels of loads, against the
  // binary search's log2(E) (eight dependent loads at 256 experts, once per unit: the GEMV's units
  // are short at small K, session 20). Needs u < units(), as unit(u) does (past it no group
  // matches: the lookup would read outside the schedule).
  __device__ TcUnit unit_warp(int64_t u, int lane) const {
    static_assert(kGrouped, "the grouped schedule");
    const int grp = __ffs(__ballot_sync(0xffffffffu, group_end[lane] > u)) - 1;
    const int mine = 32 * grp + lane;
    const bool past = mine < experts && unit_end[mine] > u;
    TcUnit w;
    w.expert = 32 * grp + __ffs(__ballot_sync(0xffffffffu, past)) - 1;
    const int64_t local = u - (w.expert > 0 ? unit_end[w.expert - 1] : 0);
    return finish(w, local, row_begin[w.expert], row_begin[w.expert + 1]);
  }

 private:
  // The unit's tile, first row and rows from its index inside its expert's units.
  __device__ TcUnit finish(TcUnit w, int64_t local, int64_t begin, int64_t end) const {
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
// first copied (coalesced, clamped to [0, T]) into row_begin, which the running-maximum scan then
// rewrites where they are out of order (else they are row_begin already).
// group_end (optional, [32]; may be scratch, free after the scans): TcSchedule::unit_warp's table.
template <int kTokens>
__device__ void build_grouped_schedule(const int32_t* __restrict__ offsets, int E, int64_t T, int64_t row_tiles,
                                       int64_t* row_begin, int64_t* unit_end, int64_t* scratch,
                                       int64_t* group_end = nullptr) {
  static_assert(kTcMaxExperts <= 32 * 32, "group_end: 32 groups of 32 experts");
  const auto max_op = [](int64_t a, int64_t b) { return a > b ? a : b; };
  const auto sum_op = [](int64_t a, int64_t b) { return a + b; };
  const int threads = static_cast<int>(blockDim.x);
  const auto clamped = [T](int64_t o) { return o < 0 ? 0 : (o > T ? T : o); };
  bool out_of_order = false;
#pragma unroll 8
  for (int j = static_cast<int>(threadIdx.x); j <= E; j += threads) {
    const int64_t o = clamped(__ldg(offsets + j));
    row_begin[j] = o;
    if (j < E && o > clamped(__ldg(offsets + j + 1))) out_of_order = true;
  }
  const int per = (E + threads) / threads;  // E + 1 entries
  const int first = static_cast<int>(threadIdx.x) * per;
  const int end_rows = first + per < E + 1 ? first + per : E + 1, end_units = end_rows < E ? end_rows : E;
  // row_begin = running maximum of the clamped offsets: they themselves where they are in order (valid
  // offsets), so only offsets out of order pay for the max scan (a block scan and three barriers, ~1700
  // cycles of the ~3000 this build took, session 21).
  if (__syncthreads_or(out_of_order)) {
    int64_t run = 0;
    for (int j = first; j < end_rows; ++j) run = max_op(run, row_begin[j]);
    int64_t running = block_exclusive_scan(run, scratch, max_op, int64_t(0));  // its barriers order the reads above
    for (int j = first; j < end_rows; ++j) row_begin[j] = running = max_op(running, row_begin[j]);
    __syncthreads();
  }
  // unit_end = inclusive sum of each expert's units (chunks of kTokens rows x row tiles).
  const auto units_of = [&](int e) { return (row_begin[e + 1] - row_begin[e] + kTokens - 1) / kTokens * row_tiles; };
  int64_t total = 0;
  for (int e = first; e < end_units; ++e) total += units_of(e);
  int64_t prefix = block_exclusive_scan(total, scratch, sum_op, int64_t(0));
  for (int e = first; e < end_units; ++e) {
    unit_end[e] = prefix += units_of(e);
    if (group_end != nullptr && ((e & 31) == 31 || e == E - 1)) group_end[e >> 5] = prefix;  // a group's last
  }
  // (after the scans' last barrier: group_end may be their scratch)
  if (group_end != nullptr && threadIdx.x < 32 && 32 * static_cast<int>(threadIdx.x) >= E)
    group_end[threadIdx.x] = INT64_MAX;  // groups past E
  __syncthreads();
}

// Grouped with one row per chunk (kTokens == 1) and T <= E rows: the decode call of a layer's
// experts (kbit.Experts: all E experts, T = tokens x top-k rows, most experts empty). With one row
// per chunk TcSchedule's units are (owned row r, tile) in row order, u = (r - first_row) NT + tile,
// so a unit needs only the expert that owns its row. With the clamped offsets non-decreasing (valid
// offsets) expert e owns rows o[e] .. o[e + 1]: one CTA barrier ORs whether any pair of offsets is
// out of order, then each thread writes its experts' rows into row_expert, and a second barrier
// ends the build. build_grouped_schedule's two block scans and six barriers took ~3000 cycles after
// the offsets landed, at any E, before the first weight copy (session 21). Out-of-order offsets:
// build returns false and the caller builds the per-CTA schedule, whose running maximum defines
// the rows then. (With ordered offsets build_grouped_schedule now skips its max scan, session 22.)
// Every thread of the CTA calls build, with the same arguments.
struct RowSchedule {
  const int32_t* row_expert;        // [rows_end - first_row] shared memory: the expert owning each row
  int32_t first_row, rows_end;      // owned rows (clamped o[0], o[E])
  int32_t row_tiles;

  // 32-bit rows and units; T <= E: row_expert's T int32 entries fit in the per-CTA schedule's row_begin
  // (E + 1 int64 slots), and one thread writes at most T <= kTcMaxExperts entries (an expert with all rows).
  static bool fits(int64_t T, int64_t E, int64_t row_tiles) {
    return T <= E && T <= INT32_MAX && T * row_tiles <= INT32_MAX;
  }

  // row_expert_smem: room for T entries.
  __device__ bool build(const int32_t* __restrict__ offsets, int E, int64_t T, int64_t NT, int32_t* row_expert_smem) {
    const int32_t rows = static_cast<int32_t>(T);
    const auto clamped = [rows](int32_t o) { return o < 0 ? 0 : (o > rows ? rows : o); };
    row_tiles = static_cast<int32_t>(NT);
    row_expert = row_expert_smem;
    first_row = clamped(__ldg(offsets));
    rows_end = clamped(__ldg(offsets + E));
    bool out_of_order = false;
#pragma unroll 4
    for (int e = static_cast<int>(threadIdx.x); e < E; e += static_cast<int>(blockDim.x))
      if (clamped(__ldg(offsets + e)) > clamped(__ldg(offsets + e + 1))) out_of_order = true;
    // Out of order, experts' rows overlap: nothing is written (two threads would write one entry).
    if (__syncthreads_or(out_of_order)) return false;
#pragma unroll 4
    for (int e = static_cast<int>(threadIdx.x); e < E; e += static_cast<int>(blockDim.x)) {
      const int32_t lo = clamped(__ldg(offsets + e)), hi = clamped(__ldg(offsets + e + 1));  // (L1 hits)
      for (int32_t r = lo; r < hi; ++r) row_expert_smem[r - first_row] = e;
    }
    __syncthreads();
    return true;
  }
  __device__ int64_t units() const { return int64_t(rows_end - first_row) * row_tiles; }
  __device__ TcUnit unit(int64_t unit64) const {
    const int32_t u = static_cast<int32_t>(unit64), i = u / row_tiles;
    TcUnit w;
    w.expert = row_expert[i];
    w.tile = u - i * row_tiles;
    w.row0 = first_row + i;
    w.rows = 1;
    return w;
  }
};

// Grouped with E <= kWarpScheduleMaxExperts: build_grouped_schedule's rows held in one warp's
// registers, built by each warp for itself from one load of the offsets (lane e reads o[e + 1])
// and shuffle scans, so no CTA barrier and no shared memory stand between the offsets and a
// CTA's first copies (the GEMV's 8-expert decode call, docs/design.md "Session 14"). Lane e holds
// expert e's rows [row_begin, row_end) and unit_end (units before expert e + 1's); lanes >= E an
// empty expert at the end (row_begin = row_end = the owned rows' end, unit_end = every unit).
// Unit numbering, two forms:
//   dynamic (as TcSchedule): expert by expert, chunk by chunk, tile by tile; experts without rows
//            own no units.
//   static first chunks (build's static_first; the launcher's choice where T >= E, when most
//            experts have rows): units
//            0 .. E NT - 1 are (expert u / NT, tile u % NT, chunk 0) for every expert, known
//            before the offsets are (a CTA's first weight copies need not wait for them; an expert
//            without rows costs its NT units, which write nothing); then the chunks from 1 on,
//            numbered as in the dynamic form.
// Every lane of the warp calls load_offsets, build, units and unit, with the same arguments (they
// shuffle).
// Rows and units are 32-bit (warp_schedule_fits: the launcher takes the per-CTA schedule past that),
// which keeps the registers it holds next to the GEMV's decode to five.
constexpr int kWarpScheduleMaxExperts = 32;
// (T + tokens_per_chunk: build rounds rows up to whole chunks in 32 bits.)
inline bool warp_schedule_fits(int64_t T, int64_t E, int64_t row_tiles, int tokens_per_chunk) {
  return E <= kWarpScheduleMaxExperts && T + tokens_per_chunk <= INT32_MAX &&
         (T / tokens_per_chunk + E + 1) * row_tiles <= INT32_MAX;
}

template <int kTokens>
struct WarpSchedule {
  int32_t row_tiles;
  int32_t static_units;                  // E NT with static first chunks, else 0
  int32_t row_begin, row_end, unit_end;  // this lane's expert
  // By slot (load_slots; 1 token slot only): lane s < S holds slot s's stacked expert, -1 for none (its row is NaN).
  int32_t slot_id;
  bool by_slot;

  // By slot (TcGemmArgs::slot_x_div): instead of load_offsets and build, the S <= 32 groups are slots of one row
  // each, slot s row s (row_begin = s, row_end = s + 1), all units static (S NT: slot u / NT, tile u % NT), each with
  // the weights of stacked expert ids[s] (int64, or int32 where ids32); an id outside [0, stacked) gives the slot's
  // units no rows (they write nothing; invalid_slots() names their rows) and expert 0's weights to read.
  __device__ void load_slots(const void* ids, bool ids32, int S, int64_t NT, int64_t stacked) {
    static_assert(kTokens == 1, "slots of one row");
    const int lane = threadIdx.x & 31;
    int64_t id = 0;
    if (lane < S) id = ids32 ? int64_t(__ldg(static_cast<const int32_t*>(ids) + lane))
                             : __ldg(static_cast<const int64_t*>(ids) + lane);
    by_slot = true;
    slot_id = id >= 0 && id < stacked ? static_cast<int32_t>(id) : -1;
    row_tiles = static_cast<int32_t>(NT);
    static_units = S * row_tiles;
    unit_end = static_units;
    row_begin = lane < S ? lane : S;
    row_end = lane < S ? lane + 1 : S;
  }
  // By slot: the rows of slots without an expert, bit s for row s.
  __device__ uint32_t invalid_slots() const { return __ballot_sync(0xffffffffu, slot_id < 0); }

  // Two steps, so that a caller can issue other copies while the offsets load: load_offsets
  // (row_begin = o[0], row_end = o[lane + 1] for lanes < E, as read), then build.
  __device__ void load_offsets(const int32_t* __restrict__ offsets, int E) {
    const int lane = threadIdx.x & 31;
    row_begin = __ldg(offsets);
    row_end = lane < E ? __ldg(offsets + lane + 1) : 0;
  }
  __device__ void build(int E, int64_t T, int64_t NT, bool static_first) {
    const int lane = threadIdx.x & 31;
    by_slot = false;
    const int32_t rows = static_cast<int32_t>(T);
    const auto clamped = [rows](int32_t o) { return o < 0 ? 0 : (o > rows ? rows : o); };
    row_tiles = static_cast<int32_t>(NT);
    static_units = static_first ? E * row_tiles : 0;
    const int32_t first = clamped(row_begin);
    // row_end = row_begin[lane + 1]: the running maximum of the clamped offsets 0 .. lane + 1.
    int32_t end = lane < E ? clamped(row_end) : 0;
    end = max(end, first);
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int32_t n = __shfl_up_sync(0xffffffffu, end, d);
      if (lane >= d) end = max(end, n);
    }
    row_end = end;
    row_begin = __shfl_up_sync(0xffffffffu, end, 1);
    if (lane == 0) row_begin = first;
    int32_t chunks = lane < E ? (row_end - row_begin + kTokens - 1) / kTokens : 0;
    if (static_first && chunks > 0) --chunks;  // chunk 0 is a static unit
    int32_t units = chunks * row_tiles;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int32_t n = __shfl_up_sync(0xffffffffu, units, d);
      if (lane >= d) units += n;
    }
    unit_end = static_units + units;
  }
  __device__ int64_t units() const { return __shfl_sync(0xffffffffu, unit_end, 31); }
  __device__ int64_t first_owned_row() const { return __shfl_sync(0xffffffffu, row_begin, 0); }
  __device__ int64_t owned_rows_end() const { return __shfl_sync(0xffffffffu, row_end, 31); }

  // Unit u < units(). Past the static units, its expert is the first lane whose unit_end exceeds
  // u (lane 31's is every unit, and lanes >= E add none, so that lane is < E).
  __device__ TcUnit unit(int64_t unit64) const {
    const int32_t u = static_cast<int32_t>(unit64);
    int e;
    int32_t chunk, tile;
    if (u < static_units) {
      e = u / row_tiles;
      tile = u - e * row_tiles;
      chunk = 0;
    } else {
      e = __ffs(__ballot_sync(0xffffffffu, unit_end > u)) - 1;
      const int32_t before = __shfl_sync(0xffffffffu, unit_end, e > 0 ? e - 1 : 0);
      const int32_t local = u - (e > 0 ? before : static_units);
      chunk = local / row_tiles;
      tile = local - chunk * row_tiles;
      if (static_units > 0) ++chunk;
    }
    const int32_t begin = __shfl_sync(0xffffffffu, row_begin, e), end = __shfl_sync(0xffffffffu, row_end, e);
    TcUnit w;
    w.expert = e;
    w.tile = tile;
    w.row0 = begin + chunk * kTokens;
    const int32_t left = end - static_cast<int32_t>(w.row0);
    w.rows = left < kTokens ? (left > 0 ? left : 0) : kTokens;
    if constexpr (kTokens == 1) {
      if (by_slot) {  // (row e; the slot's expert, or none: no rows; only the by-slot kernel sets it)
        const int32_t id = __shfl_sync(0xffffffffu, slot_id, e);
        w.expert = id < 0 ? 0 : id;
        if (id < 0) w.rows = 0;
      }
    }
    return w;
  }
};

// Grouped: rows of y that no expert owns (only for invalid offsets: before the first owned row,
// row_begin[0], or from the owned rows' end, row_begin[E], on) are written as NaN, never left as
// stale memory. The CTAs of the grid share the rows; every thread calls this once the schedule
// is built.
template <typename T>
__device__ void fill_unowned_rows(int64_t first_owned, int64_t owned_end, int64_t T_rows, int64_t N, T* y) {
  const int64_t lead = first_owned, tail = T_rows - owned_end;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (lead + tail) * N;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / N;
    y[(r < lead ? r : owned_end + (r - lead)) * N + i % N] = from_float<T>(__int_as_float(0x7fc00000));
  }
}
template <typename T>
__device__ void fill_unowned_rows(const int64_t* row_begin, int E, int64_t T_rows, int64_t N, T* y) {
  fill_unowned_rows(row_begin[0], row_begin[E], T_rows, N, y);
}
// By slot (WarpSchedule::load_slots): the rows of the slots without an expert (bit r of `rows`: row r) are written as
// NaN, spread over the grid's threads as fill_unowned_rows; every thread calls this once (nothing when none).
template <typename T>
__device__ void fill_slot_rows_nan(uint32_t rows, int64_t N, T* y) {
  for (; rows != 0; rows &= rows - 1) {
    const int64_t r = __ffs(rows) - 1;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < N; i += int64_t(gridDim.x) * blockDim.x)
      y[r * N + i] = from_float<T>(__int_as_float(0x7fc00000));
  }
}

}  // namespace cuda
}  // namespace kbit

#pragma once
// Tensor-core GEMM for small M straight from the tiled layout (docs/format.md section 5),
// dense and grouped (MoE) in one kernel template.
//
// Work partition:
//   unit   = (expert, chunk of <= 8 * kTokenTiles tokens, 16-row tile): tc_work.cuh
//   grid.x = persistent CTAs; grid.y = splits along K (dense only)
//   CTA    = 8 warps; a unit gets wpu = 8 warps (fewer when K has fewer than 8 groups of
//            256 columns), so a CTA runs 8 / wpu units side by side per round; warp wi
//            of a unit, split s, takes the groups grp = s * wpu + wi, + wpu * splits, ...
//
// Pipeline: each warp streams its (unit, group) items through a private ring of
// kStages shared-memory stages with cp.async, kStages - 1 items ahead of the one it
// multiplies, across unit boundaries. Registers hold no prefetched data.
//   stage = the lane streams of one group (k x 512 bytes, [v][lane][16 B]) + the
//           group's 128 absmax bytes
//
// Per 32-column block b (2 mma steps), per token tile of 8:
//   B = x^T:  lane (g, t) loads x[token g]'s column pairs t, t + 4, t + 8, t + 12 of the
//             block (four 4-byte loads from L1; layout version 4, tiled_layout.h): the
//             first two feed step 2b, the last two step 2b + 1. (The kernel reads x from
//             global memory; the GEMV and tile kernels stage it and use one ldmatrix.x4.)
//   A = W:    one table lookup per register in a pair table of (cb[a], cb[b]) at the
//             start of dynamic shared memory; lane l's copy of entry i sits at byte
//             128 i + 4 l (k <= 4; FLUTE's per-lane copies: random codes never conflict
//             on a bank), so an address is PRMT + IMAD (k = 4) or shift + LOP3 (k = 2,
//             3). k = 5: one 1024-entry copy (PairTable<5, true>; the split table, pair_table.cuh,
//             would leave one CTA an SM at 1-2 token tiles: see TcGemmConfig).
//   D:        fresh fp32 accumulators per block; acc += absmax scale * D per row.
// Absmax scale: the E4M4 byte b placed at bit 6 of an fp16 is exactly e4m4(b) / 128
// (subnormals included: E4M4 bias 8 vs fp16 bias 15), so a block scale costs a shift
// and a half -> float convert; the 128 goes into the row scale at the end.
// The warps of a unit add their partial sums in a fixed order in shared memory (the
// unit's first warp does it, handed the partials through mbarriers: no CTA barrier after
// the table is built); with splits > 1 the CTAs write fp32 partials that
// reduce_splits_kernel (split_reduce.cuh) adds in split order: the result is the same bits on every run.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

#include "../../common/tiled_layout.h"
#include "../common/async_copy.cuh"
#include "../common/dependent_launch.cuh"
#include "../common/dependent_launch.h"
#include "../common/device_utils.cuh"
#include "../common/mbarrier.cuh"
#include "../common/kernel_residency.h"
#include "mma.cuh"
#include "pair_table.cuh"
#include "split_reduce.cuh"
#include "tc_gemm.h"
#include "tc_work.cuh"

namespace kbit {
namespace cuda {

template <int K, int kTokenTiles, int kMinBlocks = (kTokenTiles <= 4 ? 2 : 1)>
struct TcGemmConfig {
  static constexpr int kWarps = 8;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kTokens = 8 * kTokenTiles;
  static constexpr int kStages = kTokenTiles == 1 ? 4 : kTokenTiles == 2 ? 3 : 2;
  static constexpr int kStreamBytes = K * 512;  // one group's lane streams
  static constexpr int kStageBytes = kStreamBytes + kAbsmaxBytesPerTile;
  static constexpr int kRingBytes = kWarps * kStages * kStageBytes;
  // red[2][warps][16][tokens] fp32, then mbarriers full[2][warps], empty[2][warps]
  static constexpr int kReduceBytes = 2 * kWarps * kTileRows * kTokens * 4 + 4 * kWarps * 8;
  // at dynamic smem offset 0; k = 5: the one-copy table (session 69: the split table's 32 KB left one CTA an SM where
  // kMinBlocks asks two, e.g. 127232 bytes at one token tile; it was timed only in dense calls, which the GEMV takes
  // on GPUs with a dispatch table, not in the grouped calls this kernel serves)
  static constexpr int kLutBytes = PairTable<K, true>::kBytes;
  // Grouped schedule (tc_work.cuh): scan scratch + row_begin[E+1] + unit_end[E], int64.
  static constexpr int schedule_bytes(int experts) { return 8 * (32 + 2 * experts + 1); }
};

// One 32-column block of a group (two mma steps per token tile): D = W_block x^T from
// fresh accumulators, then acc += block scale * D for the lane's rows g and g + 8.
template <typename T, int K, int MT>
__device__ __forceinline__ void tc_block(int blk, const uint32_t (&stream)[4 * K], const uint32_t (&halves)[4][2],
                                         const uint32_t* const (&xg)[MT], float (&acc)[MT][4],
                                         const unsigned char* lut, uint32_t lane4) {
  uint4 xv[MT];  // the lane's B fragments: x's column pairs t, t + 4, t + 8, t + 12 of the block (layout version 4)
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    const uint32_t* p = xg[mt] + blk * 16;
    xv[mt] = make_uint4(__ldg(p), __ldg(p + 4), __ldg(p + 8), __ldg(p + 12));
  }
  float d[MT][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int i = 0; i < 4; ++i) d[mt][i] = 0.0f;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int s = 2 * blk + h;
    uint32_t a[4];
#pragma unroll
    for (int r = 0; r < 4; ++r)
      a[r] = *reinterpret_cast<const uint32_t*>(lut + lut_offset<K>(stream, 4 * s + r, lane4));
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
      mma_m16n8k16<T>(d[mt], a, h ? xv[mt].z : xv[mt].x, h ? xv[mt].w : xv[mt].y);
  }
  const float s_lo = half_bits_to_float(block_scale_bits(halves, blk, false));  // row g
  const float s_hi = half_bits_to_float(block_scale_bits(halves, blk, true));   // row g + 8
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    acc[mt][0] = fmaf(s_lo, d[mt][0], acc[mt][0]);
    acc[mt][1] = fmaf(s_lo, d[mt][1], acc[mt][1]);
    acc[mt][2] = fmaf(s_hi, d[mt][2], acc[mt][2]);
    acc[mt][3] = fmaf(s_hi, d[mt][3], acc[mt][3]);
  }
}

template <typename T, int K, int kTokenTiles, bool kGrouped, int kMinBlocks>
__global__ void __launch_bounds__(256, kMinBlocks) tc_gemm_kernel(const TcGemmArgs args) {
  using Cfg = TcGemmConfig<K, kTokenTiles, kMinBlocks>;
  constexpr int S = Cfg::kStages, MT = kTokenTiles;
  extern __shared__ __align__(16) unsigned char dyn_smem[];  // [table][ring][reduce][schedule]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  unsigned char* ring = dyn_smem + Cfg::kLutBytes + warp * S * Cfg::kStageBytes;
  // Partial sums, double-buffered by round parity: red[parity][warp][16 rows][kTokens],
  // and per (parity, slot) two mbarriers: full (the slot's warps wrote their partials)
  // and empty (the slot's reducer has read them). Initialized before the table barrier.
  float* red = reinterpret_cast<float*>(dyn_smem + Cfg::kLutBytes + Cfg::kRingBytes);
  uint64_t* full_bar = reinterpret_cast<uint64_t*>(red + 2 * Cfg::kWarps * kTileRows * Cfg::kTokens);  // [2][kWarps]
  uint64_t* empty_bar = full_bar + 2 * Cfg::kWarps;                                                    // [2][kWarps]

  // The reduction's mbarriers are initialized first, before any copy is in flight: the init
  // compiles to an async-proxy fence (FENCE.VIEW.ASYNC.S) + SYNCS.EXCH, and placed after the
  // first loads that fence held the CTA barrier behind it for ~1850 cycles (clock64 probe,
  // docs/design.md "Session 8"). The CTA barrier after the codebook store publishes them.
  if (threadIdx.x < 2 * Cfg::kWarps) {
    mbarrier_init(full_bar + threadIdx.x, 32u * args.warps_per_unit);
    mbarrier_init(empty_bar + threadIdx.x, 32u);
  }
  const int64_t N = args.N, cols = args.K;
  const int64_t NT = (N + 15) / 16, G = (cols + 255) / 256;
  // Launched with PDL (dependent_launch.cuh): the next kernel may be scheduled as our CTAs leave;
  // until the wait this kernel may overlap the previous one's tail: dense and unsplit, lane 0 of
  // each unit's first warp only asks L2 for the start of its first unit's tile (codes) and
  // the tile's absmax.
  allow_dependents();
  if constexpr (!kGrouped) {
    const uint32_t U0 = Cfg::kWarps / static_cast<uint32_t>(args.warps_per_unit);
    const int64_t unit0 = int64_t(blockIdx.x) * U0 + warp / args.warps_per_unit;  // round 0
    const int64_t chunks = (args.M + Cfg::kTokens - 1) / Cfg::kTokens;
    if (gridDim.y == 1 && lane == 0 && warp % args.warps_per_unit == 0 && unit0 < chunks * NT &&
        args.l2_prefetch_bytes > 0) {
      const int64_t tile = unit0 % NT;  // TcSchedule's dense order: unit = chunk * NT + tile
      const int64_t tile_bytes = G * 4 * tile_words(K);
      prefetch_l2(args.packed + tile * G * tile_words(K),
                  static_cast<uint32_t>(tile_bytes < args.l2_prefetch_bytes ? tile_bytes : args.l2_prefetch_bytes));
      prefetch_l2(args.absmax + tile * G * kAbsmaxBytesPerTile, static_cast<uint32_t>(G * kAbsmaxBytesPerTile));
    }
  }
  grid_dependency_wait();
  const float cb_value = codebook_entry<K>(args.codebook);
  const T* x = static_cast<const T*>(args.x);

  TcSchedule<Cfg::kTokens, kGrouped> sched{NT, args.M, static_cast<int>(args.experts), nullptr, nullptr};
  if constexpr (kGrouped) {
    int64_t* scratch = reinterpret_cast<int64_t*>(dyn_smem + Cfg::kLutBytes + Cfg::kRingBytes + Cfg::kReduceBytes);
    int64_t* row_begin = scratch + 32;
    int64_t* unit_end = row_begin + args.experts + 1;
    build_grouped_schedule<Cfg::kTokens>(args.expert_offsets, sched.experts, args.M, NT, row_begin, unit_end,
                                         scratch);
    sched.row_begin = row_begin;
    sched.unit_end = unit_end;
    fill_unowned_rows(row_begin, sched.experts, args.M, N, static_cast<T*>(args.y));
  }

  // A unit gets wpu warps (8, or fewer when K has fewer than 8 groups); the CTA runs
  // 8 / wpu units side by side: round r takes units (blockIdx.x + r * gridDim.x) * U + slot.
  // Partition counts in 32 bits (the launcher checks that units fit), the divisions done by
  // the launcher: the 64-bit ones here held the first weight load back by ~450 cycles.
  const uint32_t units = static_cast<uint32_t>(sched.units());
  const uint32_t wpu = static_cast<uint32_t>(args.warps_per_unit), U = Cfg::kWarps / wpu;
  const uint32_t slot = warp / wpu, wi = warp % wpu;
  const int split = blockIdx.y, splits = gridDim.y;
  const uint32_t grp_first = split * wpu + wi, grp_step = splits * wpu;
  const uint32_t per_unit = args.groups_per_warp + (grp_first < args.groups_extra ? 1u : 0u);
  uint32_t my_rounds;
  if constexpr (kGrouped) {  // units known only now
    const uint32_t rounds_total = (units + U - 1) / U;
    my_rounds = blockIdx.x < rounds_total ? (rounds_total - blockIdx.x + gridDim.x - 1) / gridDim.x : 0u;
  } else {
    my_rounds = args.rounds_per_cta + (blockIdx.x < args.rounds_extra ? 1u : 0u);
  }
  const auto unit_of_round = [&](uint32_t r) { return (blockIdx.x + r * gridDim.x) * U + slot; };
  // Only the last round can hold a unit past the end.
  const uint32_t my_units = my_rounds - (my_rounds > 0 && unit_of_round(my_rounds - 1) >= units ? 1u : 0u);
  const uint32_t items = my_units * per_unit;

  // Producer: the warp's items (unit, group) in order, each into the next ring stage.
  // Always commits a group (maybe empty), so "S - 1 pending" means the oldest item has
  // landed. Counters instead of divisions: this runs once per group.
  uint32_t p_left = items, p_unit = 0, p_j = 0;
  int64_t p_tile0 = 0;
  int p_stage = 0;
  const auto issue = [&]() {
    if (p_left > 0) {
      if (p_j == 0) {
        const TcUnit w = sched.unit(unit_of_round(p_unit));
        p_tile0 = (w.expert * NT + w.tile) * G;
      }
      const int64_t tile = p_tile0 + grp_first + int64_t(p_j) * grp_step;
      const uint4* src = reinterpret_cast<const uint4*>(args.packed + tile * tile_words(K)) + lane;
      unsigned char* st = ring + p_stage * Cfg::kStageBytes;
#pragma unroll
      for (int v = 0; v < K; ++v) cp_async_16(st + (v * 32 + lane) * 16, src + v * 32);
      if (lane < 8) cp_async_16(st + Cfg::kStreamBytes + lane * 16, args.absmax + tile * kAbsmaxBytesPerTile + lane * 16);
      if (++p_j == per_unit) { p_j = 0; ++p_unit; }
      --p_left;
    }
    cp_async_commit();
    p_stage = p_stage + 1 == S ? 0 : p_stage + 1;
  };
#pragma unroll
  for (int i = 0; i < S - 1; ++i) issue();

  // Pair table (pair_table.cuh), built while the first groups load. The codebook is staged in shared memory first (red is free until the main loop): one
  // global load per value in parallel, instead of two dependent loads per table entry.
  float* cb = red;
  if (threadIdx.x < (1 << K)) cb[threadIdx.x] = cb_value;
  __syncthreads();
  build_pair_table<T, K, true>(dyn_smem, cb);
  __syncthreads();  // table, barriers ready; cb (in red) is dead from here
  const uint32_t lane4 = 4u * lane;

  int c_stage = 0;  // consumer's ring stage
  for (uint32_t round = 0; round < my_units; ++round) {
    const TcUnit w = sched.unit(unit_of_round(round));
    // x rows this lane feeds as B (token mt * 8 + g of the chunk); rows past the chunk
    // repeat its last row: their outputs are computed and dropped.
    const uint32_t* xrow[MT];  // word (column pair) t of the lane's token row
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const int r = min(mt * 8 + g, w.rows - 1);
      xrow[mt] = reinterpret_cast<const uint32_t*>(x + (w.row0 + r) * cols) + t;
    }
    float acc[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mt][i] = 0.0f;
    // The reducer lane's output row is the same for all its tokens (i % 16 = lane % 16 in the
    // reduction below): its row scale is loaded now, off the path after the partial sums.
    float rs = 0.0f;
    if (wi == 0 && splits == 1 && w.tile * kTileRows + (lane & 15) < N)
      rs = __ldg(args.row_scale + w.expert * N + w.tile * kTileRows + (lane & 15));  // (x kHalfScaleFix at the use)

    for (uint32_t j = 0; j < per_unit; ++j) {
      issue();
      cp_async_wait<S - 1>();
      __syncwarp();
      const unsigned char* st = ring + c_stage * Cfg::kStageBytes;
      c_stage = c_stage + 1 == S ? 0 : c_stage + 1;
      const int64_t grp = grp_first + int64_t(j) * grp_step;
      uint32_t stream[4 * K];
      load_lane_stream<K>(st, lane, stream);
      uint32_t halves[4][2];
      absmax_half_pairs(*reinterpret_cast<const uint4*>(st + Cfg::kStreamBytes + g * 16), halves);
      const int blocks = static_cast<int>((cols - grp * 256) / 32 < 8 ? (cols - grp * 256) / 32 : 8);
      const uint32_t* xg[MT];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) xg[mt] = xrow[mt] + grp * 128;  // 256 columns = 128 pairs
      if (blocks == 8) {
#pragma unroll
        for (int blk = 0; blk < 8; ++blk) tc_block<T, K, MT>(blk, stream, halves, xg, acc, dyn_smem, lane4);
      } else {  // K tail: the same for the whole warp
#pragma unroll
        for (int blk = 0; blk < 8; ++blk) {
          if (blk >= blocks) break;
          tc_block<T, K, MT>(blk, stream, halves, xg, acc, dyn_smem, lane4);
        }
      }
      __syncwarp();  // every lane is done with this stage before it is refilled
    }

    // Cross-warp sum of the slot's wpu warps without a CTA barrier: each warp leaves its
    // partials in red[parity] and arrives on full[parity][slot]; the slot's first warp
    // waits for all of them, adds the wpu partials in warp order and writes the outputs,
    // then arrives on empty[parity][slot], which a warp waits for before it reuses
    // red[parity] two rounds later. Round r is use r / 2 of its parity's barriers.
    const int parity = static_cast<int>(round & 1);
    const uint32_t phase = static_cast<uint32_t>((round >> 1) & 1);
    uint64_t* full = full_bar + parity * Cfg::kWarps + slot;
    uint64_t* empty = empty_bar + parity * Cfg::kWarps + slot;
    if (round >= 2) mbarrier_wait(empty, phase ^ 1u);
    float* red_p = red + parity * Cfg::kWarps * kTileRows * Cfg::kTokens;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      float* base = red_p + (warp * kTileRows + g) * Cfg::kTokens + mt * 8 + 2 * t;
      base[0] = acc[mt][0];
      base[1] = acc[mt][1];
      base[8 * Cfg::kTokens] = acc[mt][2];
      base[8 * Cfg::kTokens + 1] = acc[mt][3];
    }
    mbarrier_arrive(full);
    if (wi == 0) {  // the slot's reducer
      mbarrier_wait(full, phase);
      const int w0 = slot * wpu;
      for (int i = lane; i < kTileRows * Cfg::kTokens; i += 32) {
        const int r = i % kTileRows, tok = i / kTileRows;  // rows fastest: stores along N
        const int64_t row = w.tile * kTileRows + r;
        if (tok >= w.rows || row >= N) continue;
        float sum = red_p[(w0 * kTileRows + r) * Cfg::kTokens + tok];
        for (int v = 1; v < wpu; ++v) sum += red_p[((w0 + v) * kTileRows + r) * Cfg::kTokens + tok];
        const int64_t out_row = w.row0 + tok;
        if (splits == 1) {
          static_cast<T*>(args.y)[out_row * N + row] = from_float<T>(sum * (rs * kHalfScaleFix));
        } else {
          args.workspace[(int64_t(split) * args.M + out_row) * (NT * kTileRows) + row] = sum;
        }
      }
      mbarrier_arrive(empty);
    }
  }
  cp_async_wait<0>();
}

template <typename T, int K, int kTokenTiles, bool kGrouped, int kMinBlocks>
void launch_tc_gemm_tiles(const TcGemmArgs& args, cudaStream_t stream) {
  using Cfg = TcGemmConfig<K, kTokenTiles, kMinBlocks>;
  auto kernel = tc_gemm_kernel<T, K, kTokenTiles, kGrouped, kMinBlocks>;
  // Grouped: the schedule's shared memory for up to 128 or kTcMaxExperts experts.
  const int bucket = kGrouped && args.experts > 128 ? 1 : 0;
  const auto smem_bytes = [](int b) {
    return Cfg::kLutBytes + Cfg::kRingBytes + Cfg::kReduceBytes +
           (kGrouped ? Cfg::schedule_bytes(b ? kTcMaxExperts : 128) : 0);
  };
  // The kernel counts units and groups in 32 bits; grouped units are at most
  // (chunks of all rows + one partial chunk per expert) x row tiles.
  const int64_t unit_bound = ((args.M + Cfg::kTokens - 1) / Cfg::kTokens + (kGrouped ? args.experts : 0)) *
                             ((args.N + 15) / 16);
  TORCH_CHECK(unit_bound < (int64_t(1) << 31) && args.K < (int64_t(1) << 31),
              "kbit: the small-M kernel counts its work in 32 bits: it needs K < 2^31 and fewer than 2^31 work "
              "units (ceil(rows / ", Cfg::kTokens, ") x ceil(N / 16)", kGrouped ? ", plus ceil(N / 16) per expert" : "",
              "); got M=", args.M, ", N=", args.N, ", K=", args.K, kGrouped ? ", experts=" : "",
              kGrouped ? std::to_string(args.experts) : std::string());
  // Persistent: as many CTAs as fit on the device at once (each builds the table once).
  const int ctas_per_sm = resident_ctas_per_sm(reinterpret_cast<const void*>(kernel), Cfg::kThreads,
                                               smem_bytes(bucket), smem_bytes(1));
  const int64_t resident = int64_t(ctas_per_sm) * at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  // The kernel's partition counts, divided here: groups per warp of a unit and (dense) CTA
  // rounds, each as quotient + remainder.
  TcGemmArgs a = args;
  int64_t ctas_x = resident;
  if constexpr (!kGrouped) {
    const int64_t units = (args.M + Cfg::kTokens - 1) / Cfg::kTokens * ((args.N + 15) / 16);
    const int64_t rounds = (units + Cfg::kWarps / args.warps_per_unit - 1) / (Cfg::kWarps / args.warps_per_unit);
    ctas_x = std::max<int64_t>(1, std::min<int64_t>(rounds, resident / args.splits));
    a.rounds_per_cta = static_cast<uint32_t>(rounds / ctas_x);
    a.rounds_extra = static_cast<uint32_t>(rounds % ctas_x);
  }
  const dim3 grid(static_cast<unsigned>(ctas_x), static_cast<unsigned>(kGrouped ? 1 : args.splits));
  const int64_t groups = (args.K + 255) / 256, group_step = int64_t(args.warps_per_unit) * grid.y;
  a.groups_per_warp = static_cast<uint32_t>(groups / group_step);
  a.groups_extra = static_cast<uint32_t>(groups % group_step);
  const bool dependent = dependent_launch_enabled();
  a.l2_prefetch_bytes = dependent ? dependent_launch_prefetch_bytes(int64_t(args.warps_per_unit) * 512 * K) : 0u;
  launch_kernel(kernel, grid, dim3(Cfg::kThreads), smem_bytes(bucket), stream, dependent, a);
  if (!kGrouped && args.splits > 1) launch_reduce_splits<T>(args, kHalfScaleFix, stream);
}

template <typename T, int K, bool kGrouped>
void launch_tc_gemm_grouping(const TcGemmArgs& args, cudaStream_t stream) {
  // 2 CTAs of 8 warps per SM (128 registers) up to 32 tokens. Measured on an H200 with 3 CTAs
  // (80 registers, 2 ring stages) at M <= 8: Llama-3 8B and Qwen3 gate/up 6-15% faster,
  // Qwen3 down / KV / MoE 7-20% slower, 70B unchanged (docs/design.md).
  switch (tc_token_tiles(args.tokens_per_unit)) {
    case 1: launch_tc_gemm_tiles<T, K, 1, kGrouped, 2>(args, stream); break;
    case 2: launch_tc_gemm_tiles<T, K, 2, kGrouped, 2>(args, stream); break;
    case 4: launch_tc_gemm_tiles<T, K, 4, kGrouped, 2>(args, stream); break;
    default: launch_tc_gemm_tiles<T, K, 8, kGrouped, 1>(args, stream); break;
  }
}

template <typename T, int K>
void launch_tc_gemm(const TcGemmArgs& args, cudaStream_t stream) {
  if (args.expert_offsets != nullptr) launch_tc_gemm_grouping<T, K, true>(args, stream);
  else launch_tc_gemm_grouping<T, K, false>(args, stream);
}

}  // namespace cuda
}  // namespace kbit

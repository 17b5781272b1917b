#pragma once
// The dense decode GEMV with its work split evenly over the CTAs of a cluster (session 27): the same
// decode, copy ring and sums as scalar_gemv_kernel (mma decode, x staged, one unit slot), over a
// different schedule.
//
// Why: scalar_gemv_kernel gives each CTA whole 16-row tiles, units b, b + grid, ...; Llama-3 70B
// gate/up at M = 1 has 1792 tiles for 528 CTAs (4 per SM on an H200), so 208 CTAs take four tiles and
// the others three: the call took 43.4 us, 40.4 split (session 27 run 5; where the split is taken:
// scalar_gemv_launch.cuh, choose_gemv_split).
//
// Steps: a CTA of W warps decodes a tile in n_steps = ceil(G / W) steps, step j being groups
// j W .. j W + W - 1 (warp w takes group j W + w; at the tile's last step warps w >= G - (n_steps -
// 1) W have none), so each warp's groups of a tile are scalar_gemv_kernel's (warp_u = w).
// Grid: (clusters, C) with clusters of C CTAs (cluster dims (1, C, 1): rank = blockIdx.y). Cluster c
// takes whole tiles (no sum crosses clusters): args.split_tiles, one more for c < args.split_tiles_extra,
// from c split_tiles + min(c, split_tiles_extra) on; its S = tiles x n_steps steps are split evenly
// over its CTAs: rank r takes the steps [r S / C, (r + 1) S / C) of the cluster's, in order. So the
// CTAs of a cluster take within one step of the same work, and clusters within one tile's steps.
// (The launcher sets the counts: the kernel does no 64-bit division; before the first copies they cost
// ~110 instructions a warp on Llama-3 8B gate/up, a third of the split's extra then, session 27 runs 4-5.)
// Sums: a CTA sums its warps' accumulators of each tile it touches in warp order (as
// scalar_gemv_kernel does a unit's). A tile the CTA covers whole is written out then (the same
// bits as scalar_gemv_kernel). A tile split over ranks r0 .. r1 (a piece per rank) is added up by
// rank r1, the one whose range starts inside it (each rank adds at most one such tile: its first):
// rank r writes its piece's sums into r1's piece slot r - r0 (distributed shared memory), and after
// the cluster's barrier at the end r1 adds the slots in rank order, times the row scale. Fixed
// orders throughout: the same bits on every run (but not for another split: another GPU's SM
// count, or another cluster size, moves the piece boundaries).
#include "../common/cluster.cuh"
#include "scalar_gemv.cuh"

namespace kbit {
namespace cuda {

// Dynamic shared memory: scalar_gemv_kernel's (dense, staged x, mma decode: table, rings, cross-warp
// sums) followed by the piece slots: [C][kTokens][16] floats.
constexpr int gemv_split_smem_bytes(int k, int tokens, int warps, int cluster) {
  return gemv_smem_bytes(k, tokens, warps, -1, GemvDecode::kMma, kGemvStages, false, 0) +
         4 * cluster * tokens * kTileRows;
}

// The steps of a cluster's S steps that rank r of C takes: [split_step_begin(r), split_step_begin(r + 1)).
// (32-bit: the launcher keeps steps <= kGemvSplitMaxSteps)
__host__ __device__ inline int split_step_begin(int r, int steps, int cluster) {
  return static_cast<int>(static_cast<uint32_t>(r * steps) / static_cast<uint32_t>(cluster));
}
// The rank whose steps hold step s (the largest r with split_step_begin(r) <= s; its range is not empty
// where steps >= cluster).
__host__ __device__ inline int split_step_owner(int s, int steps, int cluster) {
  return static_cast<int>((static_cast<uint32_t>(s + 1) * cluster + steps - 1) / static_cast<uint32_t>(steps)) - 1;
}
// The most steps a cluster may hold: its ranks' step arithmetic (8 x steps + steps) stays in 32 bits.
constexpr int64_t kGemvSplitMaxSteps = int64_t(1) << 27;

// Steps per tile for `warps` warps a CTA: one 256-column group per warp a step (the launcher's count,
// TcGemmArgs::split_steps).
inline int64_t gemv_split_steps(int64_t cols, int warps) { return ((cols + 255) / 256 + warps - 1) / warps; }

template <typename T, int K, int kTokens>
__global__ void __launch_bounds__(32 * kGemvMmaMaxWarps, 2) scalar_gemv_split_kernel(const TcGemmArgs args) {
  // (clusters are sm_90+: for older targets the body is compiled out, and the launcher never takes the split
  // there, nor from code built for them: choose_gemv_split)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using Stage = GemvStage<K, kTokens>;
  constexpr int kTableBytes = gemv_table_bytes(K, GemvDecode::kMma);
  extern __shared__ __align__(16) unsigned char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int64_t N = args.N, cols = args.K, G = (cols + 255) / 256;
  // (a cluster's steps fit 32 bits: the launcher keeps them <= kGemvSplitMaxSteps)
  const int n_steps = static_cast<int>(args.split_steps);
  // Warps w < last_warps have a group at a tile's last step (all of them where W divides G).
  const int last_warps = static_cast<int>(G - int64_t(n_steps - 1) * warps);
  const int cluster = static_cast<int>(gridDim.y), rank = static_cast<int>(blockIdx.y);
  const uint32_t c = blockIdx.x, extra = args.split_tiles_extra;
  const int64_t tile0 = int64_t(c) * args.split_tiles + (c < extra ? c : extra);
  const int steps = static_cast<int>((args.split_tiles + (c < extra ? 1u : 0u)) * args.split_steps);  // the cluster's
  const int s_begin = split_step_begin(rank, steps, cluster), s_end = split_step_begin(rank + 1, steps, cluster);
  const bool last_step_group = warp < last_warps;  // (every other step has one for every warp)
  // (n_steps = 1 with a warp past last_warps: a warp without groups, which the launcher never makes)
  const bool skips_last_step = !last_step_group && n_steps > 1;
  const int rows = static_cast<int>(args.M);  // <= kTokens
  const int tile_offset = static_cast<uint32_t>(s_begin) / static_cast<uint32_t>(n_steps);
  const int j_begin = s_begin - tile_offset * n_steps;
  const int64_t tile_begin = tile0 + tile_offset;

  allow_dependents();
  if (lane == 0 && args.l2_prefetch_bytes > 0 && s_begin < s_end && (last_step_group || j_begin != n_steps - 1)) {
    // (dependent_launch.cuh: before the wait, only hints) the codes and absmax of the warp's first group
    const int64_t tile = tile_begin, grp = warp + int64_t(j_begin) * warps;
    prefetch_l2(args.packed + (tile * G + grp) * tile_words(K), static_cast<uint32_t>(4 * tile_words(K)));
    prefetch_l2(args.absmax + (tile * G + grp) * kAbsmaxBytesPerTile, kAbsmaxBytesPerTile);
    if (warp == 0) {
      const float* scales = args.row_scale + tile * kTileRows;
      prefetch_l2_line(scales);
      prefetch_l2_line(scales + (N - tile * kTileRows < kTileRows ? N - tile * kTileRows : kTileRows) - 1);
      prefetch_l2_line(args.codebook);
    }
  }
  // The first arrival of the cluster barrier: a CTA writes into another's shared memory only after
  // its wait (cluster_wait below), when every CTA of the cluster has started.
  cluster_arrive_relaxed();
  grid_dependency_wait();
  const float cb_value = codebook_entry<K>(args.codebook);
  const T* x = static_cast<const T*>(args.x);
  T* y = static_cast<T*>(args.y);
  unsigned char* ring = smem + kTableBytes + warp * kGemvStages * Stage::kBytes;
  float* red = reinterpret_cast<float*>(smem + kTableBytes + warps * kGemvStages * Stage::kBytes);  // [2][warps][kTokens][16]
  float* piece_slots = red + gemv_sums_floats(kTokens, warps);                                 // [C][kTokens][16]

  // The warp's items: the steps of [s_begin, s_end) where it has a group (all but the tiles' last steps
  // for warps w >= last_warps). The copies run one item ahead: fill_s, fill_tile, fill_j the next item's.
  int fill_s = s_begin, fill_j = j_begin;
  int64_t fill_tile = tile_begin;
  const auto fill_advance = [&]() {
    do {
      ++fill_s;
      if (++fill_j == n_steps) fill_j = 0, ++fill_tile;
    } while (skips_last_step && fill_j == n_steps - 1);
  };
  if (skips_last_step && fill_j == n_steps - 1) fill_advance();
  const auto fill_next = [&](int item) {
    const int64_t grp = warp + int64_t(fill_j) * warps;
    unsigned char* stage = ring + (item % kGemvStages) * Stage::kBytes;
    gemv_stage_fill_codes<K>(stage, args.packed, args.absmax, fill_tile * G + grp, lane);
    gemv_fill_x_slots<T, kTokens>(stage + Stage::kXAt, x + grp * 256, rows, cols, cols - grp * 256, lane);
    fill_advance();
  };
  static_assert(kGemvStages == 2, "the copies run one item ahead");
  if (fill_s < s_end) fill_next(0);
  cp_async_commit();
  if (threadIdx.x < (1 << K)) red[threadIdx.x] = cb_value;
  __syncthreads();
  build_pair_table<T, K>(smem, red);
  __syncthreads();
  const uint32_t lane4 = 4u * static_cast<uint32_t>(lane);

  // The outputs this thread adds up at a piece's end: (token i / 16, row i % 16), i = tid, tid + 32 W,
  // ... < 16 kTokens: one row, tid % 16, and its row scale (GemvAcc and scalar_gemv_kernel's map).
  const int tid = threadIdx.x, out_r = tid % kTileRows;
  const auto row_scale_of = [&](int64_t tile) {
    const int64_t row = tile * kTileRows + out_r;
    // (unscaled: kHalfScaleFix where the sums take it, off the load's path; scalar_gemv_kernel's row_scale_of)
    return tid < kTokens * kTileRows && row < N ? __ldg(args.row_scale + row) : 0.0f;
  };
  int64_t tile = tile_begin;
  int piece_begin = s_begin;
  float rs = s_begin < s_end ? row_scale_of(tile) : 0.0f;
  // The tile this CTA adds up after the barrier (its first, where its range starts inside it and it
  // holds the tile's last step), its row scale and piece count.
  int64_t incoming_tile = -1;
  float incoming_rs = 0.0f;
  int incoming_pieces = 0;
  bool waited = false;  // the cluster barrier's first phase
  GemvAcc<kTokens, GemvDecode::kMma> acc;
  acc.zero();
  int parity = 0, item = 0, j = j_begin;
  for (int s = s_begin; s < s_end; ++s, j = j + 1 == n_steps ? 0 : j + 1) {
    if (last_step_group || j != n_steps - 1) {
      if (fill_s < s_end) fill_next(item + 1);
      cp_async_commit();
      cp_async_wait<kGemvStages - 1>();
      __syncwarp();  // every lane's copies of this item landed
      const int64_t grp = warp + int64_t(j) * warps;
      const int blocks = static_cast<int>(cols - grp * 256 < 256 ? (cols - grp * 256) / 32 : 8);
      const unsigned char* stage = ring + (item % kGemvStages) * Stage::kBytes;
      if (blocks == kBlocksPerTile)
        gemv_mma_decode_stage<T, K, kTokens>(stage, stage + Stage::kXAt, kBlocksPerTile, smem, lane4, lane, acc.v);
      else gemv_mma_decode_stage<T, K, kTokens>(stage, stage + Stage::kXAt, blocks, smem, lane4, lane, acc.v);
      __syncwarp();  // the stage is refilled by the next item's copies
      ++item;
    }
    const bool tile_end = j == n_steps - 1;
    if (!tile_end && s + 1 < s_end) continue;

    // A piece ends (s is uniform over the CTA: every warp passes here): the warps' sums in order.
    float* red_p = red + parity * warps * kTokens * kTileRows;
    acc.store(red_p + warp * kTokens * kTileRows, lane);
    acc.zero();
    __syncthreads();  // (red[parity] is rewritten two pieces later, after the next piece's barrier)
    const int tile_first = s - j;  // (the cluster's step of the tile's j = 0)
    const bool whole = piece_begin == tile_first && tile_end;
    int owner = rank, first_rank = rank;
    if (!whole) {
      first_rank = split_step_owner(tile_first, steps, cluster);
      owner = split_step_owner(tile_first + n_steps - 1, steps, cluster);
      if (owner == rank) {
        incoming_tile = tile;
        incoming_rs = rs;
        incoming_pieces = owner - first_rank + 1;
      } else if (!waited) {
        cluster_wait();  // (every thread: the barrier is aligned)
        waited = true;
      }
    }
    float* own_slot = piece_slots + (rank - first_rank) * kTokens * kTileRows;
    const uint32_t remote_slot = owner == rank ? 0u : cluster_shared_address(own_slot, static_cast<uint32_t>(owner));
    const int64_t row = tile * kTileRows + out_r;
    for (int i = tid; i < kTokens * kTileRows; i += 32 * warps) {
      const int m = i / kTileRows;
      float sum = red_p[m * kTileRows + out_r];
      for (int w = 1; w < warps; ++w) sum += red_p[(w * kTokens + m) * kTileRows + out_r];
      if (whole) {
        if (m < rows && row < N) y[m * N + row] = from_float<T>(sum * (rs * kHalfScaleFix));
      } else if (owner == rank) {
        own_slot[i] = sum;
      } else {
        store_cluster_shared(remote_slot + 4u * static_cast<uint32_t>(i), sum);
      }
    }
    parity ^= 1;
    piece_begin = s + 1;
    if (tile_end && s + 1 < s_end) rs = row_scale_of(++tile);
  }
  cp_async_wait<0>();  // nothing is left in flight at exit (the last commits are empty)
  if (!waited) cluster_wait();
  // Every piece written (release / acquire over the cluster): the incoming tile's pieces in rank order.
  cluster_sync();
  if (incoming_tile >= 0) {
    const int64_t row = incoming_tile * kTileRows + out_r;
    for (int i = tid; i < kTokens * kTileRows; i += 32 * warps) {
      const int m = i / kTileRows;
      if (m < rows && row < N) {
        float sum = piece_slots[i];
        for (int p = 1; p < incoming_pieces; ++p) sum += piece_slots[p * kTokens * kTileRows + i];
        y[m * N + row] = from_float<T>(sum * (incoming_rs * kHalfScaleFix));
      }
    }
  }
#endif
}

}  // namespace cuda
}  // namespace kbit

#pragma once
// Tensor-core tile GEMM (dense): y[M, N] = x[M, K] @ W^T straight from the tiled layout
// (docs/format.md section 5), for the M where the small-M kernel (tc_gemm.cuh) runs out of
// steam: there every 16-row tile re-reads x from L1/L2 and rescales fp32 accumulators per
// 32-column block. Here x is staged once per CTA in shared memory and shared by 8 warps.
//
// Work partition:
//   CTA    = 8 warps on 256 rows of W (16 row tiles) x kTokens = 8 MT tokens; warp w owns
//            row tiles 2w, 2w + 1 and all kTokens tokens (acc: 2 x MT x 4 fp32 per lane)
//   grid.x = row blocks x token chunks, chunk fastest (CTAs sharing W run side by side)
//   grid.y = splits along K: split s takes the 256-column groups [s G / S, (s + 1) G / S);
//            partials go through reduce_splits_kernel (split order: deterministic)
// Pipeline: tile_stages(k, MT) stages of one 256-column group each, filled with cp.async
//   by all threads: x[kTokens][256] and each warp's two weight tiles (k x 512 stream bytes
//   + 128 absmax bytes, [tile][v][lane][16 B]); one CTA barrier per group.
// Shared-memory x: token r's 16-byte chunk c (columns 8c .. 8c + 7) at r * 512 +
//   16 (c ^ (r % 8)), so the 8 rows of an ldmatrix matrix (8 tokens, one chunk) hit 8 distinct
//   16-byte bank groups.
// Per 32-column block b, per token tile mt:
//   B = x^T: one ldmatrix.x4 (mma.cuh): lane (g, t) gets x[8 mt + g]'s column pairs t, t + 4,
//            t + 8, t + 12 of the block (layout version 4: .x, .y feed step 2b, .z, .w step
//            2b + 1), shared by the warp's two row tiles
//   A = W:   pair-table lookup (pair_table.cuh, fp16 pairs) times the block's E4M4 scale as
//            an fp16 pair (exact), one HMUL2 per register; bf16 activations then convert the
//            pair to bf16 (3 more instructions). The mma accumulates straight into acc over
//            all of K; the row scale multiplies once at the end.
// Numerics: fp16: cb[i] and cb[i] * scale each rounded to fp16 (2^-11 relative). bf16: the
//   fp16 product rounded once to bf16, as dequantize + cuBLAS rounds W; a bf16 table and
//   bf16 product (two bf16 roundings) measured 4.3e-3 relative error at k = 2 on one block
//   (systematic with 4 codebook values), past the 4e-3 bound. Accumulation is fp32.
#include <algorithm>
#include <cstdint>

#include "../../common/tiled_layout.h"
#include "../common/async_copy.cuh"
#include "../common/dependent_launch.cuh"
#include "../common/dependent_launch.h"
#include "../common/device_utils.cuh"
#include "../common/kernel_residency.h"
#include "mma.cuh"
#include "pair_table.cuh"
#include "split_reduce.cuh"
#include "tc_work.cuh"
#include "tile_gemm.h"

namespace kbit {
namespace cuda {

template <typename T, int K, int MT, bool kGrouped>
__global__ void __launch_bounds__(kTileWarps * 32, 1) tile_gemm_kernel(const TcGemmArgs args) {
  constexpr int S = tile_stages(K, MT, kGrouped), TM = 8 * MT, kThreads = kTileWarps * 32;
  constexpr int kStageBytes = tile_stage_bytes(K, MT), kXBytes = TM * 512;
  constexpr int kTileBytes = K * 512 + kAbsmaxBytesPerTile;
  static_assert(S >= 2, "tile_gemm: two pipeline stages must fit in shared memory");
  extern __shared__ __align__(16) unsigned char dyn_smem[];  // [pair table][S stages][codebook][schedule]
  unsigned char* stages = dyn_smem + PairTable<K>::kBytes;
  float* cb = reinterpret_cast<float*>(stages + S * kStageBytes);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  // Launched with PDL (dependent_launch.cuh): the launch overlaps the previous kernel's tail;
  // nothing global is touched before the wait.
  allow_dependents();
  grid_dependency_wait();
  const float cb_value = codebook_entry<K>(args.codebook);
  const int g = lane >> 2, t = lane & 3;

  const int64_t N = args.N, cols = args.K, M = args.M;
  const int64_t NT = (N + 15) / 16, G = (cols + 255) / 256;
  const int64_t row_blocks = (NT + kTileRowTiles - 1) / kTileRowTiles;
  const int split = blockIdx.y, splits = gridDim.y;  // splits > 1: dense only
  const int64_t grp_begin = div_nonneg(G * split, splits);
  const int n_groups = static_cast<int>(div_nonneg(G * (split + 1), splits) - grp_begin);
  const T* x = static_cast<const T*>(args.x);
  T* y = static_cast<T*>(args.y);

  // Units: (expert, chunk of TM tokens, row block of 256 rows). Dense: unit u = row block
  // u / chunks, chunk u % chunks (the CTAs sharing W run side by side). Grouped: the
  // schedule of tc_work.cuh (experts with no rows own no units), CTAs loop over units.
  TcSchedule<TM, kGrouped> sched{row_blocks, M, static_cast<int>(args.experts), nullptr, nullptr};
  if constexpr (kGrouped) {
    int64_t* scratch = reinterpret_cast<int64_t*>(cb + 32);
    int64_t* row_begin = scratch + 32;
    int64_t* unit_end = row_begin + args.experts + 1;
    build_grouped_schedule<TM>(args.expert_offsets, sched.experts, M, row_blocks, row_begin, unit_end, scratch);
    sched.row_begin = row_begin;
    sched.unit_end = unit_end;
    fill_unowned_rows(row_begin, sched.experts, M, N, y);
  }
  const int64_t chunks = (M + TM - 1) / TM;
  const auto unit_of = [&](int64_t u) {
    if constexpr (kGrouped) return sched.unit(u);
    TcUnit w;
    w.expert = 0;
    w.tile = div_nonneg(u, chunks);  // the row block
    w.row0 = (u - w.tile * chunks) * TM;
    w.rows = static_cast<int>(std::min<int64_t>(TM, M - w.row0));
    return w;
  };

  const uint32_t lane_table = lane_pair_table<K>(dyn_smem, 4u * lane);

  const int64_t units = sched.units();
  for (int64_t u = blockIdx.x; u < units; u += gridDim.x) {
    const TcUnit w = unit_of(u);
    const int64_t tok0 = w.row0;
    const int rows = w.rows;
    const int64_t tile0 = w.tile * kTileRowTiles + warp * kTileTilesPerWarp;  // the warp's first row tile
    const int my_tiles = static_cast<int>(std::clamp<int64_t>(NT - tile0, 0, kTileTilesPerWarp));
    const int64_t expert_tiles = w.expert * NT;

    // Group grp_begin + j into stage j % S (nothing past the split's groups); always commits,
    // so "S - 2 pending" means group j has landed. Rows past the chunk repeat its last row
    // (their outputs are dropped); columns past K are not loaded (their blocks are skipped).
    const auto load = [&](int j) {
      if (j < n_groups) {
        const int64_t grp = grp_begin + j, col0 = grp * 256;
        unsigned char* st = stages + (j % S) * kStageBytes;
        const int64_t valid_chunks = std::min<int64_t>(32, (cols - col0) / 8);
#pragma unroll
        for (int i = 0; i < TM * 32 / kThreads; ++i) {
          const int q = threadIdx.x + i * kThreads, r = q >> 5, c = q & 31;
          if (c < valid_chunks)
            cp_async_16(st + r * 512 + ((c ^ (r & 7)) << 4),
                        x + (tok0 + std::min(r, rows - 1)) * cols + col0 + c * 8);
        }
        unsigned char* wst = st + kXBytes + warp * kTileTilesPerWarp * kTileBytes;
        for (int i = 0; i < my_tiles; ++i) {
          const int64_t tile = (expert_tiles + tile0 + i) * G + grp;
          const uint4* src = reinterpret_cast<const uint4*>(args.packed + tile * tile_words(K)) + lane;
          unsigned char* dst = wst + i * kTileBytes;
#pragma unroll
          for (int v = 0; v < K; ++v) cp_async_16(dst + (v * 32 + lane) * 16, src + v * 32);
          if (lane < 8) cp_async_16(dst + K * 512 + lane * 16, args.absmax + tile * kAbsmaxBytesPerTile + lane * 16);
        }
      }
      cp_async_commit();
    };
    __syncthreads();  // every warp is done with the previous unit's stages
#pragma unroll
    for (int i = 0; i < S - 1; ++i) load(i);
    if (u == blockIdx.x) {
      // Pair table, built once per CTA while its first stages load (the codebook load and the
      // build overlap that latency instead of preceding it); the first group's barrier
      // publishes it.
      if (threadIdx.x < (1 << K)) cb[threadIdx.x] = cb_value;
      __syncthreads();
      build_pair_table<c10::Half, K>(dyn_smem, cb);  // fp16 for both activation types (see the header)
    }

    float acc[kTileTilesPerWarp][MT][4];
#pragma unroll
    for (int i = 0; i < kTileTilesPerWarp; ++i)
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][mt][e] = 0.0f;

    for (int j = 0; j < n_groups; ++j) {
      cp_async_wait<S - 2>();
      __syncthreads();  // group j visible to all; everyone is done with stage (j - 1) % S
      load(j + S - 1);
      const unsigned char* st = stages + (j % S) * kStageBytes;
      const unsigned char* wst = st + kXBytes + warp * kTileTilesPerWarp * kTileBytes;
      const int blocks = static_cast<int>(std::min<int64_t>(8, (cols - (grp_begin + j) * 256) / 32));

      uint32_t stream[kTileTilesPerWarp][4 * K];
      uint32_t scales[kTileTilesPerWarp][4][2];  // fp16 pairs of block scales, as absmax_half_pairs orders them
#pragma unroll
      for (int i = 0; i < kTileTilesPerWarp; ++i) {
        if (i < my_tiles) {
          load_lane_stream<K>(wst + i * kTileBytes, lane, stream[i]);
          load_scale_pairs(wst + i * kTileBytes + K * 512, g, scales[i]);
        }
      }

#pragma unroll
      for (int blk = 0; blk < 8; ++blk) {
        if (blk >= blocks) break;  // K tail: the same for the whole CTA
        uint4 xv[MT];  // ldmatrix.x4: this lane addresses token mt 8 + lane % 8's vector 4 blk + lane / 8
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
          xv[mt] = ldmatrix_x4_ordered(st + (mt * 8 + (lane & 7)) * 512 + (((blk * 4 + (lane >> 3)) ^ (lane & 7)) << 4));
#pragma unroll
        for (int i = 0; i < kTileTilesPerWarp; ++i) {
          if (i >= my_tiles) break;
          uint32_t s_lo, s_hi;
          block_scale_splats(scales[i], blk, s_lo, s_hi);
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            uint32_t a[4];
            decode_a_fragment<T, K>(lane_table, stream[i], 2 * blk + h, s_lo, s_hi, a);
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
              mma_m16n8k16<T>(acc[i][mt], a, h ? xv[mt].z : xv[mt].x, h ? xv[mt].w : xv[mt].y);
          }
        }
      }
    }
    cp_async_wait<0>();

    // acc (mma C fragment): e = 0, 1: row g, tokens 2t, 2t + 1; e = 2, 3: row g + 8.
#pragma unroll
    for (int i = 0; i < kTileTilesPerWarp; ++i) {
      if (i >= my_tiles) break;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t row = (tile0 + i) * 16 + g + (e >= 2 ? 8 : 0);
        if (row >= N) continue;
        const float rs = __ldg(args.row_scale + w.expert * N + row);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          const int tok = mt * 8 + 2 * t + (e & 1);
          if (tok >= rows) continue;
          if (splits == 1)
            y[(tok0 + tok) * N + row] = from_float<T>(acc[i][mt][e] * rs);
          else
            args.workspace[(int64_t(split) * M + tok0 + tok) * (NT * 16) + row] = acc[i][mt][e];
        }
      }
    }
  }
}

template <typename T, int K, int MT, bool kGrouped>
void launch_tile_gemm_tokens(const TcGemmArgs& args, cudaStream_t stream) {
  constexpr int kSmem = tile_smem_bytes(K, MT, kGrouped);
  auto kernel = tile_gemm_kernel<T, K, MT, kGrouped>;
  const int ctas_per_sm = resident_ctas_per_sm(reinterpret_cast<const void*>(kernel), kTileWarps * 32, kSmem, kSmem);
  const int64_t row_blocks = cta_row_blocks(args.N, kTileRowTiles);
  int64_t ctas;
  if constexpr (kGrouped) {  // persistent: the units are only known on the device
    const int64_t most = std::min<int64_t>(args.M, args.experts) * ((args.M + 8 * MT - 1) / (8 * MT)) * row_blocks;
    ctas = std::max<int64_t>(1, std::min<int64_t>(most, int64_t(ctas_per_sm) *
                                                           at::cuda::getCurrentDeviceProperties()->multiProcessorCount));
  } else {
    ctas = (args.M + 8 * MT - 1) / (8 * MT) * row_blocks;
  }
  const dim3 grid(static_cast<unsigned>(ctas), static_cast<unsigned>(kGrouped ? 1 : args.splits));
  launch_kernel(kernel, grid, dim3(kTileWarps * 32), kSmem, stream,
                dependent_launch_enabled(), args);
  if (!kGrouped && args.splits > 1) launch_reduce_splits<T>(args, 1.0f, stream);
}

template <typename T, int K, bool kGrouped>
void launch_tile_gemm_grouping(const TcGemmArgs& args, cudaStream_t stream) {
  switch (tile_token_tiles(args.tokens_per_unit)) {
    case 1: launch_tile_gemm_tokens<T, K, 1, kGrouped>(args, stream); break;
    case 2: launch_tile_gemm_tokens<T, K, 2, kGrouped>(args, stream); break;
    case 4: launch_tile_gemm_tokens<T, K, 4, kGrouped>(args, stream); break;
    default: launch_tile_gemm_tokens<T, K, 8, kGrouped>(args, stream); break;
  }
}

template <typename T, int K>
void launch_tile_gemm(const TcGemmArgs& args, cudaStream_t stream) {
  if (args.expert_offsets != nullptr) launch_tile_gemm_grouping<T, K, true>(args, stream);
  else launch_tile_gemm_grouping<T, K, false>(args, stream);
}

}  // namespace cuda
}  // namespace kbit

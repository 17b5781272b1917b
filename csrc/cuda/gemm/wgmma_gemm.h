#pragma once
// Host interface of the warpgroup-MMA GEMM (wgmma_gemm.cuh, sm_90a only): dense
// y[M, N] = x[M, K] @ W^T from the tiled layout, the tile kernel's successor on Hopper.
// x reaches the shared-memory stages by tensor copies (TMA) from x itself, in the wgmma B layout
// with the 128-byte swizzle (below), so the tensor cores take B straight from shared memory; K-splits
// add their partials in shared memory (a cluster per output tile). Arguments: TcGemmArgs (x, packed,
// absmax, row_scale, codebook, y, M, N, K, splits, wgmma_tokens, wgmma_row_tiles,
// wgmma_first_stage_alone: wgmma_plan's; no workspace); the launcher encodes x's tensor map.
#include <ATen/ATen.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "../../common/tiled_layout.h"
#include "tc_gemm.h"
#include "tile_gemm.h"

namespace kbit {
namespace cuda {

// The CTA's shape (WgmmaShape): row_tiles 16-row tiles of W, one consumer warp each (16: four
// warpgroups of 64 rows, 8: two), times `tokens` tokens of x (16, 32, 64, 80, 96, 112, 128, 144 or 160). Compiled: 16
// row tiles x 16 / 32 / 64 tokens, 8 x 64 / 80 / 96 / 112 / 128 / 144 / 160 (80-160 tokens hold 40-80 fp32
// accumulators per consumer thread: too many under the 96-register cap of a 640-thread CTA, so only with two
// warpgroups; 144 and 160 on the producers' registers, kWgConsumerRegisters).
struct WgmmaShape {
  int tokens;
  int row_tiles;
};
// The token chunks compiled on two warpgroups above 64 (with_wgmma_shape, wgmma_gemm.cuh, dispatches each).
constexpr int kWgChunkTokens[] = {80, 96, 112, 128, 144, 160};
// Producer warps: one lane of each issues the bulk copies of every kWgProducerWarps-th tile of a
// stage and the tensor copy of one of x's 4 panels. One lane issuing a stage's ~33 copies took
// ~2250 cycles (a per-CTA trace, session 17: 68-80 cycles per copy on the uniform datapath), ~9000
// before the first barrier at 4 stages and about the consumers' time per group at TN = 64.
constexpr int kWgProducerWarps = 4;
constexpr int wgmma_threads(int row_tiles) { return (row_tiles + kWgProducerWarps) * 32; }
constexpr int kWgInFlight = 4;                     // wgmma steps in flight per warpgroup
// bf16 activations at 16 and 32 tokens: the block scale applied to the fp32 sums (wgmma_gemm.cuh, "Post-scaled
// bf16"), not to the weights: the pair table in bf16, a step's A fragment its words as looked up, each 32-column
// block's two wgmmas into a partial accumulator folded in by one FFMA a sum once they are done. The pre-scaled bf16
// decode spends 4 instructions a pair (fp16 HMUL2, then 2 conversions to fp32 and one to bf16) where fp16 spends 1:
// its wgmma calls took 1.10-1.32x fp16's at M = 8-16, 1.05-1.32x at M = 8-48 (session 72, H200).
template <typename T>
constexpr bool wgmma_post_scale(int tokens) {
  return std::is_same_v<T, c10::BFloat16> && tokens <= 32;
}
// The 144- and 160-token shapes' registers (setmaxnreg, PTX ISA): a 384-thread CTA launches at kWgLaunchRegisters =
// 168 a thread (65536 / 384, rounded down to 8: 64512 in the CTA's pool); its producer warpgroup drops to
// kWgProducerRegisters once its role is known, giving back 128 x (168 - 40) = 16384, and the two consumer warpgroups
// rise to kWgConsumerRegisters, taking 256 x (232 - 168) = 16384 of them: room for 72 or 80 fp32 accumulators a
// thread. The other shapes keep 168 everywhere. (tests/test_kernel_resources.py checks those kernels' 168 and their
// register moves in the SASS.)
constexpr int kWgLaunchRegisters = 65536 / wgmma_threads(8) / 8 * 8;
constexpr int kWgProducerRegisters = 40, kWgConsumerRegisters = 232;
static_assert(kWgLaunchRegisters == 168, "a 384-thread CTA's registers a thread");
// K-splits: the splits of one output tile (row block x token chunk) run as one thread-block
// cluster and add their partials through distributed shared memory (wgmma_gemm.cuh), so at most
// a portable cluster's 8 CTAs.
constexpr int kWgMaxSplits = 8;
// A split's partial sums in its shared memory: [tokens][wgmma_partial_stride] fp32, the CTA's
// 16 row_tiles rows (the stride's 4 extra words put the 4 token pairs of a warp's store on
// different banks: stride = 4 mod 32).
constexpr int wgmma_partial_stride(int row_tiles) { return 16 * row_tiles + 4; }

// The CTA shape for M <= 32 tokens: 16 row tiles x 16 or 32 tokens (wgmma_plan takes it there).
WgmmaShape wgmma_plan_shape_small(int64_t M);

// One pipeline stage: x's 256 columns of `tokens` tokens (4 panels of tokens x 128 bytes, wgmma_gemm.cuh) + the
// CTA's weight tiles. (A multiple of 1024 bytes at every compiled shape: the 128-byte swizzle's alignment.)
constexpr int wgmma_stage_bytes(int k, int tokens, int row_tiles) {
  return tokens * 512 + row_tiles * (k * 512 + kAbsmaxBytesPerTile);
}
// Which k = 5 pair table (pair_table.cuh) a CTA shape keeps: the split one (no bank conflicts, 2.5 more instructions a
// lookup, 32 KB) up to 80 tokens, where a decoded weight serves few tokens; the one-copy table from 96 (session 69,
// H200, the split table against the one-copy one: 16-32 tokens 10-25% faster, 64 tokens 3-13%, 96 tokens within 2%
// either way, 128 tokens 2-5% slower with 40 bytes of stack; 80 and 112 not timed), and at 160 tokens, where two of
// the split table's stages would not fit (2 x 103424 bytes).
constexpr bool wgmma_one_copy_table(int k, int tokens) { return k == 5 && tokens >= 96; }
// pair table + codebook + two mbarriers per stage (at most 4 stages)
constexpr int wgmma_reserved_bytes(int k, int tokens) {
  return pair_table_bytes(k, wgmma_one_copy_table(k, tokens)) + 32 * 4 + 8 * 8;
}
constexpr int wgmma_stages(int k, int tokens, int row_tiles) {
  const int stage = wgmma_stage_bytes(k, tokens, row_tiles);
  const int fit = (kTileSmemBudget - wgmma_reserved_bytes(k, tokens)) / stage;
  return fit > 4 ? 4 : fit;
}
constexpr int wgmma_smem_bytes(int k, int tokens, int row_tiles) {
  return wgmma_reserved_bytes(k, tokens) + wgmma_stages(k, tokens, row_tiles) * wgmma_stage_bytes(k, tokens, row_tiles);
}
inline int wgmma_stages(int k, WgmmaShape s) { return wgmma_stages(k, s.tokens, s.row_tiles); }
inline int wgmma_smem_bytes(int k, WgmmaShape s) { return wgmma_smem_bytes(k, s.tokens, s.row_tiles); }

// Whether this build has the kernel (an sm_90a target) and the GPU runs it (compute 9.0,
// enough opt-in shared memory for k and M).
bool wgmma_gemm_available(int k, int64_t M, const cudaDeviceProp& prop);

// What a call launches: the CTA shape, the splits along K and the order of the first stages' copies.
// Shape: up to M = 32 four warpgroups (wgmma_plan_shape_small); above 64 two on 128 rows x up to 160
// tokens (each weight decoded once per chunk; session 23: Qwen3 and Llama-3 layers 10-25% faster at M = 96-128 with
// chunks of 128 than four warpgroups on chunks of 64), its chunks balanced (session 51: ceil(M / 128) chunks
// of M / chunks tokens rounded up to 16, 80-128, so a unit has as little tensor work and x as that many chunks allow;
// one chunk more where that model says so: wgmma_plan_balanced), or ceil(M / 160) chunks balanced the same way (144
// or 160 tokens) where they are fewer and a fitted model of the busiest cluster's time says so (sessions 52-53:
// wgmma_plan_large); at M = 33..64 two on 128 rows x 64 unless that takes more CTA waves than four on 256 rows or
// four run at least as many CTAs, each on fewer groups and no more waves (session 31, H200: Qwen3, GLM shared and
// Llama-3 8B gate/up).
// kbit._C._set_wgmma_row_tiles (tuning aid) forces one from M = 33: 8 = two warpgroups (64 tokens, or the
// rule's 80-160 above M = 64), 16 = four (chunks of 64 tokens); kbit._C._set_wgmma_tokens the token chunk at
// any M (16 or 32: four warpgroups; 80, 96, 112, 128, 144 or 160: two; 64: the row tiles as above; session 30:
// chunks of 32 at M = 40-128 lost to the rule everywhere).
// first_stage_alone (the rule: always; session 32, measured with x from the image pass of layout version 3): the
// first stage's copies requested alone, the others' once it landed (wgmma_gemm.cuh, early_stages);
// kbit._C._set_wgmma_first_stage_alone.
// whole_clusters (splits > 1): the split tail. A unit is one output tile (row block x token chunk, work order: chunk
// fastest). The first whole_clusters x splits units run whole (a CTA each, all of K; `splits` of them a cluster), the
// rest split `splits` ways (a cluster each): the full CTA waves stay unsplit and only the last, partial wave's units
// are split to fill the SMs (Qwen3 gate/up M = 512: 160 units on 132 SMs ran as two waves of whole units).
// grid_clusters (persistent CTAs): the clusters launched, each running work clusters (wgmma_work_clusters: whole units,
// then split ones) b, b + grid_clusters, ... in turn (CTAs of 80-160 tokens only: wgmma_persistent_shape). The rule: as
// many as the GPU runs at once, unless a split unit would then not be its CTA's last (its reduction takes every stage
// and cluster barriers the producers, still copying the next unit, would miss): then one per work cluster.
// kbit._C._set_wgmma_grid_clusters forces a count (-1: one per work cluster). A persistent CTA builds the pair table
// once, its producers copy the next unit's first groups while the consumers finish the current one, and the next unit's
// start costs no CTA launch and prologue (session 44).
// Persistent CTAs run only in the shapes of 80-160 tokens (the rule's above M = 64, where units can outnumber the
// SMs): the loop over work clusters adds registers (128 x 8: 143 -> 167-168 of 168), and the 64 x 16 shape then spilled
// in its group loop (session 44); the shapes below M = 65 (one unit per CTA in every benchmark shape) keep session 43's
// code.
constexpr bool wgmma_persistent_shape(int tokens) { return tokens >= 80; }
// M tokens in `chunks` chunks of M / chunks tokens rounded up to 16: 80 to 128 (a compiled 8-row-tile shape) iff
// chunks >= ceil(M / 128) and M > 64 chunks; 144 or 160 where chunks = ceil(M / 160) < ceil(M / 128) (the wide
// candidate, wgmma_plan_large); the caller checks.
constexpr int wgmma_balanced_tokens(int64_t M, int64_t chunks) {
  return static_cast<int>(((M + chunks - 1) / chunks + 15) / 16 * 16);
}
struct WgmmaPlan {
  WgmmaShape shape;
  int splits;
  int whole_clusters;      // clusters of whole units before the split ones (0: every unit split `splits` ways)
  bool first_stage_alone;  // the first stage's copies requested alone, the others once it landed
  int64_t grid_clusters;   // clusters launched (<= the work's; wgmma_work_clusters)
  // The stream-K schedule (wgmma_gemm.cuh, the partition's `stream`): grid_clusters CTAs (splits 1, whole_clusters
  // 0; persistent shapes only), a lane of them a token chunk, share the row blocks' steps evenly. kbit._C.
  // _set_wgmma_stream.
  bool stream;
};
// Whether stream-K over `row_blocks` row blocks of `groups` groups in lanes of `lane_ctas` CTAs (one lane a token
// chunk) keeps the kernel's 32-bit arithmetic (the steps T = row_blocks x groups, T x (lane_ctas + 1)) and gives every
// CTA a step (T >= lane_ctas).
constexpr bool wgmma_stream_fits(int64_t row_blocks, int64_t groups, int64_t lane_ctas) {
  return lane_ctas >= 1 && groups < (int64_t(1) << 23) && row_blocks < (int64_t(1) << 31) &&
         row_blocks * groups >= lane_ctas && row_blocks * groups * (lane_ctas + 1) < (int64_t(1) << 32);
}
// A stream-K launch's workspace (fp32): two slots of TN x 128 sums a CTA (its first and last pieces; wgmma_gemm.cuh).
inline int64_t wgmma_stream_workspace_floats(const WgmmaPlan& p) {
  return 2 * p.grid_clusters * p.shape.tokens * 16 * p.shape.row_tiles;
}
WgmmaPlan wgmma_plan(int64_t M, int64_t N, int64_t K, int k, int sm_count);

// The output tiles (units) of y[M, N] in CTAs of `shape`.
inline int64_t wgmma_units(int64_t M, int64_t N, WgmmaShape shape) {
  return (M + shape.tokens - 1) / shape.tokens * cta_row_blocks(N, shape.row_tiles);
}
// The units that run whole (one CTA over all of K): every unit without splits.
inline int64_t wgmma_whole_units(int64_t M, int64_t N, WgmmaShape shape, int splits, int whole_clusters) {
  return splits == 1 ? wgmma_units(M, N, shape) : int64_t(whole_clusters) * splits;
}
// The clusters of work (each of `splits` CTAs): whole_clusters, then one per split unit.
inline int64_t wgmma_work_clusters(int64_t M, int64_t N, WgmmaShape shape, int splits, int whole_clusters) {
  return splits == 1 ? wgmma_units(M, N, shape) : whole_clusters + wgmma_units(M, N, shape) - int64_t(whole_clusters) * splits;
}
// The GEMM's CTAs of work (a persistent launch runs them on fewer).
inline int64_t wgmma_work_ctas(int64_t M, int64_t N, WgmmaShape shape, int splits, int whole_clusters) {
  return wgmma_work_clusters(M, N, shape, splits, whole_clusters) * splits;
}

// Splits along K (grid.y; 1..kWgMaxSplits) and the split tail's whole clusters for y[M, N] in CTAs of `shape` on a GPU
// of sm_count SMs (one CTA per SM): the split model, or what kbit._C._set_wgmma_splits forces (a tuning aid, clamped to
// the groups; every unit split) and kbit._C._set_wgmma_whole_clusters (clamped to the units); the splits lowered to a
// count whose cluster the GPU runs (on an H100 every count up to 8 runs).
struct WgmmaSplits {
  int splits, whole_clusters;
};
WgmmaSplits wgmma_gemm_splits(int64_t M, int64_t N, int64_t K, int k, WgmmaShape shape, int sm_count);

// Clusters of `cluster_ctas` CTAs (the splits) of the k-bit kernel of `shape` that the current GPU
// runs at once (0: none fits; the CTAs of a cluster share one GPC, so fewer than SMs / cluster_ctas where a GPC's
// SMs are not a multiple of it).
template <int K>
int wgmma_resident_clusters(WgmmaShape shape, int cluster_ctas);

template <typename T, int K>
void launch_wgmma_gemm(const TcGemmArgs& args, cudaStream_t stream);

}  // namespace cuda
}  // namespace kbit

#pragma once
// Host interface of the warpgroup-MMA GEMM (wgmma_gemm.cuh, sm_90a only): dense
// y[M, N] = x[M, K] @ W^T from the tiled layout, the tile kernel's successor on Hopper.
// x reaches the shared-memory stages in the wgmma B layout (below), so the tensor cores take B
// straight from shared memory; K-splits add their partials in shared memory (a cluster per output
// tile). Arguments: TcGemmArgs (x or its image, packed, absmax, row_scale, codebook, y, M, N, K,
// splits, wgmma_x_staged, wgmma_tokens, wgmma_row_tiles, wgmma_x_peers, wgmma_first_stage_alone: wgmma_plan's;
// no workspace).
#include <ATen/ATen.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "../../common/tiled_layout.h"
#include "tc_gemm.h"
#include "tile_gemm.h"

namespace kbit {
namespace cuda {

// The CTA's shape (WgmmaShape): row_tiles 16-row tiles of W, one consumer warp each (16: four
// warpgroups of 64 rows, 8: two), times `tokens` tokens of x (16, 32, 64 or 128). Compiled: 16 row
// tiles x 16 / 32 / 64 tokens, 8 x 64 / 128 (128 tokens hold 64 fp32 accumulators per consumer
// thread: too many under the 96-register cap of a 640-thread CTA, so only with two warpgroups).
struct WgmmaShape {
  int tokens;
  int row_tiles;
};
// Producer warps: one lane of each issues the bulk copies of every kWgProducerWarps-th tile of a
// stage (warp 0 also x's). One lane issuing a stage's ~33 copies took ~2250 cycles (a per-CTA trace,
// session 17: 68-80 cycles per copy on the uniform datapath), ~9000 before the first barrier at 4
// stages and about the consumers' time per group at TN = 64.
constexpr int kWgProducerWarps = 4;
constexpr int wgmma_threads(int row_tiles) { return (row_tiles + kWgProducerWarps) * 32; }
constexpr int kWgInFlight = 4;                     // wgmma steps in flight per warpgroup
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

// One pipeline stage: x[tokens][256] in the wgmma B layout + the CTA's weight tiles.
constexpr int wgmma_stage_bytes(int k, int tokens, int row_tiles) {
  return tokens * 512 + row_tiles * (k * 512 + kAbsmaxBytesPerTile);
}
// pair table + codebook + two mbarriers per stage (at most 4 stages)
constexpr int wgmma_reserved_bytes(int k) { return pair_table_bytes(k) + 32 * 4 + 8 * 8; }
constexpr int wgmma_stages(int k, int tokens, int row_tiles) {
  const int fit = (kTileSmemBudget - wgmma_reserved_bytes(k)) / wgmma_stage_bytes(k, tokens, row_tiles);
  return fit > 4 ? 4 : fit;
}
constexpr int wgmma_smem_bytes(int k, int tokens, int row_tiles) {
  return wgmma_reserved_bytes(k) + wgmma_stages(k, tokens, row_tiles) * wgmma_stage_bytes(k, tokens, row_tiles);
}
inline int wgmma_stages(int k, WgmmaShape s) { return wgmma_stages(k, s.tokens, s.row_tiles); }
inline int wgmma_smem_bytes(int k, WgmmaShape s) { return wgmma_smem_bytes(k, s.tokens, s.row_tiles); }

// Whether this build has the kernel (an sm_90a target) and the GPU runs it (compute 9.0,
// enough opt-in shared memory for k and M).
bool wgmma_gemm_available(int k, int64_t M, const cudaDeviceProp& prop);

// x [M, K] (fp16/bf16, contiguous, 16-byte aligned, K % 32 == 0) in the kernel's stages: per
// 256-column group, 16-byte chunk c of token r at (c tokens + r) 16 bytes; chunk c holds the
// group's columns 8 c .. 8 c + 7 in the layout's k-slot order: each 32-column block's 4 x 4
// matrix of 2-element words transposed, out[32 b + 8 p + 2 t + e] = x[32 b + 8 t + 2 p + e], so
// chunk 2 s + h is core matrix h of wgmma step s (docs/format.md section 5: the k-slots of step
// s = 2 b + h are columns 32 b + 8 t + 4 h + {0, 1} and + {2, 3}). Two ways in:
// - staged: the kernel's threads load x and store it so (wgmma_gemm.cuh, store_x_item: the
//   consumers the first group's, the producers every later one's); no pass before the launch,
//   but the loads sit on the refill path of each stage;
// - image: wgmma_x_image writes all stages' x once before the launch
//   ([chunks of `tokens` tokens][256-column groups][32 chunks c][tokens r][8 elements], zeros
//   past M and K) and one bulk copy per stage reads it.
// wgmma_x_staged: staged where every CTA's groups fit in its stages (no refills: Qwen3-size
// weights split several ways; session 18), number at most kWgXStagedGroups (session 35) and hold at most
// kWgXStagedTokenGroups tokens x groups (32 KB of x), else the image (70B gate/up: 158 vs 290 us at M = 128). Session 31 (H200, run
// 4): past 32 KB the threads' loads and stores cost more than the pass with PDL: Qwen3 Q M = 64 (3
// groups x 64 tokens) 9.4 us with the image against 10.6 staged, O 9.8 against 10.9, KV M = 128 (1
// x 128) 7.7 against 8.6; at up to 32 KB staging still wins (KV M = 64 5.9 against 6.2, Q M = 16
// 7.2 against 7.7). Session 35 (H200, runs 4-5): a CTA of 3 or 4 groups under the 32 KB lost to the image (run 4, k =
// 4: GLM shared gate/up M = 8 / 16, 4 groups x 16 tokens, 10.67 / 11.23 us against 10.27 / 10.42; Qwen3 down, 3 x 16,
// 8.90 / 9.41 against 8.80 / 9.06; run 5 the same at k = 2-5) while 1-2 groups won (Qwen3 Q, gate/up, O at M = 8-16,
// 2 x 16: 0.23-0.44 us less at k = 4; KV, 1 x 16-64: 0.5-1.4 less).
// The image pass's kernel runs wgmma_x_image_ctas CTAs of `threads` (128, 256, 512 or 1024; one thread a 32-column
// block of a token); `dependent`: launched with PDL (wgmma_plan).
constexpr int kWgXStagedTokenGroups = 64;
constexpr int kWgXStagedGroups = 2;
constexpr bool wgmma_image_threads_valid(int64_t threads) {
  return threads == 128 || threads == 256 || threads == 512 || threads == 1024;
}
at::Tensor wgmma_x_image(const at::Tensor& x, int tokens, bool dependent, int threads);
int64_t wgmma_x_image_ctas(int64_t M, int64_t K, int tokens, int threads);
bool wgmma_x_staged(int k, WgmmaShape shape, int64_t K, int splits);

// What a call launches: the CTA shape, the splits along K and how x gets into the stages.
// Shape: up to M = 32 four warpgroups (wgmma_plan_shape_small); above 64 two on 128 rows x 128
// tokens (each weight decoded once per 128 tokens; session 23: Qwen3 and Llama-3 layers 10-25%
// faster at M = 96-128 than four warpgroups on chunks of 64); at M = 33..64 two on 128 rows x 64
// unless that takes more CTA waves than four on 256 rows or four run at least as many CTAs, each on
// fewer groups and no more waves (session 31, H200: Qwen3, GLM shared and Llama-3 8B gate/up).
// kbit._C._set_wgmma_row_tiles (tuning aid) forces one from M = 33: 8 = two warpgroups (64 or 128
// tokens), 16 = four (chunks of 64 tokens); kbit._C._set_wgmma_tokens the token chunk at
// any M (16 or 32: four warpgroups; 128: two; 64: the row tiles as above; session 30: chunks of
// 32 at M = 40-128 lost to the rule everywhere).
// x_peers (image form): 2 pairs row blocks in clusters of 2 x splits, each CTA copying half of every stage's x
// into both by multicast; the rule never does (slower everywhere measured, session 32); kbit._C._set_wgmma_x_peers.
// first_stage_alone (image form; the rule: always, session 32): the first stage's weights requested alone, the
// others once it landed (wgmma_gemm.cuh, early_stages); kbit._C._set_wgmma_first_stage_alone.
// image_dependent (!x_staged): the image pass launched with PDL (where PDL is on). Either way the
// GEMM's set-up runs while the pass does (x_image.cu). With PDL the pass's CTAs also start early, on the SMs the kernel
// before leaves free, and hold them until it completes; the rule takes it where the pass's and the
// GEMM's CTAs fit on the GPU at once (one GEMM CTA per SM; cluster residency not counted), the pass in CTAs of 256
// threads, else of 512 (image_threads; session 34: Qwen3 O and down at M = 96-128 5-8% faster than 256 without
// PDL). Session 24 (H100, the op in a graph of its own calls): with PDL Qwen3 Q M = 96 / 128 11.2 / 11.9 us
// against 11.8 / 12.4 without (32 + 96 CTAs), down M = 64 11.3 against 12.2; Llama-3 8B gate/up M = 96 / 128 33.4 /
// 34.5 against 31.3 / 31.9 (64 + 112), 70B M = 64 ~89 against ~83. kbit._C._set_wgmma_image_dependent_launch forces it.
struct WgmmaPlan {
  WgmmaShape shape;
  int splits;
  bool x_staged;
  bool image_dependent;
  int x_peers;  // 2: row blocks paired in clusters of 2 x splits, each stage's x copied half by each (image form only)
  bool first_stage_alone;  // image form: the first stage's weights requested alone, the others once it landed
  int image_threads;       // image form: the image pass's threads a CTA (the rule: 256, or 512 where only those fit
                           // for PDL; the aid: 128-1024)
};
WgmmaPlan wgmma_plan(int64_t M, int64_t N, int64_t K, int k, int sm_count);

// The GEMM's CTAs for y[M, N] in CTAs of `shape` with `splits` K-splits, row blocks paired where x_peers = 2
// (an odd count gets one CTA past N).
inline int64_t wgmma_grid_ctas(int64_t M, int64_t N, WgmmaShape shape, int splits, int x_peers = 1) {
  const int64_t row_blocks = (cta_row_blocks(N, shape.row_tiles) + x_peers - 1) / x_peers * x_peers;
  return (M + shape.tokens - 1) / shape.tokens * row_blocks * splits;
}

// Splits along K (grid.y; 1..kWgMaxSplits) for y[M, N] in CTAs of `shape` on a GPU of sm_count SMs (one CTA per SM):
// the split model, or what kbit._C._set_wgmma_splits forces (a tuning aid, clamped to the groups);
// either lowered to a count whose cluster the GPU runs (on an H100 every count up to 8 runs).
int wgmma_gemm_splits(int64_t M, int64_t N, int64_t K, int k, WgmmaShape shape, int sm_count);

// Clusters of `cluster_ctas` CTAs (splits, x peers x splits) of the k-bit kernel of `shape` that the current GPU
// runs at once (0: none fits; the CTAs of a cluster share one GPC, so fewer than SMs / cluster_ctas where a GPC's
// SMs are not a multiple of it).
template <int K>
int wgmma_resident_clusters(WgmmaShape shape, int cluster_ctas);

template <typename T, int K>
void launch_wgmma_gemm(const TcGemmArgs& args, cudaStream_t stream);

}  // namespace cuda
}  // namespace kbit

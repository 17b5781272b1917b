#pragma once
// Warpgroup-MMA GEMM (dense, sm_90a): y[M, N] = x[M, K] @ W^T straight from the tiled layout
// (docs/format.md section 5). The tile kernel's structure (tile_gemm.cuh: x staged once per CTA,
// pair-table decode of A in registers) with the matrix math moved to asynchronous wgmma, so a
// warp decodes step s + 1 while the tensor cores run step s, x read by the tensor cores from
// shared memory, and the stages filled by the copy engine from producer warps.
//
// Work partition:
//   CTA    = kRowTiles / 4 consumer warpgroups on 16 kRowTiles rows of W x TN tokens (WgmmaShape,
//            wgmma_gemm.h: 16 row tiles x 16, 32 or 64 tokens; 8 x 64 or 128), plus kWgProducerWarps
//            producer warps. Warpgroup wg owns the 64-row wgmma block of row tiles
//            4 wg .. 4 wg + 3; its warp q decodes row tile 4 wg + q. Accumulators: TN / 2 fp32
//            per thread (wgmma D layout, wgmma.cuh).
//   grid.x = row blocks x token chunks, chunk fastest (CTAs sharing W run side by side); with x peers
//            (wgmma_x_peers = 2, image form) row blocks in pairs: (pair x chunks + chunk) x 2 + peer
//   grid.y = splits along K, at most kWgMaxSplits (kWgMaxSplits / 2 with x peers); a tile's splits form one cluster (1, splits, 1)
//            and add their partials through distributed shared memory at the end (no workspace);
//            with x peers the pair's splits form one cluster (2, splits, 1), rank peer + 2 split, and
//            each CTA copies half of every stage's x into both (multicast), so x's reads from L2 halve
// Pipeline: wgmma_stages(k, TN, kRowTiles) stages of one 256-column group each. The producer warps' lane 0s
//   fill a stage's weight tiles (each its share) with bulk copies (bulk_copy.cuh), each live tile
//   as two (k x 512 stream bytes [v][lane][16 B], 128 absmax bytes). x's part: kXStaged, threads
//   write it straight from x (loads, a transpose in registers, stores: the consumers the first
//   group's before the CTA barrier, the producer threads every later one's; the host picks
//   this where no stage refills, a CTA has at most 2 groups and stages at most 32 KB of x, wgmma_x_staged), else
//   producer warp 0's lane copies the block of the image pass (wgmma_x_image). The stage's
//   `full` mbarrier completes on the copies' bytes and its arrivals (kFullArrivals). A consumer
//   warp releases a stage (every thread arrives on its `empty` mbarrier, 32 kRowTiles per phase; with x peers
//   also on the peer's, 64 kRowTiles per phase) once its
//   warpgroup's wgmmas of that group are complete, which it knows a few steps into the next group, so
//   the tensor cores never drain between groups; the producer refills a stage when all kRowTiles
//   consumer warps released it. No CTA-wide barrier in the main loop.
// x in shared memory (wgmma B operand, K-major, no swizzle): 16-byte chunk c of token r at
//   (c TN + r) 16 bytes; chunk 2 s + h is core matrix h of step s, so step s starts at s 32 TN,
//   LBO = 16 TN (h = 0 -> 1), SBO = 128 (8 tokens). Tokens past M and columns past K are zeros
//   in the stage (and W's padding has zero scales), so every group runs all 16 steps.
// Per step s = 2 b + h of a group: each warp decodes its row tile's A fragment (pair-table
//   lookup x block scale, as the tile kernel) into register set s % kWgInFlight; wgmma_fence;
//   one wgmma per warpgroup; commit; wait until at most kWgInFlight - 1 steps are pending (the
//   oldest one's register set is then free for step s + 1). Up to kWgInFlight wgmmas in flight
//   per warpgroup hide the wgmma latency behind the decode of the following steps.
//   No branch around a wgmma (ptxas serializes wgmmas on divergent paths): a K tail runs all
//   16 steps on zeros, a warp whose row tile is past N feeds zeros.
// History (H100, 70B gate/up, k = 4; docs/design.md): per-thread cp.async stages and 8 warps
//   (2 row tiles each) were no faster than the tile kernel at any M; bulk copies made M = 64
//   122 -> 98 us; ncu then showed the per-group CTA barrier and too few warps for the decode
//   latency (barrier, wait and gmma stalls), hence this partition. Session 17: a per-CTA trace
//   showed one producer lane spending 68-80 cycles per bulk copy (~9000 cycles of first stages
//   before the first barrier at TN = 16, ~2650 per stage on the path at TN = 64); four producer
//   warps: 8B gate/up M = 128 58.7 -> 44.8 us, 70B M = 64 109 -> 91. Session 18: split-K in a
//   cluster (no reduction kernel) and x staged where no stage refills (no image pass): Qwen3
//   gate/up M = 16 12.4 -> 10.1 us, KV 9.1 -> 6.7, 8B gate/up M = 64 35.6 -> 29.9. Session 23: two
//   warpgroups on 128 rows (kRowTiles = 8), 128 tokens per CTA above M = 64 (each weight decoded once
//   per 128 tokens, not per 64): M = 128 Qwen3 Q 14.9 -> 13.4 us, down 17.3 -> 15.0, 8B gate/up 43.7
//   -> 33.5, 70B 158 -> 118; at M = 33-64 where it takes no more waves nor an image pass (down 15.8
//   -> 12.9 at M = 64).
// Numerics: as the tile kernel (fp16 pair products, bf16 rounded once from them, fp32 sums).
#include <algorithm>
#include <atomic>
#include <cstdint>

#include "../../common/tiled_layout.h"
#include "../common/bulk_copy.cuh"
#include "../common/cluster.cuh"
#include "../common/dependent_launch.cuh"
#include "../common/dependent_launch.h"
#include "../common/device_utils.cuh"
#include "../common/kernel_residency.h"
#include "mma.cuh"
#include "pair_table.cuh"
#include "wgmma.cuh"
#include "wgmma_gemm.h"

namespace kbit {
namespace cuda {

// x's part of a stage, kXStaged: tokens tok0 .. tok0 + TN - 1 of x [M, K] (contiguous, 16-byte
// vectors), columns 256 grp .. 256 grp + 255, in the wgmma B layout (wgmma_gemm.h): 16-byte chunk c
// of token r at (c TN + r) 16 bytes; a 32-column block of a token is a 4 x 4 matrix of 4-byte words
// (row q = its 16-byte chunk q) and its chunks 4 blk + p hold the transpose (word p of each row),
// the layout's k-slot order. Zeros past M and K. Item i = (token r, block blk): x_item_token /
// x_item_block. The first group's items: consumer thread c takes items c, c + 32 kRowTiles, ...
// (< 8 TN), loaded first thing in the kernel (see the prologue). Every later group's: producer
// thread `thread` (of kXThreads) takes items thread + u kXThreads, u < kXItems, in batches of
// kXBatch: the first batch loaded into registers before the stage is free (the latency overlaps
// the wait), each stored before the next is loaded (else TN = 128's 8 items would hold 128 registers).
constexpr int kXThreads = 32 * kWgProducerWarps;
template <int TN>
constexpr int kXItems = 8 * TN / kXThreads;
template <int TN>
constexpr int kXBatch = kXItems<TN> < 4 ? kXItems<TN> : 4;

// Item i < 8 TN of a stage's x: 32 consecutive items (a warp's) cover 8 tokens x 4 blocks, tokens
// fastest. A warp's load of chunk q then touches 8 rows x 256 contiguous bytes (16 lines; one
// token per lane touched 32), and the 8 lanes of a store phase write 8 consecutive tokens' chunks
// (128 contiguous bytes: no bank conflict).
__device__ __forceinline__ int x_item_token(int i) { return 8 * (i >> 6) + (i & 7); }
__device__ __forceinline__ int x_item_block(int i) { return 4 * ((i >> 5) & 1) + ((i & 31) >> 3); }

// Item i: loaded (chunks[q] = chunk q of its block of x, x's order) ...
template <int TN>
__device__ __forceinline__ void load_x_item(uint4 (&chunks)[4], const uint4* __restrict__ x, int64_t M, int64_t K,
                                            int64_t tok0, int64_t grp, int i) {
  static_assert(TN % 8 == 0, "wgmma_gemm: x items cover whole 8-token groups");
  const int r = x_item_token(i), blk = x_item_block(i);
  const int64_t m = tok0 + r, b = grp * 8 + blk;
  const bool live = m < M && b < K / 32;
  const uint4* src = x + (live ? m * (K / 8) + 4 * b : 0);
#pragma unroll
  for (int q = 0; q < 4; ++q) chunks[q] = live ? __ldg(src + q) : make_uint4(0, 0, 0, 0);
}

// ... and stored transposed into the stage.
template <int TN>
__device__ __forceinline__ void store_x_item(const uint4 (&c)[4], unsigned char* stage, int i) {
  const int r = x_item_token(i), blk = x_item_block(i);
  uint4* dst = reinterpret_cast<uint4*>(stage) + 4 * blk * TN + r;
  dst[0] = make_uint4(c[0].x, c[1].x, c[2].x, c[3].x);
  dst[TN] = make_uint4(c[0].y, c[1].y, c[2].y, c[3].y);
  dst[2 * TN] = make_uint4(c[0].z, c[1].z, c[2].z, c[3].z);
  dst[3 * TN] = make_uint4(c[0].w, c[1].w, c[2].w, c[3].w);
}

// Batch b of a producer thread's items of a stage: thread + (b kXBatch + u) kXThreads, u < kXBatch.
template <int TN>
__device__ __forceinline__ void load_x_batch(uint4 (&chunks)[kXBatch<TN>][4], const uint4* __restrict__ x, int64_t M,
                                             int64_t K, int64_t tok0, int64_t grp, int thread, int b) {
  static_assert(8 * TN % kXThreads == 0 && kXItems<TN> % kXBatch<TN> == 0,
                "wgmma_gemm: a stage's x items divide among the producer threads in whole batches");
#pragma unroll
  for (int u = 0; u < kXBatch<TN>; ++u)
    load_x_item<TN>(chunks[u], x, M, K, tok0, grp, thread + (b * kXBatch<TN> + u) * kXThreads);
}

template <int TN>
__device__ __forceinline__ void store_x_batch(const uint4 (&chunks)[kXBatch<TN>][4], unsigned char* stage, int thread,
                                              int b) {
#pragma unroll
  for (int u = 0; u < kXBatch<TN>; ++u) store_x_item<TN>(chunks[u], stage, thread + (b * kXBatch<TN> + u) * kXThreads);
}

template <typename T, int K, int TN, int kRowTiles, bool kXStaged>
__global__ void __launch_bounds__(wgmma_threads(kRowTiles), 1) wgmma_gemm_kernel(const TcGemmArgs args) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(kRowTiles == 8 || kRowTiles == 16, "wgmma_gemm: two or four consumer warpgroups");
  static_assert(TN <= 64 || kRowTiles == 8, "wgmma_gemm: 128 tokens only on two warpgroups (64 accumulators a thread)");
  constexpr int kConsumerWarps = kRowTiles;  // one per row tile
  constexpr int kConsumerThreads = 32 * kConsumerWarps;
  constexpr int kPartialStride = wgmma_partial_stride(kRowTiles);
  constexpr int S = wgmma_stages(K, TN, kRowTiles);
  constexpr int kStageBytes = wgmma_stage_bytes(K, TN, kRowTiles), kXBytes = TN * 512, kStepBytes = TN * 32;
  constexpr int kTileBytes = K * 512 + kAbsmaxBytesPerTile;
  static_assert(S >= 2 && S <= 4, "wgmma_gemm: 2-4 pipeline stages (wgmma_reserved_bytes has room for 4)");
  static_assert(kWgInFlight >= 2 && kWgInFlight - 2 < 16, "wgmma_gemm: the stage release needs a step >= 0 to fire on");
  extern __shared__ __align__(128) unsigned char dyn_smem[];  // [pair table][S stages][codebook][barriers]
  unsigned char* stages = dyn_smem + PairTable<K>::kBytes;
  float* cb = reinterpret_cast<float*>(stages + S * kStageBytes);
  uint64_t* full = reinterpret_cast<uint64_t*>(cb + 32);  // [S]: the stage's bytes landed
  uint64_t* empty = full + 4;                              // [S]: all consumer warps are done with it
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t N = args.N, cols = args.K, M = args.M;
  const int64_t NT = (N + 15) / 16, G = (cols + 255) / 256;
  const int split = blockIdx.y, splits = gridDim.y;
  const int64_t grp_begin = div_nonneg(G * split, splits);
  const int n_groups = static_cast<int>(div_nonneg(G * (split + 1), splits) - grp_begin);
  // x peers (args.wgmma_x_peers = 2, !kXStaged only): the CTAs of row blocks 2 p and 2 p + 1 at the same token
  // chunk and split form a cluster (2, splits, 1), blockIdx.x = (p chunks + chunk) 2 + peer, and each copies
  // half of every stage's x into both (multicast): x's L2 reads per weight halve. Ranks: peer + 2 split.
  const int peers = !kXStaged && args.wgmma_x_peers == 2 ? 2 : 1;  // (the host pairs image-form launches only)
  const int peer = peers == 2 ? static_cast<int>(blockIdx.x & 1) : 0;
  const int64_t unit = peers == 2 ? int64_t(blockIdx.x >> 1) : int64_t(blockIdx.x);  // (row block pair, chunk)
  const int64_t chunks = (M + TN - 1) / TN;
  const int64_t pair = div_nonneg(unit, chunks);
  const int64_t chunk = unit - pair * chunks, row_block = pair * peers + peer;
  const int64_t tok0 = chunk * TN, cta_tile0 = row_block * kRowTiles;
  // (0 for a peer past N: an odd count of row blocks; it still copies its half of x and decodes zeros)
  const int live_tiles = static_cast<int>(std::clamp<int64_t>(NT - cta_tile0, 0, kRowTiles));

  // Launched with PDL (dependent_launch.cuh): the launch overlaps the previous kernel's tail.
  // - kXStaged: before the wait only L2 prefetch hints touch global memory (small weights, every
  //   CTA's groups in its stages): the codebook's line, the row scales' lines (lane 0 of each
  //   consumer warp: its 16 rows) and the first group's weight tiles (producer thread 2 c + h: tile
  //   c's codes, h = 0, or absmax, h = 1), what the first loads and copies after the wait ask for.
  //   Session 19 run 11: KV M = 16 / 32 5.8 / 6.7 -> 5.1 / 6.1 us, Qwen3 gate/up, O, down 0.1-0.6
  //   us less; with the image (8B, 70B, M = 128) 0.4-0.7 us more (chunks of one row block asked
  //   for the same tiles, MBs of hints against the previous call's stream).
  // - else the kernel before this one is wgmma_x_image, whose CTAs let this grid start only after
  //   their own wait (x_image.cu): everything but the image is then written and visible, so the
  //   whole set-up (codebook, row scales, pair table, the first stages' weight copies) runs
  //   before this grid's wait, while the image kernel does. Only the image's copies (producer warp
  //   0's lane, after its wait) and y's stores (the consumers wait before the epilogue) follow it;
  //   with the first stage alone (early_stages, the rule since session 32) the weights of stages
  //   1 .. S - 1 too: they are requested once stage 0 landed, x's block included.
  allow_dependents();
  if constexpr (kXStaged) {
    if (threadIdx.x == 0) prefetch_l2_line(args.codebook);
    if (warp < kConsumerWarps && lane == 0 && cta_tile0 + warp < NT)
      prefetch_l2_line(args.row_scale + (cta_tile0 + warp) * 16);
    if (const int p = threadIdx.x - kConsumerThreads; p >= 0 && p < 2 * live_tiles && n_groups > 0) {
      const int64_t tile = (cta_tile0 + p / 2) * G + grp_begin;
      if (p % 2 == 0) prefetch_l2(args.packed + tile * tile_words(K), K * 512);
      else prefetch_l2(args.absmax + tile * kAbsmaxBytesPerTile, kAbsmaxBytesPerTile);
    }
    grid_dependency_wait();
  }
  const float cb_value = codebook_entry<K>(args.codebook);

  // What the kernel reads besides the stages' copies is requested first, before the producers'
  // copies fill the memory queues: the codebook (above), a consumer thread's two row scales (rows
  // g and g + 8 of its tile, applied at the end) and, kXStaged, the first group's x (consumer
  // thread c: items c + u kConsumerThreads < 8 TN, stored before the CTA barrier). A per-CTA
  // trace (session 19) showed these loads, issued after the copies, landing 2000-5000 cycles late
  // and holding up the table barrier and the epilogue.
  const int g = lane >> 2, t = lane & 3;
  const uint4* x = static_cast<const uint4*>(args.x);  // kXStaged
  constexpr int kFirstItems = (8 * TN + kConsumerThreads - 1) / kConsumerThreads;
  const bool x_first_mine = kXStaged && n_groups > 0 && warp < kConsumerWarps;
  uint4 x_first[kFirstItems][4];
  if (x_first_mine) {
#pragma unroll
    for (int u = 0; u < kFirstItems; ++u)
      if (const int i = threadIdx.x + u * kConsumerThreads; i < 8 * TN)
        load_x_item<TN>(x_first[u], x, M, cols, tok0, grp_begin, i);
  }
  float row_scale_lo = 0.0f, row_scale_hi = 0.0f;  // consumers: rows g, g + 8 of the row tile (0 past N)
  if (warp < kConsumerWarps) {
    const int64_t row = (cta_tile0 + warp) * 16 + g;
    if (row < N) row_scale_lo = __ldg(args.row_scale + row);
    if (row + 8 < N) row_scale_hi = __ldg(args.row_scale + row + 8);
  }

  // The producers' first S groups of weight tiles (image form: the first group's; see early_stages) are on their
  // way before the table is built:
  // the codebook load + table build and the first stages' memory latency overlap (they were
  // serial, part of the per-CTA fixed cost the split model charges). Producer warp 0's lane
  // initializes the barriers (init, then the fence for the async proxy), the producer warps sync
  // among themselves, then each warp's lane 0 issues its tiles' copies (the weights; the image's
  // blocks of these stages, !kXStaged, by producer warp 0's lane after the CTA barrier and the PDL
  // wait, while the consumers build the table). The consumers touch the barriers only after the CTA
  // barrier.
  const int producer_warp = warp - kConsumerWarps;  // >= 0: a producer warp
  // The stages whose weights are requested at the start: all S, or (args.wgmma_first_stage_alone, image form) the
  // first alone and the others once it landed. Every CTA asking for S stages at once queues S x its first
  // stage's bytes at the DRAM (Llama-3 8B gate/up M = 16: 19 MB), so the first stage landed ~5500 cycles after
  // the table was built (session 32's trace) while the loop waited.
  const int early_stages = !kXStaged && args.wgmma_first_stage_alone ? 1 : S;
  // This warp's tiles of a stage: c = producer_warp, + kWgProducerWarps, ... < live_tiles.
  const int my_tiles = live_tiles > producer_warp ? (live_tiles - producer_warp + kWgProducerWarps - 1) / kWgProducerWarps : 0;
  // A stage's `full` barrier completes on the bulk copies' bytes and kFullArrivals arrivals: one
  // per producer thread (kXStaged: after its part of x from group 1 on; group 0's x is the
  // consumers', stored before the CTA barrier), else one per producer warp's lane 0.
  constexpr int kFullArrivals = kXStaged ? kXThreads : kWgProducerWarps;
  const unsigned char* x_image = static_cast<const unsigned char*>(args.x) + chunk * G * kXBytes;  // !kXStaged
  // !kXStaged: producer warp 0's lane copies the image's block of group grp_begin + j (after the PDL wait)
  // With a peer, this CTA's half (peer) of the block, into both CTAs (ranks 2 split, 2 split + 1).
  const auto copy_x_block = [&](int j) {
    unsigned char* dst = stages + (j % S) * kStageBytes;
    const unsigned char* src = x_image + (grp_begin + j) * kXBytes;
    if (peers == 1) {
      bulk_copy_to_shared(dst, src, kXBytes, &full[j % S]);
    } else {
      constexpr int kHalf = kXBytes / 2;
      bulk_copy_to_shared_multicast(dst + peer * kHalf, src + peer * kHalf, kHalf, &full[j % S],
                                    static_cast<uint16_t>(3u << (2 * split)));
    }
  };
  // Lane 0: this warp's copies of group grp_begin + j into stage j % S; !kXStaged, warp 0's also expects
  // the image's block, which it copies here from group S on (the first S: copy_x_block, after the wait;
  // with the first stage alone those of stages 1 .. S - 1 land before this expects them: the barrier's
  // byte count goes negative meanwhile, which PTX allows, and its phase waits for every arrival).
  const auto copy_stage = [&](int j) {
    const int stage = j % S;
    if (j >= S) mbarrier_wait(&empty[stage], ((j / S) - 1) & 1);  // group j - S released
    const int64_t grp = grp_begin + j;
    unsigned char* st = stages + stage * kStageBytes;
    if constexpr (kXStaged) {
      mbarrier_expect_tx(&full[stage], my_tiles * kTileBytes);  // arrives in the staging loop
    } else {
      mbarrier_arrive_expect_tx(&full[stage], (producer_warp == 0 ? kXBytes : 0) + my_tiles * kTileBytes);
      if (producer_warp == 0 && j >= S) copy_x_block(j);
    }
    for (int c = producer_warp; c < live_tiles; c += kWgProducerWarps) {
      const int64_t tile = (cta_tile0 + c) * G + grp;
      unsigned char* dst = st + kXBytes + c * kTileBytes;
      bulk_copy_to_shared(dst, args.packed + tile * tile_words(K), K * 512, &full[stage]);
      bulk_copy_to_shared(dst + K * 512, args.absmax + tile * kAbsmaxBytesPerTile, kAbsmaxBytesPerTile, &full[stage]);
    }
  };
  const int x_thread = threadIdx.x - kConsumerThreads;  // producer threads: 0 .. kXThreads - 1
  uint4 x_next[kXBatch<TN>][4];  // kXStaged: a batch of a producer thread's x of the next group (the first loaded before its stage is free)
  if (producer_warp >= 0) {
    if (producer_warp == 0 && lane == 0) {
      for (int i = 0; i < S; ++i) {
        mbarrier_init(&full[i], kFullArrivals);
        mbarrier_init(&empty[i], kConsumerThreads * peers);  // with a peer, its consumers arrive too
      }
      fence_barrier_init_for_async_proxy();
    }
    named_barrier_sync(1, kXThreads);  // the producer warps (whole warps): barriers initialized
    if (lane == 0)
      for (int j = 0; j < early_stages && j < n_groups; ++j) copy_stage(j);
  }
  if (threadIdx.x < (1 << K)) cb[threadIdx.x] = cb_value;
  if (x_first_mine) {  // stage 0's x region (the copies fill only its weight tiles)
#pragma unroll
    for (int u = 0; u < kFirstItems; ++u)
      if (const int i = threadIdx.x + u * kConsumerThreads; i < 8 * TN) store_x_item<TN>(x_first[u], stages, i);
    fence_async_smem();  // these generic-proxy writes, before the wgmmas (async proxy) read them
  }
  __syncthreads();  // the codebook staged, the barriers initialized, group 0's x stored; the CTA's only barrier
  // With a peer, its copies report to this CTA's barriers and its consumers arrive on them: every thread arrives
  // on the cluster's barrier here (relaxed: the init's fence.mbarrier_init.release.cluster publishes the
  // barriers) and waits before its first use of the peer (producers before their first copy of x, consumers
  // after the table), so the table build overlaps the peer's start.
  if (peers == 2) cluster_arrive_relaxed();

  // The producers never read the pair table: they go on to their copies (!kXStaged: producer warp 0's
  // lane to the PDL wait and the image's first blocks) while the consumers build it.
  if (producer_warp >= 0) {  // producers: the remaining groups (and kXStaged the x of groups 1, 2, ...) as stages are released
    if (peers == 2) cluster_wait();  // (whole warps) the peer's barriers initialized
    if constexpr (kXStaged) {
      for (int j = 0; j < n_groups; ++j) {
        const int stage = j % S;
        if (j > 0) load_x_batch<TN>(x_next, x, M, cols, tok0, grp_begin + j, x_thread, 0);  // in flight during the wait
        if (j >= S) {
          if (lane == 0) copy_stage(j);  // waits for the release itself
          else mbarrier_wait(&empty[stage], ((j / S) - 1) & 1);
        }
        if (j > 0) {  // group 0's x: the consumers, before the CTA barrier
#pragma unroll
          for (int b = 0; b < kXItems<TN> / kXBatch<TN>; ++b) {
            if (b > 0) load_x_batch<TN>(x_next, x, M, cols, tok0, grp_begin + j, x_thread, b);
            store_x_batch<TN>(x_next, stages + stage * kStageBytes, x_thread, b);
          }
          fence_async_smem();  // these generic-proxy writes, before the wgmmas (async proxy) read them
        }
        mbarrier_arrive(&full[stage]);
      }
    } else if (lane == 0) {
      if (producer_warp == 0) {
        grid_dependency_wait();  // the image is written (x_image.cu)
        for (int j = 0; j < S && j < n_groups; ++j) copy_x_block(j);
      }
      if (early_stages < S && early_stages < n_groups) mbarrier_wait(&full[0], 0);  // alone: group 0 landed, then the rest
      for (int j = early_stages; j < n_groups; ++j) copy_stage(j);
    }
    return;
  }

  build_pair_table<c10::Half, K>(dyn_smem, cb, threadIdx.x, kConsumerThreads);  // fp16 for both activation types
  named_barrier_sync(3, kConsumerThreads);  // the table
  if (peers == 2) cluster_wait();  // the peer's barriers initialized (see the CTA barrier)

  // Consumer warp: row tile 4 wg + q of the CTA (warp = 4 wg + q); past N it feeds zeros.
  const bool has_tile = cta_tile0 + warp < NT;
  const uint32_t lane_table = lane_pair_table<K>(dyn_smem, 4u * lane);
  // With a peer: its `empty` barriers (the same offsets in its shared memory); this warp's release of a
  // stage arrives there too, since the peer's next copy of x writes into this CTA's stage.
  const uint32_t peer_empty = peers == 2 ? cluster_shared_address(empty, cluster_cta_rank() ^ 1u) : 0u;
  float acc[TN / 2];
#pragma unroll
  for (int e = 0; e < TN / 2; ++e) acc[e] = 0.0f;

  for (int j = 0; j < n_groups; ++j) {
    const int stage = j % S;
    mbarrier_wait(&full[stage], (j / S) & 1);  // group j landed
    const unsigned char* st = stages + stage * kStageBytes;
    const unsigned char* wt = st + kXBytes + warp * kTileBytes;
    const uint64_t desc0 = smem_matrix_desc(st, 16 * TN, 128);

    uint32_t stream[4 * K];
    uint32_t scales[4][2];  // fp16 pairs of block scales (absmax_half_pairs order)
    if (has_tile) {
      load_lane_stream<K>(wt, lane, stream);
      load_scale_pairs(wt + K * 512, g, scales);
    } else {  // no rows: A = 0 (the warpgroup's wgmma still needs this warp's registers)
#pragma unroll
      for (int w = 0; w < 4 * K; ++w) stream[w] = 0;
#pragma unroll
      for (int q = 0; q < 4; ++q) scales[q][0] = scales[q][1] = 0;
    }

    uint32_t a[kWgInFlight][4];  // register set s % kWgInFlight holds step s's A fragment
#pragma unroll
    for (int blk = 0; blk < 8; ++blk) {
      uint32_t s_lo, s_hi;  // this block's scale for rows g and g + 8
      block_scale_splats(scales, blk, s_lo, s_hi);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int s = 2 * blk + h;
        decode_a_fragment<T, K>(lane_table, stream, s, s_lo, s_hi, a[s % kWgInFlight]);
        wgmma_fence();
        wgmma_m64k16<T, TN>(acc, a[s % kWgInFlight], desc0 + ((s * kStepBytes) >> 4));
        wgmma_commit();
        // Steps up to s - kWgInFlight + 1 done: register set (s + 1) % kWgInFlight is free ...
        wgmma_wait<kWgInFlight - 1>();
        // ... and from step kWgInFlight - 2 on, every wgmma of group j - 1: release its stage
        // (every thread arrives). A predicated arrive, not a branch: a branch between the wgmmas
        // made ptxas serialize them (warning C7513; each step then waited for its own wgmma) in
        // half the kernels, every k at 16 tokens among them (session 30; the times did not move:
        // the steps are bound by the decode, not the wgmma latency).
        if (s == kWgInFlight - 2) {
          mbarrier_arrive_if(j > 0, &empty[(j + S - 1) % S]);
          mbarrier_arrive_cluster_if(j > 0 && peers == 2, peer_empty + 8u * static_cast<uint32_t>((j + S - 1) % S));
        }
      }
    }
  }
  wgmma_wait<0>();
#pragma unroll
  for (int e = 0; e < TN / 2; ++e) pin_register(acc[e]);
  if constexpr (!kXStaged) grid_dependency_wait();  // before y's stores (long since returned: the image was read)

  // acc[4 n + e] (wgmma D): e = 0, 1: row g, tokens 8 n + 2 t, + 1; e = 2, 3: row g + 8.
  const int rows = static_cast<int>(std::min<int64_t>(TN, M - tok0));  // valid tokens of the chunk
  const int64_t row0 = cta_tile0 * 16;
  T* const y = static_cast<T*>(args.y);
  if (splits == 1) {
    // With a peer, neither CTA leaves before the other's arrivals on its barriers are done (the release
    // orders this CTA's remote arrivals before its barrier arrival; no global store is pending yet).
    if (peers == 2) cluster_arrive();
    // y's tile goes out through the idle stages: [TN][kYStride] of T (16 bytes of padding: the token rows
    // of a warp's store 4 banks apart, no conflict), then 16-byte rows pieces, a token's rows contiguous
    // in y. Stored straight from the accumulators (2 bytes each, 8 rows x 4 tokens a warp instruction) a
    // 128 x 128 tile took ~4900 cycles (session 32's trace, Llama-3 8B / 70B gate/up M = 128).
    constexpr int kYStride = 16 * kRowTiles + 8, kRowChunks = 2 * kRowTiles;  // 16-byte pieces of a token's rows
    static_assert(TN * kYStride * int(sizeof(T)) <= S * kStageBytes, "wgmma_gemm: y's tile fits in the stages");
    named_barrier_sync(2, kConsumerThreads);  // every warpgroup's wgmmas done: the stages are free
    T* tile = reinterpret_cast<T*>(stages);
#pragma unroll
    for (int e = 0; e < TN / 2; ++e)
      tile[(8 * (e >> 2) + 2 * t + (e & 1)) * kYStride + warp * 16 + g + ((e & 2) ? 8 : 0)] =
          from_float<T>(acc[e] * ((e & 2) ? row_scale_hi : row_scale_lo));
    named_barrier_sync(2, kConsumerThreads);
    const int live_rows = static_cast<int>(std::min<int64_t>(16 * kRowTiles, N - row0));  // <= 0: a peer past N
    if (N % 8 == 0) {  // every token's rows start 16-byte aligned in y, and live_rows is a multiple of 8
      for (int c = threadIdx.x; c < rows * kRowChunks; c += kConsumerThreads) {
        const int tok = c / kRowChunks, r8 = 8 * (c % kRowChunks);
        if (r8 < live_rows)
          *reinterpret_cast<uint4*>(y + (tok0 + tok) * N + row0 + r8) =
              *reinterpret_cast<const uint4*>(tile + tok * kYStride + r8);
      }
    } else if (live_rows > 0) {  // one element a thread (consecutive threads, consecutive rows)
      for (int c = threadIdx.x; c < rows * live_rows; c += kConsumerThreads) {
        const int tok = c / live_rows, r = c - tok * live_rows;
        y[(tok0 + tok) * N + row0 + r] = tile[tok * kYStride + r];
      }
    }
    if (peers == 2) cluster_wait();
    return;
  }
  // K-splits: this tile's splits are one cluster (1, splits, 1) of a grid (CTAs, splits), so
  // blockIdx.y = split = the CTA's cluster rank (cluster_cta_rank()); with x peers the cluster is
  // (2, splits, 1) and split p of this row block is rank peer + 2 p. Each writes
  // its partials, times the row scale, into its own (now idle) stages, then reduces 1/splits of
  // the tile from all splits' shared memory in split order (the same bits every run). The scale
  // comes first so that the reduction reads nothing from global memory: its row-scale loads
  // (cold, after the copies) were most of the epilogue's time (session 19). Producer warps take
  // no part (the cluster barrier waits for non-exited threads only, and they exit after their
  // last copies); every consumer thread takes both barriers.
  static_assert(TN * kPartialStride * 4 <= S * kStageBytes, "wgmma_gemm: the partials fit in the stages");
  named_barrier_sync(2, kConsumerThreads);  // every warpgroup's wgmmas done: the stages are free
  float* partial = reinterpret_cast<float*>(stages);  // [TN][kPartialStride]
#pragma unroll
  for (int e = 0; e < TN / 2; ++e)
    partial[(8 * (e >> 2) + 2 * t + (e & 1)) * kPartialStride + warp * 16 + g + ((e & 2) ? 8 : 0)] =
        acc[e] * ((e & 2) ? row_scale_hi : row_scale_lo);
  cluster_sync();  // every split's partials written
  // The float4s of the tile's valid tokens' partials (tokens past M are zeros: not read, a chunk
  // of 48 tokens in TN = 64 moves 3/4 of the bytes through the cluster).
  const int quads = rows * (16 * kRowTiles / 4);
  const int q_begin = split * quads / splits, q_end = (split + 1) * quads / splits;
  for (int q = q_begin + static_cast<int>(threadIdx.x); q < q_end; q += kConsumerThreads) {
    const int tok = q / (4 * kRowTiles), r4 = 4 * (q % (4 * kRowTiles));
    // Rows past N (a partial last row block): nothing to store, so nothing is read either; every
    // remote load that runs then feeds a store, which the relaxed barrier below relies on.
    if (row0 + r4 >= N) continue;
    const float* mine = partial + tok * kPartialStride + r4;
    float4 part[kWgMaxSplits];
#pragma unroll
    for (int p = 0; p < kWgMaxSplits; ++p)
      if (p < splits) part[p] = load_cluster_shared(cluster_shared_address(mine, peer + peers * p));
    float4 sum = part[0];
#pragma unroll
    for (int p = 1; p < kWgMaxSplits; ++p)
      if (p < splits) sum.x += part[p].x, sum.y += part[p].y, sum.z += part[p].z, sum.w += part[p].w;
    const float sums[4] = {sum.x, sum.y, sum.z, sum.w};
    // (one 8-byte store of the four rows instead: no faster, the loads bound this loop; session 32 run 5)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int64_t row = row0 + r4 + i;
      if (row < N) y[(tok0 + tok) * N + row] = from_float<T>(sums[i]);
    }
  }
  cluster_sync_relaxed();  // no CTA leaves while another reads its shared memory (their sums fed the stores above)
#else
  __trap();  // launched only where wgmma_gemm_available (an sm_90a build on a 9.0 GPU)
#endif
}

template <typename T, int K, int TN, int kRowTiles>
void launch_wgmma_gemm_shape(const TcGemmArgs& args, cudaStream_t stream) {
  constexpr int kSmem = wgmma_smem_bytes(K, TN, kRowTiles), kThreads = wgmma_threads(kRowTiles);
  auto kernel = args.wgmma_x_staged ? wgmma_gemm_kernel<T, K, TN, kRowTiles, true>
                                    : wgmma_gemm_kernel<T, K, TN, kRowTiles, false>;
  resident_ctas_per_sm(reinterpret_cast<const void*>(kernel), kThreads, kSmem, kSmem);  // the opt-in
  const int peers = args.wgmma_x_peers;
  TORCH_CHECK(peers == 1 || (peers == 2 && !args.wgmma_x_staged), "kbit: wgmma_gemm: internal error: x peers ", peers);
  const int64_t ctas = wgmma_grid_ctas(args.M, args.N, WgmmaShape{TN, kRowTiles}, 1, peers);  // grid.x: one split's
  // wgmma_gemm_splits gives 1..kWgMaxSplits splits of which the GPU runs a cluster (it steps down;
  // not queried again here: the call's host path already asked per split count; wgmma_plan pairs row blocks
  // only where a cluster of 2 x splits runs)
  TORCH_CHECK(args.splits >= 1 && args.splits * peers <= kWgMaxSplits, "kbit: wgmma_gemm: internal error: ", args.splits,
              " K-splits x ", peers, " x peers");
  const dim3 grid(static_cast<unsigned>(ctas), static_cast<unsigned>(args.splits));
  launch_kernel_in_clusters(kernel, grid, dim3(peers, args.splits, 1), dim3(kThreads), kSmem, stream,
                            dependent_launch_enabled(*at::cuda::getCurrentDeviceProperties()), args);
}

template <int K, int TN, int kRowTiles>
int wgmma_resident_clusters_shape(int cluster_ctas) {
  // Remembered per (device, CTAs a cluster) without a lock: the split model asks for every count on each
  // call, and each query (two mutex-guarded map lookups) was host time on every wgmma call.
  constexpr int kDevices = 64;
  static std::atomic<int> remembered[kDevices][kWgMaxSplits + 1];  // clusters + 1; 0: not yet asked
  int device = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  const bool slot = device >= 0 && device < kDevices && cluster_ctas >= 1 && cluster_ctas <= kWgMaxSplits;
  if (slot)
    if (const int known = remembered[device][cluster_ctas].load(std::memory_order_relaxed); known > 0) return known - 1;
  constexpr int kSmem = wgmma_smem_bytes(K, TN, kRowTiles), kThreads = wgmma_threads(kRowTiles);
  // (the other variants: the same resources)
  const void* kernel = reinterpret_cast<const void*>(wgmma_gemm_kernel<c10::Half, K, TN, kRowTiles, true>);
  resident_ctas_per_sm(kernel, kThreads, kSmem, kSmem);  // the opt-in, before the cluster query
  const int clusters = resident_clusters(kernel, kThreads, kSmem, cluster_ctas);
  if (slot) remembered[device][cluster_ctas].store(clusters + 1, std::memory_order_relaxed);
  return clusters;
}

// The compiled shapes (wgmma_gemm.h): f(std::integral_constant<int, TN>, std::integral_constant<int, kRowTiles>).
template <typename F>
decltype(auto) with_wgmma_shape(WgmmaShape shape, F&& f) {
  using std::integral_constant;
  if (shape.row_tiles == 8) {
    if (shape.tokens == 128) return f(integral_constant<int, 128>{}, integral_constant<int, 8>{});
    TORCH_CHECK(shape.tokens == 64, "kbit: wgmma_gemm: internal error: no kernel for ", shape.tokens, " tokens x 8 row tiles");
    return f(integral_constant<int, 64>{}, integral_constant<int, 8>{});
  }
  TORCH_CHECK(shape.row_tiles == 16 && (shape.tokens == 16 || shape.tokens == 32 || shape.tokens == 64),
              "kbit: wgmma_gemm: internal error: no kernel for ", shape.tokens, " tokens x ", shape.row_tiles, " row tiles");
  if (shape.tokens == 16) return f(integral_constant<int, 16>{}, integral_constant<int, 16>{});
  if (shape.tokens == 32) return f(integral_constant<int, 32>{}, integral_constant<int, 16>{});
  return f(integral_constant<int, 64>{}, integral_constant<int, 16>{});
}

template <int K>
int wgmma_resident_clusters(WgmmaShape shape, int cluster_ctas) {
  return with_wgmma_shape(shape, [&](auto tn, auto rt) {
    return wgmma_resident_clusters_shape<K, decltype(tn)::value, decltype(rt)::value>(cluster_ctas);
  });
}

template <typename T, int K>
void launch_wgmma_gemm(const TcGemmArgs& args, cudaStream_t stream) {
  with_wgmma_shape(WgmmaShape{args.wgmma_tokens, args.wgmma_row_tiles}, [&](auto tn, auto rt) {
    launch_wgmma_gemm_shape<T, K, decltype(tn)::value, decltype(rt)::value>(args, stream);
  });
}

}  // namespace cuda
}  // namespace kbit

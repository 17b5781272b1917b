#pragma once
// Warpgroup-MMA GEMM (dense, sm_90a): y[M, N] = x[M, K] @ W^T straight from the tiled layout
// (docs/format.md section 5). The tile kernel's structure (tile_gemm.cuh: pair-table decode of A in
// registers) with the matrix math moved to asynchronous wgmma, so a warp decodes step s + 1 while
// the tensor cores run step s, x read by the tensor cores from shared memory, and the stages filled
// by the copy engine (x by tensor copies from x itself, the weights by bulk copies) from producer warps.
//
// Work partition:
//   CTA    = kRowTiles / 4 consumer warpgroups on 16 kRowTiles rows of W x TN tokens (WgmmaShape,
//            wgmma_gemm.h: 16 row tiles x 16, 32 or 64 tokens; 8 x 64, 80, ..., 160), plus kWgProducerWarps
//            producer warps. Warpgroup wg owns the 64-row wgmma block of row tiles
//            4 wg .. 4 wg + 3; its warp q decodes row tile 4 wg + q. Accumulators: TN / 2 fp32
//            per thread (wgmma D layout, wgmma.cuh).
//   unit   = an output tile: row block x token chunk, numbered chunk fastest (CTAs sharing W run side by side)
//   work   = args.wgmma_work_clusters clusters of `splits` CTAs (1, splits, 1), splits along K at most
//            kWgMaxSplits. Work cluster c < args.wgmma_whole_clusters (the split tail, WgmmaPlan): its CTA of rank
//            r runs unit splits c + r whole (all of K; the units' full CTA waves). Every later one runs one unit
//            (the units after the whole ones, in order), rank r its split r, and the splits add their partials
//            through distributed shared memory at the end (no workspace). Without splits every work cluster is
//            one CTA, one whole unit.
//   grid   = (args.wgmma_grid_clusters, splits): launched cluster b runs work clusters b, b + gridDim.x, ... in
//            turn (persistent where fewer are launched than there is work, WgmmaPlan; CTAs of 80-160 tokens only,
//            wgmma_persistent_shape: the others are launched one cluster per cluster of work): the pair table is built
//            once, the producers fill the next unit's first stages while the consumers finish the current one,
//            and y's tile goes out through the last group's stage alone. A split unit is always its CTA's last
//            (the host's rule), so the split reduction keeps every stage and the cluster barriers as before.
//   stream = the stream-K schedule (kStream: wgmma_stream_gemm_kernel, WgmmaPlan::stream; persistent shapes only):
//            P = gridDim.x CTAs, no clusters, in lanes: CTA i runs token chunk i % chunks (its lane), as the i /
//            chunks-th of the lane's Q = P / chunks CTAs. The row blocks' steps (a row block's 256-column groups, row
//            block after row block: T = row blocks x G) are shared evenly in each lane: the lane's CTA q takes steps
//            [q T / Q, (q + 1) T / Q) of its chunk, as pieces (one unit's groups in its range each). So the chunks of a
//            row block run side by side, reading its weights at about the same time (one lane over all units, a CTA
//            running a row block's chunks one after another, read them from DRAM once per chunk: run 4). A piece of
//            all G groups is a whole unit (y out as above). Every other piece (at most two a CTA: its first and its
//            last) writes its fp32 sums to its workspace slot (2 i for the CTA's first piece, 2 i + 1 its last: [TN /
//            8][consumer thread][4], the accumulators' own order), then counts itself on its unit's counter
//            (args.wgmma_stream_counters, zeros before the launch); the unit's last piece to count adds all of them,
//            its own from registers, in piece order (the lane's CTAs holding the unit's steps, in order: the same sums
//            in the same order whichever piece is last, so the same bits every run for the same P), stores y as a
//            whole unit does, and sets the counter back to 0. No CTA waits for another.
// Pipeline: wgmma_stages(k, TN, kRowTiles) stages of one 256-column group each. Producer warp p's lane 0
//   fills its share of a stage: x's panel p (one tensor copy, tensor_copy.cuh, through the host's
//   tensor map x_map) and every kWgProducerWarps-th live weight tile from p on, each as two bulk copies
//   (bulk_copy.cuh: k x 512 stream bytes [v][lane][16 B], 128 absmax bytes). The stage's `full` mbarrier
//   completes on those bytes and one arrival per producer warp. A consumer warp releases a stage
//   (every thread arrives on its `empty` mbarrier, 32 kRowTiles per phase) once its warpgroup's wgmmas
//   of that group are complete, which it knows a few steps into the next group, so the tensor cores
//   never drain between groups; the producer refills a stage when all kRowTiles consumer warps
//   released it. No CTA-wide barrier in the main loop.
// x in shared memory (wgmma B operand, K-major, 128-byte swizzle): a stage's x is 4 panels of TN rows
//   x 128 bytes, panel p (at p TN 128 bytes) = the group's columns 64 p .. 64 p + 63, row r = token
//   tok0 + r, its 16-byte chunk c (columns 64 p + 8 c .. + 7, x's order) at chunk position c ^ (r % 8):
//   the box a tensor copy with CU_TENSOR_MAP_SWIZZLE_128B writes (tensor_map.h), zeros past M and K.
//   Layout version 4 takes a step's k-slots in natural order (tiled_layout.h): step s = 2 b + h of a
//   group reads columns 16 s .. 16 s + 15, i.e. panel s / 4, bytes 32 (s % 4) .. + 31 of each row, so
//   its descriptor is smem_matrix_desc_sw128 (wgmma.cuh; SBO 1024: 8 tokens) of the panel + 32 (s % 4).
//   The swizzle is a function of the address, so the stages' x starts 1024-byte aligned (the dynamic
//   shared memory, the pair table's bytes and the stage size: static_asserts in the kernel). Every
//   group runs all 16 steps: zeros past M and K (and W's padding has zero scales).
// Per step s = 2 b + h of a group: each warp decodes its row tile's A fragment (pair-table
//   lookup x block scale, as the tile kernel) into register set s % kWgInFlight; wgmma_fence;
//   one wgmma per warpgroup; commit; wait until at most kWgInFlight - 1 steps are pending (the
//   oldest one's register set is then free for step s + 1). Up to kWgInFlight wgmmas in flight
//   per warpgroup hide the wgmma latency behind the decode of the following steps.
//   No branch around a wgmma (ptxas serializes wgmmas on divergent paths): a K tail runs all
//   16 steps on zeros, a warp whose row tile is past N feeds zeros.
// Post-scaled bf16 (wgmma_post_scale, wgmma_gemm.h: bf16 activations at TN = 16, 32). The pre-scaled
//   decode multiplies each fp16 pair by the block scale (HMUL2) and converts the product to bf16 (2
//   conversions to fp32, 1 pack): 4 instructions a pair against fp16's 1. Here the pair table is in bf16
//   (each codebook value rounded once), A is the looked-up words, and a block's two steps go to `part`
//   (the first with scale-d = 0); the block ends waiting for both (the next block's first lookups run
//   meanwhile), then acc += scale(row, block) x part: one FFMA a sum, TN / 2 a thread and block, against
//   32 fewer decode instructions. (Two parts, each folded while the next block's wgmmas run, made ptxas
//   serialize every wgmma: C7514, an accumulator read while a wgmma is in flight.) At 64 tokens the FFMAs
//   would cost what the decode saves. Numerics: the codebook value rounded once to bf16, the scale
//   applied in fp32 (one FFMA rounding; the pre-scaled path rounds c x scale once to bf16); the same error bound.
// History (H100, 70B gate/up, k = 4; docs/design.md): per-thread cp.async stages and 8 warps
//   (2 row tiles each) were no faster than the tile kernel at any M; bulk copies made M = 64
//   122 -> 98 us; ncu then showed the per-group CTA barrier and too few warps for the decode
//   latency (barrier, wait and gmma stalls), hence this partition. Session 17: a per-CTA trace
//   showed one producer lane spending 68-80 cycles per bulk copy (~9000 cycles of first stages
//   before the first barrier at TN = 16, ~2650 per stage on the path at TN = 64); four producer
//   warps: 8B gate/up M = 128 58.7 -> 44.8 us, 70B M = 64 109 -> 91. Session 18: split-K in a
//   cluster (no reduction kernel) and x staged by the kernel's threads where no stage refilled (no
//   pass kernel before): Qwen3 gate/up M = 16 12.4 -> 10.1 us, KV 9.1 -> 6.7, 8B gate/up M = 64
//   35.6 -> 29.9. Session 23: two warpgroups on 128 rows (kRowTiles = 8), 128 tokens per CTA
//   above M = 64 (each weight decoded once per 128 tokens, not per 64): M = 128 Qwen3 Q 14.9 -> 13.4
//   us, down 17.3 -> 15.0, 8B gate/up 43.7 -> 33.5, 70B 158 -> 118. Through layout version 3 x's
//   k-slots were permuted, so x reached the stages through a pass kernel writing an image of them
//   or through the kernel's threads (loads, a transpose in registers, stores); session 35 measured
//   the pass's kernel boundary at 0.7-2.3 us a call (Qwen3 shapes), hence version 4 and x by TMA.
// Numerics: as the tile kernel (fp16 pair products, bf16 rounded once from them, fp32 sums), but post-scaled
// bf16 (above).
#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>

#include "../../common/tiled_layout.h"
#include "../common/bulk_copy.cuh"
#include "../common/cluster.cuh"
#include "../common/dependent_launch.cuh"
#include "../common/dependent_launch.h"
#include "../common/device_utils.cuh"
#include "../common/kernel_residency.h"
#include "../common/tensor_copy.cuh"
#include "../common/tensor_map.h"
#include "mma.cuh"
#include "pair_table.cuh"
#include "wgmma.cuh"
#include "wgmma_gemm.h"

namespace kbit {
namespace cuda {

// A CTA's share of one work cluster, or its stream-K piece (the partition above).
struct WgmmaWork {
  int split, splits;        // its K-split of the unit (0 of 1: whole)
  int n_groups;             // its 256-column groups (>= 1: splits <= groups), from grp_begin
  int live_tiles;           // its row tiles inside N
  int64_t grp_begin;
  int64_t tok0, cta_tile0;  // the unit's first token and first 16-row tile
  // stream-K only (kStream): whether the piece is all of its unit's groups, its unit, and the unit's first step
  bool whole_piece;
  uint32_t unit, unit_step0;
};

// x_map (the kernel's tensor map over x [M, K], wgmma_x_tensor_map): boxes of TN tokens x 64 columns, the 128-byte
// swizzle; the 64 columns of a box are one panel of a stage, 128 bytes a token.
constexpr int kWgPanelCols = 64;

// The kernel's body (the two kernels below: work clusters, or kStream's stream-K pieces).
template <typename T, int K, int TN, int kRowTiles, bool kStream>
__device__ __forceinline__ void wgmma_gemm_body(const TcGemmArgs& args, const CUtensorMap& x_map) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(kRowTiles == 8 || kRowTiles == 16, "wgmma_gemm: two or four consumer warpgroups");
  static_assert(TN <= 64 || kRowTiles == 8,
                "wgmma_gemm: 80-160 tokens only on two warpgroups (40-80 accumulators a thread)");
  // 144 and 160 tokens (72, 80 accumulators a consumer thread) do not fit the 168 registers a thread of a 384-thread
  // CTA gets: the producer warpgroup, which needs few, gives registers to the consumers (setmaxnreg, wgmma_gemm.h).
  constexpr bool kRebalanceRegisters = TN > 128;
  // (setmaxnreg.inc waits for registers in the CTA's pool, which holds what it launched with: the consumers may take no
  // more than the producers give back, or the inc never returns)
  static_assert(!kRebalanceRegisters ||
                    (kRowTiles == 8 && kWgProducerWarps == 4 &&
                     (kWgLaunchRegisters - kWgProducerRegisters) * 128 >=
                         (kWgConsumerRegisters - kWgLaunchRegisters) * 256),
                "wgmma_gemm: the consumers take no more registers than the producers give back");
  constexpr int kConsumerWarps = kRowTiles;  // one per row tile
  constexpr int kConsumerThreads = 32 * kConsumerWarps;
  constexpr int kPartialStride = wgmma_partial_stride(kRowTiles);
  constexpr int S = wgmma_stages(K, TN, kRowTiles);
  constexpr int kStageBytes = wgmma_stage_bytes(K, TN, kRowTiles);
  constexpr bool kOneCopyTable = wgmma_one_copy_table(K, TN);  // (k = 5 from 96 tokens)
  using Table = PairTable<K, kOneCopyTable>;
  constexpr int kPanelBytes = TN * kWgPanelCols * 2, kXBytes = 4 * kPanelBytes;  // a stage's x: 4 panels
  constexpr int kTileBytes = K * 512 + kAbsmaxBytesPerTile;
  static_assert(S >= 2 && S <= 4, "wgmma_gemm: 2-4 pipeline stages (wgmma_reserved_bytes has room for 4)");
  static_assert(kWgInFlight >= 2 && kWgInFlight - 2 < 16, "wgmma_gemm: the stage release needs a step >= 0 to fire on");
  constexpr bool kPostScale = wgmma_post_scale<T>(TN);  // post-scaled bf16: its own step loop below
  static_assert(kWgProducerWarps == 4, "wgmma_gemm: one x panel per producer warp");
  static_assert(kXBytes == TN * 512 && kStageBytes == kXBytes + kRowTiles * kTileBytes, "wgmma_gemm: the stage layout");
  // the 128-byte swizzle's atoms (8 rows x 128 bytes) start 1024-byte aligned in every stage's x, panel by panel
  static_assert(Table::kBytes % 1024 == 0 && kStageBytes % 1024 == 0 && kPanelBytes % 1024 == 0,
                "wgmma_gemm: the stages' x panels 1024-byte aligned");
  extern __shared__ __align__(1024) unsigned char dyn_smem[];  // [pair table][S stages][codebook][barriers]
  unsigned char* stages = dyn_smem + Table::kBytes;
  float* cb = reinterpret_cast<float*>(stages + S * kStageBytes);
  uint64_t* full = reinterpret_cast<uint64_t*>(cb + 32);  // [S]: the stage's bytes landed
  uint64_t* empty = full + 4;                              // [S]: all consumer warps are done with it
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t N = args.N, cols = args.K, M = args.M;
  const int64_t NT = (N + 15) / 16, G = (cols + 255) / 256, chunks = (M + TN - 1) / TN;
  // The CTA's share of work cluster v (the partition above): a whole cluster's CTAs run `cluster_ctas` whole units
  // side by side. In 32-bit arithmetic (units < 2^31 and K < 2^31: the launcher's checks): a 64-bit division is a
  // subroutine call, and calls inside the work loops made ptxas keep the wgmma descriptors out of uniform registers
  // (two R2UR a step, +21% instructions in a group's loop, ~8% a call; session 44).
  const uint32_t cluster_ctas = gridDim.y, rank = blockIdx.y;
  const uint32_t whole_clusters = static_cast<uint32_t>(args.wgmma_whole_clusters);
  const uint32_t groups32 = static_cast<uint32_t>(G), chunks32 = static_cast<uint32_t>(chunks);
  constexpr bool kPersistent = wgmma_persistent_shape(TN);  // (else the host launches a cluster per work cluster)
  static_assert(!kStream || (kPersistent && kRowTiles == 8), "wgmma_gemm: stream-K in the persistent shapes only");
  const int64_t work_clusters = args.wgmma_work_clusters, launched = gridDim.x;
  // Stream-K (the partition above): the row blocks' steps T, the CTAs of a lane Q, this CTA's lane (its chunk) and
  // index in it, its steps [stream_begin, stream_end), the row block of its first piece and its pieces. 32-bit: the
  // launcher checks T (Q + 1) < 2^32, T >= Q (every CTA has a step) and P = Q x chunks.
  const uint32_t stream_steps = kStream ? static_cast<uint32_t>(work_clusters) / chunks32 * groups32 : 1u;
  const uint32_t stream_q = kStream ? gridDim.x / chunks32 : 1u;
  const uint32_t stream_lane = kStream ? blockIdx.x % chunks32 : 0u, stream_me = kStream ? blockIdx.x / chunks32 : 0u;
  // the first step of a lane's CTA c, and the CTA whose range holds step s (the largest c with stream_step0(c) <= s)
  const auto stream_step0 = [&](uint32_t c) { return c * stream_steps / stream_q; };
  const auto stream_owner = [&](uint32_t s) { return ((s + 1) * stream_q + stream_steps - 1) / stream_steps - 1; };
  uint32_t stream_begin = 0, stream_end = 0, stream_first = 0;
  int stream_pieces = 0;
  if constexpr (kStream) {
    stream_begin = stream_step0(stream_me);
    stream_end = stream_step0(stream_me + 1);
    stream_first = stream_begin / groups32;
    stream_pieces = static_cast<int>((stream_end - 1) / groups32 - stream_first + 1);
    if (stream_end <= stream_begin) __trap();  // (a launch against the launcher's checks)
  }
  const auto work_of = [&](int64_t v) {
    WgmmaWork w;
    uint32_t unit;
    if constexpr (kStream) {  // v: the CTA's piece, of row block stream_first + v in its lane's chunk
      const uint32_t row_block = stream_first + static_cast<uint32_t>(v);
      unit = row_block * chunks32 + stream_lane;
      const uint32_t step0 = row_block * groups32;
      const uint32_t s0 = std::max(stream_begin, step0), s1 = std::min(stream_end, step0 + groups32);
      w.split = 0, w.splits = 1;
      w.grp_begin = s0 - step0;
      w.n_groups = static_cast<int>(s1 - s0);
      w.whole_piece = s1 - s0 == groups32;
      w.unit = unit, w.unit_step0 = step0;
    } else {  // v: the work cluster
      const uint32_t v32 = static_cast<uint32_t>(v);
      const bool whole = v32 < whole_clusters;
      w.split = whole ? 0 : static_cast<int>(rank);
      w.splits = whole ? 1 : static_cast<int>(cluster_ctas);
      unit = whole ? v32 * cluster_ctas + rank : v32 + whole_clusters * (cluster_ctas - 1);
      const uint32_t grp_begin = groups32 * w.split / w.splits;  // (< 2^23 groups x 8 splits)
      w.grp_begin = grp_begin;
      w.n_groups = static_cast<int>(groups32 * (w.split + 1) / w.splits - grp_begin);
      w.whole_piece = true, w.unit = unit, w.unit_step0 = 0;
    }
    const uint32_t row_block = unit / chunks32;
    w.tok0 = int64_t(unit - row_block * chunks32) * TN;
    w.cta_tile0 = int64_t(row_block) * kRowTiles;
    w.live_tiles = static_cast<int>(std::min<int64_t>(NT - w.cta_tile0, kRowTiles));
    return w;
  };
  const int64_t first_v = kStream ? 0 : blockIdx.x;  // the CTA's first piece, or work cluster
  const WgmmaWork first = work_of(first_v);
  const int producer_warp = warp - kConsumerWarps;  // >= 0: a producer warp

  // Launched with PDL (dependent_launch.cuh): the launch overlaps the previous kernel's tail, which may write anything
  // this kernel reads (the previous layer's y is this call's x). So before the wait only hints touch global memory:
  // the codebook's line, the row scales' lines (lane 0 of each consumer warp: its 16 rows), the first group's weight
  // tiles (producer thread 2 c + h: tile c's codes, h = 0, or absmax, h = 1) and the tensor map (a parameter) into
  // the descriptor cache: what the first loads and copies after the wait ask for. Every thread then waits, and the
  // x and weight copies follow. Session 19 run 11 (this order, then x staged by the kernel's threads): KV M = 16 / 32
  // 5.8 / 6.7 -> 5.1 / 6.1 us, Qwen3 gate/up, O, down 0.1-0.6 us less; session 35 run 3 (x from an image made
  // before the call, no pass kernel, the wait first: the bound for this kernel) Qwen3 shapes at M = 40-256 0.7-2.3
  // us a call shorter than with the image pass before them.
  allow_dependents();
  if (threadIdx.x == 0) prefetch_l2_line(args.codebook);
  if (warp < kConsumerWarps && lane == 0 && first.cta_tile0 + warp < NT)
    prefetch_l2_line(args.row_scale + (first.cta_tile0 + warp) * 16);
  if (const int p = threadIdx.x - kConsumerThreads; p >= 0 && p < 2 * first.live_tiles && first.n_groups > 0) {
    const int64_t tile = (first.cta_tile0 + p / 2) * G + first.grp_begin;
    if (p % 2 == 0) prefetch_l2(args.packed + tile * tile_words(K), K * 512);
    else prefetch_l2(args.absmax + tile * kAbsmaxBytesPerTile, kAbsmaxBytesPerTile);
  }
  if (producer_warp >= 0 && lane == 0) prefetch_tensor_map(&x_map);
  grid_dependency_wait();
  const float cb_value = codebook_entry<K>(args.codebook);

  // What the kernel reads besides the stages' copies is requested first, before the producers'
  // copies fill the memory queues: the codebook (above) and a consumer thread's two row scales (rows
  // g and g + 8 of its tile, applied at the end). A per-CTA trace (session 19) showed these loads,
  // issued after the copies, landing 2000-5000 cycles late and holding up the table barrier and the epilogue.
  const int g = lane >> 2, t = lane & 3;
  float row_scale_lo, row_scale_hi;  // consumers: rows g, g + 8 of the row tile (0 past N)
  const auto load_row_scales = [&](const WgmmaWork& w) {
    const int64_t row = (w.cta_tile0 + warp) * 16 + g;
    row_scale_lo = row < N ? __ldg(args.row_scale + row) : 0.0f;
    row_scale_hi = row + 8 < N ? __ldg(args.row_scale + row + 8) : 0.0f;
  };
  if (warp < kConsumerWarps) load_row_scales(first);

  // The producers' first stages are on their way before the table is built: the codebook load + table
  // build and the first stages' memory latency overlap (they were serial, part of the per-CTA fixed cost the
  // split model charges). Producer warp 0's lane initializes the barriers (init, then the fence for the async
  // proxy), the producer warps sync among themselves, then each warp's lane 0 issues its copies. The consumers
  // touch the barriers only after the CTA barrier.
  // The stages requested at the start: all S, or (args.wgmma_first_stage_alone, the rule) the first alone and the
  // others once it landed. Every CTA asking for S stages at once queues S x its first stage's bytes at the DRAM
  // (Llama-3 8B gate/up M = 16: 19 MB), so the first stage landed ~5500 cycles after the table was built (session
  // 32's trace, then with x's image) while the loop waited.
  const int early_stages = args.wgmma_first_stage_alone ? 1 : S;
  // Lane 0 of producer warp p: its copies of group w.grp_begin + j of work w, the CTA's group J (counted over its
  // work clusters in turn), into stage J % S, once group J - S released it: x's panel p (columns 256 grp + 64 p ..,
  // tokens w.tok0 ..; the box's bytes count in full, its zeros included) and its tiles c = p, p + kWgProducerWarps,
  // ... < w.live_tiles. One arrival a producer warp (kWgProducerWarps a phase), with the bytes it expects.
  const auto copy_stage = [&](const WgmmaWork& w, int j, uint32_t J) {
    const int stage = static_cast<int>(J % S);
    if (J >= S) mbarrier_wait(&empty[stage], ((J / S) - 1) & 1);  // group J - S released
    const int64_t grp = w.grp_begin + j;
    const int my_tiles = w.live_tiles > producer_warp
                             ? (w.live_tiles - producer_warp + kWgProducerWarps - 1) / kWgProducerWarps
                             : 0;
    unsigned char* st = stages + stage * kStageBytes;
    mbarrier_arrive_expect_tx(&full[stage], kPanelBytes + my_tiles * kTileBytes);
    tensor_copy_2d_to_shared(st + producer_warp * kPanelBytes, &x_map,
                             static_cast<int32_t>(grp * 256 + producer_warp * kWgPanelCols),
                             static_cast<int32_t>(w.tok0), &full[stage]);
    for (int c = producer_warp; c < w.live_tiles; c += kWgProducerWarps) {
      const int64_t tile = (w.cta_tile0 + c) * G + grp;
      unsigned char* dst = st + kXBytes + c * kTileBytes;
      bulk_copy_to_shared(dst, args.packed + tile * tile_words(K), K * 512, &full[stage]);
      bulk_copy_to_shared(dst + K * 512, args.absmax + tile * kAbsmaxBytesPerTile, kAbsmaxBytesPerTile, &full[stage]);
    }
  };
  if (producer_warp >= 0) {
    if (producer_warp == 0 && lane == 0) {
      // (the swizzle's alignment: the declaration asks for 1024 bytes; a base off it would misplace x silently)
      if ((smem_address(stages) & 1023u) != 0) __trap();
      for (int i = 0; i < S; ++i) {
        mbarrier_init(&full[i], kWgProducerWarps);
        mbarrier_init(&empty[i], kConsumerThreads);
      }
      fence_barrier_init_for_async_proxy();
    }
    named_barrier_sync(1, 32 * kWgProducerWarps);  // the producer warps (whole warps): barriers initialized
    if (lane == 0)
      for (int j = 0; j < early_stages && j < first.n_groups; ++j) copy_stage(first, j, j);
  }
  if (threadIdx.x < (1 << K)) cb[threadIdx.x] = cb_value;
  __syncthreads();  // the codebook staged, the barriers initialized; the CTA's only barrier

  // The producers never read the pair table: they go on to their copies while the consumers build it.
  if (producer_warp >= 0) {  // producers: the remaining groups as stages are released
    if constexpr (kRebalanceRegisters) setmaxnreg_dec<kWgProducerRegisters>();
    if (lane == 0) {
      // the first stage alone: group 0 landed, then the rest, then the later work clusters' groups
      if (early_stages < S && early_stages < first.n_groups) mbarrier_wait(&full[0], 0);
      for (int j = early_stages; j < first.n_groups; ++j) copy_stage(first, j, j);
      if constexpr (kStream) {
        uint32_t J = first.n_groups;
        for (int v = 1; v < stream_pieces; ++v) {
          const WgmmaWork w = work_of(v);
          for (int j = 0; j < w.n_groups; ++j) copy_stage(w, j, J + j);
          J += w.n_groups;
        }
      } else if constexpr (kPersistent) {
        uint32_t J = first.n_groups;
        for (int64_t v = blockIdx.x + launched; v < work_clusters; v += launched) {
          const WgmmaWork w = work_of(v);
          for (int j = 0; j < w.n_groups; ++j) copy_stage(w, j, J + j);
          J += w.n_groups;
        }
      }
    }
    return;
  }

  if constexpr (kRebalanceRegisters) setmaxnreg_inc<kWgConsumerRegisters>();
  // (fp16 for both activation types, but in T where the block scales are applied to the sums: wgmma_post_scale)
  build_pair_table<std::conditional_t<kPostScale, T, c10::Half>, K, kOneCopyTable>(dyn_smem, cb, threadIdx.x,
                                                                                   kConsumerThreads);
  named_barrier_sync(3, kConsumerThreads);  // the table

  const uint32_t lane_table = lane_pair_table<K, kOneCopyTable>(dyn_smem, 4u * lane);
  // Work cluster v (stream-K: the CTA's piece v), the CTA's groups before it J0 (the pipeline's count runs on across
  // units): its groups and its tile out. Returns its groups.
  const auto consume = [&](int64_t v, uint32_t J0) {
    const WgmmaWork w = work_of(v);
    if (v != first_v) load_row_scales(w);  // (used at the end: their latency hides under the loop)
    // Consumer warp: row tile 4 wg + q of the CTA (warp = 4 wg + q); past N it feeds zeros.
    const bool has_tile = w.cta_tile0 + warp < NT;
    float acc[TN / 2];
#pragma unroll
    for (int e = 0; e < TN / 2; ++e) acc[e] = 0.0f;
    // Post-scaled bf16 (wgmma_post_scale): block b's two wgmmas go to part (the first overwrites it), unscaled; once
    // both are done (a wait for all, ending the block: ptxas serializes every wgmma where an instruction reads an
    // accumulator while any wgmma is in flight, C7514), acc += the block's scale x part, rows g / g + 8.
    float part[kPostScale ? TN / 2 : 1];
    for (int j = 0; j < w.n_groups; ++j) {
      const uint32_t J = J0 + j;  // the CTA's group: stage J % S, phase J / S (2^32 groups a CTA: never)
      const int stage = static_cast<int>(J % S);
      mbarrier_wait(&full[stage], (J / S) & 1);  // group J landed
      const unsigned char* st = stages + stage * kStageBytes;
      const unsigned char* wt = st + kXBytes + warp * kTileBytes;
      const uint64_t desc0 = smem_matrix_desc_sw128(st);  // x's panel 0, its rows' first 32 bytes

      uint32_t stream[4 * K];
      uint32_t scales[4][2];  // fp16 pairs of block scales (absmax_half_pairs order)
      if (has_tile) {
        load_lane_stream<K>(wt, lane, stream);
        load_scale_pairs(wt + K * 512, g, scales);
      } else {  // no rows: A = 0 (the warpgroup's wgmma still needs this warp's registers)
#pragma unroll
        for (int i = 0; i < 4 * K; ++i) stream[i] = 0;
#pragma unroll
        for (int q = 0; q < 4; ++q) scales[q][0] = scales[q][1] = 0;
      }

      if constexpr (kPostScale) {
        // Step 2 b + h of block b from register set h; the next block's first lookups run while this block's second
        // wgmma does. Every wgmma of group J - 1 is done (the last block's wait): release its stage.
        mbarrier_arrive_if(j > 0, &empty[(J + S - 1) % S]);
        uint32_t a[2][4];
        lookup_a_fragment<K, kOneCopyTable>(lane_table, stream, 0, a[0]);
#pragma unroll
        for (int blk = 0; blk < 8; ++blk) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int s = 2 * blk + h;
            if (h == 1) lookup_a_fragment<K, kOneCopyTable>(lane_table, stream, s, a[1]);
            wgmma_fence();
            wgmma_m64k16<T, TN>(part, a[h], desc0 + (((s >> 2) * kPanelBytes + (s & 3) * 32) >> 4), h);
            wgmma_commit();
          }
          if (blk < 7) {
            wgmma_wait<1>();  // the block's first step done: set 0 free
            lookup_a_fragment<K, kOneCopyTable>(lane_table, stream, 2 * blk + 2, a[0]);
          }
          wgmma_wait<0>();
          uint32_t s_lo, s_hi;  // this block's scale for rows g and g + 8 (fp16 pairs)
          block_scale_splats(scales, blk, s_lo, s_hi);
          const float scale_lo = half_bits_to_float(s_lo & 0xFFFFu), scale_hi = half_bits_to_float(s_hi & 0xFFFFu);
#pragma unroll
          for (int e = 0; e < TN / 2; ++e) {  // D layout: e % 4 < 2 row g, else g + 8
            pin_register(part[e]);            // (read after the wait: the wgmma asm's outputs look written at issue)
            acc[e] = fmaf((e & 2) ? scale_hi : scale_lo, part[e], acc[e]);
          }
        }
      } else {
        uint32_t a[kWgInFlight][4];  // register set s % kWgInFlight holds step s's A fragment
#pragma unroll
        for (int blk = 0; blk < 8; ++blk) {
          uint32_t s_lo, s_hi;  // this block's scale for rows g and g + 8 (fp16 pairs)
          block_scale_splats(scales, blk, s_lo, s_hi);
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int s = 2 * blk + h;
            decode_a_fragment<T, K, kOneCopyTable>(lane_table, stream, s, s_lo, s_hi, a[s % kWgInFlight]);
            wgmma_fence();
            // step s: columns 16 s .. 16 s + 15 of the group = panel s / 4, bytes 32 (s % 4) of its rows
            wgmma_m64k16<T, TN>(acc, a[s % kWgInFlight], desc0 + (((s >> 2) * kPanelBytes + (s & 3) * 32) >> 4));
            wgmma_commit();
            // Steps up to s - kWgInFlight + 1 done: register set (s + 1) % kWgInFlight is free ...
            wgmma_wait<kWgInFlight - 1>();
            // ... and from step kWgInFlight - 2 on, every wgmma of group J - 1: release its stage
            // (every thread arrives). A predicated arrive, not a branch: a branch between the wgmmas
            // made ptxas serialize them (warning C7513; each step then waited for its own wgmma) in
            // half the kernels, every k at 16 tokens among them (session 30; the times did not move:
            // the steps are bound by the decode, not the wgmma latency). The unit's first group releases
            // nothing: the previous unit's last stage was released after y's tile left it (below).
            if (s == kWgInFlight - 2) mbarrier_arrive_if(j > 0, &empty[(J + S - 1) % S]);
          }
        }
      }
    }
    wgmma_wait<0>();
#pragma unroll
    for (int e = 0; e < TN / 2; ++e) pin_register(acc[e]);

    // acc[4 n + e] (wgmma D): e = 0, 1: row g, tokens 8 n + 2 t, + 1; e = 2, 3: row g + 8.
    const int rows = static_cast<int>(std::min<int64_t>(TN, M - w.tok0));  // valid tokens of the chunk
    const int64_t row0 = w.cta_tile0 * 16, tok0 = w.tok0;
    const bool more = kStream ? v + 1 < stream_pieces : v + launched < work_clusters;  // another work follows
    T* const y = static_cast<T*>(args.y);
    // Whether this work stores no y (a stream-K piece that another piece adds). The branches on it must be ones the
    // compiler proves warp-uniform (named_barrier_or's shuffle): on the barrier's own result the loop's stage count
    // and every wgmma's descriptor left the uniform registers (two R2UR a wgmma; tests/test_kernel_resources.py).
    bool skip_y = false;
    const int piece_last_stage = static_cast<int>((J0 + w.n_groups - 1) % S);  // (the work's last group's stage)
    if constexpr (kStream) {
      if (!w.whole_piece) {
        // The slot of the lane's CTA c (CTA c x chunks + lane) for its first (0) or last (1) piece: float4 i of
        // consumer thread t at [i][t]
        const auto slot = [&](uint32_t c, uint32_t last_piece) {
          return reinterpret_cast<float4*>(args.workspace) +
                 size_t(2 * (c * chunks32 + stream_lane) + last_piece) * (TN / 8) * kConsumerThreads + threadIdx.x;
        };
        float4* const mine = slot(stream_me, v == 0 ? 0u : 1u);
#pragma unroll
        for (int i = 0; i < TN / 8; ++i)
          __stcg(mine + i * kConsumerThreads, make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]));
        // The count, once every thread's sums are stored (the barrier), released GPU-wide (thread 0's fence: cumulative
        // over what the barrier ordered before it); the barrier's OR tells every thread whether this piece was the
        // unit's last, after thread 0's acquire.
        const uint32_t first_cta = stream_owner(w.unit_step0), last_cta = stream_owner(w.unit_step0 + groups32 - 1);
        bool counted_last = false;
        named_barrier_sync(2, kConsumerThreads);
        if (threadIdx.x == 0) {
          fence_acq_rel_gpu();
          counted_last = atomicAdd(args.wgmma_stream_counters + w.unit, 1u) == last_cta - first_cta;
          fence_acq_rel_gpu();
        }
        skip_y = !named_barrier_or(2, kConsumerThreads, counted_last);
        // another piece adds this one: its last stage back to the producers
        mbarrier_arrive_if(skip_y && more, &empty[piece_last_stage]);
        if (!skip_y) {
          // (back to 0, so that a counter buffer kept across calls stays zero: session 54 run 9; today each call's is
          // zero-filled)
          if (threadIdx.x == 0) args.wgmma_stream_counters[w.unit] = 0;
          // The unit's pieces in CTA order p_first, ..., p_last, added left to right whatever piece is this one: the
          // pieces before it summed from the workspace, then this one's registers added to that sum (a + b = b + a
          // exactly), then the pieces after it. kPieceLoads float4 of a piece a thread in flight at once (one at a
          // time, dependent, the sums waited on ~16 L2 round trips a piece at 128 tokens: session 54 run 3).
          constexpr int kPieceLoads = 8;
          const uint32_t me = stream_me;
          const auto piece_of = [&](uint32_t c) { return slot(c, stream_step0(c) >= w.unit_step0 ? 0u : 1u); };
          const auto load_piece = [&](uint32_t c, int i0, float4 (&p)[kPieceLoads]) {
            const float4* const from = piece_of(c);
#pragma unroll
            for (int j = 0; j < kPieceLoads; ++j)
              if (i0 + j < TN / 8) p[j] = __ldcg(from + (i0 + j) * kConsumerThreads);
          };
#pragma unroll
          for (int i0 = 0; i0 < TN / 8; i0 += kPieceLoads) {
            float4 p[kPieceLoads];
            if (me > first_cta) {
              float4 before[kPieceLoads];
              load_piece(first_cta, i0, before);
              for (uint32_t c = first_cta + 1; c < me; ++c) {
                load_piece(c, i0, p);
#pragma unroll
                for (int j = 0; j < kPieceLoads; ++j)
                  before[j].x += p[j].x, before[j].y += p[j].y, before[j].z += p[j].z, before[j].w += p[j].w;
              }
#pragma unroll
              for (int j = 0; j < kPieceLoads; ++j)
                if (i0 + j < TN / 8) {
                  float* const a = acc + 4 * (i0 + j);
                  a[0] += before[j].x, a[1] += before[j].y, a[2] += before[j].z, a[3] += before[j].w;
                }
            }
            for (uint32_t c = me + 1; c <= last_cta; ++c) {
              load_piece(c, i0, p);
#pragma unroll
              for (int j = 0; j < kPieceLoads; ++j)
                if (i0 + j < TN / 8) {
                  float* const a = acc + 4 * (i0 + j);
                  a[0] += p[j].x, a[1] += p[j].y, a[2] += p[j].z, a[3] += p[j].w;
                }
            }
          }
        }
      }
    }
    if (skip_y) {
      // (nothing to store: the unit's last piece adds this one)
    } else if (w.splits == 1) {
      // y's tile goes out through the stage of the unit's last group, not yet released (the producers may be
      // filling the others with the next unit's groups): [TN][kYStride] of T (16 bytes of padding: the token rows
      // of a warp's store 4 banks apart, no conflict), then 16-byte rows pieces, a token's rows contiguous in y.
      // Stored straight from the accumulators (2 bytes each, 8 rows x 4 tokens a warp instruction) a 128 x 128
      // tile took ~4900 cycles (session 32's trace, Llama-3 8B / 70B gate/up M = 128). The warp's 16 rows x TN
      // tokens go in as 8 x 8 matrices, transposed by stmatrix: matrix (n, h) = rows 8 h .. + 7 of the warp's tile x
      // tokens 8 n .. + 7, whose fragment (lane (g, t): row g, tokens 2t, 2t + 1) is acc[4 n + 2 h], acc[4 n + 2 h +
      // 1]; one stmatrix.x4 takes matrices (n, 0), (n, 1), (n + 1, 0), (n + 1, 1) (session 44: 8 instructions a warp
      // at TN = 128 where 64 2-byte stores were).
      constexpr int kYStride = 16 * kRowTiles + 8, kRowChunks = 2 * kRowTiles;  // 16-byte pieces of a token's rows
      static_assert(TN * kYStride * int(sizeof(T)) <= kStageBytes, "wgmma_gemm: y's tile fits in one stage");
      static_assert(TN % 16 == 0 && (kYStride * sizeof(T)) % 16 == 0, "wgmma_gemm: y's tile rows for stmatrix");
      const int last_stage = kStream ? piece_last_stage : static_cast<int>((J0 + w.n_groups - 1) % S);
      named_barrier_sync(2, kConsumerThreads);  // every warpgroup's wgmmas done: the last stage is free
      T* tile = reinterpret_cast<T*>(stages + last_stage * kStageBytes);
      // lane 8 q + r addresses row r of matrix q of the x4: token 8 (n + q / 2) + r, W rows 16 warp + 8 (q % 2) ..
      T* const lane_row = tile + (8 * ((lane >> 3) >> 1) + (lane & 7)) * kYStride + warp * 16 + 8 * ((lane >> 3) & 1);
#pragma unroll
      for (int n = 0; n < TN / 8; n += 2) {
        uint32_t words[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int e = 4 * (n + q / 2) + 2 * (q % 2);
          const float scale = (q % 2) ? row_scale_hi : row_scale_lo;
          words[q] = pack_pair<T>(acc[e] * scale, acc[e + 1] * scale);
        }
        stmatrix_x4_trans(lane_row + 8 * n * kYStride, words);
      }
      named_barrier_sync(2, kConsumerThreads);
      const int live_rows = static_cast<int>(std::min<int64_t>(16 * kRowTiles, N - row0));
      if (N % 8 == 0) {  // every token's rows start 16-byte aligned in y, and live_rows is a multiple of 8
        for (int c = threadIdx.x; c < rows * kRowChunks; c += kConsumerThreads) {
          const int tok = c / kRowChunks, r8 = 8 * (c % kRowChunks);
          if (r8 < live_rows)
            *reinterpret_cast<uint4*>(y + (tok0 + tok) * N + row0 + r8) =
                *reinterpret_cast<const uint4*>(tile + tok * kYStride + r8);
        }
      } else {  // one element a thread (consecutive threads, consecutive rows)
        for (int c = threadIdx.x; c < rows * live_rows; c += kConsumerThreads) {
          const int tok = c / live_rows, r = c - tok * live_rows;
          y[(tok0 + tok) * N + row0 + r] = tile[tok * kYStride + r];
        }
      }
      if (more) {
        // The stage back to the producers once every consumer thread read its share of the tile (its reads, then
        // the copy engine's writes: the proxy fence), and on to the next unit with the pipeline's count.
        fence_shared_for_async_proxy();
        mbarrier_arrive(&empty[last_stage]);
      }
    } else {
    // K-splits: this tile's splits are one cluster (1, splits, 1) of a grid (clusters, splits), so
    // blockIdx.y = split = the CTA's cluster rank (cluster_cta_rank()). Each writes its partials,
    // times the row scale, into its own (now idle) stages, then reduces 1/splits of the tile from
    // all splits' shared memory in split order (the same bits every run). The scale
    // comes first so that the reduction reads nothing from global memory: its row-scale loads
    // (cold, after the copies) were most of the epilogue's time (session 19). Producer warps take
    // no part (the cluster barrier waits for non-exited threads only, and they exit after their
    // last copies); every consumer thread takes both barriers. A split unit is its CTA's last work
    // (the host's rule: the split clusters fit in the launched ones), so every stage is idle here.
    if (more) __trap();  // (a launch against that rule would reduce over stages the producers refill)
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
    const int q_begin = w.split * quads / w.splits, q_end = (w.split + 1) * quads / w.splits;
    for (int q = q_begin + static_cast<int>(threadIdx.x); q < q_end; q += kConsumerThreads) {
      const int tok = q / (4 * kRowTiles), r4 = 4 * (q % (4 * kRowTiles));
      // Rows past N (a partial last row block): nothing to store, so nothing is read either; every
      // remote load that runs then feeds a store, which the relaxed barrier below relies on.
      if (row0 + r4 >= N) continue;
      const float* mine = partial + tok * kPartialStride + r4;
      float4 part[kWgMaxSplits];
#pragma unroll
      for (int p = 0; p < kWgMaxSplits; ++p)
        if (p < w.splits) part[p] = load_cluster_shared(cluster_shared_address(mine, p));
      float4 sum = part[0];
#pragma unroll
      for (int p = 1; p < kWgMaxSplits; ++p)
        if (p < w.splits) sum.x += part[p].x, sum.y += part[p].y, sum.z += part[p].z, sum.w += part[p].w;
      const float sums[4] = {sum.x, sum.y, sum.z, sum.w};
      // (one 8-byte store of the four rows instead: no faster, the loads bound this loop; session 32 run 5)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int64_t row = row0 + r4 + i;
        if (row < N) y[(tok0 + tok) * N + row] = from_float<T>(sums[i]);
      }
    }
    cluster_sync_relaxed();  // no CTA leaves while another reads its shared memory (their sums fed the stores above)
    }
    return w.n_groups;
  };
  // A loop over work clusters only where persistent (its loop-carried state costs registers), and a plain loop
  // (the condition at its head, no exit inside): with a return inside it ptxas kept the stage index in ordinary
  // registers, and every wgmma's descriptor took two R2UR (+21% instructions in a group's loop; session 44).
  if constexpr (kStream) {
    uint32_t J0 = 0;
    for (int v = 0; v < stream_pieces; ++v) J0 += consume(v, J0);
  } else if constexpr (kPersistent) {
    uint32_t J0 = 0;
    for (int64_t v = blockIdx.x; v < work_clusters; v += launched) J0 += consume(v, J0);
  } else {
    consume(blockIdx.x, 0);
  }
#else
  __trap();  // launched only where wgmma_gemm_available (an sm_90a build on a 9.0 GPU)
#endif
}

template <typename T, int K, int TN, int kRowTiles>
__global__ void __launch_bounds__(wgmma_threads(kRowTiles), 1)
    wgmma_gemm_kernel(const TcGemmArgs args, const __grid_constant__ CUtensorMap x_map) {
  wgmma_gemm_body<T, K, TN, kRowTiles, false>(args, x_map);
}

// The stream-K schedule (the partition above; WgmmaPlan::stream): the persistent shapes only.
template <typename T, int K, int TN, int kRowTiles>
__global__ void __launch_bounds__(wgmma_threads(kRowTiles), 1)
    wgmma_stream_gemm_kernel(const TcGemmArgs args, const __grid_constant__ CUtensorMap x_map) {
  wgmma_gemm_body<T, K, TN, kRowTiles, true>(args, x_map);
}

// The kernel's tensor map over x [M, K] (args.x: contiguous, 16-byte aligned; gemm_cuda.cpp copies a view that is
// not): boxes of TN tokens x kWgPanelCols columns (128 bytes a token), the 128-byte swizzle, zeros outside x.
// Encoded for every launch (host time, no device work).
template <typename T, int TN>
CUtensorMap wgmma_x_tensor_map(const TcGemmArgs& args) {
  static_assert(kWgPanelCols * sizeof(T) == 128, "wgmma_gemm: a panel row is the swizzle's 128 bytes");
  // (tensor coordinates are 32-bit: a group's last panel starts up to 224 columns past K)
  TORCH_CHECK(args.M < (int64_t(1) << 31) && args.K + 256 < (int64_t(1) << 31), "kbit: wgmma_gemm takes x of fewer "
              "than 2^31 rows and 2^31 - 256 columns (its tensor copies' coordinates are 32-bit); got ", args.M, " x ",
              args.K, ". Use gemm.");
  constexpr CUtensorMapDataType kType =
      std::is_same_v<T, c10::Half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  return tensor_map_2d(args.x, kType, static_cast<uint64_t>(args.M), static_cast<uint64_t>(args.K),
                       static_cast<uint64_t>(args.K) * sizeof(T), TN, kWgPanelCols, CU_TENSOR_MAP_SWIZZLE_128B);
}

// The stream-K launch (WgmmaPlan::stream): P = args.wgmma_grid_clusters CTAs (a multiple of the token chunks: lanes of
// Q CTAs) over the row blocks' steps; args.workspace
// holds 2 P slots of TN x 128 fp32, args.wgmma_stream_counters a zero a unit (wgmma_stream_workspace_floats).
template <typename T, int K, int TN, int kRowTiles>
void launch_wgmma_stream_gemm_shape(const TcGemmArgs& args, cudaStream_t stream) {
  if constexpr (!wgmma_persistent_shape(TN) || kRowTiles != 8) {
    TORCH_CHECK(false, "kbit: wgmma_gemm: internal error: stream-K with ", TN, " tokens x ", kRowTiles, " row tiles");
  } else {
    constexpr int kSmem = wgmma_smem_bytes(K, TN, kRowTiles), kThreads = wgmma_threads(kRowTiles);
    const auto kernel = wgmma_stream_gemm_kernel<T, K, TN, kRowTiles>;
    resident_ctas_per_sm(reinterpret_cast<const void*>(kernel), kThreads, kSmem, kSmem);  // the opt-in
    const int64_t units = wgmma_units(args.M, args.N, WgmmaShape{TN, kRowTiles}), ctas = args.wgmma_grid_clusters;
    const int64_t chunks = (args.M + TN - 1) / TN;
    // (units < 2^31: the kernel's unit index is 32-bit)
    TORCH_CHECK(args.splits == 1 && args.wgmma_work_clusters == units && units < (int64_t(1) << 31) &&
                    ctas % chunks == 0 && wgmma_stream_fits(units / chunks, (args.K + 255) / 256, ctas / chunks) &&
                    args.workspace != nullptr && args.wgmma_stream_counters != nullptr,
                "kbit: wgmma_gemm: internal error: stream-K over ", units, " units in ", ctas, " CTAs");
    const CUtensorMap x_map = wgmma_x_tensor_map<T, TN>(args);
    launch_kernel(kernel, dim3(static_cast<unsigned>(ctas)), dim3(kThreads), kSmem, stream,
                  dependent_launch_enabled(), args, x_map);
  }
}

template <typename T, int K, int TN, int kRowTiles>
void launch_wgmma_gemm_shape(const TcGemmArgs& args, cudaStream_t stream) {
  if (args.wgmma_stream) return launch_wgmma_stream_gemm_shape<T, K, TN, kRowTiles>(args, stream);
  constexpr int kSmem = wgmma_smem_bytes(K, TN, kRowTiles), kThreads = wgmma_threads(kRowTiles);
  const auto kernel = wgmma_gemm_kernel<T, K, TN, kRowTiles>;
  resident_ctas_per_sm(reinterpret_cast<const void*>(kernel), kThreads, kSmem, kSmem);  // the opt-in
  // wgmma_gemm_splits gives 1..kWgMaxSplits splits of which the GPU runs a cluster (it steps down;
  // not queried again here: the call's host path already asked per split count)
  TORCH_CHECK(args.splits >= 1 && args.splits <= kWgMaxSplits, "kbit: wgmma_gemm: internal error: ", args.splits,
              " K-splits");
  const WgmmaShape shape{TN, kRowTiles};
  const int whole_clusters = args.splits == 1 ? 0 : args.wgmma_whole_clusters;
  TORCH_CHECK(whole_clusters >= 0 && wgmma_whole_units(args.M, args.N, shape, args.splits, whole_clusters) <=
                                         wgmma_units(args.M, args.N, shape),
              "kbit: wgmma_gemm: internal error: ", whole_clusters, " clusters of whole units");
  // The kernel's persistent CTAs (WgmmaPlan::grid_clusters): each split unit must be its CTA's last work cluster.
  const int64_t work = wgmma_work_clusters(args.M, args.N, shape, args.splits, whole_clusters);
  const int64_t split_clusters = args.splits == 1 ? 0 : work - whole_clusters;
  // (the kernel takes a work cluster's unit and K range in 32-bit arithmetic: units < 2^31, and K < 2^31 - 256 by
  // wgmma_x_tensor_map's check)
  TORCH_CHECK(args.wgmma_work_clusters == work && args.wgmma_grid_clusters >= 1 && args.wgmma_grid_clusters <= work &&
                  split_clusters <= args.wgmma_grid_clusters &&
                  wgmma_units(args.M, args.N, shape) < (int64_t(1) << 31) &&
                  (wgmma_persistent_shape(TN) || args.wgmma_grid_clusters == work),
              "kbit: wgmma_gemm: internal error: ", args.wgmma_grid_clusters, " clusters launched for ",
              args.wgmma_work_clusters, " of work (", work, ", ", split_clusters, " of them split)");
  const CUtensorMap x_map = wgmma_x_tensor_map<T, TN>(args);
  const dim3 grid(static_cast<unsigned>(args.wgmma_grid_clusters), static_cast<unsigned>(args.splits));
  TcGemmArgs launch_args = args;
  launch_args.wgmma_whole_clusters = whole_clusters;
  launch_kernel_in_clusters(kernel, grid, dim3(1, args.splits, 1), dim3(kThreads), kSmem, stream,
                            dependent_launch_enabled(), launch_args, x_map);
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
  // (the bf16 kernel: the same resources)
  const void* kernel = reinterpret_cast<const void*>(wgmma_gemm_kernel<c10::Half, K, TN, kRowTiles>);
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
    if (shape.tokens == 160) return f(integral_constant<int, 160>{}, integral_constant<int, 8>{});
    if (shape.tokens == 144) return f(integral_constant<int, 144>{}, integral_constant<int, 8>{});
    if (shape.tokens == 128) return f(integral_constant<int, 128>{}, integral_constant<int, 8>{});
    if (shape.tokens == 112) return f(integral_constant<int, 112>{}, integral_constant<int, 8>{});
    if (shape.tokens == 96) return f(integral_constant<int, 96>{}, integral_constant<int, 8>{});
    if (shape.tokens == 80) return f(integral_constant<int, 80>{}, integral_constant<int, 8>{});
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

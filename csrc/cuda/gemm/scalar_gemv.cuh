#pragma once
// GEMV for M = 1..16 tokens (dense up to 128 in token chunks, and grouped for MoE decode) straight from the tiled layout
// (docs/format.md section 5), in one persistent launch, with two decodes (GemvDecode):
//   shuffle: the scalar form, no tensor cores or pair table: the codebook in lane registers
//            (M <= 4);
//   mma:     a pair table (pair_table.cuh's; k = 5 the split one) and mma.m16n8k16 with
//            W as the 16-row A operand and the tokens as its n = 8 side, one or two n tiles
//            (the default: ~2.3 instructions per weight against ~6, docs/design.md "Session 11";
//            M = 9..16 reuse each decoded A fragment for two mma, "Session 13").
//
// Why not the small-M tensor-core kernel (tc_gemm.cuh) at decode: its fixed chain (codebook ->
// pair table -> CTA barrier, per-warp staged copies, mbarrier hand-offs) is most of a call on
// small weights (docs/design.md, "Session 8"). Here the only CTA barriers are the table build
// (mma decode, while the first copies fly), the per-unit cross-warp sum (grouped mma decode: the
// unit slot's named barrier), grouped with x shared (kSharedX) one named barrier a round, and, grouped, the per-CTA
// schedule where the warps do not build it
// in registers (WarpSchedule, tc_work.cuh: up to 32 experts, mma decode, 32-bit rows and units):
// with more experts, two barriers where a chunk is one row and T <= E (RowSchedule), else
// build_grouped_schedule's scans (also the shuffle decode's, and the tuning aid's form 0 or 1's).
//
// Units: one 16-row tile of W (of one expert) times up to kTokens rows of x (kTokens = 1..4, 8 or
// 16: gemv_token_slots). Dense: unit = tile, rows 0 .. M (past 16 rows each CTA keeps one token
// chunk of 16 rows: gemv_token_chunks). Grouped: the device-built schedule of
// tc_work.cuh (chunks of kTokens rows of one expert; experts without rows own no units, except
// WarpSchedule's static first chunks). CTA b takes units b, b + gridDim.x, ... (a persistent
// grid: at most the CTAs that fit at once); with unit slots (below) slot s of CTA b takes
// b slots + s, + gridDim.x slots, ... (grouped x shared: runs of `run` adjacent units, below). (Dense calls of M = 1
// at k = 5 whose tiles take two or more rounds of that grid run scalar_gemv_split.cuh instead: the same decode, the
// tiles' steps split evenly over the CTAs of clusters; at M = 2-4 such calls run x resident, scalar_gemv_launch.cuh.)
// Inside a unit: wpu = gemv_warps(K) (<= 16; mma decode gemv_mma_warps, <= 8, or with 8 / 16 token
// slots whichever of 4 and 8 keeps more warps resident; x resident up to 16: scalar_gemv_launch.cuh) warps; warp w takes
// the 256-column groups w, w + wpu, ... Grouped with the mma decode, a CTA holds up to 8 / wpu unit
// slots of wpu warps, each slot its own units: small K (the Qwen3 MoE down expert's K = 512 has 2
// groups) builds the pair table once per 8 warps and fits more warps per SM, and many units run with
// fewer warps each (the launcher halves wpu while the units fill the GPU). Dense x-resident CTAs hold
// 1, 2 or 4 slots over one table and x image (up to 16 warps; the launcher's critical-path choice); dense
// x-staged CTAs one unit at a time, or (tuning aids, GemvStagedLayout) unit slots.
// A warp streams its (unit, group) items through a private ring of shared-memory stages (2; 2-4 with
// x resident, x shared or x-staged unit slots) filled by cp.async (GemvStage): the next item's weights, absmax and x
// slice (not with x resident or shared) are in flight while the current one is decoded, across unit boundaries too.
// Lane (g = lane / 4, t = lane % 4) decodes its 64 pair codes of a group (tiled_layout.h): for
// block b, codes 8 b + 4 h + r hold row g (r even) or g + 8 (r odd) at the lane's columns
// 32 b + 16 h + 8 (r / 2) + 2 t + {0, 1}: 2 rows x the block's column pairs t, t + 4, t + 8, t + 12,
// which one ldmatrix.x4 per block brings to the lane for one token (shuffle decode: 16 weights) or
// for 8 tokens as the B fragments of the block's two k16 steps (mma decode: the layout is the mma's
// A fragment order).
// Shuffle lookup: lane i holds cb[i mod 2^k]; __shfl_sync takes the source lane modulo 32, so
// an index only needs its low k bits right (no masking; a k = 3 code straddling two words is
// one funnel shift). Per weight: ~1 shift, 1 shuffle, 1 FFMA per token.
// Mma lookup: one LDS per pair code (PRMT + IMAD for its address at k = 4), two mma per block and
// n tile of 8 tokens (one n tile up to 8 tokens, two up to 16).
// Numerics: fp32 sums (shuffle: fp32 products of the fp32 codebook; mma: the codebook rounded to
// the activation dtype in the table, products summed in fp32 by the tensor cores); per block and
// row, sum * block scale into the row's accumulator; then the lanes t of a row (shuffle decode:
// shuffles; mma: already summed by the mma) and the warps (shared memory, warp order) are added
// in a fixed order: the same bits on every run and for every grid size.
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "../../common/tiled_layout.h"
#include "../common/async_copy.cuh"
#include "../common/dependent_launch.cuh"
#include "../common/device_utils.cuh"
#include "mma.cuh"
#include "pair_table.cuh"
#include "scalar_gemv.h"
#include "tc_work.cuh"

namespace kbit {
namespace cuda {

// One stage of a warp's ring: one 256-column group of one unit.
//   [0, 512 k)                  the group's k stream vectors as in global memory: vector v of
//                               lane l at 512 v + 16 l
//   [kAbsmaxAt, + 128)          the group's absmax bytes (rows g, g + 8 at 16 g)
//   [kXAt, + 512 kTokens)       x[row0 + m][256 grp + 8 v .. + 7] at gemv_x_at(m, v) (vectors past
//                               K are not copied and never read; rows past the unit's rows are not
//                               copied, and what their slots hold feeds only accumulators that
//                               are never written out)
//                               (x-resident launches: no x slots, the stage ends with the absmax)
constexpr int gemv_stage_bytes(int k, int tokens) { return 512 * k + kAbsmaxBytesPerTile + 512 * tokens; }

// x vector v (8 columns) of token slot m: 512 m + 16 (v ^ (m % 8)), inside v's 128-byte line. The decodes
// read a block's x with ldmatrix.x4 (mma.cuh): matrix i = vectors 4 blk + i of 8 tokens 8 n .. 8 n + 7, which
// the XOR puts in 8 different 16-byte bank groups (one wavefront a matrix).
__host__ __device__ constexpr int gemv_x_at(int m, int v) { return m * 512 + 16 * (v ^ (m & 7)); }
// The mma decode's addressing, 512 m + 64 (blk ^ (s / 4)) + 16 (s % 4) with s = i ^ (m % 8), is gemv_x_at(m,
// 4 blk + i) (4 blk + i = 4 blk ^ i for i < 4):
static_assert(gemv_x_at(3, 4 * 5 + 2) == 3 * 512 + 64 * (5 ^ ((2 ^ 3) >> 2)) + 16 * ((2 ^ 3) & 3) &&
                  gemv_x_at(14, 4 * 7 + 1) == 14 * 512 + 64 * (7 ^ ((1 ^ 6) >> 2)) + 16 * ((1 ^ 6) & 3),
              "the mma decode's x addressing follows gemv_x_at");

template <int K, int kTokens>
struct GemvStage {
  static constexpr int kAbsmaxAt = 512 * K;
  static constexpr int kXAt = kAbsmaxAt + kAbsmaxBytesPerTile;
  static constexpr int kBytes = gemv_stage_bytes(K, kTokens);
  static_assert(kBytes == kXAt + 512 * kTokens, "the stage ends with the x slots");
};

// The wide pair table (dense, k = 4, mma decode, x staged; GemvStagedLayout::kWide in scalar_gemv.h): entry e's 32 lane copies at 256 e instead of pair_table.cuh's 128 e, so that a lookup's
// address is one byte permute, the code byte over 4 lane (lut_offset_wide), where the 128-byte stride takes
// PRMT + IMAD (64 of a whole group's ~270 instructions). Its 64 KB leave the upper 128 bytes of every 256
// free; the warps' rings live there ("gap space"): ring byte o at smem + 128 + gemv_gap(o), 128-byte chunk
// c of the rings in the upper half of 256-byte row c (past the table's 256 rows the same stride goes on,
// the lower halves unused). A stage is whole chunks (gemv_stage_bytes is a multiple of 128), and every
// per-lane piece a lane copies or reads (16 bytes, an absmax row pair, an x vector) lies inside one chunk,
// so gemv_gap(a + b) = 2 a + gemv_gap(b) for a chunk-aligned a: per-piece offsets stay immediates (1024 v
// for code vector v instead of 512 v). The cross-warp sums follow the rings' rows, linear.
__host__ __device__ constexpr int gemv_gap(int o) { return o + (o & ~127); }
template <bool kWide>
__host__ __device__ constexpr int gemv_ring_at(int o) { return kWide ? gemv_gap(o) : o; }
static_assert(gemv_stage_bytes(4, 1) % 128 == 0 && gemv_stage_bytes(4, 3) % 128 == 0, "stages are whole chunks");
constexpr int kGemvWideTableBytes = 256 * 256;  // 256 pair codes x 256-byte rows (k = 4)
// The wide layout's bytes up to the sums: max(the table's rows, the rings' rows).
constexpr int gemv_wide_front_bytes(int tokens, int warps, int stages) {
  const int ring_rows = warps * stages * gemv_stage_bytes(4, tokens) / 128;
  return 256 * (ring_rows > 256 ? ring_rows : 256);
}

// x-resident launches (dense, mma decode; gemv_x_resident in scalar_gemv.h): every unit of a dense
// call multiplies the same x, and a warp takes the same groups (warp_u, warp_u + wpu, ...) of every
// unit, so each warp copies its groups' x slices once, into the CTA's x image, and its ring carries
// only codes: a staged 16-token unit copied 8 KB of x per 2 KB of codes, from L2, again for every
// unit (session 15). The image: group grp's kTokens slots at grp * 512 kTokens, each as a stage's
// x slots (gemv_x_at).
constexpr int64_t gemv_x_image_bytes(int64_t cols, int tokens) { return (cols + 255) / 256 * 512 * tokens; }
// Stages of a warp's ring (scalar_gemv.h): the item decoded and stages - 1 in flight; staged x
// kGemvStages, x resident and x shared TcGemmArgs::ring_stages (2 .. kGemvResidentMaxStages, the launcher's).

// Dynamic shared memory, in this order: the pair table (mma decode only: pair_table.cuh, k = 5 the split table; at
// offset 0 so its address folds into the lookups' immediates), the warps' rings, the cross-warp
// partial sums (two parities: [2][warps][tokens][16] floats), then for grouped launches the
// schedule (32 scan slots, row_begin[E + 1], unit_end[E]) and for x-resident launches the x image;
// grouped x-shared launches (TcGemmArgs::grouped_x_shared) after the schedule, from a 16-byte boundary, two
// x images (rounds of even and odd index), their rings codes only.
constexpr int gemv_table_bytes(int k, GemvDecode decode) { return decode == GemvDecode::kMma ? pair_table_bytes(k) : 0; }
constexpr int gemv_rings_bytes(int k, int tokens, int warps, int stages, bool x_resident) {
  return warps * stages * gemv_stage_bytes(k, x_resident ? 0 : tokens);
}
constexpr int gemv_sums_floats(int tokens, int warps) { return 2 * warps * tokens * kTileRows; }
// The grouped schedule's bytes (the shared x images follow from the next 16-byte boundary).
constexpr int gemv_schedule_bytes(int experts) { return 8 * (32 + 2 * experts + 1); }
// cols: K, for the x images (x_resident and x_shared only; a K whose image passes 2^31 bytes gives INT_MAX, which
// no GPU grants).
constexpr int gemv_smem_bytes(int k, int tokens, int warps, int experts_or_dense /* -1: dense */, GemvDecode decode,
                              int stages, bool x_resident, int64_t cols, bool wide = false, bool x_shared = false) {
  // (the wide table: dense, k = 4, mma decode, x staged only; anything else gets no shared memory a GPU grants)
  if (wide)
    return k == 4 && !x_resident && experts_or_dense < 0 && decode == GemvDecode::kMma
               ? gemv_wide_front_bytes(tokens, warps, stages) + 4 * gemv_sums_floats(tokens, warps)
               : INT32_MAX;
  int64_t bytes = int64_t(gemv_table_bytes(k, decode)) +
                  gemv_rings_bytes(k, tokens, warps, stages, x_resident || x_shared) +
                  4 * gemv_sums_floats(tokens, warps) +
                  (experts_or_dense < 0 ? 0 : gemv_schedule_bytes(experts_or_dense)) +
                  (x_resident ? gemv_x_image_bytes(cols, tokens) : 0);
  if (x_shared) bytes = (bytes + 15) / 16 * 16 + 2 * gemv_x_image_bytes(cols, tokens);
  return bytes > INT32_MAX ? INT32_MAX : static_cast<int>(bytes);
}

// The named barrier of a grouped x-shared CTA's rounds (the unit slots' sums take 1 .. kGemvMmaMaxWarps; x shared
// has one warp per unit, whose sums take no barrier).
constexpr int kGemvRoundBarrier = kGemvMmaMaxWarps + 1;

// A 16-byte copy that keeps x in L1 (.ca): with x staged every unit of a CTA re-reads the same x
// groups (x resident copies each once).
__device__ __forceinline__ void cp_async_16_keep(void* smem_dst, const void* gmem_src) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem_src) : "memory");
}

// (The mma decode's x loads, ldmatrix_x4 with `after` = the lane's first stream word, read from the same stage after
// the ring's cp.async wait. The stage is refilled only after the warp's __syncwarp that follows its decode, which
// follows the mma (volatile asm) that consume these registers: the loads cannot read a refilled stage. The shuffle
// decode's feed only arithmetic, so it takes ldmatrix_x4_ordered.)

// The stream bits from bit `pos` on (compile-time pos after unrolling), low k bits valid.
template <int K>
__device__ __forceinline__ uint32_t stream_bits(const uint32_t* stream, int pos) {
  const int w = pos >> 5, sh = pos & 31;
  if (sh + K <= 32) return stream[w] >> sh;
  return __funnelshift_r(stream[w], stream[w + 1], sh);
}

// Shuffle sources (low k bits = the index) of the two weights of pair code c.
template <int K>
__device__ __forceinline__ void pair_sources(const uint32_t* stream, int c, uint32_t& a, uint32_t& b) {
  if constexpr (K == 5) {
    get_pair(stream, 5, c, a, b);
  } else {
    const int pos = (K == 3 ? 6 : 2 * K) * c;  // code c = a | b << k at bit 4c (k=2), 6c (k=3), 8c (k=4)
    a = stream_bits<K>(stream, pos);
    b = stream_bits<K>(stream, pos + K);
  }
}

// Issue the copies of one item (a group of one unit) into `stage`: k + 1 + kTokens 16-byte
// copies per lane at most, the codes (tile tix's group: k stream vectors and the absmax bytes)
// and the x slice (staged x only). x_grp points at x[row0][256 grp]; cols_left = K - 256 grp.
// kWide: `stage` in gap space (gemv_gap).
template <int K, bool kWide = false>
__device__ __forceinline__ void gemv_stage_fill_codes(unsigned char* stage, const uint32_t* packed,
                                                      const uint8_t* absmax, int64_t tix, int lane) {
  const unsigned char* src = reinterpret_cast<const unsigned char*>(packed + tix * tile_words(K)) + lane * 16;
  unsigned char* dst = stage + gemv_ring_at<kWide>(lane * 16);
#pragma unroll
  for (int v = 0; v < K; ++v) cp_async_16(dst + gemv_ring_at<kWide>(v * 512), src + v * 512);
  if (lane < kAbsmaxBytesPerTile / 16)
    cp_async_16(stage + gemv_ring_at<kWide>(GemvStage<K, 1>::kAbsmaxAt) + lane * 16,
                absmax + tix * kAbsmaxBytesPerTile + lane * 16);
}
// x_slots: a stage's x slots (GemvStage::kXAt) or the group's place in the x image.
// (kWide: x_slots in gap space; slot m's vector lane ^ (m % 8) stays in the lane's chunk, lane / 8.)
template <typename T, int kTokens, bool kWide = false>
__device__ __forceinline__ void gemv_fill_x_slots(unsigned char* x_slots, const T* x_grp, int rows, int64_t cols,
                                                  int64_t cols_left, int lane) {
  if (8 * lane < cols_left) {
#pragma unroll
    for (int m = 0; m < kTokens; ++m)
      if (m < rows)
        cp_async_16_keep(x_slots + gemv_ring_at<kWide>(512 * m) + gemv_ring_at<kWide>(16 * (lane ^ (m & 7))),
                         x_grp + m * cols + 8 * lane);
  }
}

// One warp's share of the x image (x resident): groups first_grp, + grp_step, ... < G of the token chunk whose row 0
// is x_rows (rows of cols columns), each group's kTokens slots as gemv_fill_x_slots lays them out. The same copies,
// the source stepped by a row's bytes and the slot offset 512 m + (16 lane ^ 16 (m % 8)): ~5 instructions a copy
// where gemv_fill_x_slots' took ~14 (its element index rebuilt, x's pointer reloaded), 230 of the 16-slot kernel's
// 670 once-per-warp instructions (Nsight Compute, session 47 run 8).
template <typename T, int kTokens>
__device__ __forceinline__ void gemv_fill_x_image(unsigned char* x_image, const T* x_rows, int rows, int64_t cols,
                                                  int64_t first_grp, int grp_step, int64_t G, int lane) {
  static_assert(sizeof(T) == 2, "x in 16-bit elements");
  const int64_t row_bytes = 2 * cols;
  const uint32_t lane16 = 16u * static_cast<uint32_t>(lane);
  for (int64_t grp = first_grp; grp < G; grp += grp_step) {
    if (8 * lane >= cols - grp * 256) continue;  // (the warp's lanes past K; only at a K tail)
    const unsigned char* src = reinterpret_cast<const unsigned char*>(x_rows + grp * 256) + lane16;
    const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(x_image + grp * 512 * kTokens));
#pragma unroll
    for (int m = 0; m < kTokens; ++m) {
      if (m < rows)
        asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(dst + 512 * m + (lane16 ^ (16 * (m & 7)))),
                     "l"(src)
                     : "memory");
      src += row_bytes;
    }
  }
}

// What both decodes read first from a staged group: the lane's stream (4 k words) and its rows'
// block scales (absmax_half_pairs of the 16 absmax bytes at 16 g).
template <int K, int kTokens, bool kWide = false>
__device__ __forceinline__ void load_stage_codes(const unsigned char* stage, int lane, uint32_t (&stream)[4 * K],
                                                 uint32_t (&halves)[4][2]) {
  if constexpr (kWide) {
    const unsigned char* src = stage + gemv_gap(lane * 16);
#pragma unroll
    for (int v = 0; v < K; ++v) {
      const uint4 q = *reinterpret_cast<const uint4*>(src + gemv_gap(v * 512));
      stream[4 * v] = q.x; stream[4 * v + 1] = q.y; stream[4 * v + 2] = q.z; stream[4 * v + 3] = q.w;
    }
  } else {
    load_lane_stream<K>(stage, lane, stream);
  }
  absmax_half_pairs(*reinterpret_cast<const uint4*>(stage + gemv_ring_at<kWide>(GemvStage<K, kTokens>::kAbsmaxAt) +
                                                    (lane >> 2) * 16),
                    halves);
}

// acc[2 m + e] += the lane's share of (x[m] . W[row]) over one staged group, rows g (e = 0) and
// g + 8 (e = 1); `blocks` = 32-column blocks of the group inside K (8 except at the K tail).
template <typename T, int K, int kTokens>
__device__ __forceinline__ void gemv_decode_stage(const unsigned char* stage, const unsigned char* x_slots, int blocks,
                                                  float cb_lane, int lane, float (&acc)[2 * kTokens]) {
  const int i = lane >> 3;  // the ldmatrix matrix whose rows this lane addresses
  uint32_t stream[4 * K], halves[4][2];
  load_stage_codes<K, kTokens>(stage, lane, stream, halves);
#pragma unroll
  for (int blk = 0; blk < 8; ++blk) {
    if (blk >= blocks) break;  // K tail: the same for the whole warp
    uint32_t xw[kTokens][4];   // x[m]'s pairs t, t + 4, t + 8, t + 12 of block blk (all 8 rows of matrix i: token m)
#pragma unroll
    for (int m = 0; m < kTokens; ++m) {
      // (ordered: its values feed only FFMAs, nothing that pins it before the warp's __syncwarp and the refill)
      const uint4 xv = ldmatrix_x4_ordered(x_slots + gemv_x_at(m, 4 * blk + i));
      xw[m][0] = xv.x; xw[m][1] = xv.y; xw[m][2] = xv.z; xw[m][3] = xv.w;
    }
    float lo[kTokens], hi[kTokens];  // the block's sums for rows g, g + 8
#pragma unroll
    for (int m = 0; m < kTokens; ++m) lo[m] = hi[m] = 0.0f;
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // step 2 blk + h: columns 16 h + 2 t, + 1 (x pair 2 h), 16 h + 8 + 2 t, + 1 (2 h + 1)
      float w_lo[4], w_hi[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        uint32_t ia, ib;
        pair_sources<K>(stream, 8 * blk + 4 * h + r, ia, ib);
        const float va = __shfl_sync(0xffffffffu, cb_lane, static_cast<int>(ia));
        const float vb = __shfl_sync(0xffffffffu, cb_lane, static_cast<int>(ib));
        const int j = 2 * (r >> 1);
        if (r & 1) { w_hi[j] = va; w_hi[j + 1] = vb; }
        else { w_lo[j] = va; w_lo[j + 1] = vb; }
      }
#pragma unroll
      for (int m = 0; m < kTokens; ++m)
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          const float2 f = unpack_pair<T>(xw[m][2 * h + q]);
          lo[m] = fmaf(w_lo[2 * q], f.x, lo[m]);
          lo[m] = fmaf(w_lo[2 * q + 1], f.y, lo[m]);
          hi[m] = fmaf(w_hi[2 * q], f.x, hi[m]);
          hi[m] = fmaf(w_hi[2 * q + 1], f.y, hi[m]);
        }
    }
    const float s_lo = half_bits_to_float(block_scale_bits(halves, blk, false));
    const float s_hi = half_bits_to_float(block_scale_bits(halves, blk, true));
#pragma unroll
    for (int m = 0; m < kTokens; ++m) {
      acc[2 * m] = fmaf(s_lo, lo[m], acc[2 * m]);
      acc[2 * m + 1] = fmaf(s_hi, hi[m], acc[2 * m + 1]);
    }
  }
}

// The mma decode of one staged group (x from x_slots: the stage's or the x image's), kNTiles = ceil(kTokens / 8) n = 8 tiles of tokens: acc[4 n + e]
// += the lane's rows' dot products over the group, e = 0, 1: row g, tokens 8 n + 2t, + 1; e = 2,
// 3: row g + 8, the same tokens (the m16n8 D fragment, mma.cuh). Per 32-column block: for each
// k16 half one A fragment (the weights, one pair-table lookup per register, decode_a_fragment's
// order without the scale) and one mma.m16n8k16 per n tile from fresh accumulators (B: x^T, column
// g = token 8 n + g, one ldmatrix.x4 a block and n tile; with kTokens < 8 the B columns g >= kTokens repeat token
// 0: their D columns are never used), then acc += block scale * D. The four lanes of a row quad hold the same row
// sums (for their own tokens): the mma has already added along the row.
// kWide: stage and x_slots in gap space, the wide table (lut_offset_wide): the vector 4 blk + i of slot m at
// gemv_gap(512 m + 64 (blk ^ odd) + 16 s) = 1024 m + 256 (blk / 2) + 64 ((blk & 1) ^ odd) + 16 s, with s = i ^ (m
// % 8) % 4 and odd = (i ^ (m % 8)) / 4.
template <typename T, int K, int kTokens, bool kWide = false, bool kAhead = (kTokens >= 8)>
__device__ __forceinline__ void gemv_mma_decode_stage(const unsigned char* stage, const unsigned char* x_slots,
                                                      int blocks, const unsigned char* table, uint32_t lane4, int lane,
                                                      float (&acc)[4 * ((kTokens + 7) / 8)]) {
  static_assert(!kWide || K == 4, "the wide pair table is k = 4's");
  constexpr int kNTiles = (kTokens + 7) / 8;
  const uint32_t lane8 = K == 5 ? split_lane8(lane) : 0u;  // the split table's copy (k = 5)
  uint32_t stream[4 * K], halves[4][2];
  load_stage_codes<K, kTokens, kWide>(stage, lane, stream, halves);
  // The ldmatrix rows this lane addresses: matrix i = lane / 8 (the blocks' vectors 4 blk + i), row = token slot m
  // = 8 n + lane % 8. With kTokens < 8 the rows past kTokens repeat slot 0 (they feed only B columns whose D
  // columns are never stored; a D column is its own B column's products). Its vector 4 blk + i sits at
  // gemv_x_at(m, 4 blk + i) = 512 m + 64 (blk ^ odd) + 16 s (the static_assert by gemv_x_at), m % 8 the same for
  // every n. (Session 28: a 4-wavefront x load at M = 1, as every ldmatrix.x4 is, cost no time against 1.)
  const int row = lane & 7, i = lane >> 3;
  const int m0 = kTokens >= 8 || row < kTokens ? row : 0;
  const int s_ = (i ^ m0) & 3, odd = (i ^ m0) >> 2;
  const unsigned char* xs = x_slots + gemv_ring_at<kWide>(m0 * 512) + s_ * 16;
  // (wide: the even and odd blocks' x vectors of the lane's slot; 1024 bytes a block pair)
  const unsigned char* xs_even = xs + 64 * odd;
  const unsigned char* xs_odd = xs + 64 * (odd ^ 1);
  const auto load_x = [&](int blk, uint4 (&xv)[kNTiles]) {
#pragma unroll
    for (int n = 0; n < kNTiles; ++n) {
      const unsigned char* at = kWide ? (blk & 1 ? xs_odd : xs_even) + 256 * (blk >> 1) + n * 8 * 1024
                                      : xs + n * 8 * 512 + 64 * (blk ^ odd);
      xv[n] = ldmatrix_x4(at, stream[0]);
    }
  };
  // kAhead (8 or more tokens by default): each block's x is loaded a block ahead (the asm loads are not hoisted by the
  // compiler as the plain LDS.128 of layout version 3 were: 6-11% slower at 16-token units without this; session 36).
  // Below 8 tokens it bought nothing (session 36 run 5: Llama-3 70B M = 1 43.6 either way).
  uint4 xv_next[kNTiles];
  if constexpr (kAhead) load_x(0, xv_next);
#pragma unroll
  for (int blk = 0; blk < 8; ++blk) {
    if (blk >= blocks) break;  // K tail: the same for the whole warp
    uint4 xv[kNTiles];
    if constexpr (kAhead) {
#pragma unroll
      for (int n = 0; n < kNTiles; ++n) xv[n] = xv_next[n];
      if (blk + 1 < blocks) load_x(blk + 1, xv_next);
    } else {
      load_x(blk, xv);
    }
    float d[kNTiles][4];
#pragma unroll
    for (int n = 0; n < kNTiles; ++n) d[n][0] = d[n][1] = d[n][2] = d[n][3] = 0.0f;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      uint32_t a[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int c = 8 * blk + 4 * h + r;
        if constexpr (K == 5) {
          a[r] = split_pair_word(table, stream, c, lane8);
        } else {
          const uint32_t at = kWide ? lut_offset_wide(stream, c, lane4) : lut_offset<K>(stream, c, lane4);
          a[r] = *reinterpret_cast<const uint32_t*>(table + at);
        }
      }
#pragma unroll
      for (int n = 0; n < kNTiles; ++n) mma_m16n8k16<T>(d[n], a, h ? xv[n].z : xv[n].x, h ? xv[n].w : xv[n].y);
    }
    const float s_lo = half_bits_to_float(block_scale_bits(halves, blk, false));
    const float s_hi = half_bits_to_float(block_scale_bits(halves, blk, true));
#pragma unroll
    for (int n = 0; n < kNTiles; ++n) {
      acc[4 * n] = fmaf(s_lo, d[n][0], acc[4 * n]);
      acc[4 * n + 2] = fmaf(s_hi, d[n][2], acc[4 * n + 2]);
      if constexpr (kTokens > 1) {
        acc[4 * n + 1] = fmaf(s_lo, d[n][1], acc[4 * n + 1]);
        acc[4 * n + 3] = fmaf(s_hi, d[n][3], acc[4 * n + 3]);
      }
    }
  }
}

// A warp's accumulators: shuffle decode, [token][row g, g + 8] partial over the lane's columns;
// mma decode, the D fragment's four row sums (gemv_mma_decode_stage).
template <int kTokens, GemvDecode kDecode>
struct GemvAcc {
  float v[kDecode == GemvDecode::kMma ? 4 * ((kTokens + 7) / 8) : 2 * kTokens];
  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int i = 0; i < int(sizeof(v) / sizeof(float)); ++i) v[i] = 0.0f;
  }
  // Mma decode: f(token m, sum of row g, sum of row g + 8) for each token m < kTokens whose sums lane
  // (g, t) holds: m = 8 n + 2 t + e in v[4 n + e] (row g) and v[4 n + 2 + e] (row g + 8), the D
  // fragment's map (mma.cuh).
  template <typename F>
  __device__ __forceinline__ void each_sum(int lane, F&& f) const {
    static_assert(kDecode == GemvDecode::kMma, "the mma decode's D fragments");
    const int t = lane & 3;
#pragma unroll
    for (int n = 0; n < (kTokens + 7) / 8; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int m = 8 * n + 2 * t + e;
        if (m < kTokens) f(m, v[4 * n + e], v[4 * n + 2 + e]);
      }
  }
  // The warp's sums of its unit's rows into red_w[token][16] (this warp's slot): shuffle decode,
  // the 4 lanes t of a row first (fixed butterfly); mma decode, lane (g, t) writes its tokens (each_sum).
  __device__ __forceinline__ void store(float* red_w, int lane) {
    const int g = lane >> 2, t = lane & 3;
    if constexpr (kDecode == GemvDecode::kMma) {
      each_sum(lane, [&](int m, float lo, float hi) {
        red_w[m * kTileRows + g] = lo;
        red_w[m * kTileRows + g + 8] = hi;
      });
    } else {
#pragma unroll
      for (int i = 0; i < 2 * kTokens; ++i) {
        v[i] += __shfl_xor_sync(0xffffffffu, v[i], 1);
        v[i] += __shfl_xor_sync(0xffffffffu, v[i], 2);
      }
      if (t == 0) {
#pragma unroll
        for (int m = 0; m < kTokens; ++m) {
          red_w[m * kTileRows + g] = v[2 * m];
          red_w[m * kTileRows + g + 8] = v[2 * m + 1];
        }
      }
    }
  }
};

// Registers, shuffle decode: at most 64 for M <= 2 (two CTAs of 16 warps or four of 8 per SM: Qwen3
// gate/up's 320 CTAs in one wave; with ~100 registers they took two and 5.8 -> 7.8 us at k = 4),
// 128 above. Mma decode: at most 128 (two CTAs of 8 warps or four of 4; it takes ~127 to issue a
// whole group's lookups ahead; capped at 80 for a third CTA it lost, docs/design.md "Session 11").
// kXResident: x copied once per warp into the CTA's x image (dense, mma decode; see gemv_x_image_bytes).
// (x resident: up to kGemvResidentMaxWarps warps in one CTA per SM, the same 128 registers.)
// kRowSchedule (grouped, mma decode, 1 token slot): the row schedule's kernel (RowSchedule, the
// launcher's TcGemmArgs::row_schedule), an instantiation of its own so that the kernel of every
// other grouped launch does not carry its code (docs/design.md, "Session 22").
// kLayout (dense, mma decode, x staged; GemvStagedLayout, scalar_gemv.h): kSingle one unit per CTA at a time;
// kSlots unit slots sharing one pair table, the launcher's ring stages; kWide (k = 4) unit slots and the wide pair
// table with the rings in its gaps (gemv_gap).
// kSharedX (grouped, mma decode, 4-8 token slots; TcGemmArgs::grouped_x_shared): x shared by the CTA's warps, an
// instantiation of its own (as kRowSchedule) so that the other grouped launches keep their kernel as it was (with a
// runtime flag the 8-slot kernel's 8 x 8 calls ran 7-10% slower, session 38 run 6), in CTAs of up to 16 warps.
template <typename T, int K, int kTokens, bool kGrouped, GemvDecode kDecode, bool kXResident, bool kRowSchedule = false,
          GemvStagedLayout kLayout = GemvStagedLayout::kSingle, bool kSharedX = false, bool kBySlot = false,
          bool kDenseGated = false>
__global__ void __launch_bounds__(kXResident ? 32 * kGemvResidentMaxWarps
                                  : kSharedX ? 32 * kGemvSharedXMaxWarps
                                  : kDecode == GemvDecode::kMma ? 32 * kGemvMmaMaxWarps : 32 * kGemvMaxWarps,
                                  kXResident || kSharedX ? 1 : kDecode == GemvDecode::kMma || kTokens <= 2 ? 2 : 1)
    scalar_gemv_kernel(const TcGemmArgs args) {
  static_assert(!kXResident || (!kGrouped && kDecode == GemvDecode::kMma), "x-resident: dense, mma decode");
  constexpr bool kWide = kLayout == GemvStagedLayout::kWide;
  static_assert(kLayout == GemvStagedLayout::kSingle || (!kGrouped && !kXResident && kDecode == GemvDecode::kMma),
                "the staged layouts with unit slots: dense, mma decode, x staged");
  static_assert(!kWide || K == 4, "the wide pair table is k = 4's");
  // Ring stages: a constant with one unit per CTA and the wide table; x resident and kSlots, the launcher's 2 .. 4. A warp's
  // next stage to fill and to read are byte offsets in its ring stepped with a wrap (an item's stage as a
  // runtime modulo took ~40 instructions, a reciprocal among them, on the item's path: session 28).
  // Grouped x shared (kSharedX, the launcher's): one warp per unit, a round's units (a run of 1, 2 or 4 per slot) one
  // chunk of one expert, whose x the CTA's warps copy once, each its share of the groups, into the x image of the
  // round's parity; a named barrier at each round's start (below).
  static_assert(!kSharedX || (gemv_can_share_x(kGrouped, kDecode, kTokens) && !kRowSchedule &&
                              kLayout == GemvStagedLayout::kSingle),
                "x shared: grouped, mma decode, 4-8 token slots, not the row schedule's kernel");
  constexpr bool share_x = kSharedX;
  // kBySlot (grouped, mma decode, 1 token slot, the per-warp schedule with static first chunks; TcGemmArgs::slot_x_div):
  // the groups are slots of one row each (WarpSchedule::load_slots), an instantiation of its own (as kRowSchedule): in
  // the 1-slot grouped kernel as a runtime flag it made the MoE sweep's 8-32 experts x 1 row calls 4-9% slower
  // (session 60 run 3).
  static_assert(!kBySlot || (kGrouped && kTokens == 1 && kDecode == GemvDecode::kMma && !kXResident && !kRowSchedule &&
                             kLayout == GemvStagedLayout::kSingle && !kSharedX),
                "by slot: grouped, mma decode, 1 token slot, the per-warp schedule's kernel");
  constexpr bool kRuntimeStages = kXResident || kLayout == GemvStagedLayout::kSlots || kSharedX;
  using Stage = GemvStage<K, kXResident ? 0 : kTokens>;
  const int stages = kRuntimeStages ? args.ring_stages : kGemvStages;
  constexpr bool kMma = kDecode == GemvDecode::kMma;
  constexpr int kTableBytes = gemv_table_bytes(K, kDecode);
  extern __shared__ __align__(16) unsigned char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int64_t N = args.N, cols = args.K, G = (cols + 255) / 256, NT = (N + kTileRows - 1) / kTileRows;
  // Gated (TcGemmArgs::gated_silu): y is [M, N / 2]. Only the kernels of 1-2 token slots have the gated epilogue
  // (kGatedEpilogue: decode, up to ~2 rows an expert; the launcher takes the two ops past that): with it the 8-slot
  // grouped kernels spilled 8-32 bytes and ran 8 experts x 8 rows 4% slower (session 58). Grouped: a runtime flag,
  // read from the arguments where used, not held in registers across the item loop. Dense (gemm_silu_and_mul, a gated
  // MLP's gate/up call, session 65): kernels of their own (kDenseGated), as the flag spilled 8 bytes in the
  // x-resident kernels and grew every dense 1-2 slot kernel by ~450 instructions; one token slot only
  // (kGemvDenseGatedMaxTokens: at two they lost to the two ops, scalar_gemv.h).
  static_assert(!kDenseGated || (!kGrouped && kTokens <= kGemvDenseGatedMaxTokens && kDecode == GemvDecode::kMma &&
                                 kLayout == GemvStagedLayout::kSingle && !kSharedX && !kBySlot && !kRowSchedule),
                "the dense gated kernels: mma decode, one token slot, x staged (single layout) or resident");
  constexpr bool kGatedEpilogue = kDenseGated || (kGrouped && kTokens <= kGemvGatedMaxTokens);
  const auto gated = [&]() {
    if constexpr (kDenseGated) return true;
    if constexpr (kGatedEpilogue) return args.gated_silu;
    return false;
  };
  const auto y_cols = [&]() { return gated() ? N / 2 : N; };
  // Unit slots: the CTA's warps form warps / wpu slots of wpu warps (args.warps_per_unit: the
  // launcher's halving for many units, or K's few 256-column groups), each slot its own units:
  // slot s of CTA b takes units b slots + s, + gridDim.x slots, ... (x shared: runs, below); warp_u = the warp's place
  // in it.
  // Grouped mma-decode launches, dense x-resident ones (their slots share the CTA's pair table
  // and x image: 16 warps on K = 2048, whose units have 8 groups) and the x-staged unit-slot layouts (kSlots,
  // kWide: up to 4 token slots); the kSingle staged dense code stays as it was (slot logic cost its 16-token
  // kernel spills, session 14): one slot, the CTA's warps the unit's.
  constexpr bool kSlotted = kMma && (kGrouped || kXResident || kLayout != GemvStagedLayout::kSingle);
  const int wpu = kSlotted ? args.warps_per_unit : warps, slots = kSlotted ? warps / wpu : 1;
  const int slot = kSlotted ? warp / wpu : 0;
  const int warp_u = warp - slot * wpu;
  // Grouped x shared: each slot (one warp) runs `run` adjacent units (tiles) of the round's chunk back to back
  // (TcGemmArgs::shared_x_run, 1, 2 or 4): a round is slots x run units, its CTA-wide costs (the round barrier, the x
  // image's copy) and the warp's unit lookup once per run. Elsewhere 1.
  const int run = kSharedX ? args.shared_x_run : 1;
  // Dense token chunks (scalar_gemv.h gemv_token_chunks; the grid is a multiple of them): CTA b
  // keeps chunk b % chunks (its rows chunk_row0 .. + chunk_rows) and its slot s takes tiles
  // (b / chunks) slots + s, + (gridDim.x / chunks) slots, ...: here a dense unit index is its tile,
  // each CTA's units its chunk's.
  const unsigned chunks = kGrouped ? 1u : static_cast<unsigned>(args.token_chunks);
  const int64_t cta_first_unit = int64_t(kGrouped ? blockIdx.x : blockIdx.x / chunks) * slots * run;
  const int64_t first_unit = cta_first_unit + slot * run;
  const int64_t unit_stride = int64_t(kGrouped ? gridDim.x : gridDim.x / chunks) * slots * run;
  const int64_t chunk_row0 = kGrouped ? 0 : int64_t(blockIdx.x % chunks) * kTokens;
  const int chunk_rows = static_cast<int>(args.M - chunk_row0 < kTokens ? args.M - chunk_row0 : kTokens);  // dense
  // Launched with PDL (dependent_launch.cuh): the next kernel may be scheduled as our CTAs leave;
  // until the wait, this kernel may overlap the previous one's tail: dense, it only asks L2 for
  // the start of its first tile's codes (a tile's groups are contiguous, tiled_layout.h), the
  // tile's absmax and row scales, and the codebook (all only where args.l2_prefetch_bytes > 0:
  // the launcher's PDL prefetch rule and its tuning aid).
  // Grouped launches prefetch nothing: a CTA knows its first tile before the offsets only with
  // static first chunks (WarpSchedule, tc_work.cuh), and then copies its codes right after the
  // offsets' load, which measured faster without the prefetch (session 14).
  allow_dependents();
  // The row scales and codebook are tiny cold reads on the path to the first unit's sums: the row
  // scales are read after the table's barrier, with one or two items per warp soon before the
  // unit's end (session 20: Qwen3 shapes 0.1-0.4 us less at M = 1-16). Grouped launches with static
  // first chunks know their first tile too, but there the same hints (and the division that finds
  // the tile) cost 0.2-0.4 us at 8 experts x 1 token (as a hint of the tile's codes did, session 14).
  if (!kGrouped && lane == 0 && warp_u == 0 && args.l2_prefetch_bytes > 0 && first_unit < NT) {
    const int64_t tile_bytes = G * 4 * tile_words(K);
    prefetch_l2(args.packed + first_unit * G * tile_words(K),
                static_cast<uint32_t>(tile_bytes < args.l2_prefetch_bytes ? tile_bytes : args.l2_prefetch_bytes));
    prefetch_l2(args.absmax + first_unit * G * kAbsmaxBytesPerTile, static_cast<uint32_t>(G * kAbsmaxBytesPerTile));
    const float* scales = args.row_scale + first_unit * kTileRows;
    // (and the tile's last row's line: the 64 bytes straddle two lines where row_scale is a view
    // not aligned to 64 bytes; the last row is clamped to N)
    prefetch_l2_line(scales);
    prefetch_l2_line(scales + (N - first_unit * kTileRows < kTileRows ? N - first_unit * kTileRows : kTileRows) - 1);
    if (slot == 0) prefetch_l2_line(args.codebook);
  }
  const T* x = static_cast<const T*>(args.x);
  T* y = static_cast<T*>(args.y);
  // (wide: rings and stages in gap space, each stage 2 kBytes of smem)
  // (x shared: codes-only stages)
  constexpr int kStageSpan = kWide ? 2 * Stage::kBytes : Stage::kBytes;
  const int stage_span = share_x ? GemvStage<K, 0>::kBytes : kStageSpan;
  unsigned char* ring = kWide ? smem + 128 + warp * stages * kStageSpan : smem + kTableBytes + warp * stages * stage_span;
  const int ring_span = stages * stage_span;
  const auto next_stage = [&](int at) { return at + stage_span == ring_span ? 0 : at + stage_span; };
  int fill_at = 0, read_at = 0;  // the ring's next stage to fill, to read (byte offsets)
  float* red = reinterpret_cast<float*>(kWide ? smem + gemv_wide_front_bytes(kTokens, warps, stages)
                                              : smem + kTableBytes + warps * stages * stage_span);  // [2][warps][kTokens][16]
  unsigned char* x_image = reinterpret_cast<unsigned char*>(red + gemv_sums_floats(kTokens, warps));  // x-resident only
  // x shared: the two x images (rounds of even and odd index), after the schedule from a 16-byte boundary
  // (gemv_smem_bytes); each group grp's kTokens slots at grp * 512 kTokens, as the x-resident image.
  const int x_image_bytes = static_cast<int>(G) * 512 * kTokens;  // (x shared only: an image fits shared memory)
  unsigned char* x_images = smem + ((kTableBytes + warps * stages * stage_span + 4 * gemv_sums_floats(kTokens, warps) +
                                     gemv_schedule_bytes(static_cast<int>(args.experts)) + 15) & ~15);
  // The PDL wait, then the codebook (shuffle decode: lane i holds cb[i mod 2^k]; mma decode: thread i < 2^k holds
  // cb[i] for the table). Grouped launches wait here: their schedule reads the offsets. x-resident launches of 1-4
  // token slots also wait here: with their index arithmetic before the wait, the 3-token-slot kernel spilled 32 bytes,
  // and the 1-slot one ran Llama-3 70B at M = 1 1.4% slower (session 47 run 10). Other dense launches (kLateWait: x
  // staged, and x resident at 8 and 16 slots since session 47, but k = 5 at 16: its stack grew from 24 to 32 bytes
  // with it then; since session 68's split table it has none either way, and session 70 timed the late wait there:
  // -1.1% to +1.4% on the cells the GEMV takes at k = 5 (Qwen3 Q and KV at M = 12-32, O and down at 12-16), faster
  // only where wgmma takes them (gate/up 2-6%, GLM shared gate/up at M = 32 4%)) wait only just before their first
  // copies, so that their units, items and first addresses (arithmetic on the arguments, divisions among it) are
  // worked out during the previous kernel's tail
  // (run 10, k = 4: Qwen3 gate/up M = 8 / 16 5.08 -> 4.82 / 6.62 -> 6.37 us, GLM shared gate/up M = 8 7.20 -> 6.94,
  // Llama-3 8B M = 8 14.41 -> 14.19). There the mma decode's codebook comes by cp.async, as its own commit
  // group ahead of the first copies'. A plain load was scheduled by ptxas after those copies, and the pair table, on
  // the path of a warp's first item, waited for it (Qwen3 shapes at M = 1 7-10% slower: docs/design.md, "Session 46").
  constexpr bool kLateWait = !kGrouped && (!kXResident || (kTokens >= 8 && !(K == 5 && kTokens == 16)));
  constexpr bool kCodebookCopied = kLateWait && kMma;
  float cb_value = 0.0f;
  const auto wait_for_inputs = [&]() {
    grid_dependency_wait();
    if constexpr (kCodebookCopied) {
      // (into red, where the table build reads it; the group is waited for below, before the table's barrier)
      if (threadIdx.x < (1 << K)) cp_async_4(red + threadIdx.x, args.codebook + threadIdx.x);
      cp_async_commit();
    } else {
      cb_value = kMma ? codebook_entry<K>(args.codebook) : __ldg(args.codebook + (lane & ((1 << K) - 1)));
    }
  };
  if constexpr (!kLateWait) wait_for_inputs();

  // Grouped: the schedule, per warp in registers (WarpSchedule, E <= 32, mma decode: no barrier
  // before the first copies; the shuffle decode's 64-register cap would spill it) or per CTA in
  // shared memory (RowSchedule where the launcher chose it, else build_grouped_schedule).
  // The kernels with registers to spare under the 128 cap: the mma decode of 1-8 token slots. Only
  // they take TcSchedule::unit_warp and the direct store at a unit's end (below): the 16-slot and
  // shuffle-decode kernels spilled 2-4x more with either (session 20).
  constexpr bool kRegisterHeadroom = kMma && kTokens < 16;
  // The per-CTA schedule's unit lookups (unit_of below; every lane of a warp asks for the same unit):
  // TcSchedule::unit_warp's two ballots, else the binary search (TcSchedule::unit).
  constexpr bool kWarpLookup = kGrouped && kRegisterHeadroom;
  TcSchedule<kTokens, kGrouped> sched{NT, args.M, static_cast<int>(args.experts), nullptr, nullptr};
  WarpSchedule<kTokens> warp_sched{};
  const bool per_warp = kGrouped && kMma && args.warp_schedule;
  // One row per chunk (RowSchedule: the launcher's choice for 1 token slot and T <= E, where the
  // per-warp form does not fit; the kRowSchedule kernel); by_row once it is built (out-of-order
  // offsets take the scans).
  static_assert(!kRowSchedule || (kWarpLookup && kTokens == 1), "the row schedule: grouped, mma decode, 1 token slot");
  RowSchedule row_sched{};
  bool by_row = false;
  const bool static_first = per_warp && args.static_first_chunks;
  // By slot (kBySlot): the slots' experts instead of the offsets, and x row s / slot_x_div for slot s (x_row_of).
  if (per_warp && !kBySlot) warp_sched.load_offsets(args.expert_offsets, sched.experts);
  const auto x_row_of = [&](const TcUnit& w) -> int64_t {
    if constexpr (kBySlot) return static_cast<int32_t>(w.row0) / args.slot_x_div;
    return w.row0;
  };
  // Static first chunks: the slot's first unit is that tile of the stacked weights, so the codes
  // of the warp's first item (group warp_u) are copied while the offsets load
  // (issued after their load: before it, the load measured ~0.4 us later, session 14); its x slice
  // follows once the schedule is built (the same commit group). By slot: the slot's expert's tile, once its id loaded.
  const bool codes_ahead = static_first && first_unit < args.experts * NT;
  if constexpr (kBySlot) {
    warp_sched.load_slots(args.expert_offsets, args.slot_ids_32, sched.experts, NT, args.slot_stacked_experts);
    const TcUnit w = warp_sched.unit(codes_ahead ? first_unit : 0);
    if (codes_ahead) gemv_stage_fill_codes<K>(ring, args.packed, args.absmax, (w.expert * NT + w.tile) * G + warp_u, lane);
  } else {
    if (codes_ahead) gemv_stage_fill_codes<K>(ring, args.packed, args.absmax, first_unit * G + warp_u, lane);
  }
  if constexpr (kGrouped) {
    if (kBySlot) {
      fill_slot_rows_nan(warp_sched.invalid_slots(), y_cols(), y);
    } else if (per_warp) {
      warp_sched.build(sched.experts, args.M, NT, static_first);
      fill_unowned_rows(warp_sched.first_owned_row(), warp_sched.owned_rows_end(), args.M, y_cols(), y);
    } else {
      int64_t* scratch = reinterpret_cast<int64_t*>(red + gemv_sums_floats(kTokens, warps));
      int64_t* row_begin = scratch + 32;
      int64_t* unit_end = row_begin + args.experts + 1;
      // (row_expert: T <= E int32 entries in row_begin's E + 1 int64 slots)
      if constexpr (kRowSchedule)
        if (args.row_schedule)
          by_row = row_sched.build(args.expert_offsets, sched.experts, args.M, NT, reinterpret_cast<int32_t*>(row_begin));
      if (by_row) {
        fill_unowned_rows(row_sched.first_row, row_sched.rows_end, args.M, y_cols(), y);
      } else {
        build_grouped_schedule<kTokens>(args.expert_offsets, sched.experts, args.M, NT, row_begin, unit_end, scratch,
                                        /*group_end=*/kWarpLookup ? scratch : nullptr);
        sched.row_begin = row_begin;
        sched.unit_end = unit_end;
        sched.group_end = kWarpLookup ? scratch : nullptr;
        fill_unowned_rows(row_begin, sched.experts, args.M, y_cols(), y);
      }
    }
  }
  const auto unit_of = [&](int64_t u) {
    if constexpr (kGrouped) {
      if constexpr (kRowSchedule)
        if (by_row) return row_sched.unit(u);
      if constexpr (kWarpLookup) return per_warp ? warp_sched.unit(u) : sched.unit_warp(u, lane);
      return per_warp ? warp_sched.unit(u) : sched.unit(u);
    }
    return TcUnit{0, u, chunk_row0, chunk_rows};
  };
  int64_t units = NT;
  if constexpr (kGrouped) units = per_warp ? warp_sched.units() : by_row ? row_sched.units() : sched.units();
  // Fewer units than CTAs (no barrier below for this CTA); a slot without units still takes part in
  // the table's barriers (and, x resident, still copies its share of the x image). (A late wait's CTA still waits, as
  // every CTA of a kbit kernel does: dependent_launch.cuh. The dense launcher sizes the grid so that every CTA has a
  // unit, so no plan reaches this there; it is a guard.)
  if (cta_first_unit >= units) {
    if constexpr (kLateWait) grid_dependency_wait();
    return;
  }

  // The warp's items: for each of its slot's units, the groups warp_u, warp_u + wpu, ... (n_w).
  const int n_w = static_cast<int>((G - 1 - warp_u) / wpu) + 1;  // wpu <= G
  // (One slot: the CTA's first unit exists, see above.)
  const bool has_units = slots == 1 || first_unit < units;
  // (x shared: every run whole, the launcher's tiles % (slots x run) == 0)
  const int64_t items = has_units ? ((units - 1 - first_unit) / unit_stride + 1) * run * n_w : 0;
  int64_t fill_unit = first_unit;  // the next item to copy: unit, and its group index j (and place in its run)
  int fill_j = 0, fill_run = 0;
  TcUnit fill_w{};
  if (has_units) fill_w = unit_of(fill_unit);
  // Dense: the next item's (tile, group) index tile * G + grp and its first column 256 grp, stepped by adds (the next
  // group of the unit: + wpu; the first of the next unit: + unit_tix_jump) instead of recomputed from the unit (64-bit
  // multiplies: ~40 instructions an item, ~10% of an M = 1 item's). Not x resident at 16 token slots: there the stepped
  // values' registers make ptxas spill under the 128 cap (k = 4: 56 bytes of stack, session 48; at 8 slots too until
  // session 48's image copies), and those items are recomputed as grouped ones are. But k = 5: its 16-slot kernel
  // spilled more recomputing (session 29: 40 bytes of stack against 8), so it keeps the stepped loop.
  constexpr bool kStepItems = !kGrouped && !(kXResident && kTokens >= 16 && K != 5);
  int64_t fill_tix = first_unit * G + warp_u, fill_col = 256 * int64_t(warp_u);
  const int64_t unit_tix_jump = unit_stride * G - int64_t(n_w - 1) * wpu;
  const T* x_chunk = x + chunk_row0 * cols;
  const auto fill_next = [&](bool codes_copied) {
    unsigned char* stage = ring + fill_at;
    fill_at = next_stage(fill_at);
    if constexpr (!kStepItems) {
      const int64_t grp = warp_u + int64_t(fill_j) * wpu;
      if (!codes_copied)
        gemv_stage_fill_codes<K>(stage, args.packed, args.absmax, (fill_w.expert * NT + fill_w.tile) * G + grp, lane);
      if constexpr (!kXResident)
        if (!share_x)
          gemv_fill_x_slots<T, kTokens>(stage + Stage::kXAt, x + x_row_of(fill_w) * cols + grp * 256, fill_w.rows,
                                        cols, cols - grp * 256, lane);
      if (++fill_j == n_w) {
        fill_j = 0;
        if (kSharedX && ++fill_run < run) {  // the run's next unit: the next tile of the same chunk
          ++fill_unit;
          ++fill_w.tile;
        } else {
          fill_run = 0;
          fill_unit += unit_stride - (run - 1);
          if (fill_unit < units) fill_w = unit_of(fill_unit);
        }
      }
    } else {
      if (!codes_copied) gemv_stage_fill_codes<K, kWide>(stage, args.packed, args.absmax, fill_tix, lane);
      if constexpr (!kXResident)
        gemv_fill_x_slots<T, kTokens, kWide>(stage + gemv_ring_at<kWide>(Stage::kXAt), x_chunk + fill_col, chunk_rows,
                                             cols, cols - fill_col, lane);
      if (++fill_j == n_w) {
        fill_j = 0;
        fill_tix += unit_tix_jump;
        fill_col = 256 * int64_t(warp_u);
      } else {
        fill_tix += wpu;
        fill_col += 256 * int64_t(wpu);
      }
    }
  };
  if constexpr (kLateWait) wait_for_inputs();  // (nothing global read before this)
  // x-resident: the CTA's token chunk, groups warp, warp + warps, ... (one slot: the warp's own groups, warp_u + j
  // wpu). At 1 and 16 token slots (kImageWithFirstItem; not k = 5's 16, below) the image's copies (gemv_fill_x_image)
  // join the first item's commit group, issued after that item's codes: the codes' DRAM requests leave sooner after the
  // wait (k = 4, 16 slots: 69 instructions after it, not 331), and a late wait's table build waits for the codebook's
  // group alone, so the image loads while the table is built. The first item's wait covers the image (one slot: a warp
  // reads only its own groups); with several slots every slot reads every group, so the CTA waits for that group before
  // the table's last barrier. At 8 slots the image is a commit group of its own before the items' (in the first item's
  // group Qwen3 gate/up ran 8.6-8.8% slower at M = 5-8, session 48 run 2), its copies gemv_fill_x_image's. At 2-4 slots
  // it is that group with gemv_fill_x_slots' copies (either change made those kernels spill in a build tried: k = 4's
  // 3-slot kernel 32 bytes of stack), and so at k = 5's 16 slots (early wait, 24 bytes of stack either way), where both
  // changes ran Qwen3 gate/up at M = 12-16 9-11% slower (session 48 run 8; docs/design.md, "Session 48").
  constexpr bool kImageWithFirstItem = kXResident && (kTokens == 1 || (kTokens == 16 && K != 5));
  constexpr bool kImageStepped = kXResident && (kTokens == 1 || (kTokens >= 8 && !(K == 5 && kTokens == 16)));
  const auto fill_x_image = [&]() {
    if constexpr (kImageStepped) {
      gemv_fill_x_image<T, kTokens>(x_image, x + chunk_row0 * cols, chunk_rows, cols, warp, warps, G, lane);
    } else {
      for (int64_t grp = warp; grp < G; grp += warps)
        gemv_fill_x_slots<T, kTokens>(x_image + grp * 512 * kTokens, x + chunk_row0 * cols + grp * 256, chunk_rows,
                                      cols, cols - grp * 256, lane);
    }
  };

  // Wait until the newest stages - 1 commit groups may still fly (wait_group takes an immediate; the
  // launcher checks 2 <= stages <= 4 for every launch).
  const auto wait_all_but_ring = [&]() {
    if constexpr (kRuntimeStages) {
      static_assert(kGemvResidentMaxStages == 4, "one wait per ring depth");
      if (stages == 4) cp_async_wait<3>();
      else if (stages == 3) cp_async_wait<2>();
      else cp_async_wait<1>();
    } else {
      cp_async_wait<kGemvStages - 1>();
    }
  };
  // Wait until the first items' commit group (the x image's too, x resident) has landed: the newest stages - 2 groups
  // may still fly. (Its own three-way branch: one helper for both waits, on stages - 1 and stages - 2, put a fourth
  // compare into every item's wait in 96 GEMV kernels' SASS.)
  const auto wait_first_items = [&]() {
    if (stages == 4) cp_async_wait<2>();
    else if (stages == 3) cp_async_wait<1>();
    else cp_async_wait<0>();
  };
  // x shared: the CTA's rounds (its slot 0's runs; with tiles % (slots x run) == 0 every round is whole, so every slot
  // has them all, and the barrier after the loop for a slot short of the last round is a guard) and this warp's
  // share of a round's x image, groups warp, warp + warps, ... of the round's chunk (its slot 0's first unit: every
  // unit of a round is in that chunk, the launcher's tiles % (slots x run) == 0), nothing for warps past K's groups
  // (no lookup either). Round 0's joins the first commit group.
  const int rounds_cta = share_x ? static_cast<int>((units - 1 - cta_first_unit) / unit_stride + 1) : 0;
  int x_round = 0;  // this warp's current round (x shared)
  const auto fill_x_share = [&](int r) {
    if (warp >= G) return;  // (warp-uniform: the lookup's ballots)
    const TcUnit w = unit_of(cta_first_unit + r * unit_stride);
    unsigned char* image = x_images + (r & 1) * x_image_bytes;
    for (int64_t grp = warp; grp < G; grp += warps)
      gemv_fill_x_slots<T, kTokens>(image + grp * 512 * kTokens, x + w.row0 * cols + grp * 256, w.rows, cols,
                                    cols - grp * 256, lane);
  };
  if (share_x) fill_x_share(0);
  if (kXResident && !kImageWithFirstItem) {
    fill_x_image();
    cp_async_commit();
  }
  int first_fill = 0;
  // (the image joins the first item's commit group, after its codes; that fill is peeled out of the loop: inside it
  // ptxas hoisted the image's slot offsets out of the loop and spilled)
  if constexpr (kImageWithFirstItem) {
    if (items > 0) fill_next(false);
    fill_x_image();
    cp_async_commit();
    first_fill = 1;
  }
  for (int s = first_fill; s < stages - 1; ++s) {
    if (s < items) fill_next(s == 0 && codes_ahead);
    cp_async_commit();
  }
  if constexpr (kMma) {  // the pair table, built while the first items load (red is free until the first sums)
    // (the codebook's copy: the group before the stages - 1 of the first items; at 8 x-resident slots the image's group
    // lies between them, so this wait retires it too and the image does not load while the table is built)
    if constexpr (kCodebookCopied) {
      wait_all_but_ring();
    } else {
      if (threadIdx.x < (1 << K)) red[threadIdx.x] = cb_value;
    }
    __syncthreads();
    build_pair_table<T, K, false, kWide ? 256 : PairTable<K>::kStride>(smem, red);  // (kWide: the wide k = 4 table)
    if (kXResident && slots > 1) {  // this warp's groups of the x image landed
      if constexpr (kImageWithFirstItem) wait_first_items();
      else wait_all_but_ring();
    }
    __syncthreads();
  }
  const uint32_t lane4 = 4u * static_cast<uint32_t>(lane);

  // The outputs this thread writes at each unit's end: (token i / 16, row i % 16) for i = its
  // index in the slot, tid, + 32 wpu, ... (< 16 kTokens); i % 16 = tid % 16 for every i, so one
  // row and one row scale, loaded at the unit's start (after the sums it would be a round trip).
  // The load's value is scaled by kHalfScaleFix only where the unit's sums take it: scaled at the load, the multiply
  // waited there for a cold read on the warp's path to its first item and at every unit's start (Nsight Compute,
  // session 39 run 4, 64 experts x 8 rows, one warp per unit: 4.6% (gate/up) and 6.7% (down) of the warps' stall
  // samples; the same product rs * 128 either way, exact).
  const int tid = threadIdx.x - slot * 32 * wpu, out_r = tid % kTileRows;
  const auto row_scale_of = [&](const TcUnit& w) {
    const int64_t row = w.tile * kTileRows + out_r;
    return tid < kTokens * kTileRows && row < N ? __ldg(args.row_scale + w.expert * N + row) : 0.0f;
  };
  int64_t unit_index = first_unit;
  TcUnit unit{};
  float rs = 0.0f;
  if (has_units) {
    unit = unit_of(unit_index);
    rs = row_scale_of(unit);
  }
  int j = 0, parity = 0, run_at = 0;  // run_at: the unit's place in its run (x shared)
  int64_t col = 256 * int64_t(warp_u);  // the item's first column, 256 (warp_u + j wpu), stepped by adds
  constexpr bool kDirectStore = kRegisterHeadroom;  // below, one warp per unit
  // x a block ahead from 8 token slots (gemv_mma_decode_stage), but in k = 2's dense x-staged 16-slot kernel, where
  // it spilled 16 bytes under the 128-register cap (ptxas; none without it) and that kernel ran 6-10% slower than
  // layout version 3's (session 36 run 4: Qwen3 KV / O / Q at M = 16).
  constexpr bool kXAhead = kTokens >= 8 && !(K == 2 && kTokens == 16 && !kGrouped && !kXResident);
  GemvAcc<kTokens, kDecode> acc;
  acc.zero();

  for (int64_t item = 0; item < items; ++item) {
    if (item + stages - 1 < items) fill_next(false);
    cp_async_commit();
    wait_all_but_ring();
    __syncwarp();  // every lane's copies of this item landed (x and absmax are read across lanes)
    if constexpr (kXResident && !kStepItems) col = 256 * (warp_u + int64_t(j) * wpu);  // (grouped: stepped, as before)
    const int blocks = static_cast<int>(cols - col < 256 ? (cols - col) / 32 : 8);
    const unsigned char* stage = ring + read_at;
    read_at = next_stage(read_at);
    if (share_x && j == 0 && run_at == 0) {
      // A round's start. Every warp's share of this round's x has landed: each waited above for its item's commit
      // group, which holds its share (issued at the previous round's start, after that iteration's commit, so in the
      // group of the item `stages` later: <= this item, the launcher's stages <= groups). And every warp is done
      // with the previous round, whose image the next round's share now overwrites.
      named_barrier_sync(kGemvRoundBarrier, 32 * warps);
      if (x_round + 1 < rounds_cta) fill_x_share(x_round + 1);
    }
    const unsigned char* x_slots = kXResident ? x_image + col * 2 * kTokens
                                   : share_x  ? x_images + (x_round & 1) * x_image_bytes + col * 2 * kTokens
                                              : stage + gemv_ring_at<kWide>(Stage::kXAt);
    // A whole group (all but a K tail) with the block count a constant: no per-block exit, so
    // the compiler can issue later blocks' lookups before earlier blocks' products.
    // (Shuffle decode: not done, it spills under its 64-register cap.)
    if constexpr (kMma) {
      if (blocks == kBlocksPerTile)
        gemv_mma_decode_stage<T, K, kTokens, kWide, kXAhead>(stage, x_slots, kBlocksPerTile, smem, lane4, lane, acc.v);
      else gemv_mma_decode_stage<T, K, kTokens, kWide, kXAhead>(stage, x_slots, blocks, smem, lane4, lane, acc.v);
    } else {
      gemv_decode_stage<T, K, kTokens>(stage, x_slots, blocks, cb_value, lane, acc.v);
    }
    __syncwarp();  // the stage is refilled by the next iteration's copies
    col += 256 * int64_t(wpu);
    if (++j < n_w) continue;

    // Unit done: the warp's row sums (GemvAcc::store), then the slot's warps in order.
    j = 0;
    col = 256 * int64_t(warp_u);
    if (kDirectStore && wpu == 1) {
      // One warp per unit (many grouped units): its lanes hold the unit's sums, so they are stored
      // from the D fragment's map (GemvAcc::store's) without the trip through shared memory and
      // the slot's barrier: the same product sum * (rs * kHalfScaleFix), the same bits. Lane (g, t): rows g and
      // g + 8 (GemvAcc::each_sum); their row scales are lanes g's and g + 8's (out_r = lane).
      if constexpr (kDirectStore) {
        const int g = lane >> 2;
        const float rs_lo = __shfl_sync(0xffffffffu, rs, g) * kHalfScaleFix,
                    rs_hi = __shfl_sync(0xffffffffu, rs, g + 8) * kHalfScaleFix;
        const int64_t row = unit.tile * kTileRows + g;
        if (gated()) {  // rows g and g + 8: output g of the tile's 8, its gate and up (N % 16 == 0)
          acc.each_sum(lane, [&](int m, float lo, float hi) {
            if (m >= unit.rows) return;
            const float gate = to_float(from_float<T>(lo * rs_lo)), up = to_float(from_float<T>(hi * rs_hi));
            y[(unit.row0 + m) * (N / 2) + unit.tile * 8 + g] = from_float<T>(silu_mul(gate, up));
          });
        } else {
          acc.each_sum(lane, [&](int m, float lo, float hi) {
            if (m >= unit.rows) return;
            T* y_m = y + (unit.row0 + m) * N;
            if (row < N) y_m[row] = from_float<T>(lo * rs_lo);
            if (row + 8 < N) y_m[row + 8] = from_float<T>(hi * rs_hi);
          });
        }
      }
      acc.zero();
    } else {
      float* red_p = red + parity * warps * kTokens * kTileRows + slot * wpu * kTokens * kTileRows;
      acc.store(red_p + warp_u * kTokens * kTileRows, lane);
      acc.zero();
      // One barrier per unit, the slot's (named barrier 1 + slot; the whole CTA with one slot):
      // red[parity] is rewritten two units later, after the next unit's barrier, which every reader
      // below passes only when done reading.
      if (slots == 1) __syncthreads();
      else named_barrier_sync(1 + slot, 32 * wpu);
      const int64_t row = unit.tile * kTileRows + out_r;
      if (gated()) {
        // thread out_r < 8: output out_r of the tile's 8 from rows out_r (gate) and out_r + 8 (up), whose row scale
        // lane + 8 holds (out_r = lane % 16; every lane of the slot's warps is here)
        const float rs_up = __shfl_down_sync(0xffffffffu, rs, 8);
        for (int i = tid; i < kTokens * kTileRows; i += 32 * wpu) {
          const int m = i / kTileRows;
          if (m < unit.rows && out_r < 8) {
            float gate = red_p[m * kTileRows + out_r], up = red_p[m * kTileRows + out_r + 8];
            for (int w = 1; w < wpu; ++w) {
              gate += red_p[(w * kTokens + m) * kTileRows + out_r];
              up += red_p[(w * kTokens + m) * kTileRows + out_r + 8];
            }
            const float g_t = to_float(from_float<T>(gate * (rs * kHalfScaleFix)));
            const float u_t = to_float(from_float<T>(up * (rs_up * kHalfScaleFix)));
            y[(unit.row0 + m) * (N / 2) + unit.tile * 8 + out_r] = from_float<T>(silu_mul(g_t, u_t));
          }
        }
      } else {
        for (int i = tid; i < kTokens * kTileRows; i += 32 * wpu) {
          const int m = i / kTileRows;
          if (m < unit.rows && row < N) {
            float sum = red_p[m * kTileRows + out_r];
            for (int w = 1; w < wpu; ++w) sum += red_p[(w * kTokens + m) * kTileRows + out_r];
            y[(unit.row0 + m) * N + row] = from_float<T>(sum * (rs * kHalfScaleFix));
          }
        }
      }
      parity ^= 1;
    }
    bool in_run = false;  // x shared: the next unit is the next tile of this run's chunk
    if constexpr (kSharedX) {
      in_run = ++run_at < run;
      if (!in_run) {
        run_at = 0;
        ++x_round;
      }
    }
    unit_index += in_run ? 1 : unit_stride - (run - 1);
    if (unit_index < units) {
      // Grouped: the copies run stages - 1 items ahead, so with more items per unit than that they
      // are inside this next unit now, and fill_w is it (looked up when they entered it: a grouped
      // lookup is a binary search of the schedule or a ballot, once per unit instead of twice).
      if (in_run) ++unit.tile;
      else if constexpr (kGrouped) unit = stages - 1 < n_w ? fill_w : unit_of(unit_index);
      else unit = unit_of(unit_index);
      rs = row_scale_of(unit);
    }
  }
  if (share_x && x_round < rounds_cta) {
    // a slot without a unit in the CTA's last round (or none at all): that round's barrier, its share landed
    cp_async_wait<0>();
    named_barrier_sync(kGemvRoundBarrier, 32 * warps);
  }
  cp_async_wait<0>();  // nothing is left in flight at exit (the last commits are empty)
}

}  // namespace cuda
}  // namespace kbit

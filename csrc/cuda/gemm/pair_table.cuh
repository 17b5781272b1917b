#pragma once
// The pair table every mma decode (GEMV, small-M, tile and wgmma kernels) looks weights up in
// (docs/format.md section 5): the two codebook values (cb[a], cb[b]) of a pair of codes as one packed
// fp16/bf16 pair, unscaled, at the start of dynamic shared memory.
//
//   k <= 4: entry i = pair-table index i at byte 128 i, 32 copies, lane l's at + 4 l (FLUTE's per-lane
//           copies: random codes never conflict on a bank).
//   k = 5:  the split table (PairTableForm::kSplit, below): 16 lane copies of 256 {L, H} entries, 32 KB,
//           one 8-byte load a lookup and no bank conflicts; or, in the wgmma kernel's CTAs of 96 tokens and
//           more (wgmma_one_copy_table, wgmma_gemm.h), one copy of the 1024 pair-table words (kOneCopy: 32
//           random lanes over 32 banks, ~3.5 wavefronts a lookup; session 37's profile of the GEMV at k = 5
//           waited on shared memory).
//
// The split table. The 10-bit pair-table index at k = 5 is the low byte (the two weights' low 4 bits)
// plus their fifth bits (bits 8-9; format.md section 5). The split table is indexed by the low byte
// only, and entry e holds both fifth-bit cases:
//
//   entry e = a | b << 4 (a, b < 16):  L = (cb[a], cb[b]),  H = (cb[16 + a], cb[16 + b])
//   (packed pairs, the first weight in the low half, as pack_pair), stored as one 8-byte {L, H} at byte
//   128 e + 8 c for copy c = 0 .. 15.
//
// Lane l reads copy l % 16 with one 8-byte load: a 64-bit shared load is served a half-warp at a time,
// and the 16 lanes of a half-warp read 16 different 8-byte columns of the 128-byte rows, so every
// lookup is two wavefronts whatever the codes. The pair's two fifth bits then choose per half:
// word = (L & ~mask) | (H & mask), mask = 0xFFFF in the half whose weight has its fifth bit set.
//
// Absmax scales: the E4M4 byte b placed at bit 6 of an fp16 is exactly e4m4(b) / 128
// (subnormals included: E4M4 bias 8 vs fp16 bias 15), so a block scale costs a shift and
// a mask; kHalfScaleFix = 128 is applied once, where the kernel applies the row scale.
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "../../common/tiled_layout.h"
#include "mma.cuh"
#include "tc_gemm.h"

namespace kbit {
namespace cuda {

constexpr float kHalfScaleFix = 128.0f;  // e4m4(b) = 128 * fp16(b << 6)

enum class PairTableForm { kLaneCopies, kSplit, kOneCopy };

// kOneCopyK5: a k = 5 kernel that keeps the one-copy table (pair_table_bytes' `one_copy`).
template <int K, bool kOneCopyK5 = false>
struct PairTable {
  static constexpr PairTableForm kForm =
      K <= 4 ? PairTableForm::kLaneCopies : kOneCopyK5 ? PairTableForm::kOneCopy : PairTableForm::kSplit;
  // entries stored: the split table's 256 low bytes, else every pair-table index
  static constexpr int kEntries = kForm == PairTableForm::kSplit ? 256 : 1 << (2 * K);
  static constexpr int kCopies = kForm == PairTableForm::kLaneCopies ? 32 : kForm == PairTableForm::kSplit ? 16 : 1;
  // Lane-copy and split entries 128 bytes apart (one word, or the split table's two, per lane; the one-copy
  // table's 4). A 256-byte stride would make the address one byte permute, but the compiler still adds the
  // table base in a register (measured: PRMT + IADD), and the table would take twice the shared memory.
  static constexpr int kStride = kForm == PairTableForm::kOneCopy ? 4 : 128;
  static constexpr int kBytes = pair_table_bytes(K, kOneCopyK5);
  static_assert(kEntries * kStride == kBytes, "pair table bytes");
};

// Word w's bits from bit sh on moved to bit 7 (sh constant after unrolling): a code's bits as a table row's byte
// offset at a 128-byte stride (lut_offset, split_pair_word) once the caller masks them.
__device__ __forceinline__ uint32_t bits_at7(uint32_t w, int sh) { return sh >= 7 ? w >> (sh - 7) : w << (7 - sh); }

// Byte offset in the pair table of the entry of code c of the lane's stream, with lane
// l's copy at 4 l inside each entry (lane4 = 4 * lane). The table starts the dynamic
// shared memory, whose address the compiler folds into the load's immediate in the GEMV and
// small-M kernels (decode_a_fragment's callers: lane_pair_table below).
//   k = 4: PRMT + IMAD;  k = 2, 3: shift (k = 3: a funnel shift where the code straddles
//   two words) + LOP3;  k = 5 (the one-copy table only; lane4 unused): index * 4
template <int K>
__device__ __forceinline__ uint32_t lut_offset(const uint32_t* stream, int c, uint32_t lane4) {
  if constexpr (K == 4) {
    return __byte_perm(stream[c >> 2], 0u, 0x4440u + (c & 3)) * 128u + lane4;
  } else if constexpr (K == 2) {
    return (bits_at7(stream[c >> 3], 4 * (c & 7)) & 0x780u) | lane4;
  } else if constexpr (K == 3) {  // code c at stream bit 6c, maybe straddling two words
    const int bit = 6 * c, w = bit >> 5, sh = bit & 31;
    const uint32_t code_at7 = sh > 26 ? __funnelshift_r(stream[w], stream[w + 1], sh - 7) : bits_at7(stream[w], sh);
    return (code_at7 & 0x1F80u) | lane4;
  } else {
    return get_lut_index(stream, 5, c) << 2;
  }
}

// The wide table's (the GEMV's, k = 4: entry e's lane copies at 256 e, scalar_gemv.cuh): the code
// byte as the address's byte 1 over 4 lane as its byte 0 (4 lane < 128: its byte 1, zero, fills bytes 2-3),
// one PRMT.
__device__ __forceinline__ uint32_t lut_offset_wide(const uint32_t* stream, int c, uint32_t lane4) {
  return __byte_perm(stream[c >> 2], lane4, 0x5504u + ((c & 3) << 4));
}

// prmt.b32 with the selector's sign-replicate bits honoured (bit 3 of a nibble: the result byte is
// the selected byte's top bit, repeated).
__device__ __forceinline__ uint32_t prmt_b32(uint32_t a, uint32_t b, uint32_t selector) {
  uint32_t out;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(out) : "r"(a), "r"(b), "r"(selector));
  return out;
}

// The split table's word of pair code c (compile-time after unrolling) from its entry {L, H} = lh: the
// stream's words 16-19 hold the fifth bits, bits 2 (c % 16) and + 1 of word 16 + c / 16. The fifth
// bits go to the tops of two bytes by two shifts of their word (shared by the word's 16 pairs: 8 shifts),
// then one PRMT replicates each top over its half and a LOP3 picks L or H per half.
__device__ __forceinline__ uint32_t split_pair_select(uint2 lh, const uint32_t* stream, int c) {
  const uint32_t fifth = stream[16 + (c >> 4)];
  const int bit = 2 * (c & 15), byte = bit >> 3, r = bit & 7;  // bits r and r + 1 of byte `byte`
  const uint32_t a_top = fifth << (7 - r), b_top = fifth << (6 - r);  // to bit 7 of that byte
  const uint32_t sel_a = 8u | byte, sel_b = 8u | (4 + byte);
  const uint32_t mask = prmt_b32(a_top, b_top, sel_a | sel_a << 4 | sel_b << 8 | sel_b << 12);
  return (lh.x & ~mask) | (lh.y & mask);
}

// Lane l's copy's byte offset in a split-table entry, 8 (l % 16), opaque to the compiler (an asm mov): with the value
// visible ptxas folds its mask into the address's OR and keeps the low byte's mask apart, one more LOP3 a lookup.
__device__ __forceinline__ uint32_t split_lane8(int lane) {
  uint32_t lane8 = 8u * static_cast<uint32_t>(lane & 15);
  asm("mov.b32 %0, %0;" : "+r"(lane8));
  return lane8;
}

// The packed pair word of pair code c of the lane's stream (4 k = 20 words: words 0-15 the pairs' low bytes,
// byte c % 4 of word c / 4; words 16-19 the fifth bits) from the split table at `table` (the start of dynamic
// shared memory: its address folds into the load's immediate); lane8 = split_lane8(lane).
//   address: (the low byte at bit 7) & 0x7F80 | lane8 (a shift and a LOP3), then split_pair_select.
__device__ __forceinline__ uint32_t split_pair_word(const unsigned char* table, const uint32_t* stream, int c,
                                                    uint32_t lane8) {
  const uint32_t low_at7 = bits_at7(stream[c >> 2], 8 * (c & 3));
  return split_pair_select(*reinterpret_cast<const uint2*>(table + ((low_at7 & 0x7F80u) | lane8)), stream, c);
}

__device__ __forceinline__ float half_bits_to_float(uint32_t bits16) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(bits16)));
}

// Block scales of a tile row pair as fp16 bit pairs: for the 16 absmax bytes lane (g, t)
// reads at 16 g (rows g and g + 8, blocks 0-3 and 4-7 of each), halves[q][j & 1] holds the
// scales / 128 of blocks j and j + 2 of byte quad q (q = 0, 1: row g; 2, 3: row g + 8).
__device__ __forceinline__ void absmax_half_pairs(const uint4 am, uint32_t (&halves)[4][2]) {
  const uint32_t quads[4] = {am.x, am.y, am.z, am.w};
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    halves[q][0] = (quads[q] << 6) & 0x3FC03FC0u;
    halves[q][1] = (quads[q] >> 2) & 0x3FC03FC0u;
  }
}

// The fp16 bits of block blk's scale / 128 for row g (hi = false) or g + 8 (hi = true).
__device__ __forceinline__ uint32_t block_scale_bits(const uint32_t (&halves)[4][2], int blk, bool hi) {
  const int q = blk >> 2, j4 = blk & 3;
  const uint32_t pair = halves[(hi ? 2 : 0) + q][j4 & 1];
  return (j4 >> 1) ? pair >> 16 : pair & 0xFFFFu;
}

// fp16 bits of scale / 128 in both halves -> the scale itself as an fp16 pair (exact: the
// E4M4 values are fp16 normals).
__device__ __forceinline__ uint32_t scale_pair_f16(uint32_t half_bits_pair) {
  const __half2 p = __hmul2(*reinterpret_cast<const __half2*>(&half_bits_pair), __float2half2_rn(kHalfScaleFix));
  return *reinterpret_cast<const uint32_t*>(&p);
}

// The A operand register from an fp16 pair: itself for fp16; rounded once to bf16 for bf16.
template <typename T>
__device__ __forceinline__ uint32_t operand_from_f16(uint32_t f16_pair) {
  if constexpr (std::is_same_v<T, c10::Half>) {
    return f16_pair;
  } else {
    const float2 f = unpack_pair<c10::Half>(f16_pair);
    return pack_pair<T>(f.x, f.y);
  }
}

// The lane's stream of a weight tile staged in shared memory ([v][lane][16 B], k vectors) as
// 4 k words (word w = vector w / 4, component w % 4).
template <int K>
__device__ __forceinline__ void load_lane_stream(const unsigned char* tile, int lane, uint32_t (&stream)[4 * K]) {
#pragma unroll
  for (int v = 0; v < K; ++v) {
    const uint4 q = *reinterpret_cast<const uint4*>(tile + (v * 32 + lane) * 16);
    stream[4 * v] = q.x; stream[4 * v + 1] = q.y; stream[4 * v + 2] = q.z; stream[4 * v + 3] = q.w;
  }
}

// The block scales of lane (g, t)'s row pair as fp16 pairs (scale_pair_f16 of absmax_half_pairs):
// absmax = the tile's 128 staged absmax bytes.
__device__ __forceinline__ void load_scale_pairs(const unsigned char* absmax, int g, uint32_t (&scales)[4][2]) {
  uint32_t halves[4][2];
  absmax_half_pairs(*reinterpret_cast<const uint4*>(absmax + g * 16), halves);
#pragma unroll
  for (int q = 0; q < 4; ++q)
#pragma unroll
    for (int h = 0; h < 2; ++h) scales[q][h] = scale_pair_f16(halves[q][h]);
}

// Block blk's scale in both halves of a pair, for row g (lo) and row g + 8 (hi).
__device__ __forceinline__ void block_scale_splats(const uint32_t (&scales)[4][2], int blk, uint32_t& lo, uint32_t& hi) {
  const int q = blk >> 2, j4 = blk & 3;
  const uint32_t sel = (j4 >> 1) ? 0x3232u : 0x1010u;
  lo = __byte_perm(scales[q][j4 & 1], 0u, sel);
  hi = __byte_perm(scales[2 + q][j4 & 1], 0u, sel);
}

// The lane's view of the pair table: the shared-window address of its copy of entry 0 (table + 4 lane
// where there are 32 copies, + 8 (lane % 16) in the split table), made opaque to the compiler by an asm
// mov so that a lookup's address stays one IMAD from the code byte at k = 4 and 5 (byte x 128 + this
// address). With the sum visible, ptxas re-associated it into (byte x 128 + 4 lane) + the table's base
// in the two-warpgroup wgmma kernels: one more add per lookup, four a step (session 25, the SASS).
template <int K, bool kOneCopyK5 = false>
__device__ __forceinline__ uint32_t lane_pair_table(const unsigned char* table, uint32_t lane4) {
  constexpr PairTableForm kForm = PairTable<K, kOneCopyK5>::kForm;
  const uint32_t copy =
      kForm == PairTableForm::kLaneCopies ? lane4 : kForm == PairTableForm::kSplit ? 2u * (lane4 & 60u) : 0u;
  uint32_t address = static_cast<uint32_t>(__cvta_generic_to_shared(table)) + copy;
  asm("mov.b32 %0, %0;" : "+r"(address));
  return address;
}

// A word of the pair table. volatile: the compiler keeps each load where the source has it, after the
// barrier that ends the table's build (most lookups' addresses depend on codes loaded after it, but a
// wgmma warp with no rows looks up constant codes); no "memory" clobber: the table is immutable once built.
__device__ __forceinline__ uint32_t pair_table_word(uint32_t address) {
  uint32_t word;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(word) : "r"(address));
  return word;
}
// The split table's {L, H} entry at `address` (the same rules).
__device__ __forceinline__ uint2 pair_table_entry_lh(uint32_t address) {
  uint2 lh;
  asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];" : "=r"(lh.x), "=r"(lh.y) : "r"(address));
  return lh;
}

// The packed pair word of pair code c of the lane's stream (a decode's lookup): lane_table =
// lane_pair_table<K, kOneCopyK5>(the pair table at the start of dynamic shared memory, 4 lane). The split table's
// entry address is k = 4's (the low byte x 128: PRMT + IMAD), then split_pair_select.
template <int K, bool kOneCopyK5 = false>
__device__ __forceinline__ uint32_t lookup_pair_word(uint32_t lane_table, const uint32_t* stream, int c) {
  if constexpr (PairTable<K, kOneCopyK5>::kForm == PairTableForm::kSplit) {
    return split_pair_select(pair_table_entry_lh(lane_table + lut_offset<4>(stream, c, 0u)), stream, c);
  } else {
    return pair_table_word(lane_table + lut_offset<K>(stream, c, 0u));
  }
}

// The A fragment of step s (docs/format.md section 5) in T: register r = the pair-table entry of
// code 4 s + r times the block scale of its row (lo: g for even r, hi: g + 8 for odd r), an fp16
// product rounded once to T (lookup_pair_word's words).
template <typename T, int K, bool kOneCopyK5 = false>
__device__ __forceinline__ void decode_a_fragment(uint32_t lane_table, const uint32_t* stream, int s,
                                                  uint32_t lo, uint32_t hi, uint32_t (&a)[4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r)
    a[r] = operand_from_f16<T>(mul_pair<c10::Half>(lookup_pair_word<K, kOneCopyK5>(lane_table, stream, 4 * s + r),
                                                   (r & 1) ? hi : lo));
}

// The A fragment of step s as looked up, unscaled (the post-scaled bf16 wgmma decode, wgmma_post_scale: the table in
// T, the block scale applied to the step's sums): register r = the pair-table word of code 4 s + r.
template <int K, bool kOneCopyK5 = false>
__device__ __forceinline__ void lookup_a_fragment(uint32_t lane_table, const uint32_t* stream, int s,
                                                  uint32_t (&a)[4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) a[r] = lookup_pair_word<K, kOneCopyK5>(lane_table, stream, 4 * s + r);
}

// Thread i's codebook value (i < 2^K; 0 for the others), for staging in shared memory before
// build_pair_table. Kernels call this first thing after their PDL wait: the load's latency then overlaps their setup
// and first weight copies instead of queueing behind those copies (docs/design.md, "Session 8"; the GEMV's
// late-wait launches copy the codebook by cp.async instead, ahead of their first copies: "Session 46").
template <int K>
__device__ __forceinline__ float codebook_entry(const float* codebook) {
  return threadIdx.x < (1 << K) ? __ldg(codebook + threadIdx.x) : 0.0f;
}

// Fill the table (threads thread = 0 .. threads - 1 of the CTA, by default all of them; cb = the
// codebook staged in shared memory, 2^K floats). The caller synchronizes them before the first lookup.
// kOneCopyK5: PairTable's; kStride: the entries' stride (the form's own; 256: the GEMV's wide k = 4 table).
template <typename T, int K, bool kOneCopyK5 = false, int kStride = PairTable<K, kOneCopyK5>::kStride>
__device__ __forceinline__ void build_pair_table(unsigned char* table, const float* cb, int thread = threadIdx.x,
                                                 int threads = blockDim.x) {
  using P = PairTable<K, kOneCopyK5>;
  static_assert(kStride == P::kStride || (P::kCopies == 32 && kStride == 256), "strides");
  const auto table_word = [&](uint32_t i) {
    uint32_t a, b;
    lut_index_pair(K, i, a, b);
    return pack_pair<T>(cb[a], cb[b]);
  };
  if constexpr (P::kForm == PairTableForm::kSplit) {
    // A thread writes entry e's 8 16-byte vectors (two copies each), vector c at (c + e) % 8: a
    // quarter-warp's 8 threads store to 8 different vectors.
    for (int e = thread; e < P::kEntries; e += threads) {
      const int a = e & 15, b = e >> 4;
      const uint32_t lo = pack_pair<T>(cb[a], cb[b]), hi = pack_pair<T>(cb[16 + a], cb[16 + b]);
#pragma unroll
      for (int c = 0; c < 8; ++c)
        *reinterpret_cast<uint4*>(table + e * P::kStride + ((c + e) & 7) * 16) = make_uint4(lo, hi, lo, hi);
    }
  } else if constexpr (P::kCopies == 32) {
    // A thread computes entry e once and writes its 8 16-byte vectors (copies 4 c .. 4 c + 3);
    // store c goes to vector (c + e) % 8, so the 8 threads of a quarter-warp store phase hit 8
    // different vectors (no bank conflicts). (One vector per thread recomputed each entry 8
    // times: k = 4 spent ~8x the instructions, a fixed cost every CTA pays before its first
    // lookup.)
    for (int e = thread; e < P::kEntries; e += threads) {
      const uint32_t v = table_word(static_cast<uint32_t>(e));
#pragma unroll
      for (int c = 0; c < 8; ++c)
        *reinterpret_cast<uint4*>(table + e * kStride + ((c + e) & 7) * 16) = make_uint4(v, v, v, v);
    }
  } else {
    uint32_t* words = reinterpret_cast<uint32_t*>(table);
    for (int i = thread; i < P::kEntries; i += threads) words[i] = table_word(static_cast<uint32_t>(i));
  }
}

}  // namespace cuda
}  // namespace kbit

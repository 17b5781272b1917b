#pragma once
// The GEMV's k = 5 pair table ("split"): 16 lane copies of 256 entries, no bank conflicts.
//
// The tensor-core kernels' k = 5 table (pair_table.cuh) is one copy of 1024 words, indexed by the
// pair's 10-bit index (docs/format.md section 5: the low byte = the two weights' low 4 bits, bits 8-9
// = their fifth bits): 32 random lanes over 32 banks, ~3.5 wavefronts a lookup, and the GEMV at
// k = 5 waited on shared memory (session 37's profile). 32 lane copies of it would take 128 KB.
// Here the table is indexed by the low byte only, and entry e holds both fifth-bit cases:
//
//   entry e = a | b << 4 (a, b < 16):  L = (cb[a], cb[b]),  H = (cb[16 + a], cb[16 + b])
//   (packed pairs of T, the first weight in the low half, as pack_pair), stored as one 8-byte {L, H}
//   at byte 128 e + 8 c for copy c = 0 .. 15 (32 KB, the other kernels' k = 4 table's size).
//
// Lane l reads copy l % 16 with one 8-byte load: a 64-bit shared load is served a half-warp at a time,
// and the 16 lanes of a half-warp read 16 different 8-byte columns of the 128-byte rows, so every
// lookup is two wavefronts whatever the codes. The pair's two fifth bits then choose per half:
// word = (L & ~mask) | (H & mask), mask = 0xFFFF in the half whose weight has its fifth bit set.
#include <cstdint>

#include "../../common/tiled_layout.h"
#include "mma.cuh"
#include "pair_table.cuh"

namespace kbit {
namespace cuda {

struct GemvK5Table {
  static constexpr int kEntries = 256;
  static constexpr int kCopies = 16;
  static constexpr int kStride = 8 * kCopies;  // bytes between entries
  static constexpr int kBytes = kEntries * kStride;
};
static_assert(GemvK5Table::kBytes == 32768, "the split table is 32 KB");

// Fill the table (threads thread .. threads - 1 of the CTA; cb = the 32-entry codebook staged in
// shared memory). The caller synchronizes before the first lookup. A thread writes entry e's 8
// 16-byte vectors (two copies each), vector c at (c + e) % 8: a quarter-warp's 8 threads store to 8
// different vectors.
template <typename T>
__device__ __forceinline__ void build_gemv_k5_table(unsigned char* table, const float* cb, int thread, int threads) {
  for (int e = thread; e < GemvK5Table::kEntries; e += threads) {
    const int a = e & 15, b = e >> 4;
    const uint32_t lo = pack_pair<T>(cb[a], cb[b]), hi = pack_pair<T>(cb[16 + a], cb[16 + b]);
#pragma unroll
    for (int c = 0; c < 8; ++c)
      *reinterpret_cast<uint4*>(table + e * GemvK5Table::kStride + ((c + e) & 7) * 16) = make_uint4(lo, hi, lo, hi);
  }
}

// prmt.b32 with the selector's sign-replicate bits honoured (bit 3 of a nibble: the result byte is
// the selected byte's top bit, repeated).
__device__ __forceinline__ uint32_t prmt_b32(uint32_t a, uint32_t b, uint32_t selector) {
  uint32_t out;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(out) : "r"(a), "r"(b), "r"(selector));
  return out;
}

// Lane l's copy's byte offset in an entry, 8 (l % 16), opaque to the compiler (an asm mov): with the value visible
// ptxas folds its mask into the address's OR and keeps the low byte's mask apart, one more LOP3 a lookup.
__device__ __forceinline__ uint32_t gemv_k5_lane8(int lane) {
  uint32_t lane8 = 8u * static_cast<uint32_t>(lane & 15);
  asm("mov.b32 %0, %0;" : "+r"(lane8));
  return lane8;
}

// The packed pair word of pair code c (compile-time after unrolling) of the lane's stream (4 k = 20
// words: words 0-15 the pairs' low bytes, byte c % 4 of word c / 4; words 16-19 the fifth bits, bits
// 2 (c % 16) and + 1 of word 16 + c / 16). table: the split table; lane8 = gemv_k5_lane8(lane).
//   address: (the low byte at bit 7) & 0x7F80 | lane8 (a shift and a LOP3);
//   mask: the fifth bits moved to the tops of two bytes by two shifts of their word (shared by the
//   word's 16 pairs: 8 shifts), then one PRMT replicates each top over its half.
__device__ __forceinline__ uint32_t gemv_k5_pair(const unsigned char* table, const uint32_t* stream, int c,
                                                 uint32_t lane8) {
  const uint32_t low_at7 = bits_at7(stream[c >> 2], 8 * (c & 3));
  const uint2 lh = *reinterpret_cast<const uint2*>(table + ((low_at7 & 0x7F80u) | lane8));
  const uint32_t fifth = stream[16 + (c >> 4)];
  const int bit = 2 * (c & 15), byte = bit >> 3, r = bit & 7;  // bits r and r + 1 of byte `byte`
  const uint32_t a_top = fifth << (7 - r), b_top = fifth << (6 - r);  // to bit 7 of that byte
  const uint32_t sel_a = 8u | byte, sel_b = 8u | (4 + byte);
  const uint32_t mask = prmt_b32(a_top, b_top, sel_a | sel_a << 4 | sel_b << 8 | sel_b << 12);
  return (lh.x & ~mask) | (lh.y & mask);
}

}  // namespace cuda
}  // namespace kbit

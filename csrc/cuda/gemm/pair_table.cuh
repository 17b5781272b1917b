#pragma once
// The pair table both tensor-core GEMMs decode weights with (docs/format.md section 5):
// entry i holds the two codebook values (cb[a], cb[b]) of pair-table index i as one packed
// fp16/bf16 pair, unscaled, at the start of dynamic shared memory.
//
//   k <= 4: 32 copies, entry i at byte kPairTableStride * i, lane l's copy at + 4 l
//           (FLUTE's per-lane copies: random codes never conflict on a bank).
//   k = 5:  one copy of 1024 words.
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

template <int K>
struct PairTable {
  static constexpr int kEntries = 1 << (2 * K);
  static constexpr int kCopies = K <= 4 ? 32 : 1;
  // Entries 128 bytes apart (one word per lane). A 256-byte stride would make the address
  // one byte permute, but the compiler still adds the table base in a register (measured:
  // PRMT + IADD), and the table would take twice the shared memory.
  static constexpr int kStride = 128;
  static constexpr int kBytes = pair_table_bytes(K);
};

// Word w's bits from bit sh on moved to bit 7 (sh constant after unrolling): a code's bits as a table row's byte
// offset at a 128-byte stride (lut_offset, gemv_k5_pair) once the caller masks them.
__device__ __forceinline__ uint32_t bits_at7(uint32_t w, int sh) { return sh >= 7 ? w >> (sh - 7) : w << (7 - sh); }

// Byte offset in the pair table of the entry of code c of the lane's stream, with lane
// l's copy at 4 l inside each entry (lane4 = 4 * lane). The table starts the dynamic
// shared memory, whose address the compiler folds into the load's immediate in the GEMV and
// small-M kernels (decode_a_fragment's callers: lane_pair_table below).
//   k = 4: PRMT + IMAD;  k = 2, 3: shift (k = 3: a funnel shift where the code straddles
//   two words) + LOP3;  k = 5: one copy, index * 4
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
// where there are 32 copies), made opaque to the compiler by an asm mov so that a lookup's address
// stays one IMAD from the code byte at k = 4 (byte x 128 + this address). With the sum visible, ptxas
// re-associated it into (byte x 128 + 4 lane) + the table's base in the two-warpgroup wgmma kernels:
// one more add per lookup, four a step (session 25, the SASS).
template <int K>
__device__ __forceinline__ uint32_t lane_pair_table(const unsigned char* table, uint32_t lane4) {
  uint32_t address = static_cast<uint32_t>(__cvta_generic_to_shared(table)) + (PairTable<K>::kCopies == 32 ? lane4 : 0u);
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

// The A fragment of step s (docs/format.md section 5) in T: register r = the pair-table entry of
// code 4 s + r times the block scale of its row (lo: g for even r, hi: g + 8 for odd r), an fp16
// product rounded once to T. lane_table = lane_pair_table(the pair table at the start of dynamic
// shared memory, 4 lane).
template <typename T, int K>
__device__ __forceinline__ void decode_a_fragment(uint32_t lane_table, const uint32_t* stream, int s,
                                                  uint32_t lo, uint32_t hi, uint32_t (&a)[4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const uint32_t wv = pair_table_word(lane_table + lut_offset<K>(stream, 4 * s + r, 0u));
    a[r] = operand_from_f16<T>(mul_pair<c10::Half>(wv, (r & 1) ? hi : lo));
  }
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
// kStride: the entries' stride (32-copy tables; 256: the GEMV's wide table).
template <typename T, int K, int kStride = PairTable<K>::kStride>
__device__ __forceinline__ void build_pair_table(unsigned char* table, const float* cb, int thread = threadIdx.x,
                                                 int threads = blockDim.x) {
  static_assert(kStride == PairTable<K>::kStride || (PairTable<K>::kCopies == 32 && kStride == 256), "strides");
  using P = PairTable<K>;
  const auto table_word = [&](uint32_t i) {
    uint32_t a, b;
    lut_index_pair(K, i, a, b);
    return pack_pair<T>(cb[a], cb[b]);
  };
  if constexpr (P::kCopies == 32) {
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

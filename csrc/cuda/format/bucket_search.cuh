#pragma once
// Nearest-index search for the CUDA quantize kernel by one table lookup per weight: the
// quantize_block search contract (csrc/common/block_quantizer.h) with the same indices and
// errors, bit for bit, as BlockQuantizer's binary search, at a fixed cost per weight for
// every k (docs/design.md, "Quantize v3").
//
// Buckets. Every normalized weight x = w' / s the rule searches lies in [-2, 2] (|w'| <= the
// block absmax a; the 'up' scale is >= a, the 'down' scale > a / 2: E4M4 codes 1 and 2 are
// the widest bracket; a 'down' code 0 has s = 0, so x = 0). t = fma(x, 64, 1.5 * 2^23 + 128) is computed exactly and rounded
// once to an integer-valued float in [2^23, 2^24), so bits(t) = kMagicBits + b with
// b = round_rn(64 x + 128) in [0, 256]: a monotone bucket of width 1/64. Bucket b holds
// only x in [(b - 128.5) / 64, (b - 127.5) / 64] (both ends exact floats).
//
// Entry of bucket b: L = the number of midpoints below the bucket's lower end. If at most
// one midpoint lies in the bucket (checked for every bucket when the table is built), the
// nearest index of any x in it is L + (x > mid[L]) -- what the binary search counts. The
// entry holds {mid[L] (+inf past the last), cb[L], cb[L + 1], the index bits of L and L + 1}
// so a weight costs LDS.128, FSETP, FSEL and three integer ops for its plane bits.
// Codebooks that break the condition (two midpoints within 1/64; unsorted or NaN
// midpoints, which only the raw op can receive) make the kernel use the binary search.
//
// Index bits ("spread" form): bit j < 4 of an index at bit 8 j, bit 4 at bit 1; an entry's
// word holds spread(L) | spread(L + 1) << 4. Weight i adds its spread form shifted by i % 8
// into accumulator i / 8, so byte j of accumulator q is plane j's bits of weights
// 8 q .. 8 q + 7 (no carries: every weight owns its bit positions); plane 4 is built
// directly. Table layout: 8 copies of each 16-byte entry side by side ([bucket][copy]),
// lane l reading copy l % 8: the 8 lanes of one LDS.128 wavefront (a quarter warp) hit the
// 8 distinct 16-byte slots of a 128-byte row, so any mix of buckets is conflict-free.
#include <cstdint>

#include "../../common/block_quantizer.h"
#include "../../common/quant_math.h"

namespace kbit {
namespace cuda {

template <int K>
struct BucketSearch {
  static constexpr int kPerUnit = 64;                   // buckets per unit of x
  static constexpr int kBuckets = 4 * kPerUnit + 1;     // x in [-2, 2]
  static constexpr int kCopies = 8;                     // lanes of a quarter warp
  static constexpr float kMagic = 12582912.0f + 2 * kPerUnit;  // 1.5 * 2^23 + the x = 0 bucket
  static constexpr uint32_t kMagicBits = 0x4B400000u;   // bits of 1.5 * 2^23
  static constexpr int kEntryBytes = 16;
  static constexpr int kTableBytes = kBuckets * kCopies * kEntryBytes;  // 32,896
  static_assert(K >= 2 && K <= 5, "BucketSearch: k = 2..5");

  // Shared-memory address of this lane's copy of bucket 0, minus kMagicBits buckets (mod
  // 2^32): bits(t) * 128 + lane_base is the entry's address in one IMAD.
  uint32_t lane_base;

  __device__ __forceinline__ static uint32_t spread(uint32_t idx) {
    uint32_t s = 0;
#pragma unroll
    for (int j = 0; j < 4 && j < K; ++j) s |= ((idx >> j) & 1u) << (8 * j);
    if constexpr (K == 5) s |= ((idx >> 4) & 1u) << 1;
    return s;
  }

  // Fills the table from the binary-search table `bin` (BlockQuantizer<K> layout: 2^K - 1
  // midpoints, +inf, then the codebook); every thread of the CTA calls it. Returns, to every
  // thread, whether the table reproduces the binary search (the CTA then uses it).
  __device__ static bool build(const float* bin, float4* table) {
    constexpr int kMids = (1 << K) - 1;
    bool ok = true;
    if (threadIdx.x < kMids - 1) ok = bin[threadIdx.x] <= bin[threadIdx.x + 1];  // sorted, no NaN
    for (int b = threadIdx.x; b < kBuckets; b += blockDim.x) {
      const float lo = (b - 2 * kPerUnit - 0.5f) / kPerUnit, hi = (b - 2 * kPerUnit + 0.5f) / kPerUnit;  // exact
      int below_lo = 0, below_hi = 0;
      for (int j = 0; j < kMids; ++j) {
        below_lo += bin[j] < lo;
        below_hi += bin[j] < hi;
      }
      ok = ok && below_hi <= below_lo + 1;
      const int L = below_lo, L1 = min(L + 1, kMids);
      const float4 e = make_float4(L < kMids ? bin[L] : INFINITY, bin[kMids + 1 + L], bin[kMids + 1 + L1],
                                   __uint_as_float(spread(L) | spread(L1) << 4));
#pragma unroll
      for (int c = 0; c < kCopies; ++c) table[b * kCopies + c] = e;
    }
    return __syncthreads_and(ok);
  }

  __device__ explicit BucketSearch(const float4* table)
      : lane_base(static_cast<uint32_t>(__cvta_generic_to_shared(table)) + (threadIdx.x % kCopies) * kEntryBytes -
                  kMagicBits * (kCopies * kEntryBytes)) {}

  // quantize_block's search contract: the block's squared error under s and its indices as
  // K bit-planes, identical to BlockQuantizer<K>::block_error.
  __device__ __forceinline__ float block_error(const float (&w)[32], float s, uint32_t (&planes)[K]) const {
    const float inv_s = scale_reciprocal(s);
    uint32_t acc[4] = {0u, 0u, 0u, 0u}, plane4 = 0u;
    float sq[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      const float x = normalize(w[i], inv_s);
      const float t = __fmaf_rn(x, static_cast<float>(kPerUnit), kMagic);
      const uint32_t addr = __float_as_uint(t) * uint32_t(kCopies * kEntryBytes) + lane_base;
      float mid, v_lo, v_hi, bits_f;
      asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                   : "=f"(mid), "=f"(v_lo), "=f"(v_hi), "=f"(bits_f) : "r"(addr));
      const bool above = x > mid;
      uint32_t bits = __float_as_uint(bits_f);
      if (above) bits >>= 4;
      acc[i / 8] += (bits & 0x01010101u) << (i % 8);
      if constexpr (K == 5) plane4 |= ((bits >> 1) & 1u) << i;
      sq[i] = squared_error(w[i], above ? v_hi : v_lo, s);
    }
#pragma unroll
    for (int j = 0; j < 4 && j < K; ++j) {  // byte j of acc[0..3]
      const uint32_t sel = j | (j + 4) << 4;
      planes[j] = __byte_perm(__byte_perm(acc[0], acc[1], sel), __byte_perm(acc[2], acc[3], sel), 0x5410);
    }
    if constexpr (K == 5) planes[4] = plane4;
    return butterfly_sum32(sq);
  }
};

}  // namespace cuda
}  // namespace kbit

#pragma once
// Quantization of one 32-weight block (docs/format.md section 4), shared verbatim by
// the CPU op and the CUDA kernel (one thread per block there), so the two agree bit
// for bit by construction.
#include <cstdint>

#include "e4m4.h"
#include "hd.h"
#include "quant_math.h"

namespace kbit {

template <int kOffset>
KBIT_HD void butterfly_level(float (&v)[32]) {
  KBIT_UNROLL
  for (int i = 0; i < kOffset; ++i) v[i] = fadd_rn(v[i], v[i + kOffset]);
}

// Sum of the 32 values in warp xor-butterfly order (offsets 16, 8, 4, 2, 1: level one adds
// element i and i + 16, and so on): the block error's one summation order. One call per
// level with a compile-time width, so the array stays in registers.
KBIT_HD float butterfly_sum32(float (&v)[32]) {
  butterfly_level<16>(v);
  butterfly_level<8>(v);
  butterfly_level<4>(v);
  butterfly_level<2>(v);
  butterfly_level<1>(v);
  return v[0];
}

// The block rule (docs/format.md section 4) over any nearest-index search. `search` provides
//   float block_error(const float (&wn)[32], float s, uint32_t (&planes)[K])
// : the squared error of the row-normalized block wn under scale s, summed with
// butterfly_sum32, and wn's nearest codebook indices under s as K bit-planes (bit i of plane
// j = bit j of index i; index = the number of midpoints strictly below wn[i] / s, as
// nearest_index<K>). BlockQuantizer's binary search is the reference; a CUDA kernel may pass
// a faster search that returns the same indices and errors bit for bit.
//
// Quantizes one block of a row with scale row_scale (a power of two, or NaN for a row holding
// non-finite values: then every index and the code are 0). Writes the K bit-planes; returns
// the E4M4 code: of the two codes bracketing the block absmax, the one with the smaller
// squared error (ties: the larger, which never clips).
//
// All of it happens in the row-normalized domain w' = w / row_scale (exact: a power of two),
// where |w'| <= 248 and block scales are plain E4M4 values >= 2^-11, so nothing overflows or
// underflows and the result is invariant under power-of-two scaling of the weights. Both
// candidates' planes are built while their errors are summed (2K registers), so the chosen
// indices are never searched for a third time.
template <int K, typename Search>
KBIT_HD uint32_t quantize_block(const Search& search, const float (&w)[32], float row_scale,
                                uint32_t (&planes)[K]) {
  KBIT_UNROLL
  for (int j = 0; j < K; ++j) planes[j] = 0;
  if (row_scale != row_scale) return 0;  // NaN row: all indices 0, code 0
  const float inv_rs = 1.0f / row_scale;  // exact: a power of two in [2^-121, 2^126]
  float wn[32];
  float a = 0.0f;
  KBIT_UNROLL
  for (int i = 0; i < 32; ++i) {
    wn[i] = fmul_rn(w[i], inv_rs);
    a = fmaxf(a, fabsf(wn[i]));
  }
  const uint32_t down = e4m4_floor_code(a);
  const uint32_t up = (e4m4_decode(down) == a || down == 255u) ? down : down + 1u;
  uint32_t up_planes[K];
  const float up_error = search.block_error(wn, e4m4_decode(up), up_planes);
  KBIT_UNROLL
  for (int j = 0; j < K; ++j) planes[j] = up_planes[j];
  if (down == up) return up;
  uint32_t down_planes[K];
  const float down_error = search.block_error(wn, e4m4_decode(down), down_planes);
  // The 'up' scale can exceed float range for weights within 2^-3 of FLT_MAX.
  const bool up_overflows = !(fmul_rn(e4m4_decode(up), row_scale) <= 3.40282347e38f);
  if (up_overflows || down_error < up_error) {
    KBIT_UNROLL
    for (int j = 0; j < K; ++j) planes[j] = down_planes[j];
    return down;
  }
  return up;
}

template <int K>
struct BlockQuantizer {
  static constexpr int kEntries = 1 << K;
  static constexpr int kTableSize = 2 * kEntries;
  // [0, 2^K - 1): midpoints between neighbouring codebook entries (codebook_midpoint),
  // [2^K - 1]: +inf (never compared against), [2^K, 2^(K+1)): the codebook itself, so
  // the entry of a search position p is p[kEntries].
  const float* table;

  // Entry i (0 <= i < 2^K) of both halves of the table, from the codebook.
  KBIT_HD static void fill_table(const float* codebook, float* table_out, int i) {
    table_out[i] = i + 1 < kEntries ? codebook_midpoint(codebook, i) : INFINITY;
    table_out[kEntries + i] = codebook[i];
  }

  // Codebook value nearest to x (index = the number of midpoints strictly below x, as
  // nearest_index<K>), with the index's bits OR-ed into bit `bit` of the K planes. The
  // binary search decides index bit j at the step of width 2^j, so a plane bit costs one
  // predicated OR; it walks a pointer, so each step is one LDS at a constant offset.
  KBIT_HD float nearest_value_into_planes(float x, uint32_t bit, uint32_t (&planes)[K]) const {
    const float* p = table;  // p - table = the index so far
    KBIT_UNROLL
    for (int j = K - 1; j >= 0; --j) {
      if (x > p[(1 << j) - 1]) {
        p += 1 << j;
        planes[j] |= bit;
      }
    }
    return p[kEntries];
  }

  // Squared error of the block under scale s (butterfly_sum32 order), and the block's
  // indices under s as K bit-planes: quantize_block's search contract, by binary search.
  KBIT_HD float block_error(const float (&w)[32], float s, uint32_t (&planes)[K]) const {
    const float inv_s = scale_reciprocal(s);
    KBIT_UNROLL
    for (int j = 0; j < K; ++j) planes[j] = 0;
    float sq[32];
    KBIT_UNROLL
    for (int i = 0; i < 32; ++i) {
      const float value = nearest_value_into_planes(normalize(w[i], inv_s), 1u << i, planes);
      sq[i] = squared_error(w[i], value, s);
    }
    return butterfly_sum32(sq);
  }

  // quantize_block with this binary search (the reference rule; the CPU op's).
  KBIT_HD uint32_t quantize(const float (&w)[32], float row_scale, uint32_t (&planes)[K]) const {
    return quantize_block<K>(*this, w, row_scale, planes);
  }
};

}  // namespace kbit

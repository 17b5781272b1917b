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

template <int K>
struct BlockQuantizer {
  static constexpr int kEntries = 1 << K;
  const float* cb;   // [2^K] codebook
  const float* mid;  // [2^K - 1] midpoints (codebook_midpoint)

  KBIT_HD uint32_t index(float w, float inv_s) const {
    return static_cast<uint32_t>(nearest_index<K>(normalize(w, inv_s), mid));
  }

  // Squared error of the block under scale s, summed in warp xor-butterfly order
  // (offsets 16, 8, 4, 2, 1: level one adds element i and i + 16, and so on).
  KBIT_HD float block_error(const float (&w)[32], float s) const {
    const float inv_s = scale_reciprocal(s);
    float sq[32];
    KBIT_UNROLL
    for (int i = 0; i < 32; ++i) sq[i] = squared_error(w[i], cb[index(w[i], inv_s)], s);
    // One call per level with a compile-time width, so the array stays in registers.
    butterfly_level<16>(sq);
    butterfly_level<8>(sq);
    butterfly_level<4>(sq);
    butterfly_level<2>(sq);
    butterfly_level<1>(sq);
    return sq[0];
  }

  // Quantize one block of a row with scale row_scale (a power of two, or NaN for a row
  // holding non-finite values: then every index and the code are 0). Writes the K
  // bit-planes; returns the E4M4 code: of the two codes bracketing the block absmax,
  // the one with the smaller squared error (ties: the larger, which never clips).
  //
  // All of it happens in the row-normalized domain w' = w / row_scale (exact: a power
  // of two), where |w'| <= 248 and block scales are plain E4M4 values >= 2^-11, so
  // nothing overflows or underflows and the result is invariant under power-of-two
  // scaling of the weights. The indices are recomputed for the chosen code rather than
  // kept for both candidates: no index arrays, so CUDA keeps everything in registers.
  KBIT_HD uint32_t quantize(const float (&w)[32], float row_scale, uint32_t (&planes)[K]) const {
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
    uint32_t code = up;
    if (down != up) {
      // The 'up' scale can exceed float range for weights within 2^-3 of FLT_MAX.
      const bool up_overflows = !(fmul_rn(e4m4_decode(up), row_scale) <= 3.40282347e38f);
      if (up_overflows || block_error(wn, e4m4_decode(down)) < block_error(wn, e4m4_decode(up)))
        code = down;
    }
    const float inv_s = scale_reciprocal(e4m4_decode(code));
    KBIT_UNROLL
    for (int i = 0; i < 32; ++i) {
      const uint32_t idx = index(wn[i], inv_s);
      KBIT_UNROLL
      for (int j = 0; j < K; ++j) planes[j] |= ((idx >> j) & 1u) << i;
    }
    return code;
  }
};

}  // namespace kbit

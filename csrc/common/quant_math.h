#pragma once
// Scalar pieces of quantization shared by the CPU op and the CUDA kernels.
// Every floating-point step is spelled with explicit IEEE operations so that the
// compilers cannot contract or reorder them: CPU and CUDA produce identical bits.
// (Host code is built with -ffp-contract=off, see CMakeLists.txt; device code uses
// the _rn intrinsics, which nvcc never fuses.)
#include <cmath>
#include <cstdint>
#include "e4m4.h"
#include "hd.h"

namespace kbit {

constexpr int kBlock = 32;  // weights per quantization block, along K

KBIT_HD float fmul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
KBIT_HD float fadd_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
KBIT_HD float fdiv_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
KBIT_HD float fma_rn(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// Power-of-two per-row scale that puts the row's largest |w| into (124, 248],
// the top octave of E4M4. 1 for an all-zero row, NaN when the row holds a
// non-finite value (the whole row then dequantizes to NaN: never silently finite).
KBIT_HD float row_scale_for(float row_max_abs, bool row_finite) {
  if (!row_finite) return NAN;
  if (row_max_abs == 0.0f) return 1.0f;
  int x;
  const float f = frexpf(row_max_abs, &x);  // row_max = f * 2^x, f in [0.5, 1)
  int e = x - 8;                             // row_max / 2^e = 256 f in [128, 256)
  if (f * 256.0f > kE4M4Max) e += 1;         // (248, 256) -> (124, 128)
  if (e < -126) e = -126;                    // keep the scale a normal float
  return ldexpf(1.0f, e);
}

// Midpoints between neighbouring codebook entries (codebook strictly ascending).
KBIT_HD float codebook_midpoint(const float* cb, int i) {
  return fmul_rn(fadd_rn(cb[i], cb[i + 1]), 0.5f);
}

// Nearest codebook index of x: the number of midpoints strictly below x, so a value
// exactly on a midpoint goes to the lower index. `mid` holds 2^k - 1 midpoints.
template <int K>
KBIT_HD int nearest_index(float x, const float* mid) {
  int idx = 0;
KBIT_UNROLL
  for (int step = (1 << K) / 2; step >= 1; step >>= 1) {
    if (x > mid[idx + step - 1]) idx += step;
  }
  return idx;
}

// Reciprocal of a block scale (IEEE division, once per block); 0 for the zero scale, so
// that an all-zero block normalizes to 0. Weights are normalized as x = w * (1/s).
KBIT_HD float scale_reciprocal(float s) { return s == 0.0f ? 0.0f : fdiv_rn(1.0f, s); }
KBIT_HD float normalize(float w, float inv_s) { return fmul_rn(w, inv_s); }

// Squared reconstruction error of one weight: (w - cb * s)^2, as fma then mul.
KBIT_HD float squared_error(float w, float cb_value, float s) {
  const float err = fma_rn(-cb_value, s, w);
  return fmul_rn(err, err);
}

// Dequantized value: codebook entry times block scale times row scale.
KBIT_HD float block_scale(uint32_t absmax_code, float row_scale) {
  return fmul_rn(e4m4_decode(absmax_code), row_scale);
}
KBIT_HD float dequant_value(float cb_value, float scale) { return fmul_rn(cb_value, scale); }

}  // namespace kbit

#pragma once
// E4M4: the one-byte block absmax of the kbit format (docs/format.md, "E4M4").
//
//   byte c = eeee mmmm          e = c >> 4, m = c & 15
//   e == 0 : value = m * 2^-11                      (subnormal: 0, 2^-11 .. 15 * 2^-11)
//   e >= 1 : value = (16 + m) * 2^(e - 12)          (normal:   2^-7 .. 248)
//
// decode() is strictly increasing in c, so "the codes bracketing a value" are
// found by a binary search. Values are exact in fp32; the block scale is
// decode(c) * row_scale with a power-of-two row_scale, also exact in fp32.
#include <cstdint>
#include "hd.h"

namespace kbit {

constexpr float kE4M4Max = 248.0f;

KBIT_HD float e4m4_decode(uint32_t c) {
  const uint32_t e = (c >> 4) & 15u, m = c & 15u;
  if (e == 0) return static_cast<float>(m) * 0x1p-11f;
  // (16 + m) * 2^(e-12) == (1 + m/16) * 2^(e-8): build the IEEE bits directly.
  const uint32_t bits = ((e + 127u - 8u) << 23) | (m << 19);
  float f;
  static_assert(sizeof(float) == sizeof(uint32_t), "float must be 32-bit");
#if defined(__CUDA_ARCH__)
  f = __uint_as_float(bits);
#else
  __builtin_memcpy(&f, &bits, sizeof(f));
#endif
  return f;
}

// Largest code whose value is <= a (a >= 0; 0 for a NaN or a <= 0). Values of 248 and
// above return 255. Direct from the float's bits (tests/test_e4m4_native.py checks it
// against the search definition on every float in [0, 256]):
//   2^-7 <= a < 248: a = 1.mmmm... * 2^E, code = (E + 8) << 4 | mmmm = (bits >> 19) - (119 << 4)
//   a < 2^-7:        subnormal code m = floor(a * 2^11) in 0..15
KBIT_HD uint32_t e4m4_floor_code(float a) {
  if (!(a > 0.0f)) return 0u;
  if (a >= kE4M4Max) return 255u;
  if (a < 0x1p-7f) return static_cast<uint32_t>(a * 2048.0f);  // exact product, truncation = floor
  uint32_t bits;
#if defined(__CUDA_ARCH__)
  bits = __float_as_uint(a);
#else
  __builtin_memcpy(&bits, &a, sizeof(bits));
#endif
  return (bits >> 19) - (119u << 4);
}

}  // namespace kbit

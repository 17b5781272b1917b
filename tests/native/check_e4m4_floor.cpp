// e4m4_floor_code (csrc/common/e4m4.h, computed from the float's bits) against its definition
// - the largest code whose value is <= a, by binary search over e4m4_decode - on every float
// in [0, 256] and a few specials. Built and run by tests/test_e4m4_native.py.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <limits>

#include "e4m4.h"

static uint32_t floor_code_by_search(float a) {
  uint32_t lo = 0;
  for (uint32_t step = 128; step >= 1; step >>= 1)
    if (kbit::e4m4_decode(lo + step) <= a) lo += step;
  return lo;
}

int main() {
  uint64_t checked = 0, bad = 0;
  const auto check = [&](float a) {
    ++checked;
    const uint32_t want = floor_code_by_search(a), got = kbit::e4m4_floor_code(a);
    if (want != got && bad++ < 5) std::printf("mismatch at %a: search %u, direct %u\n", a, want, got);
  };
  for (uint32_t bits = 0; bits <= 0x43800000u; ++bits) {  // +0.0 .. 256.0
    float a;
    std::memcpy(&a, &bits, sizeof(a));
    check(a);
  }
  for (float a : {-1.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::infinity(), 1e30f})
    check(a);
  std::printf("checked %llu floats, %llu mismatches\n", (unsigned long long)checked, (unsigned long long)bad);
  return bad == 0 ? 0 : 1;
}

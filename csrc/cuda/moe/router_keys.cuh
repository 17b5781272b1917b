#pragma once
// kbit::router_topk's kernels' common parts: a logit's rank key and a fixed-order warp sum.
#include <cstdint>

#include "../common/device_utils.cuh"

namespace kbit {
namespace cuda {
namespace router {

// The unsigned order of the keys is the floats' order (-0 as +0), NaN above +inf. Key 0 is no float's (it would
// be a negative NaN's): it marks an empty or taken entry.
__device__ __forceinline__ uint32_t order_key(float v) {
  if (isnan(v)) return 0xFFFFFFFFu;
  const uint32_t b = v == 0.0f ? 0u : __float_as_uint(v);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ float key_value(uint32_t key) {  // order_key's inverse (NaN's key: a NaN)
  return __uint_as_float((key & 0x80000000u) ? (key & 0x7FFFFFFFu) : ~key);
}

__device__ __forceinline__ float warp_sum(float v) {  // the same tree in every warp and run
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

}  // namespace router
}  // namespace cuda
}  // namespace kbit

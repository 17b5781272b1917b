#pragma once
// Tensor copies (sm_90, PTX ISA "cp.async.bulk.tensor"): the tensor memory accelerator copies one box of a tensor that
// a tensor map describes (tensor_map.h) from global into shared memory, elements outside the tensor as zeros, and
// reports the box's bytes (all of them, the zero-filled ones included) to an mbarrier: the same protocol as bulk
// copies (bulk_copy.cuh: arm the barrier with the bytes, issue, wait on the phase). The map is a kernel parameter
// (`const __grid_constant__ CUtensorMap`), passed here by its address.
#include <cuda.h>

#include <cstdint>

#include "mbarrier.cuh"

namespace kbit {
namespace cuda {

// Hint: fetch the map into the SM's descriptor cache ahead of the first copy. It reads the kernel parameter only,
// no global memory, so it may come before a PDL wait (dependent_launch.cuh).
__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// The box whose first element is at (c0, c1) (c0 along dimension 0, the contiguous one) into `dst` (128-byte aligned;
// 1024 under the 128-byte swizzle), its bytes reported to `bar`. Coordinates may lie outside the tensor.
__device__ __forceinline__ void tensor_copy_2d_to_shared(void* dst, const CUtensorMap* map, int32_t c0, int32_t c1,
                                                         uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          smem_address(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(smem_address(bar))
      : "memory");
}

}  // namespace cuda
}  // namespace kbit

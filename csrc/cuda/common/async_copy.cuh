#pragma once
// cp.async (sm_80+): 16-byte (and 4-byte) global -> shared copies that bypass the register file,
// grouped into commit groups that a thread waits on (PTX ISA, "cp.async").
// Visibility: after wait_group a thread sees its own copies; other threads of the
// warp need a __syncwarp() after every thread's wait.
#include <cstdint>

namespace kbit {
namespace cuda {

// L2 only (.cg): weights are read once, keep them out of L1.
__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* gmem_src) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem_src) : "memory");
}

// 4 bytes (.ca, the only cache mode that size takes): a few scattered words, e.g. a codebook entry.
__device__ __forceinline__ void cp_async_4(void* smem_dst, const void* gmem_src) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(gmem_src) : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Wait until at most `kPending` of this thread's commit groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

}  // namespace cuda
}  // namespace kbit

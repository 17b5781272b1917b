#pragma once
// Bulk copies (sm_90, PTX ISA "cp.async.bulk"): the copy engine moves a contiguous block of
// global memory (size and addresses multiples of 16 bytes) into shared memory and reports the
// bytes to an mbarrier; one thread issues many kilobytes, so a CTA keeps far more bytes in
// flight than per-thread cp.async allows. Protocol per stage: the issuing thread arms the
// stage's barrier with the bytes to expect (arrive_expect_tx, one arrival), issues the copies;
// consumers mbarrier_wait on the phase; the phase completes when all bytes landed.
#include <cstdint>

#include "mbarrier.cuh"

namespace kbit {
namespace cuda {

// After mbarrier_init by the initializing thread, before the CTA barrier that publishes the
// barriers: makes the initialized barriers visible to the async proxy (the copy engine that
// reports bytes to them), which a CTA barrier alone does not order.
__device__ __forceinline__ void fence_barrier_init_for_async_proxy() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Orders this thread's earlier shared-memory accesses through the generic proxy (ld/st.shared) before later
// async-proxy accesses (bulk and tensor copies into the same bytes, once a barrier passes the turn on): a stage a
// CTA reused as scratch (wgmma_gemm.cuh, y's tile between units) is released for the copy engine to refill.
__device__ __forceinline__ void fence_shared_for_async_proxy() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_address(bar)), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void bulk_copy_to_shared(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_address(dst)),
               "l"(src), "r"(bytes), "r"(smem_address(bar))
               : "memory");
}

}  // namespace cuda
}  // namespace kbit

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

__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_address(bar)), "r"(bytes)
               : "memory");
}

// Raises the bytes the barrier's current phase expects, without arriving (the issuing thread
// arrives later, e.g. after its own shared-memory writes of the same stage).
__device__ __forceinline__ void mbarrier_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(smem_address(bar)), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void bulk_copy_to_shared(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_address(dst)),
               "l"(src), "r"(bytes), "r"(smem_address(bar))
               : "memory");
}

// bulk_copy_to_shared into the same shared-memory offset of every CTA of this cluster whose bit is set in
// cta_mask (ranks, %cluster_ctarank), each copy's bytes reported to the barrier at `bar`'s offset in that CTA
// (PTX ISA, cp.async.bulk .multicast::cluster). Every destination's barrier must be initialized and its
// region free: the caller's protocol orders both (wgmma_gemm.cuh: a cluster barrier after the barriers'
// init, then the stage's `empty` barrier, which counts every destination's consumers).
__device__ __forceinline__ void bulk_copy_to_shared_multicast(void* dst, const void* src, uint32_t bytes, uint64_t* bar,
                                                              uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;\n" ::"r"(
          smem_address(dst)),
      "l"(src), "r"(bytes), "r"(smem_address(bar)), "h"(cta_mask)
      : "memory");
}

}  // namespace cuda
}  // namespace kbit

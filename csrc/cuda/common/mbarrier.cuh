#pragma once
// Shared-memory mbarriers (sm_80+, PTX ISA "mbarrier"): a barrier object that completes a
// phase after `count` arrivals; waiters name the phase parity they wait for. Arrive has
// release and the completed wait acquire semantics at CTA scope, so data written before
// an arrive is visible after the wait (compute-sanitizer's racecheck understands them).
#include <cstdint>

namespace kbit {
namespace cuda {

__device__ __forceinline__ uint32_t smem_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// One thread. Other threads may use the barrier only after a barrier with the initializing
// thread (__syncthreads, or a named barrier among the warps that use it);
// the initializing thread itself (and the copy engine, for its bulk copies) after
// fence_barrier_init_for_async_proxy (bulk_copy.cuh).
__device__ __forceinline__ void mbarrier_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_address(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_address(bar)) : "memory");
#else  // sm_80/86/89: no sink operand; the returned state is unused
  uint64_t state;
  asm volatile("mbarrier.arrive.shared.b64 %0, [%1];\n" : "=l"(state) : "r"(smem_address(bar)) : "memory");
  (void)state;
#endif
}

// mbarrier_arrive where `arrive`, as one predicated instruction (no branch): wgmma loops arrive
// between asynchronous wgmmas, and a branch there makes ptxas serialize them (wgmma_gemm.cuh).
__device__ __forceinline__ void mbarrier_arrive_if(bool arrive, uint64_t* bar) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %1, 0;\n@p mbarrier.arrive.shared::cta.b64 _, [%0];\n}\n"
               ::"r"(smem_address(bar)), "r"(static_cast<int>(arrive)) : "memory");
#else
  if (arrive) mbarrier_arrive(bar);
#endif
}

// Block until the phase with this parity (0 for the first phase, then 1, 0, ...) completed.
// sm_90 has try_wait (the hardware suspends the thread for a while); sm_80/86/89 poll
// test_wait.
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, uint32_t parity) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n"
      "}\n" ::"r"(smem_address(bar)),
      "r"(parity)
      : "memory");
#else
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.test_wait.parity.shared.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n"
      "}\n" ::"r"(smem_address(bar)),
      "r"(parity)
      : "memory");
#endif
}

}  // namespace cuda
}  // namespace kbit

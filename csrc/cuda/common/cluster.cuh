#pragma once
// Thread-block clusters (sm_90; PTX ISA "mapa", "ld.shared::cluster", "barrier.cluster"): the CTAs
// of a cluster run at the same time on one GPC and read each other's shared memory (distributed
// shared memory). The wgmma GEMM's K-splits of one output tile form a cluster and add their
// partial sums through it (wgmma_gemm.cuh); the decode GEMV's cluster split stores split tiles' pieces into
// the CTA that adds them up (scalar_gemv_split.cuh).
#include <cstdint>

#include "mbarrier.cuh"

namespace kbit {
namespace cuda {

// This CTA's rank in its cluster (0 .. cluster size - 1).
__device__ __forceinline__ uint32_t cluster_cta_rank() {
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
}

// Every non-exited thread of the cluster arrives (release: its earlier shared-memory writes
// become visible to the cluster) and waits for the others (acquire). Whole warps only.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// The same barrier without the release: orders nothing, only waits. For the end of a kernel whose
// CTAs read each other's shared memory, where the caller makes every remote load's value feed one
// of its stores before it arrives (a load that feeds nothing may still be in flight): those loads
// are then complete, so no CTA leaves while another still reads its shared memory, and the
// release's GPU-wide fence (MEMBAR.ALL.GPU in the SASS: it waits for the CTA's global stores) is
// not paid. Whole warps only.
__device__ __forceinline__ void cluster_sync_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
}

// The two halves of cluster_sync, for a CTA that arrives early and waits later (a barrier phase each): arrive
// without ordering anything, and wait (acquire). Whole warps only; each thread alternates them.
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory"); }

// The distributed-shared-memory address of `p` (in this CTA's shared memory) in CTA `rank`.
__device__ __forceinline__ uint32_t cluster_shared_address(const void* p, uint32_t rank) {
  uint32_t address;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(address) : "r"(smem_address(p)), "r"(rank));
  return address;
}

__device__ __forceinline__ void store_cluster_shared(uint32_t address, float v) {
  asm volatile("st.shared::cluster.f32 [%0], %1;\n" ::"r"(address), "f"(v) : "memory");
}

__device__ __forceinline__ float4 load_cluster_shared(uint32_t address) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(address)
               : "memory");
  return v;
}

}  // namespace cuda
}  // namespace kbit

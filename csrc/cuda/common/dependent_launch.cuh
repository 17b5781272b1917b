#pragma once
// Device side of programmatic dependent launch (PDL; compute 9.0+, PTX "griddepcontrol").
// A kernel launched with it (launch_kernel, dependent_launch.h) may start while the kernel
// before it in the stream is still finishing, so its launch and set-up overlap that kernel's
// tail. Rules for such a kernel:
//   - before grid_dependency_wait(): read kernel parameters and shared memory only - no global
//     load of anything earlier stream work may write (x, weights, codebook, offsets) and no
//     global store at all. An L2 prefetch hint (prefetch_l2, prefetch_l2_line) is allowed: it moves no data into
//     the SM, and L2 is the coherence point, so loads after the wait see the earlier kernel's
//     writes whatever was prefetched.
//   - grid_dependency_wait() returns once the earlier kernel has completed and its writes are
//     visible.
//   - allow_dependents(): the next kernel launched with PDL may be scheduled once every CTA of
//     this grid has called it or exited (its own wait still waits for this grid to finish).
//   - a chain of PDL launches rests on each kernel launched with PDL waiting before it completes
//     (every kbit kernel does, in at least one thread of each CTA): a kernel's completion then
//     implies its predecessors'.
// Without the launch attribute, and on GPUs before sm_90, all three are no-ops.
#include <cstdint>

namespace kbit {
namespace cuda {

__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Hint: bring `bytes` (a multiple of 16) from `src` (16-byte aligned) into L2.
__device__ __forceinline__ void prefetch_l2(const void* src, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(src), "r"(bytes) : "memory");
#else
  (void)src, (void)bytes;
#endif
}

// Hint: bring the line holding `p` into L2 (any alignment).
__device__ __forceinline__ void prefetch_l2_line(const void* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p) : "memory");
#else
  (void)p;
#endif
}

}  // namespace cuda
}  // namespace kbit

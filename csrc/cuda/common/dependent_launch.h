#pragma once
// Host side of programmatic dependent launch (dependent_launch.cuh says what a kernel launched
// this way may do before its grid_dependency_wait()).
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

namespace kbit {
namespace cuda {

// Whether kernels that follow dependent_launch.cuh's rules are launched with PDL on a device:
// compute capability 9.0 or newer, and the process switch on.
bool dependent_launch_enabled(const cudaDeviceProp& prop);
// The same for the current device (what a launcher on the current stream asks).
bool dependent_launch_enabled();

// The process switch: on unless the environment sets KBIT_PDL=0 (read on first use; any value
// but 0 or 1 is an error), or as last set by set_dependent_launch (kbit._C.set_dependent_launch:
// A/B runs, and a way out should a driver misbehave), which returns the previous setting.
// Launches read it when issued: a CUDA graph keeps what its captured launches had.
bool dependent_launch_allowed();
bool set_dependent_launch(bool allowed);

// Bytes of its first tile's codes a kernel launched with PDL asks L2 for before its wait. The
// rule: what the CTA's first copies read, one 256-column group per warp of its first unit
// (`rule_bytes`, from the launcher): H100, session 12 (run3-pdl-prefetch), Llama-3 8B gate/up at
// M = 1 took 13.1 us with 8 KB (its four warps' groups), 13.9 with none and 15.2 with the whole
// 64 KB tile, 14.6 without PDL. kbit._C._set_pdl_prefetch_bytes (a tuning aid) overrides it:
// -1 = the rule (default), 0 = none, else that many bytes (a multiple of 16, <= 1 MiB).
uint32_t dependent_launch_prefetch_bytes(int64_t rule_bytes);
int64_t set_dependent_launch_prefetch_bytes(int64_t bytes);

// Whether the code the current device runs for `kernel` was compiled for compute 9.0 or newer
// (cudaFuncAttributes::ptxVersion), i.e. holds its griddepcontrol instructions: a build without
// an sm_90 target runs on Hopper from older PTX, with dependent_launch.cuh's helpers compiled out,
// and must not be launched with PDL (it would not wait). Cached per (kernel, device).
bool kernel_waits_for_dependencies(const void* kernel);
// Whether the code the current device runs for `kernel` was compiled for compute 9.0 or newer (the same
// lookup): kernels whose sm_90 instructions (clusters, distributed shared memory) are compiled out for older
// targets must not be launched from such code.
bool kernel_built_for_sm90(const void* kernel);

// kernel<<<grid, block, smem, stream>>>(args...), with PDL when `dependent` is true and the
// kernel's code has the wait (kernel_waits_for_dependencies), in clusters of `cluster` CTAs
// when that is not (1, 1, 1) (the grid a multiple of it; the caller checked that one fits). The launch's
// error is checked here (C10_CUDA_CHECK): callers need no C10_CUDA_KERNEL_LAUNCH_CHECK after it.
template <typename... Params, typename... Args>
void launch_kernel_in_clusters(void (*kernel)(Params...), dim3 grid, dim3 cluster, dim3 block, int smem,
                               cudaStream_t stream, bool dependent, Args&&... args) {
  dependent = dependent && kernel_waits_for_dependencies(reinterpret_cast<const void*>(kernel));
  cudaLaunchAttribute attributes[2]{};
  int count = 0;
  if (dependent) {
    attributes[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[count++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster.x * cluster.y * cluster.z > 1) {
    attributes[count].id = cudaLaunchAttributeClusterDimension;
    attributes[count].val.clusterDim.x = cluster.x;
    attributes[count].val.clusterDim.y = cluster.y;
    attributes[count++].val.clusterDim.z = cluster.z;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = static_cast<size_t>(smem);
  config.stream = stream;
  config.attrs = attributes;
  config.numAttrs = count;
  C10_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

template <typename... Params, typename... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, int smem, cudaStream_t stream, bool dependent,
                   Args&&... args) {
  launch_kernel_in_clusters(kernel, grid, dim3(1, 1, 1), block, smem, stream, dependent, std::forward<Args>(args)...);
}

}  // namespace cuda
}  // namespace kbit

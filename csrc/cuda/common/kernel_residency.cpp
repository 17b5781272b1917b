#include "kernel_residency.h"

#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

namespace kbit {
namespace cuda {

int resident_ctas_per_sm(const void* kernel, int threads, int smem_bytes, int max_smem_bytes) {
  int device = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  using Key = std::tuple<const void*, int, int, int, int>;
  static std::mutex mutex;
  static std::map<Key, int> cache;
  const Key key{kernel, device, threads, smem_bytes, max_smem_bytes};
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem_bytes));
  int ctas = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, kernel, threads, smem_bytes));
  ctas = std::max(ctas, 1);
  cache.emplace(key, ctas);
  return ctas;
}

int resident_clusters(const void* kernel, int threads, int smem_bytes, int cluster_size) {
  int device = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  using Key = std::tuple<const void*, int, int, int, int>;
  static std::mutex mutex;
  static std::map<Key, int> cache;
  const Key key{kernel, device, threads, smem_bytes, cluster_size};
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = 1;
  attribute.val.clusterDim.y = static_cast<unsigned>(cluster_size);
  attribute.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(1, static_cast<unsigned>(cluster_size), 1);
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.dynamicSmemBytes = static_cast<size_t>(smem_bytes);
  config.attrs = &attribute;
  config.numAttrs = 1;
  int clusters = 0;
  const cudaError_t status = cudaOccupancyMaxActiveClusters(&clusters, kernel, &config);
  if (status == cudaErrorInvalidClusterSize) {  // a size this GPU cannot form: none run
    (void)cudaGetLastError();                   // (this call's error, not sticky)
    clusters = 0;
  } else {
    C10_CUDA_CHECK(status);
  }
  cache.emplace(key, clusters);
  return clusters;
}

SpreadLaunch spread_over_sms(const void* kernel, int threads, int smem_bytes, int max_smem_bytes, long long units,
                             const cudaDeviceProp& prop) {
  const SpreadLaunch unpadded{smem_bytes, resident_ctas_per_sm(kernel, threads, smem_bytes, max_smem_bytes)};
  const long long sms = prop.multiProcessorCount;
  const long long per_sm_wanted = std::max<long long>(1, (units + sms - 1) / sms);
  if (per_sm_wanted >= unpadded.ctas_per_sm) return unpadded;
  // The largest multiple of 1 KB of which per_sm_wanted blocks (each also taking the reserved bytes) fit.
  const long long padded =
      (static_cast<long long>(prop.sharedMemPerMultiprocessor) / per_sm_wanted - prop.reservedSharedMemPerBlock) /
      1024 * 1024;
  if (padded <= smem_bytes || padded > max_smem_bytes) return unpadded;
  const int fits = resident_ctas_per_sm(kernel, threads, static_cast<int>(padded), max_smem_bytes);
  if (fits != per_sm_wanted) return unpadded;  // the occupancy calculator counts otherwise: no padding
  return {static_cast<int>(padded), fits};
}

}  // namespace cuda
}  // namespace kbit

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

int spread_smem_bytes(const void* kernel, int threads, int smem_bytes, int max_smem_bytes, long long units, int sms,
                      int sm_smem_bytes, int reserved_bytes, int& ctas_per_sm) {
  ctas_per_sm = resident_ctas_per_sm(kernel, threads, smem_bytes, max_smem_bytes);
  const long long want = std::max<long long>(1, (units + sms - 1) / sms);
  if (want >= ctas_per_sm) return smem_bytes;
  const long long padded = (sm_smem_bytes / want - reserved_bytes) / 1024 * 1024;
  if (padded <= smem_bytes || padded > max_smem_bytes) return smem_bytes;
  const int fits = resident_ctas_per_sm(kernel, threads, static_cast<int>(padded), max_smem_bytes);
  if (fits != want) return smem_bytes;  // the occupancy calculator rounds otherwise: launch unpadded
  ctas_per_sm = fits;
  return static_cast<int>(padded);
}

}  // namespace cuda
}  // namespace kbit

#include "dependent_launch.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

namespace kbit {
namespace cuda {

namespace {

// -1: not read yet; else 0 / 1. From KBIT_PDL on first use, or set_dependent_launch.
std::atomic<int> pdl_switch{-1};

int read_environment() {
  const char* v = std::getenv("KBIT_PDL");
  if (v == nullptr || *v == '\0' || std::strcmp(v, "1") == 0) return 1;
  TORCH_CHECK(std::strcmp(v, "0") == 0, "kbit: KBIT_PDL must be 0 (no programmatic dependent launch) or 1; got '", v, "'");
  return 0;
}

}  // namespace

bool dependent_launch_allowed() {
  int on = pdl_switch.load(std::memory_order_relaxed);
  if (on < 0) {
    on = read_environment();
    int expected = -1;
    if (!pdl_switch.compare_exchange_strong(expected, on)) on = expected;
  }
  return on == 1;
}

bool set_dependent_launch(bool allowed) {
  const int before = pdl_switch.exchange(allowed ? 1 : 0);
  if (before >= 0) return before == 1;
  const char* v = std::getenv("KBIT_PDL");  // not read yet: what it asks for (a bad value is overridden here)
  return v == nullptr || std::strcmp(v, "0") != 0;
}

namespace {
std::atomic<int64_t> prefetch_override{-1};
}  // namespace

uint32_t dependent_launch_prefetch_bytes(int64_t rule_bytes) {
  const int64_t v = prefetch_override.load(std::memory_order_relaxed);
  return static_cast<uint32_t>(v < 0 ? rule_bytes : v);
}

int64_t set_dependent_launch_prefetch_bytes(int64_t bytes) {
  TORCH_CHECK(bytes == -1 || (bytes >= 0 && bytes % 16 == 0 && bytes <= (int64_t(1) << 20)),
              "kbit: the PDL prefetch must be -1 (the rule), or a multiple of 16 bytes, at most 1 MiB; got ", bytes);
  return prefetch_override.exchange(bytes);
}

bool dependent_launch_enabled(const cudaDeviceProp& prop) { return dependent_launch_allowed() && prop.major >= 9; }

bool dependent_launch_enabled() { return dependent_launch_enabled(*at::cuda::getCurrentDeviceProperties()); }

bool kernel_waits_for_dependencies(const void* kernel) { return kernel_built_for_sm90(kernel); }

bool kernel_built_for_sm90(const void* kernel) {
  int device = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  static std::mutex mutex;
  static std::map<std::pair<const void*, int>, bool> cache;
  std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(kernel, device);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  cudaFuncAttributes attributes{};
  C10_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  const bool waits = attributes.ptxVersion >= 90;
  cache.emplace(key, waits);
  return waits;
}

}  // namespace cuda
}  // namespace kbit

#pragma once
// Launch preparation for kernels that use more than 48 KB of dynamic shared memory.
// cudaFuncSetAttribute raises a kernel's dynamic shared-memory limit on the *current*
// device only, so the opt-in (and the occupancy it grants) is per (kernel, device):
// a process that launches a kernel on two GPUs must opt in on each. This helper does
// that once per (kernel, device, sizes) and caches the answer (thread-safe).

#include <cuda_runtime.h>

namespace kbit {
namespace cuda {

// CTAs of `threads` threads with `smem_bytes` of dynamic shared memory that fit on one SM
// of the current device (at least 1), after raising the kernel's dynamic limit on that
// device to `max_smem_bytes` (the most any launch of it will ask for; each kernel's callers
// pass one fixed value: the attribute is per (kernel, device), so a smaller value passed later
// would lower the limit under earlier cache entries).
int resident_ctas_per_sm(const void* kernel, int threads, int smem_bytes, int max_smem_bytes);

// Clusters of `cluster_size` CTAs (cluster dimension (1, cluster_size, 1)) of `kernel` with
// `threads` threads and `smem_bytes` of dynamic shared memory that the current device runs at
// once (0: such a cluster does not fit, e.g. more CTAs than a GPC holds). Call after
// resident_ctas_per_sm raised the kernel's limit; cached per (kernel, device, sizes).
int resident_clusters(const void* kernel, int threads, int smem_bytes, int cluster_size);

// A persistent launch of `units` units spread over the SMs: the dynamic shared memory padded so
// that at most ceil(units / SMs) CTAs fit per SM, where fewer than resident_ctas_per_sm would do.
// The block scheduler may stack the CTAs of a small grid several to an SM while other SMs idle;
// the padding spreads them (H100, session 13, the GEMV at M = 1: Qwen3 KV, 32 CTAs, 3.03 -> 2.46
// us; Q, 256 CTAs of 4 warps, 4.44 -> 3.66; docs/design.md). smem_bytes: the bytes at launch (at
// most max_smem_bytes; the unpadded bytes where no padding gives the wanted count); ctas_per_sm:
// the CTAs that fit per SM with them. For kernels without static shared memory (a block of
// max_smem_bytes then fits an SM alone).
struct SpreadLaunch {
  int smem_bytes;
  int ctas_per_sm;
};
SpreadLaunch spread_over_sms(const void* kernel, int threads, int smem_bytes, int max_smem_bytes, long long units,
                             const cudaDeviceProp& prop);

}  // namespace cuda
}  // namespace kbit

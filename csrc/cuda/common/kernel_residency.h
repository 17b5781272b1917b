#pragma once
// Launch preparation for kernels that use more than 48 KB of dynamic shared memory.
// cudaFuncSetAttribute raises a kernel's dynamic shared-memory limit on the *current*
// device only, so the opt-in (and the occupancy it grants) is per (kernel, device):
// a process that launches a kernel on two GPUs must opt in on each. This helper does
// that once per (kernel, device, sizes) and caches the answer (thread-safe).

namespace kbit {
namespace cuda {

// CTAs of `threads` threads with `smem_bytes` of dynamic shared memory that fit on one SM
// of the current device (at least 1), after raising the kernel's dynamic limit on that
// device to `max_smem_bytes` (the most any launch of it will ask for; each kernel's callers
// pass one fixed value: the attribute is per (kernel, device), so a smaller value passed later
// would lower the limit under earlier cache entries).
int resident_ctas_per_sm(const void* kernel, int threads, int smem_bytes, int max_smem_bytes);

}  // namespace cuda
}  // namespace kbit

// Instantiations of the scalar GEMV for k = 2 (one file per k: parallel builds).
#include "scalar_gemv_launch.cuh"

namespace kbit {
namespace cuda {
template void launch_scalar_gemv<c10::Half, 2>(const TcGemmArgs&, cudaStream_t);
template void launch_scalar_gemv<c10::BFloat16, 2>(const TcGemmArgs&, cudaStream_t);
template GemvLaunchPlan plan_scalar_gemv<c10::Half, 2>(const TcGemmArgs&);
template bool gemv_takes_slots<c10::Half, 2>(const TcGemmArgs&);
template bool gemv_takes_slots<c10::BFloat16, 2>(const TcGemmArgs&);
template bool gemv_fuses_silu<c10::Half, 2>(const TcGemmArgs&);
template bool gemv_fuses_silu<c10::BFloat16, 2>(const TcGemmArgs&);
}  // namespace cuda
}  // namespace kbit

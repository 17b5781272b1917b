// Instantiations of the tensor-core GEMM for k = 4 (one file per k: parallel builds).
#include "tc_gemm.cuh"

namespace kbit {
namespace cuda {
template void launch_tc_gemm<c10::Half, 4>(const TcGemmArgs&, cudaStream_t);
template void launch_tc_gemm<c10::BFloat16, 4>(const TcGemmArgs&, cudaStream_t);
}  // namespace cuda
}  // namespace kbit

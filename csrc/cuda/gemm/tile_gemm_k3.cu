// Instantiations of the tensor-core tile GEMM for k = 3 (one file per k: parallel builds).
#include "tile_gemm.cuh"

namespace kbit {
namespace cuda {
template void launch_tile_gemm<c10::Half, 3>(const TcGemmArgs&, cudaStream_t);
template void launch_tile_gemm<c10::BFloat16, 3>(const TcGemmArgs&, cudaStream_t);
}  // namespace cuda
}  // namespace kbit

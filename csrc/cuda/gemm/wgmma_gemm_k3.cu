// Instantiations of the warpgroup-MMA GEMM for k = 3 (one file per k: parallel builds).
#include "wgmma_gemm.cuh"

namespace kbit {
namespace cuda {
template void launch_wgmma_gemm<c10::Half, 3>(const TcGemmArgs&, cudaStream_t);
template void launch_wgmma_gemm<c10::BFloat16, 3>(const TcGemmArgs&, cudaStream_t);
template int wgmma_resident_clusters<3>(WgmmaShape, int);
}  // namespace cuda
}  // namespace kbit

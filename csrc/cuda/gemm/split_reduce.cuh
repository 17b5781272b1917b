#pragma once
// The deterministic split-K reduction of both tensor-core GEMMs: with splits > 1 each CTA
// writes its fp32 partial sums to workspace[split][M][N16]; this kernel adds them in split
// order (the same bits on every run) and applies the row scale times `fix`.
#include <cstdint>

#include "../common/device_utils.cuh"
#include "tc_gemm.h"

namespace kbit {
namespace cuda {

template <typename T>
__global__ void reduce_splits_kernel(const float* __restrict__ workspace, const float* __restrict__ row_scale,
                                     T* __restrict__ y, int64_t M, int64_t N, int64_t n16, int splits, float fix) {
  const int64_t total = M * N;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t tok = i / N, row = i % N;
    float sum = workspace[tok * n16 + row];
    for (int s = 1; s < splits; ++s) sum += workspace[(int64_t(s) * M + tok) * n16 + row];
    y[i] = from_float<T>(sum * (row_scale[row] * fix));
  }
}

// y = fix * row_scale * sum of args.splits partials in args.workspace (dense).
template <typename T>
void launch_reduce_splits(const TcGemmArgs& args, float fix, cudaStream_t stream) {
  const int64_t total = args.M * args.N;
  const unsigned blocks = static_cast<unsigned>(grid_for((total + 255) / 256, 4));
  reduce_splits_kernel<T><<<blocks, 256, 0, stream>>>(args.workspace, args.row_scale, static_cast<T*>(args.y), args.M,
                                                       args.N, (args.N + 15) / 16 * 16, args.splits, fix);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace cuda
}  // namespace kbit

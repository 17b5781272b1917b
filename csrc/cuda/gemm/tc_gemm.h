#pragma once
// Host interface of the tensor-core GEMM over the tiled layout (tc_gemm.cuh).
#include <ATen/ATen.h>

namespace kbit {
namespace cuda {

// y[M, N] = x[M, K] @ W^T for one tiled weight. M <= kTcMaxM.
struct TcGemmArgs {
  const void* x;             // [M, K] fp16/bf16, 4-byte aligned rows
  const uint32_t* packed;    // tiled [N/16, K/256, k, 32, 4]
  const uint8_t* absmax;     // tiled [N/16, K/256, 128]
  const float* row_scale;    // [N]
  const float* codebook;     // [2^k]
  void* y;                   // [M, N], same dtype as x
  float* workspace;          // [splits, M, N16] fp32 when splits > 1
  int64_t M, N, K;
  int splits;                // CTAs sharing one 16-row tile along K
};

constexpr int kTcMaxM = 64;

// Token tiles of 8 for M: 1, 2, 4 or 8 (M <= 8, 16, 32, 64).
inline int tc_token_tiles(int64_t M) { return M <= 8 ? 1 : M <= 16 ? 2 : M <= 32 ? 4 : 8; }

// Splits along K so that small-N shapes still fill the GPU.
int tc_gemm_splits(int64_t N, int64_t K, int sm_count);

template <typename T, int K>
void launch_tc_gemm(const TcGemmArgs& args, cudaStream_t stream);

}  // namespace cuda
}  // namespace kbit

#pragma once
// Host interface of the scalar GEMV (scalar_gemv.cuh): dense y[M, N] = x[M, K] @ W^T for
// M = 1..kGemvMaxTokens, and grouped (MoE) y[t] = x[t] @ W[e]^T in chunks of up to
// kGemvMaxTokens rows per expert, straight from the tiled layout, without tensor cores or a
// pair table: the decode path, where the tensor-core kernel's fixed cost (table build, staged
// copies, hand-offs) is most of the call.
// Arguments: TcGemmArgs (x, packed, absmax, row_scale, codebook, y, M, N, K; grouped:
// expert_offsets, experts, tokens_per_unit = the rows per chunk, 1..kGemvMaxTokens).
#include <cuda_runtime.h>

#include <cstdint>

#include "tc_gemm.h"

namespace kbit {
namespace cuda {

constexpr int kGemvMaxTokens = 4;  // M = 1..4: one accumulator pair per token and lane

// Warps of a CTA (one 16-row tile at a time): one per 256-column group of K, at most
// kGemvMaxWarps (a small-N weight has few tiles whatever K is, so long rows get more warps:
// Qwen3 down, K = 5120, N = 2048, is 128 tiles). The launcher takes fewer where the GPU's shared
// memory per block cannot hold that many warps' copy rings.
constexpr int kGemvMaxWarps = 16;
inline int gemv_warps(int64_t K) {
  const int64_t groups = (K + 255) / 256;
  return static_cast<int>(groups >= kGemvMaxWarps ? kGemvMaxWarps : groups < 1 ? 1 : groups);
}

// Stages of a warp's copy ring (scalar_gemv.cuh): the item being decoded and the next one in flight.
constexpr int kGemvStages = 2;

template <typename T, int K>
void launch_scalar_gemv(const TcGemmArgs& args, cudaStream_t stream);

}  // namespace cuda
}  // namespace kbit

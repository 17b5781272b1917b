#pragma once
// What the dense gemm dispatch picks, for Python (kbit._C.gemm_dispatch) and the tests;
// no CUDA headers, so registration.cpp can include it.
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

namespace kbit {
namespace cuda {

// (the path: "kernel" (small-M tensor-core kernel), "tile" (tile kernel), "wgmma" (its wgmma
// successor, Hopper) or "dequant_cublas";
// where the rule came from: the measured table's device name, or "heuristic") on CUDA
// device `device`.
std::pair<std::string, std::string> gemm_dispatch(int64_t M, int64_t N, int64_t K, int k, int device);

// The grouped gemm's choice for T rows over E experts of N x K: (path: "gemv" (grouped_gemv_gemm),
// "kernel" (grouped_mma_gemm), "tile" (grouped_tile_gemm) or "dequant_cublas" (E > 1024); the
// GEMV's decode under decode='auto' ("mma" or "shuffle"; "" for the other paths); source as above).
std::tuple<std::string, std::string, std::string> grouped_gemm_dispatch(int64_t T, int64_t E, int64_t N, int64_t K,
                                                                        int k, int device);

// Whether torch.ops.kbit.wgmma_gemm runs for k bits and M tokens on CUDA device `device`
// (an sm_90a build on a compute-9.0 GPU with the shared memory).
bool wgmma_gemm_runs(int k, int64_t M, int device);

// The programmatic-dependent-launch switch (csrc/cuda/common/dependent_launch.h).
bool dependent_launch_allowed();
bool set_dependent_launch(bool allowed);
int64_t set_dependent_launch_prefetch_bytes(int64_t bytes);

// The GEMV's token-slot floor for dense launches (scalar_gemv.h; a tuning aid).
int set_gemv_min_token_slots(int64_t slots);
bool set_gemv_spread(bool on);

}  // namespace cuda
}  // namespace kbit

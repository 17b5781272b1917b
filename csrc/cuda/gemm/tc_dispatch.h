#pragma once
// Dense gemm dispatch: the tensor-core kernel or dequantize + cuBLAS, per (M, N, K, k, GPU).
//
// Where tc_dispatch_table.h (generated on the device by `python -m benchmarks.tune_dispatch`)
// has a table for this GPU (same compute capability and SM count), the crossover comes from
// it: rows of measured weight sizes N*K, each with the largest M at which the kernel was at
// least as fast as the fallback, per k. Elsewhere a heuristic from the H100 measurements.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace kbit {
namespace cuda {

struct TcCrossoverRow {
  int64_t weights;          // N * K of the shapes measured (the smallest crossover among them)
  int16_t max_kernel_m[4];  // k = 2, 3, 4, 5: the kernel wins for M <= this
};

struct TcCrossoverTable {
  const char* device;       // the GPU it was measured on (for people; matching uses the rest)
  int major, minor, sms;
  const TcCrossoverRow* rows;  // ascending weights
  int num_rows;
};

// The row that applies to a weight of N*K elements: the largest measured size <= N*K
// (the smallest row below every measured size). nullptr when no table matches the GPU.
const TcCrossoverRow* tc_crossover_row(int64_t weights, const cudaDeviceProp& prop);

// Without a table (measured on the H100, docs/benchmarks/nvidia-h100-80gb-hbm3/2026-11-26-v3):
// the kernel up to M = 16, and up to M = 32 on weights of >= 32M elements.
inline bool tc_gemm_wins_heuristic(int64_t M, int64_t N, int64_t K) {
  return M <= 16 || (M <= 32 && N * K >= (int64_t(32) << 20));
}

bool tc_gemm_wins(int64_t M, int64_t N, int64_t K, int k, const cudaDeviceProp& prop);

}  // namespace cuda
}  // namespace kbit

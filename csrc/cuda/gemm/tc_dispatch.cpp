// The dense gemm dispatch (tc_dispatch.h): a measured table where there is one, else the heuristic.
#include "tc_dispatch.h"

#include "tc_dispatch_table.h"

#include <ATen/cuda/CUDAContext.h>

#include "../../common/checks.h"
#include "dispatch_query.h"
#include "tile_gemm.h"

namespace kbit {
namespace cuda {

namespace {

// The table measured on this kind of GPU (same compute capability and SM count), or nullptr.
const TcCrossoverTable* table_for(const cudaDeviceProp& prop) {
  for (int t = 0; t < kNumTcCrossoverTables; ++t) {
    const TcCrossoverTable& table = kTcCrossoverTables[t];
    if (table.major == prop.major && table.minor == prop.minor && table.sms == prop.multiProcessorCount)
      return &table;
  }
  return nullptr;
}

}  // namespace

const TcCrossoverRow* tc_crossover_row(int64_t weights, const cudaDeviceProp& prop) {
  const TcCrossoverTable* table = table_for(prop);
  if (table == nullptr) return nullptr;
  const TcCrossoverRow* row = &table->rows[0];
  for (int r = 1; r < table->num_rows && table->rows[r].weights <= weights; ++r) row = &table->rows[r];
  return row;
}

bool tile_gemm_fits(int k, int64_t M, const cudaDeviceProp& prop) {
  return size_t(tile_smem_bytes(k, tile_token_tiles(M))) <= prop.sharedMemPerBlockOptin;
}

DensePath dense_gemm_path(int64_t M, int64_t N, int64_t K, int k, const cudaDeviceProp& prop) {
  const TcCrossoverRow* row = tc_crossover_row(N * K, prop);
  // Without a table (H100 measurements, docs/benchmarks/nvidia-h100-80gb-hbm3/2026-11-26-session4):
  // the small-M kernel up to M = 8, the tile kernel up to M = 128 (64 on weights of < 16M
  // elements, where dequantize + cuBLAS catches up sooner).
  const int64_t max_small = row ? row->max_kernel_m[k - 2] : 8;
  const int64_t max_tile = row ? row->max_tile_m[k - 2] : (N * K >= (int64_t(16) << 20) ? 128 : 64);
  if (M <= max_small) return DensePath::kSmallM;
  if (M <= max_tile && tile_gemm_fits(k, M, prop)) return DensePath::kTile;
  return DensePath::kDequantCublas;
}

std::pair<std::string, std::string> gemm_dispatch(int64_t M, int64_t N, int64_t K, int k, int device) {
  check_k(k);
  TORCH_CHECK(M >= 0 && N >= 0 && K >= 0, "kbit: gemm_dispatch needs M, N, K >= 0");
  const cudaDeviceProp& prop = *at::cuda::getDeviceProperties(device);
  const TcCrossoverTable* table = table_for(prop);
  const DensePath path = dense_gemm_path(M, N, K, k, prop);
  const char* name = path == DensePath::kSmallM ? "kernel" : path == DensePath::kTile ? "tile" : "dequant_cublas";
  return {name, table ? table->device : "heuristic"};
}

}  // namespace cuda
}  // namespace kbit

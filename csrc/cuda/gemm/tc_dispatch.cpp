// The dense gemm crossover (tc_dispatch.h): a measured table where there is one, else the heuristic.
#include "tc_dispatch.h"

#include "tc_dispatch_table.h"

#include <ATen/cuda/CUDAContext.h>

#include "../../common/checks.h"
#include "dispatch_query.h"

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

bool tc_gemm_wins(int64_t M, int64_t N, int64_t K, int k, const cudaDeviceProp& prop) {
  const TcCrossoverRow* row = tc_crossover_row(N * K, prop);
  if (row == nullptr) return tc_gemm_wins_heuristic(M, N, K);
  return M <= row->max_kernel_m[k - 2];
}

std::pair<bool, std::string> gemm_dispatch(int64_t M, int64_t N, int64_t K, int k, int device) {
  check_k(k);
  TORCH_CHECK(M >= 0 && N >= 0 && K >= 0, "kbit: gemm_dispatch needs M, N, K >= 0");
  const cudaDeviceProp& prop = *at::cuda::getDeviceProperties(device);
  const TcCrossoverTable* table = table_for(prop);
  return {tc_gemm_wins(M, N, K, k, prop), table ? table->device : "heuristic"};
}

}  // namespace cuda
}  // namespace kbit

// The dense gemm dispatch (tc_dispatch.h): a measured table where there is one, else the heuristic.
#include "tc_dispatch.h"

#include <algorithm>

#include "tc_dispatch_table.h"

#include <ATen/cuda/CUDAContext.h>

#include "../../common/checks.h"
#include "dispatch_query.h"
#include "scalar_gemv.h"
#include "tile_gemm.h"
#include "wgmma_gemm.h"

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

const TcCrossoverRow* tc_crossover_row(int64_t N, int64_t K, const cudaDeviceProp& prop) {
  const TcCrossoverTable* table = table_for(prop);
  if (table == nullptr) return nullptr;
  const TcCrossoverRow* sized = nullptr;  // rows ascend by weights: the last size row <= N*K, else the first
  for (int r = 0; r < table->num_rows; ++r) {
    const TcCrossoverRow& row = table->rows[r];
    if (row.shape_n == N && row.shape_k == K) return &row;
    if (row.shape_n == 0 && (sized == nullptr || row.weights <= N * K)) sized = &row;
  }
  return sized;
}

int small_m_table_wpu(int64_t M, int64_t N, int64_t K, int k, const cudaDeviceProp& prop) {
  const TcCrossoverRow* row = tc_crossover_row(N, K, prop);
  if (row == nullptr) return 0;
  for (int b = 0; b < 4; ++b)
    if (M <= kWpuBucketM[b]) return row->small_m_wpu[k - 2][b];
  return 0;
}

bool tile_gemm_fits(int k, int64_t tokens, bool grouped, const cudaDeviceProp& prop) {
  return size_t(tile_smem_bytes(k, tile_token_tiles(tokens), grouped)) <= prop.sharedMemPerBlockOptin;
}

bool grouped_tile_wins(int64_t T, int64_t E, int64_t N, int k, const cudaDeviceProp& prop) {
  // H100, k = 4, Qwen3 / GLM MoE shapes, uniform tokens per expert (docs/benchmarks/
  // nvidia-h100-80gb-hbm3/2026-11-26-session4/grouped.md, grouped-dispatch-check.md): the tile
  // kernel wins from ~8 tokens per expert (512 x 8 Qwen3 gate/up: 360 -> 172 us) once it has
  // >= 32 CTA tiles of work (8 experts x 512 rows = 16 tiles: it lost), and from 256 active
  // experts at any count (256 x 1 down: 131 -> 111 us); at 64 experts x 1-4 tokens it lost.
  const int64_t hint = tc_grouped_tokens_hint(T, E);
  if (!tile_gemm_fits(k, hint, true, prop)) return false;
  const int64_t active = std::min(E, T), tokens = 8 * int64_t(tile_token_tiles(hint));
  const int64_t row_blocks = ((N + 15) / 16 + kTileRowTiles - 1) / kTileRowTiles;
  const int64_t tiles = active * ((hint + tokens - 1) / tokens) * row_blocks;
  return (hint >= 16 && tiles >= 32) || active >= 256;
}

// The most tokens per expert on average at which grouped_gemv_wins takes the GEMV for K > 512
// (session 13: all the GEMV's chunk sizes, up to kGemvMaxTokens).
constexpr int64_t kGemvGroupedWinsTokens = 16;
static_assert(kGemvGroupedWinsTokens <= kGemvMaxTokens, "the grouped GEMV chunks at most kGemvMaxTokens rows");

bool grouped_gemv_wins(int64_t T, int64_t E, int64_t K, const cudaDeviceProp& prop) {
  // H100, k = 4, uniform tokens per expert (docs/benchmarks/nvidia-h100-80gb-hbm3/2026-11-26-
  // session10/grouped-gemv-1row.md; us, GEMV vs the best tensor-core kernel): Qwen3 MoE down
  // (K = 512) at 1 token per expert 8 x 1 7.8 vs 8.1, 64 x 1 26.2 vs 25.0, 256 x 1 93.8 vs 110.7;
  // gate/up (K = 2048) 8.4 vs 8.3, 64 x 1 25.7 vs 21.4, 256 x 1 85.1 vs 80.9; at 2 or more tokens
  // per expert it loses everywhere. So: at most one token per expert on average (T <= E), K <= 512,
  // and at least 256 rows, i.e. >= 256 experts with a token (64 x 1 down lost by 5%, 8 x 1 won
  // by 4%: within the noise of these runs, left to the tensor-core kernel).
  // Session 11 (session11/grouped-run4.md, us, GEMV with decode='auto' vs the small-M kernel;
  // measured at k = 4, K = 512 and 2048, 8 / 16 / 64 / 256 experts: other k, K and expert counts
  // take the same rule unmeasured):
  // gate/up (K = 2048, mma decode) wins with 8 and 16 experts at 1, 2 and 4 tokens each (8 x 1
  // 7.1 vs 8.5, 16 x 4 10.5 vs 12.7) and loses with 64 (26.6 vs 21.5); down (K = 512) wins with 8
  // experts at 1-4 tokens (mma decode; run3-grouped: 7.6 / 7.7 / 8.1 vs 8.0 / 8.1 / 8.2) and with 16
  // at 1 token (shuffle decode: 9.6 vs 10.9; at 2 and 4 it loses, 11.6 vs 11.1, 13.3 vs 11.3).
  // Session 12 (session12/run3-grouped.md, both kernels launched with PDL): gate/up as before (8 x 1
  // 6.2 vs 6.8 us, 16 x 4 9.8 vs 11.1, 64 x 1 25.6 vs 20.0); down (K = 512) now loses with 8 experts
  // at 1-4 tokens (8 x 1 7.1 vs 6.6) and ties with 16 x 1 (9.0 vs 9.3): K <= 512 goes to the
  // small-M kernel below session 10's rule.
  // Session 13 (session13/run1-grouped.md; the mma decode with 8 and 16 token slots): gate/up keeps
  // winning up to 16 tokens per expert with 8 and 16 experts (8 x 8 7.5 vs 9.0 us for the small-M
  // kernel, 8 x 16 10.3 vs 13.3, 16 x 16 17.1 vs 23.3 and 26.7 for the tile kernel; fp16 bmm 8.3 /
  // 8.4 / 13.9); down (K = 512) still loses from 4 tokens per expert (8 x 8 9.0 vs 8.1).
  if (table_for(prop) == nullptr) return false;
  if (T <= E && K <= 512 && std::min(E, T) >= 256) return true;
  return K > 512 && E <= 16 && T <= int64_t(kGemvGroupedWinsTokens) * E;
}

DensePath dense_gemm_path(int64_t M, int64_t N, int64_t K, int k, const cudaDeviceProp& prop) {
  const TcCrossoverRow* row = tc_crossover_row(N, K, prop);
  // Without a table (H100 measurements, docs/benchmarks/nvidia-h100-80gb-hbm3/2026-11-26-session4
  // and -session5): the small-M kernel up to M = 8, a tile kernel up to M = 128 (64 on weights of
  // < 16M elements, where dequantize + cuBLAS catches up sooner), the wgmma one from M = 16 on
  // weights of >= 16M elements (from 64 below: its pass over x costs ~1-2 us there).
  const bool large = N * K >= (int64_t(16) << 20);
  const int64_t max_small = row ? row->max_kernel_m[k - 2] : 8;
  const int64_t max_tile = row ? row->max_tile_m[k - 2] : (large ? 128 : 64);
  const int64_t min_wgmma = row ? row->min_wgmma_m[k - 2] : (large ? 16 : 64);
  const int64_t max_gemv = row ? std::min<int64_t>(row->max_gemv_m[k - 2], kGemvMaxTokens) : 0;
  if (M <= max_gemv) return DensePath::kGemv;
  if (M <= max_small) return DensePath::kSmallM;
  if (M <= max_tile) {
    if (min_wgmma > 0 && M >= min_wgmma && wgmma_gemm_available(k, M, prop)) return DensePath::kWgmma;
    if (tile_gemm_fits(k, M, false, prop)) return DensePath::kTile;
  }
  return DensePath::kDequantCublas;
}

DensePath grouped_gemm_path(int64_t T, int64_t E, int64_t N, int64_t K, int k, const cudaDeviceProp& prop) {
  if (grouped_gemv_wins(T, E, K, prop)) return DensePath::kGemv;
  if (grouped_tile_wins(T, E, N, k, prop)) return DensePath::kTile;
  return DensePath::kSmallM;
}

std::tuple<std::string, std::string, std::string> grouped_gemm_dispatch(int64_t T, int64_t E, int64_t N, int64_t K,
                                                                        int k, int device) {
  check_k(k);
  TORCH_CHECK(T >= 0 && E >= 1 && N >= 0 && K >= 0, "kbit: grouped_gemm_dispatch needs T, N, K >= 0 and E >= 1");
  const cudaDeviceProp& prop = *at::cuda::getDeviceProperties(device);
  const TcCrossoverTable* table = table_for(prop);
  const std::string source = table ? table->device : "heuristic";
  if (E > kTcMaxExperts) return {"dequant_cublas", "", source};
  switch (grouped_gemm_path(T, E, N, K, k, prop)) {
    case DensePath::kGemv:
      return {"gemv", gemv_auto_decode(true, K, E, std::min<int64_t>((T + E - 1) / E, kGemvMaxTokens)) ==
                              GemvDecode::kShuffle ? "shuffle" : "mma", source};
    case DensePath::kTile: return {"tile", "", source};
    default: return {"kernel", "", source};
  }
}

std::pair<std::string, std::string> gemm_dispatch(int64_t M, int64_t N, int64_t K, int k, int device) {
  check_k(k);
  TORCH_CHECK(M >= 0 && N >= 0 && K >= 0, "kbit: gemm_dispatch needs M, N, K >= 0");
  const cudaDeviceProp& prop = *at::cuda::getDeviceProperties(device);
  const TcCrossoverTable* table = table_for(prop);
  const DensePath path = dense_gemm_path(M, N, K, k, prop);
  const char* name = path == DensePath::kSmallM  ? "kernel"
                     : path == DensePath::kGemv  ? "gemv"
                     : path == DensePath::kTile  ? "tile"
                     : path == DensePath::kWgmma ? "wgmma"
                                                 : "dequant_cublas";
  return {name, table ? table->device : "heuristic"};
}

bool wgmma_gemm_runs(int k, int64_t M, int device) {
  check_k(k);
  return wgmma_gemm_available(k, M, *at::cuda::getDeviceProperties(device));
}

}  // namespace cuda
}  // namespace kbit

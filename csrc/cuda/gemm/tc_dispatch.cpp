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

// The table measured on this GPU: the one of its name and chip (compute capability and SM count; a MIG
// slice or another SM count is another chip), else among its chip's the one whose name shares the longest
// start with the GPU's (an "NVIDIA H200 NVL" would take the H200's; on a tie, the first: the H200 took the
// H100's until it had its own, session 26), else nullptr. A few short string compares a call.
const TcCrossoverTable* table_for(const cudaDeviceProp& prop) {
  const TcCrossoverTable* best = nullptr;
  size_t best_common = 0;
  for (int t = 0; t < kNumTcCrossoverTables; ++t) {
    const TcCrossoverTable& table = kTcCrossoverTables[t];
    if (table.major != prop.major || table.minor != prop.minor || table.sms != prop.multiProcessorCount) continue;
    size_t common = 0;
    while (table.device[common] != '\0' && table.device[common] == prop.name[common]) ++common;
    if (table.device[common] == '\0' && prop.name[common] == '\0') return &table;  // its own
    if (best == nullptr || common > best_common) best = &table, best_common = common;
  }
  return best;
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
  const int64_t row_blocks = cta_row_blocks(N, kTileRowTiles);
  const int64_t tiles = active * ((hint + tokens - 1) / tokens) * row_blocks;
  return (hint >= 16 && tiles >= 32) || active >= 256;
}

bool grouped_gemv_wins(int64_t T, int64_t E, int64_t K, const cudaDeviceProp& prop) {
  // H100, k = 4, uniform tokens per expert, Qwen3 MoE experts (gate/up K = 2048, down K = 512); us,
  // the GEMV against the best tensor-core kernel (small-M or tile). Sessions 10-13 (the rule
  // before; docs/design.md): gate/up won with <= 16 experts up to 16 tokens each and lost from 64
  // experts; down won only at 1 token per expert from 256 experts.
  // Session 14 (unit slots, warps per unit halved while the units fill the GPU, per-warp schedule
  // for <= 32 experts; docs/benchmarks/nvidia-h100-80gb-hbm3/2026-11-27-session14/):
  //   gate/up: 8 x 1 4.2 vs 6.7, 8 x 16 8.8 vs 13.0; 64 x 1 18.1 vs 20.0; 256 x 1 55.9 vs 80.7.
  //   down:    8 x 1 4.2 vs 6.7, 8 x 8 6.3 vs 8.2, 8 x 16 8.7 vs 11.2; 16 x 1 6.9 vs 9.3,
  //            16 x 4 7.6 vs 9.7 (16 x 8 11.1 vs 11.3: a tie); 64 x 1 20.4 vs 23.9, 64 x 4 22.9
  //            vs 25.0; 256 x 1 69.5 vs 107.9, 256 x 4 77.0 vs 111.7.
  //   run 5 (the halving rule): gate/up 64 x 4 19.6 vs 21.2, 256 x 4 58.7 vs 85.2, but 64 x 16
  //            31.2 vs 28.6; down 64 x 4 22.5 vs 25.1, 256 x 4 76.2 vs 111.6, 64 x 16 44.3 vs 39.8.
  // Session 16 (run 8, the MoE sweep; the GEMV against the dispatcher's tile kernel): 8 tokens per
  //   expert, gate/up 64 x 8 23.4 vs 24.3, 256 x 8 75.8 vs 90.5, 512 x 8 165.5 vs 170.6; down 64 x 8
  //   30.7 vs 34.1 (small-M 32.7), 256 x 8 106.8 vs 118.0, 512 x 8 215.3 vs 225.7; 16 tokens still
  //   lost (gate/up 256 x 16 107.8 vs 104.2, down 146.6 vs 140.1).
  // So: up to 8 tokens per expert on average, any E; up to 16 with <= 8 experts, or with <= 16
  // experts and K > 512 (16 tokens per expert on many experts left to the tensor-core kernels).
  if (table_for(prop) == nullptr) return false;
  if (T <= 8 * E) return true;
  return T <= int64_t(kGemvMaxTokens) * E && (E <= 8 || (E <= 16 && K > 512));
}

DensePath dense_gemm_path(int64_t M, int64_t N, int64_t K, int k, bool bf16, const cudaDeviceProp& prop) {
  const TcCrossoverRow* row = tc_crossover_row(N, K, prop);
  // Without a table (H100 measurements, docs/benchmarks/nvidia-h100-80gb-hbm3/2026-11-26-session4
  // and -session5): the small-M kernel up to M = 8, a tile kernel up to M = 128 (64 on weights of
  // < 16M elements, where dequantize + cuBLAS catches up sooner), the wgmma one from M = 16 on
  // weights of >= 16M elements (from 64 below: its pass over x costs ~1-2 us there). Where wgmma
  // runs it goes on to M = 1024 (k = 5: 384): on the H100 it beat dequantize + cuBLAS there on
  // every benchmark shape at k = 3-4, at k = 2 on all but the KV size (to 768), and at k = 5 up to
  // 384-1024 by shape (session 25's table).
  const bool large = N * K >= (int64_t(16) << 20);
  const int64_t max_small = row ? row->max_kernel_m[k - 2] : 8;
  // (bf16: the table's bf16 end where it was measured; session 42, H200, Llama-3 8B gate/up M = 1024 in bf16: wgmma
  // 257 us against dequantize + cuBLAS 226, where fp16's table keeps wgmma)
  // A bf16 column's value where bf16 x and it was measured (> 0), else the fp16 column's
  const auto for_dtype = [&](const int16_t(&fp16_m)[4], const int16_t(&bf16_m)[4]) -> int64_t {
    return bf16 && bf16_m[k - 2] > 0 ? bf16_m[k - 2] : fp16_m[k - 2];
  };
  const int64_t max_tile = row ? for_dtype(row->max_tile_m, row->max_tile_m_bf16)
                           : wgmma_gemm_available(k, 1024, prop) ? (k == 5 ? 384 : 1024)
                                                                  : (large ? 128 : 64);
  const int64_t min_wgmma = row ? row->min_wgmma_m[k - 2] : (large ? 16 : 64);
  // (bf16: the table's bf16 end where it was measured; session 72, H200: the GEMV's bf16 calls take their fp16 time
  // while the wgmma kernel's took 1.1-1.3x theirs at M = 8-16 before its post-scaled bf16 decode and 1.02x after, so
  // the GEMV's range runs further in bf16 on a few rows)
  const int64_t max_gemv = row ? std::min<int64_t>(for_dtype(row->max_gemv_m, row->max_gemv_m_bf16), kGemvMaxRows) : 0;
  if (M <= max_gemv) return DensePath::kGemv;
  if (M <= max_small) return DensePath::kSmallM;
  if (M <= max_tile) {
    if (min_wgmma > 0 && M >= min_wgmma && wgmma_gemm_available(k, M, prop)) return DensePath::kWgmma;
    // Where the table's wgmma won, tune_dispatch timed the tile kernel only up to kTileTimedMaxM: the
    // range past it is wgmma's (a build without sm_90a on the table's GPU takes dequantize + cuBLAS there).
    const bool tile_timed = M <= kTileTimedMaxM || row == nullptr || min_wgmma == 0;
    if (tile_timed && tile_gemm_fits(k, M, false, prop)) return DensePath::kTile;
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
      return {"gemv", gemv_decode_name(gemv_auto_decode()), source};
    case DensePath::kTile: return {"tile", "", source};
    default: return {"kernel", "", source};
  }
}

std::pair<std::string, std::string> gemm_dispatch(int64_t M, int64_t N, int64_t K, int k, int device,
                                                  const std::string& dtype) {
  check_k(k);
  TORCH_CHECK(M >= 0 && N >= 0 && K >= 0, "kbit: gemm_dispatch needs M, N, K >= 0");
  TORCH_CHECK(dtype == "float16" || dtype == "bfloat16", "kbit: gemm_dispatch: dtype must be 'float16' or "
              "'bfloat16' (the activations'); got '", dtype, "'");
  const cudaDeviceProp& prop = *at::cuda::getDeviceProperties(device);
  const TcCrossoverTable* table = table_for(prop);
  const DensePath path = dense_gemm_path(M, N, K, k, dtype == "bfloat16", prop);
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

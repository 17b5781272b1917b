#pragma once
// Dense gemm dispatch, per (M, N, K, k, GPU): the small-M tensor-core kernel (tc_gemm.cuh),
// the tile kernel (tile_gemm.cuh) or on Hopper its wgmma successor (wgmma_gemm.cuh), or
// dequantize + cuBLAS.
//
// Where tc_dispatch_table.h (generated on the device by `python -m benchmarks.tune_dispatch`)
// has a table for this GPU's chip (compute capability and SM count; its own name's first,
// tc_dispatch.cpp), the crossovers come from it: rows of measured weight sizes N*K, each with,
// per k, the largest M up to which the small-M kernel was fastest and the largest M up to which
// the tile kernel (the faster of the two tile kernels) then beat the fallback, and the M from
// which the wgmma kernel is the faster one; per k and M bucket the small-M kernel's warps per
// 16-row unit; and per k the M up to which the GEMV (scalar_gemv.cuh, either decode) beat them
// all; and per k, with bf16 activations, the M up to which the tiled range runs (measured apart: cuBLAS bf16 runs
// as fast as fp16 while the kernels' bf16 decode costs more) and the M up to which the GEMV runs (measured apart:
// the GEMV's bf16 calls cost its fp16 time, the tensor-core kernels' more). Elsewhere a heuristic from the H100
// measurements (no GEMV).
#include <cuda_runtime_api.h>

#include <cstdint>

namespace kbit {
namespace cuda {

struct TcCrossoverRow {
  int64_t weights;          // N * K of the shapes measured (the smallest crossover among them)
  int64_t shape_n, shape_k; // 0, 0: every shape of this size; else this N x K shape only (taken first)
  int16_t max_kernel_m[4];  // k = 2, 3, 4, 5: the small-M kernel for M <= this
  int16_t max_tile_m[4];    // then a tile kernel for M <= this; dequantize + cuBLAS above
  int16_t min_wgmma_m[4];   // in that range the wgmma kernel from this M on (0: never; may be the
                            // small-M kernel's last M, where wgmma beat tile: M just above it)
  // [k - 2][bucket]: the small-M kernel's warps per unit for M in bucket b (M <= kWpuBucketM[b],
  // above the previous bucket); 0: the rule (tc_dense_warps_per_unit). Above the last bucket the rule.
  int8_t small_m_wpu[4][4];
  int16_t max_gemv_m[4];    // k = 2..5: the GEMV first, for M <= this (0: never; at most kGemvMaxRows)
  int16_t max_tile_m_bf16[4];  // k = 2..5, bf16 activations: max_tile_m's (0: not measured, max_tile_m's). Timed
                               // above kTileTimedMaxM only (wgmma against dequantize + cuBLAS in bf16)
  int16_t max_gemv_m_bf16[4];  // k = 2..5, bf16 activations: max_gemv_m's (0: not measured, max_gemv_m's). Never
                               // below it: the GEMV's bf16 calls run at its fp16 time, the tensor-core kernels' bf16
                               // decode costs them more (session 72)
};

inline constexpr int kWpuBucketM[4] = {1, 4, 8, 16};
// The largest M at which benchmarks/tune_dispatch.py times the small-M and tile kernels where the wgmma
// kernel runs (its SMALL_KERNELS_MAX_M): above it a table's tiled range is wgmma's.
inline constexpr int kTileTimedMaxM = 128;

// kWgmma: the tile kernel's wgmma successor (sm_90a builds on compute-9.0 GPUs); kGemv: the
// GEMV (scalar_gemv.cuh, M <= kGemvMaxRows).
enum class DensePath { kSmallM, kTile, kDequantCublas, kWgmma, kGemv };

struct TcCrossoverTable {
  const char* device;       // the GPU it was measured on (cudaDeviceProp::name): a chip's GPUs take
                            // the table of their name, else the one with the longest name in common
  int major, minor, sms;    // the chip: compute capability and SM count (a table applies only to its chip)
  const TcCrossoverRow* rows;  // ascending weights; at least one size row (shape 0 x 0)
  int num_rows;
};

// The row that applies to an N x K weight: that shape's own row if the table has one, else the
// size row of the largest measured size <= N*K (the smallest size row below every measured
// size). nullptr when no table matches the GPU.
const TcCrossoverRow* tc_crossover_row(int64_t N, int64_t K, const cudaDeviceProp& prop);

// The measured warps per unit of the small-M kernel for this weight, k and M on this GPU, or 0
// where the table has none (no table for the GPU, M above the last bucket, or not measured).
int small_m_table_wpu(int64_t M, int64_t N, int64_t K, int k, const cudaDeviceProp& prop);

// The path for y[M, N] = x[M, K] @ W^T at k bits on this GPU, x in bf16 or not (fp16). The tile kernel only where
// the GPU grants its shared memory (tile_gemm_fits), the wgmma kernel only where it runs (wgmma_gemm_available).
DensePath dense_gemm_path(int64_t M, int64_t N, int64_t K, int k, bool bf16, const cudaDeviceProp& prop);

// Grouped gemm (E <= kTcMaxExperts): the grouped tile kernel instead of the small-M grouped
// kernel, from T rows over E experts of N rows (no sync: the offsets stay on the device).
bool grouped_tile_wins(int64_t T, int64_t E, int64_t N, int k, const cudaDeviceProp& prop);

// Grouped gemm (E <= kTcMaxExperts): the grouped GEMV before either, from T rows over E
// experts of K columns (a rule measured on the H100, used on every GPU with a table; false without).
bool grouped_gemv_wins(int64_t T, int64_t E, int64_t K, const cudaDeviceProp& prop);

// What grouped_gemm runs for T rows over E <= kTcMaxExperts experts of N x K at k bits:
// kGemv (grouped_gemv_wins), kTile (grouped_tile_wins) or kSmallM.
DensePath grouped_gemm_path(int64_t T, int64_t E, int64_t N, int64_t K, int k, const cudaDeviceProp& prop);

// Whether this GPU grants the tile kernel's shared memory for a token tile picked from
// `tokens` (M dense; the per-expert hint grouped).
bool tile_gemm_fits(int k, int64_t tokens, bool grouped, const cudaDeviceProp& prop);

}  // namespace cuda
}  // namespace kbit

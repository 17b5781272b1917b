#pragma once
// Host interface of the tensor-core GEMM over the tiled layout (tc_gemm.cuh): dense
// y[M, N] = x[M, K] @ W^T, and grouped (MoE) y[t] = x[t] @ W[e]^T for the rows t that
// expert_offsets gives expert e, in one launch with no host sync.
#include <ATen/ATen.h>

namespace kbit {
namespace cuda {

enum class GemvDecode : int;  // scalar_gemv.h

struct TcGemmArgs {
  const void* x;                  // [M, K] fp16/bf16, 16-byte aligned
  const uint32_t* packed;         // tiled [E, N/16, K/256, k, 32, 4]
  const uint8_t* absmax;          // tiled [E, N/16, K/256, 128]
  const float* row_scale;         // [E, N]
  const float* codebook;          // [2^k]
  const int32_t* expert_offsets;  // grouped: [E + 1] on the device; dense: nullptr
  void* y;                        // [M, N], same dtype as x
  float* workspace;               // dense with splits > 1: [splits, M, N16] fp32; wgmma stream-K: its slots
  int64_t M, N, K;
  int64_t experts;                // 1 when dense
  int splits;                     // CTAs sharing one 16-row tile along K (dense only; wgmma: the cluster's CTAs,
                                  // of which whole clusters share none: wgmma_whole_clusters)
  int warps_per_unit;             // 8, 4, 2 or 1: tc_warps_per_unit(K)
  int64_t tokens_per_unit;        // picks the token tile: M (dense), tc_grouped_tokens_hint (grouped)
  GemvDecode gemv_decode;         // scalar GEMV only: kAuto (zero) = gemv_auto_decode, or the one asked for
  // Set by the launcher (so the kernel divides nothing before its first loads): a warp takes
  // groups_per_warp (+1 if its first group < groups_extra) groups of each unit; a dense CTA
  // takes rounds_per_cta (+1 if blockIdx.x < rounds_extra) rounds.
  uint32_t groups_per_warp, groups_extra, rounds_per_cta, rounds_extra;
  // The GEMV's cluster split (scalar_gemv_split.cuh; set by the launcher, so the kernel divides nothing
  // 64-bit): cluster c takes split_tiles (+1 if c < split_tiles_extra) tiles of split_steps steps each.
  uint32_t split_tiles, split_tiles_extra, split_steps;
  // Launched with PDL (dependent_launch.h): bytes of its first tile's codes the kernel asks L2
  // for before it waits on the previous kernel (0: none; set by the launcher).
  uint32_t l2_prefetch_bytes;
  // Grouped GEMV, mma decode (set by the launcher): each warp builds the schedule itself
  // (WarpSchedule, tc_work.cuh; E <= 32), with static first chunks (T >= E); or, one row per chunk,
  // the CTA's schedule is the expert of each row (RowSchedule; T <= E).
  bool warp_schedule, static_first_chunks, row_schedule;
  // Grouped GEMV, mma decode, one warp per unit (set by the launcher, gemv_grouped_x_shared): a round's units
  // (a run of shared_x_run per slot) are one chunk of one expert, whose x the CTA copies once into a double-buffered
  // x image (scalar_gemv.cuh); the rings carry codes only (ring_stages of them). Informational: the launch takes the
  // kSharedX kernel for it, which reads no flag. shared_x_run (that kernel only): the adjacent units (tiles) each warp
  // runs back to back in a round, 1, 2 or 4 (GemvLaunchPlan::x_shared_run).
  bool grouped_x_shared;
  int shared_x_run;
  // Dense GEMV (set by the launcher): x's token chunks (gemv_token_chunks; 1 up to 16 rows), and
  // with x resident the stages of each warp's copy ring (2 .. kGemvResidentMaxStages).
  int token_chunks;
  int ring_stages;
  // wgmma kernel: the CTA's shape (wgmma_plan, wgmma_gemm.h: tokens per CTA, 16-row tiles per CTA), chosen
  // once per call on the host so the split model, x's tensor map and the launch agree; and whether the first
  // stage's weights are requested alone, the other stages' once it landed (wgmma_plan).
  int wgmma_tokens, wgmma_row_tiles;
  bool wgmma_first_stage_alone;
  // wgmma kernel with splits > 1 (wgmma_plan): the first wgmma_whole_clusters clusters run `splits` whole units
  // each (one CTA a unit, all of K), the clusters after them one unit each, split along K (wgmma_gemm.cuh).
  int wgmma_whole_clusters;
  // wgmma kernel (wgmma_plan): the clusters of work (each `splits` CTAs: whole units, then split ones), and the
  // clusters launched, each running work clusters blockIdx.x, + gridDim.x, ... (fewer than the work: persistent).
  int64_t wgmma_work_clusters, wgmma_grid_clusters;
  // wgmma kernel, the stream-K schedule (WgmmaPlan::stream): wgmma_work_clusters = the units, wgmma_grid_clusters
  // the CTAs (splits 1), workspace: wgmma_stream_workspace_floats, wgmma_stream_counters: a zero a unit (each unit's
  // last piece sets its counter back to zero).
  bool wgmma_stream;
  uint32_t* wgmma_stream_counters;
  // Grouped GEMV only (kbit::grouped_gemm_silu_and_mul, kbit.Experts' gate/up call): W's rows are a gate/up weight
  // interleaved in 8s (each 16-row tile: rows 0-7 the gate rows of 8 outputs, rows 8-15 their up rows; N % 16 == 0),
  // and y is [M, N / 2]: silu(gate) * up (silu_mul), each of gate and up first rounded to y's dtype as the GEMM's
  // output would be, so the same bits as the GEMM followed by kbit::silu_and_mul. Other kernels ignore it. (Last: the
  // other fields' offsets, and with them the other kernels' code, as before it.)
  bool gated_silu;
  // Grouped GEMV by slot (kbit::grouped_gemm_slots, kbit.Experts' decode; set by grouped_gemv_slots, gemm_cuda.cpp)
  // where slot_x_div > 0 (0 elsewhere): the `experts` groups are slots, M of them, slot s one row: y row s = x row
  // s / slot_x_div @ W[ids[s]]^T over slot_stacked_experts stacked weights, with expert_offsets pointing to the ids
  // instead (int64, or int32 where slot_ids_32; an id outside [0, slot_stacked_experts) makes row s NaN). Only the
  // 1-token-slot kernel with the per-warp schedule and static first chunks reads them (WarpSchedule::load_slots,
  // tc_work.cuh). (In the padding after gated_silu and up to 240 bytes: a larger struct moved the wgmma kernels'
  // tensor-map parameter, which sits 128-byte aligned after it, and with it their SASS.)
  bool slot_ids_32;
  int32_t slot_x_div;
  int32_t slot_stacked_experts;
};

// Grouped: the token tile is chosen on the host without reading the offsets, from twice
// the mean rows per expert (capped by T). An expert with more rows than the tile takes
// several chunks (correct, slower); a tile sized by T alone made 64 experts x 1 token run
// 64-token tiles (measured 2.4x slower than with 8).
inline int64_t tc_grouped_tokens_hint(int64_t T, int64_t E) {
  const int64_t mean = (T + E - 1) / (E > 0 ? E : 1);
  return 2 * mean < T ? 2 * mean : T;
}

// Warps of a CTA that share one unit along K: 8, or the largest power of two <= the
// 256-column groups of K (small K: the CTA's warps take several units side by side).
inline int tc_warps_per_unit(int64_t K) {
  const int64_t groups = (K + 255) / 256;
  return groups >= 8 ? 8 : groups >= 4 ? 4 : groups >= 2 ? 2 : 1;
}

// Grouped gemm uses the kernel for any tokens per expert (chunks of up to 64 rows; an
// expert with more re-reads its tiles per chunk). Dense gemm: tc_dispatch.h.

// Bytes of the pair table (pair_table.cuh) the mma decodes keep in shared memory: 2^(2k) entries of 32 per-lane
// words for k <= 4; k = 5 the split table (256 entries of 16 lane copies of 8 bytes, 32 KB), or one copy of the 1024
// pair-table words (4 KB: one_copy, in the small-M kernel and the wgmma kernel's CTAs of 96+ tokens).
constexpr int pair_table_bytes(int k, bool one_copy = false) {
  return k <= 4 ? (1 << (2 * k)) * 128 : one_copy ? (1 << (2 * k)) * 4 : 256 * 128;
}

// Grouped: the kernel keeps its schedule (two int64 per expert) in shared memory.
constexpr int kTcMaxExperts = 1024;

// Token tiles of 8: 1, 2, 4 or 8 (M <= 8, 16, 32, more).
inline int tc_token_tiles(int64_t M) { return M <= 8 ? 1 : M <= 16 ? 2 : M <= 32 ? 4 : 8; }

// Splits along K so that small-N shapes still fill the GPU (dense).
// (M: the token tile and chunk count; wpu: warps per unit.)
int tc_gemm_splits(int64_t N, int64_t K, int64_t M, int wpu, int sm_count);

template <typename T, int K>
void launch_tc_gemm(const TcGemmArgs& args, cudaStream_t stream);

}  // namespace cuda
}  // namespace kbit

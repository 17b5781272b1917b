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
// device `device`, for activations of `dtype` ("float16" or "bfloat16").
std::pair<std::string, std::string> gemm_dispatch(int64_t M, int64_t N, int64_t K, int k, int device,
                                                  const std::string& dtype);

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

// The dense GEMV's tuning aids (A/B runs; the launcher reads them through scalar_gemv.h): the
// token-slot floor of mma launches (1, 2, 3, 4, 8 or 16; 1 = the rule) and the spread of small
// grids over the SMs (on by default); the grouped GEMV's schedule form (0, 1, 2 or 3,
// gemv_grouped_schedule in scalar_gemv.h; 2 by default). Each returns the previous value.
int set_gemv_min_token_slots(int64_t slots);
bool set_gemv_spread(bool on);
int set_gemv_grouped_schedule(int64_t form);
// The most unit slots of a grouped GEMV CTA (1..8; 8 = the rule, scalar_gemv_launch.cuh); returns the previous.
int set_gemv_max_unit_slots(int64_t slots);
// The warps per unit of mma-decode GEMV launches (0 = the rule, else 1..8); returns the previous.
int set_gemv_unit_warps(int64_t warps);
// gemv_decode_path_rule (scalar_gemv.h): 1 session 66's rule (default), 0 session 37's; returns the previous value.
int set_gemv_decode_path_rule(int64_t rule);
// The rows per chunk of grouped GEMV launches (0 = the rule, gemv_grouped_chunk_rows); returns the previous.
int set_gemv_grouped_chunk_rows(int64_t rows);
// Whether dense mma-decode GEMV launches keep x resident (0 never, 1 the rule, 2 where it fits;
// gemv_x_resident in scalar_gemv.h); returns the previous mode.
int set_gemv_x_resident(int64_t mode);
// Whether grouped GEMV launches share x within a CTA (0 never, 1 where it applies, 2 there in CTAs of at most 8
// warps; gemv_grouped_x_shared in scalar_gemv.h); returns the previous mode.
int set_gemv_grouped_x_shared(int64_t mode);
// gemv_shared_x_run (scalar_gemv.h): 0 the rule, 1, 2 or 4; returns the previous value.
int set_gemv_shared_x_run(int64_t run);
// The ring stages of x-resident and grouped x-shared GEMV launches (0 the rule, else 2..4); returns the previous value.
int set_gemv_resident_stages(int64_t stages);
// The dense GEMV's cluster split (scalar_gemv_split.cuh): -1 the rule, 0 never, 2 / 4 / 8 that cluster size
// wherever the split applies; returns the previous value.
int set_gemv_split_cluster(int64_t cluster);
// The dense x-staged GEMV's CTA layout (GemvStagedLayout, scalar_gemv.h): -1 the rule, 0 one unit per CTA, 1 unit
// slots, 2 unit slots with the wide pair table; and the unit-slot layout's ring stages (0 the rule, else 2..4).
// Each returns the previous value.
int set_gemv_staged_layout(int64_t layout);
int set_gemv_staged_stages(int64_t stages);

// The wgmma kernel's K-splits (0 = the rule, else 1..8, at most K's 256-column groups); returns the previous.
int set_wgmma_splits(int64_t splits);
// The wgmma kernel's split tail (WgmmaPlan::whole_clusters): -1 = the rule (the split model with the tail), 0 = none
// (the split model of every unit split, as before session 43), else that many clusters of whole units (clamped to the
// units; with the rule's or the forced splits); returns the previous value.
int set_wgmma_whole_clusters(int64_t clusters);
// The wgmma kernel's clusters launched (WgmmaPlan::grid_clusters; persistent where fewer than the work): 0 = the
// rule, -1 = one per cluster of work, else that many (clamped to the work and to at least its split units); returns
// the previous value.
int64_t set_wgmma_grid_clusters(int64_t clusters);
// The wgmma kernel's CTA shape from M = 33 (0 = the rule, wgmma_plan; 8 = two warpgroups, 64 tokens to M = 64,
// the rule's 80-160 above; 16 = four warpgroups, chunks of 64 tokens); returns the previous value.
int set_wgmma_row_tiles(int64_t row_tiles);
// The wgmma kernel's token chunk at any M (0 = the rule; 16 or 32 = four warpgroups on 256 rows; 64 = the
// row tiles of set_wgmma_row_tiles, else the M = 33..64 rule's; 80, 96, 112, 128, 144 or 160 = two warpgroups on
// 128 rows); returns the previous value.
int set_wgmma_tokens(int64_t tokens);
// The rule's wide chunks above M = 128 (0 = the rule: balanced to 144 or 160 tokens; 160 = always 160, session 52's
// rule; 128 = none, session 51's); returns the previous value.
int set_wgmma_max_tokens(int64_t tokens);
// Whether wgmma launches request the first stage's copies alone (0 = the rule: always; 1 never; 2 always);
// returns the previous mode.
int set_wgmma_first_stage_alone(int64_t mode);
// The wgmma kernel's stream-K schedule (WgmmaPlan::stream): 0 = the rule, 1 = never, 2 = always (where the plan's
// shape is a persistent one); returns the previous mode.
int set_wgmma_stream(int64_t mode);

// What wgmma_gemm would launch for x [M, K] @ W[N, K]^T at k bits on CUDA device `device`, without launching
// (WgmmaPlan, wgmma_gemm.h): tokens and 16-row tiles per CTA, K-splits, the CTAs of work (ctas) and launched
// (grid_ctas), the first stage's copies requested alone, the clusters of splits CTAs the GPU runs at once (one CTA a
// cluster without splits: the SMs), the output tiles (units) and those run whole (one CTA over all of K; every unit
// without splits). Needs the wgmma kernel (wgmma_gemm_runs).
struct WgmmaLaunchQuery {
  int64_t tokens, row_tiles, splits, ctas, grid_ctas;  // CTAs of work, CTAs launched (fewer: persistent)
  bool first_stage_alone;
  int64_t resident_clusters;
  int64_t units, whole_units;
  bool stream;  // the stream-K schedule (splits 1, ctas = grid_ctas, whole_units 0)
};
WgmmaLaunchQuery wgmma_launch_plan(int64_t M, int64_t N, int64_t K, int k, int device);

// What gemv_gemm would launch for x [M, K] (fp16) @ W[N, K]^T at k bits with `decode` ('auto',
// 'mma', 'shuffle') on CUDA device `device`, without launching (GemvLaunchPlan, scalar_gemv.h).
struct GemvLaunchQuery {
  int64_t token_slots, token_chunks;
  std::string decode;
  bool x_resident;
  int64_t ring_stages, warps, warps_per_unit, smem_bytes, launch_smem_bytes, ctas_per_sm, grid;
  int64_t split_cluster;  // dense: the cluster split's CTAs per cluster (scalar_gemv_split.cuh), 0 without
  // Grouped (grouped_gemv_launch_plan): the rows per chunk asked for (gemv_grouped_chunk_rows) and the
  // schedule's form: "per_warp_static" (WarpSchedule with static first chunks), "per_warp",
  // "per_cta_rows" (RowSchedule) or "per_cta_scans" (build_grouped_schedule); dense: 0 and "".
  int64_t chunk_rows;
  std::string schedule;
  int64_t staged_layout;  // dense x staged: GemvStagedLayout (0 one unit per CTA, 1 unit slots, 2 wide table)
  bool x_shared;          // grouped: the CTA's x image shared by its warps (TcGemmArgs::grouped_x_shared)
  int64_t x_shared_run;   // x shared: the adjacent units each warp runs a round (TcGemmArgs::shared_x_run); else 1
};
GemvLaunchQuery gemv_launch_plan(int64_t M, int64_t N, int64_t K, int k, const std::string& decode, int device);
// What grouped_gemv_gemm would launch for T rows over E experts of W[E, N, K] (fp16), likewise.
GemvLaunchQuery grouped_gemv_launch_plan(int64_t T, int64_t E, int64_t N, int64_t K, int k, const std::string& decode,
                                         int device);

}  // namespace cuda
}  // namespace kbit

#pragma once
// Host interface of the GEMV (scalar_gemv.cuh): dense y[M, N] = x[M, K] @ W^T for
// M = 1..kGemvMaxRows (token chunks of kGemvMaxTokens past that many), and grouped (MoE) y[t] = x[t] @ W[e]^T in chunks of up to
// kGemvMaxTokens rows per expert, straight from the tiled layout in one persistent launch: the
// decode path. Two decodes (GemvDecode): the scalar form (codebook shuffles, FFMA; M <= 4) and the
// pair table with mma.m16n8k16 (the default where it measured faster; M <= kGemvMaxRows = 128).
// Arguments: TcGemmArgs (x, packed, absmax, row_scale, codebook, y, M, N, K, gemv_decode;
// grouped: expert_offsets, experts, tokens_per_unit = the rows per chunk asked for, 1..kGemvMaxTokens,
// which the kernel rounds up to its token slots, gemv_token_slots). Launch: scalar_gemv_launch.cuh.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "tc_gemm.h"

namespace kbit {
namespace cuda {

// Rows of x per unit: the mma decode takes M = 1..16 (the tokens are the mma's n side: one or two
// n = 8 tiles), the shuffle decode M = 1..4 (one accumulator pair per token and lane).
constexpr int kGemvMaxTokens = 16;
constexpr int kGemvShuffleMaxTokens = 4;
// The grouped kernels of up to this many token slots have the gated epilogue (TcGemmArgs::gated_silu; the dense ones:
// below, and scalar_gemv_launch.cuh gemv_plan_fuses_silu).
constexpr int kGemvGatedMaxTokens = 2;
// Dense (gemm_silu_and_mul, session 65): one token slot. At two, the gated x-resident kernel spilled 16 bytes at k = 4
// and ran Llama-3 8B gate/up at M = 2 4% slower than the GEMM then silu_and_mul (26.2 against 25.2 us), and the
// x-staged one ran Llama-3 70B's (57344 x 8192) 9% slower (84.9 against 78.1; not understood), though it saved 0.8 us
// on Qwen3's 10240 x 2048 (docs/design.md, "Session 65").
constexpr int kGemvDenseGatedMaxTokens = 1;
// A grouped launch by slot (TcGemmArgs::slot_x_div) takes up to this many slots: the per-warp schedule's experts
// (kWarpScheduleMaxExperts, tc_work.cuh), a lane each.
constexpr int kGemvMaxSlots = 32;

// Dense calls of more rows (mma decode) split x into token chunks of kGemvMaxTokens rows, up to
// kGemvMaxChunks: a unit is (tile, chunk), unit u = tile * chunks + chunk, and a CTA keeps one chunk
// (the launcher makes the grid a multiple of the chunks), so its x image holds only that chunk.
// CTAs b, b + 1, ... of one tile run side by side: the tile's codes come from DRAM once and are
// read again from L2; each chunk decodes them again.
constexpr int kGemvMaxChunks = 8;
constexpr int kGemvMaxRows = kGemvMaxTokens * kGemvMaxChunks;  // dense M through the GEMV
inline int gemv_token_chunks(int64_t M) {
  return M <= kGemvMaxTokens ? 1 : static_cast<int>((M + kGemvMaxTokens - 1) / kGemvMaxTokens);
}

// The kernel's compiled token counts (template kTokens, the x slots a stage holds): 1..4 as they
// are, 5..8 -> 8, 9..16 -> 16 (the mma costs the same for any count up to 8 per n tile; the x
// slots of rows past M are never copied).
inline int gemv_token_slots(int64_t rows) {
  if (rows <= 4) return rows < 1 ? 1 : static_cast<int>(rows);
  return rows <= 8 ? 8 : 16;
}

// Tuning aids, set from Python (dispatch_query.h; A/B runs): the fewest token slots dense launches
// of the mma decode take (1, the default: gemv_token_slots alone; else 2, 3, 4, 8 or 16), and
// whether dense launches pad their shared memory to spread a small grid over the SMs
// (spread_over_sms, kernel_residency.h; on by default).
int gemv_min_token_slots();
bool gemv_spread();
// And the schedule of grouped mma-decode launches (tc_work.cuh): 0 per CTA in shared memory (the
// scans of build_grouped_schedule), 1 per warp in registers (WarpSchedule, where it fits: E <= 32),
// 2 (the default) per warp with static first chunks where T >= E, and where the per-warp one does
// not fit, per CTA with one row per chunk (RowSchedule: 1 token slot, T <= E), 3 that row form
// wherever it applies (E <= 32 too). Forms fall back to the scans where theirs does not apply.
int gemv_grouped_schedule();
// And the most unit slots a grouped mma-decode or dense x-resident CTA takes (scalar_gemv.cuh; 1 =
// one unit at a time; kGemvMmaMaxWarps, the default, = the rule).
int gemv_max_unit_slots();
// And the warps per unit of mma-decode launches (0, the default: the rule, gemv_mma_warps and the
// grouped halving, at one token slot then 8 -> 4 where the units fill 2/3 of the slots at 4 (8 groups), or 1 or 2 by the
// critical path; dense decode at 1-4 rows, gemv_decode_path_rule's; else that many, at most the 256-column groups, and
// gemv_decode_path_rule's choice then not made; grouped, with unit slots making up to kGemvMmaMaxWarps warps).
int gemv_unit_warps();
// And how the dense decode rule at 1-4 rows picks x resident and its warps per unit (scalar_gemv_launch.cuh): 1 (the
// default) by the critical path in items over the warps per unit (2, 4 and 8 at k = 4; 2 and the base elsewhere) and
// x staged (session 66); 0 session 37's (the warps that give each warp 4 of a unit's groups; one row: x resident at
// k = 4 from three staged rounds).
int gemv_decode_path_rule();
// And the rows per chunk of grouped GEMV launches (0, the default: gemv_grouped_chunk_rows' rule;
// else that many, at most the decode's most).
int gemv_grouped_chunk_rows_forced();
// And whether dense mma-decode launches keep x resident (scalar_gemv.cuh: each warp copies its
// groups of x once; the rings carry codes only): 0 never, 1 (the default) the rule, from
// kGemvXResidentMinTokens token slots where the x image fits, at 2-4 rows where the x-staged grid takes the
// tiles in two or more rounds, or 1.5 where K has 16 or more groups, and at one row, k = 4, from three rounds where
// its critical path is at least 10% shorter than x staged's (gemv_decode_path_rule; scalar_gemv_launch.cuh), 2 at any
// token slots where it fits.
int gemv_x_resident();
constexpr int kGemvXResidentMinTokens = 8;
// And whether grouped mma-decode launches of kGemvSharedXMinTokens .. 8 token slots with one warp per unit share
// x (scalar_gemv.cuh: a CTA's warps take one chunk's tiles a round, its x copied once per CTA into a
// double-buffered x image; the rings carry codes only): 0 never (nor the step from 2 warps per unit, at k = 4, 5
// also 3, to 1 that sharing takes), 1 (the default) wherever it applies, in CTAs of 8 or 16 warps
// (scalar_gemv_launch.cuh; at 4-7 token slots on K of 2 or 3 groups only in runs of 2 or 4 units), 2 there in CTAs
// of 8, 3 where it applies and at 4-7 token slots on K of 2 or 3 groups with one unit a run too.
int gemv_grouped_x_shared();
constexpr int kGemvSharedXMinTokens = 4;
// And the adjacent units each warp of an x-shared launch runs a round (TcGemmArgs::shared_x_run): 0 (the default) the
// rule (scalar_gemv_launch.cuh), 1 one (at 4-7 token slots on K of 2 or 3 groups x then not shared, but for the
// x-shared aid's mode 3), 2 or 4 that many wherever the tiles are a multiple of it x the CTA's slots.
int gemv_shared_x_run();
// And the ring stages of x-resident and grouped x-shared launches (0, the default: the rules; else 2 .. 4, x shared
// at most K's 256-column groups).
int gemv_resident_stages();
// And the dense cluster split (scalar_gemv_split.cuh; M <= 4, mma decode, x staged, sm_90+): -1 (the default)
// the rule (choose_gemv_split: k = 5, two or more rounds of tiles, clusters of 2); 0 never; 2, 4 or 8: that
// many CTAs per cluster wherever it applies.
int gemv_split_cluster();
// The CTA layout of dense x-staged mma-decode launches of 1..kGemvShuffleMaxTokens token slots (scalar_gemv.cuh):
//   kSingle: one unit at a time per CTA (gemv_mma_warps' 4 or 8 warps), kGemvStages ring stages;
//   kSlots:  unit slots of that many warps making up kGemvMmaMaxWarps warps, sharing one pair table (two
//            slots of 4 warps: 16 warps per SM at M = 2-4, where kSingle's rings fit three 4-warp CTAs), and
//            2 .. kGemvResidentMaxStages ring stages (TcGemmArgs::ring_stages);
//   kWide:   kSlots with the wide pair table (k = 4: a lookup's address one PRMT), the rings in its gaps, 2 stages.
enum class GemvStagedLayout : int { kSingle = 0, kSlots = 1, kWide = 2 };
// Tuning aids: the layout (-1, the default: the rule, kSingle everywhere (the slot layouts won nowhere, session
// 28); 0, 1, 2: that layout wherever it applies, kWide at k = 4 only) and kSlots' ring stages (0, the default:
// kGemvStages; else 2 .. 4, fewer where the shared memory cannot hold them).
int gemv_staged_layout();
int gemv_staged_stages();

// Warps of a CTA (one 16-row tile at a time), shuffle decode: one per 256-column group of K, at most
// kGemvMaxWarps (a small-N weight has few tiles whatever K is, so long rows get more warps:
// Qwen3 down, K = 5120, N = 2048, is 128 tiles). The launcher takes fewer where the GPU's shared
// memory per block cannot hold that many warps' copy rings.
constexpr int kGemvMaxWarps = 16;
constexpr int kGemvMmaMaxWarps = 8;  // the mma decode: its CTA also holds a 32 KB pair table (k = 4 and 5)
inline int gemv_warps(int64_t K) {
  const int64_t groups = (K + 255) / 256;
  return static_cast<int>(groups >= kGemvMaxWarps ? kGemvMaxWarps : groups < 1 ? 1 : groups);
}

// Stages of a warp's copy ring (scalar_gemv.cuh): the item being decoded and stages - 1 in flight.
// Staged x: 2 (a 16-token stage is 10.4 KB; the kSlots layout, a tuning aid, 2 to 4); x resident (codes only,
// 2.2 KB at k = 4): 2 to 4, the most that keep the launch's CTAs per SM (scalar_gemv_launch.cuh). x resident CTAs
// take up to 16 warps (one CTA per SM sharing one table and one x image).
constexpr int kGemvStages = 2;
constexpr int kGemvResidentMaxStages = 4;
constexpr int kGemvResidentMaxWarps = 16;
constexpr int kGemvResidentMaxSlots = 4;  // (named barriers 1 + slot: one per slot; up to 8 slots grouped / kSlots)
static_assert(kGemvResidentMaxSlots < 16 && kGemvMmaMaxWarps < 16, "a slot's named barrier 1 + slot must be < 16");

// How the GEMV turns codes into products (scalar_gemv.cuh):
//   kShuffle: the codebook in lane registers, one shuffle and one FFMA per weight and token;
//   kMma:     a pair table in shared memory (pair_table.cuh; k = 5: its split table), one lookup per two
//             weights, and mma.m16n8k16 with the tokens as its n = 8 operand (the products cost no FFMAs);
//   kAuto:    the host picks (gemv_auto_decode).
enum class GemvDecode : int { kAuto = 0, kShuffle = 1, kMma = 2 };

// The grouped kernels that can share x (4-8 token slots, mma decode): CTAs of up to kGemvSharedXMaxWarps one-warp
// unit slots (x shared: 8 or 16; the launcher's), 128 registers a thread as the other mma-decode kernels.
constexpr int kGemvSharedXMaxWarps = 16;
constexpr bool gemv_can_share_x(bool grouped, GemvDecode decode, int tokens) {
  return grouped && decode == GemvDecode::kMma && tokens >= kGemvSharedXMinTokens && tokens < 16;
}

// Measured on the H100: the mma decode wins every dense shape and k at M = 1..4 (docs/design.md,
// "Session 11"), and since the grouped launches' unit slots and per-warp schedule (session 14) every
// grouped count measured too (Qwen3 MoE down, K = 512: 256 x 1 token 69.5 us vs 93.4 for the
// shuffle decode, 64 x 4 22.9 vs 42.4, 16 x 1 6.9 vs 9.1; before, a K = 512 CTA's two warps paid
// for the pair table alone and the shuffle decode won from 16 experts). The shuffle decode runs
// when asked for (decode='shuffle', M <= 4).
inline GemvDecode gemv_auto_decode() { return GemvDecode::kMma; }

// The decode a call takes: the one asked for, or under kAuto gemv_auto_decode; and its name.
inline GemvDecode resolve_gemv_decode(GemvDecode asked) {
  return asked != GemvDecode::kAuto ? asked : gemv_auto_decode();
}
inline const char* gemv_decode_name(GemvDecode resolved) {
  return resolved == GemvDecode::kShuffle ? "shuffle" : "mma";
}

// Grouped: rows per chunk for T rows over E experts, the mean rows per expert rounded up (at most
// kGemvMaxTokens; the shuffle decode kGemvShuffleMaxTokens); the kernel then chunks by its token
// slots, that rounded up to 1-4, 8 or 16 (gemv_token_slots). The GEMV's work per weight grows with
// every row of the chunk, used or not (twice the mean, the tensor-core kernels' hint, made 1 token
// per expert cost 2 rows of FFMAs: 64 x 1 Qwen3 MoE gate/up 32.2 us vs 19.7 for the same bytes
// dense, session 10); an expert with more rows takes several chunks and re-reads its weights.
inline int64_t gemv_grouped_chunk_rows(int64_t T, int64_t E, GemvDecode asked) {
  const int64_t most = resolve_gemv_decode(asked) == GemvDecode::kShuffle ? kGemvShuffleMaxTokens : kGemvMaxTokens;
  if (const int forced = gemv_grouped_chunk_rows_forced(); forced > 0) return std::min<int64_t>(forced, most);
  return std::min<int64_t>((T + E - 1) / E, most);
}

// "auto" / "shuffle" / "mma" (the ops' decode argument), or a clear error naming the op.
GemvDecode parse_gemv_decode(const std::string& decode, const char* op);

// Warps per CTA of the mma decode with x staged (<= kGemvMmaMaxWarps, <= the 256-column groups; x
// resident may take up to kGemvResidentMaxWarps, scalar_gemv_launch.cuh): 4 where the
// weight has more 16-row tiles than the GPU has SMs (more CTAs resident per SM: Qwen3 Q, gate/up
// and Llama-3 8B gate/up 6-15% faster at M = 1 than with 8), else 8 (fewer tiles get more warps
// each: KV, O, down 4-8% faster than with 4). Grouped launches start from 8 and the launcher halves
// the warps per unit (unit slots) while the units still fill the GPU (scalar_gemv_launch.cuh). With
// 8 or 16 token slots the launcher may take the other of 4 and 8.
inline int gemv_mma_warps(int64_t K, int64_t tiles, bool grouped, int sm_count) {
  const int most = !grouped && tiles > sm_count ? 4 : kGemvMmaMaxWarps;
  const int groups = gemv_warps(K);
  return groups < most ? groups : most;
}

// What a launch takes (plan_scalar_gemv, scalar_gemv_launch.cuh): the kernel (token slots, decode,
// x resident or staged), warps per CTA and per unit (warps / warps_per_unit unit slots), the grouped schedule's form
// (TcGemmArgs::warp_schedule, static_first_chunks), the dynamic shared memory it needs and the bytes
// it is launched with (more where a small dense grid is spread over the SMs), the CTAs that then fit
// per SM, and the grid.
struct GemvLaunchPlan {
  int token_slots;
  GemvDecode decode;
  int warps, warps_per_unit;
  int token_chunks;
  bool x_resident;
  int ring_stages;
  bool warp_schedule, static_first_chunks, row_schedule;
  int smem_bytes, launch_smem_bytes;
  int ctas_per_sm;
  int64_t grid;
  int split_cluster;  // dense: CTAs per cluster of the cluster split (scalar_gemv_split.cuh; grid = clusters x it), 0 without
  GemvStagedLayout staged_layout;  // dense x staged: the CTA layout (kSingle elsewhere)
  bool x_shared;  // grouped: x shared by the CTA's warps (TcGemmArgs::grouped_x_shared)
  int x_shared_run;  // x shared: the adjacent units each warp runs a round (TcGemmArgs::shared_x_run); else 1
};

template <typename T, int K>
void launch_scalar_gemv(const TcGemmArgs& args, cudaStream_t stream);
template <typename T, int K>
GemvLaunchPlan plan_scalar_gemv(const TcGemmArgs& args);
template <typename T, int K>
bool gemv_takes_slots(const TcGemmArgs& args);
template <typename T, int K>
bool gemv_fuses_silu(const TcGemmArgs& args);

}  // namespace cuda
}  // namespace kbit

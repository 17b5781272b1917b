// The `gemm` and `grouped_gemm` ops on CUDA.
//   gemm:         the GEMV, the small-M tensor-core kernel, a tile kernel or dequantize +
//                 cuBLAS, by measured crossovers (dense_gemm_path, tc_dispatch.h).
//   grouped_gemm: the grouped GEMV, small-M or tile kernel (grouped_gemm_path, tc_dispatch.h;
//                 one launch, expert_offsets read on the device, CUDA-graph capturable) for
//                 E <= kTcMaxExperts; above that the host-synchronizing per-expert
//                 dequantize + cuBLAS loop.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <tuple>

#include "../../common/checks.h"
#include "../../common/moe_aten.h"
#include "../../common/moe_slots.h"
#include "../common/remembered_plans.h"
#include "dispatch_query.h"
#include "gemm_paths.h"
#include "scalar_gemv.h"
#include "tc_dispatch.h"
#include "tc_gemm.h"
#include "tile_gemm.h"
#include "wgmma_gemm.h"

namespace kbit {
namespace cuda {

// Tuning aids, read once per process, for sweeps that measure the launch rules; unset in normal
// use (they change the summation order, so results differ in the last bits; a warning says one
// is on). 0 or unset: the rule. A value that is not an integer in 0..hi is rejected.
static int tuning_override(const char* name, long hi, const char* what) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  TORCH_CHECK(*end == '\0' && n >= 0 && n <= hi, "kbit: ", name, " must be an integer in 0..", hi,
              " (0: the rule), got '", v, "'");
  if (n > 0) TORCH_WARN("kbit: ", name, "=", n, " forces ", what, " (a tuning aid)");
  return static_cast<int>(n);
}
// KBIT_TUNE_CTA_SPLITS=n: the tile and wgmma kernels' K-splits (clamped to 1..min(groups, 32), the
// wgmma kernel's to 1..min(groups, kWgMaxSplits)).
static int forced_cta_splits() {
  static const int forced = tuning_override("KBIT_TUNE_CTA_SPLITS", 1024, "the tile and wgmma kernels' K-splits");
  return forced;
}
// KBIT_TUNE_WARPS_PER_UNIT=w: the dense small-M kernel's warps per 16-row unit (1, 2, 4 or 8; at
// most tc_warps_per_unit(K)); its K-splits then follow tc_gemm_splits as usual.
static int forced_warps_per_unit() {
  static const int forced = [] {
    const int w = tuning_override("KBIT_TUNE_WARPS_PER_UNIT", 8, "the small-M kernel's warps per unit");
    TORCH_CHECK(w == 0 || w == 1 || w == 2 || w == 4 || w == 8, "kbit: KBIT_TUNE_WARPS_PER_UNIT must be 1, 2, 4 or 8");
    return w;
  }();
  return forced;
}

int tc_gemm_splits(int64_t N, int64_t K, int64_t M, int wpu, int sm_count) {
  const int64_t row_tiles = (N + 15) / 16, groups = (K + 255) / 256;
  const int64_t tokens = 8 * int64_t(tc_token_tiles(M)), chunks = (M + tokens - 1) / tokens;
  const int64_t rounds = (chunks * row_tiles * wpu + 7) / 8;                  // CTA rounds without splits
  const int64_t want = (2 * int64_t(sm_count) + rounds - 1) / rounds;         // ~2 CTAs per SM
  const int64_t most = std::max<int64_t>(1, groups / wpu);                    // >= 1 group per warp
  return static_cast<int>(std::clamp<int64_t>(want, 1, most));
}

// Dense: warps per unit. The measured table's choice where it has one (small_m_table_wpu: per
// weight size, k and M up to 16). Else the rule: two for M > 8 on N >= 4096 (the CTA's 8 warps
// then walk 4 row tiles of the same tokens through the same K groups, reading the same x
// fragments close together: H100, k = 2 / 4, Llama-3 8B gate/up M = 32: 63 / 76 -> 46 / 49 us,
// 70B M = 64: 460 / 468 -> 266 / 395 us, Qwen3 gate/up M = 48: 48 -> 36 us; on N <= 2048 it
// lost, docs/design.md); else tc_warps_per_unit(K).
int tc_dense_warps_per_unit(int64_t M, int64_t N, int64_t K, int k, const cudaDeviceProp& prop) {
  const int dflt = tc_warps_per_unit(K);
  if (const int forced = forced_warps_per_unit(); forced > 0) return std::min(forced, dflt);
  if (const int measured = small_m_table_wpu(M, N, K, k, prop); measured > 0) return std::min(measured, dflt);
  return M > 8 && N >= 4096 ? std::min(2, dflt) : dflt;
}

// Tile and wgmma kernels (16 row_tiles rows x `tokens` per CTA, one CTA per SM): the time goes as CTA
// waves x (the bytes a CTA reads -- its weights and x over its share of K -- plus a fixed cost
// per CTA: table build, pipeline fill and drain, worth kCtaFixedBytes); each extra split adds an
// fp32 partial of y to write and read back (the tile kernel's workspace; the wgmma kernel's
// partials stay in its cluster's shared memory since session 18, so the term over-charges its
// splits: kept, as run 3's forced-split sweep found no shape where more splits won). The split
// count with the least of that.
// kCtaFixedBytes from forced-split sweeps on the H100 (k = 4, session 6): without it the model
// split 70B gate/up at M <= 15 seven ways (6 waves of short CTAs: 80 us at M = 8 vs 64 us
// unsplit) and 8B gate/up at M <= 9 seven ways (31 vs 23 us at 2 splits); with it both pick the
// measured best, and the one-wave splits of Qwen3-size weights (5-16) stay as they were.
// (A fit on one GPU at k = 4, applied to every k and GPU: re-check it where the table is re-tuned.)
constexpr double kCtaFixedBytes = 80e3;
namespace {
// f(std::integral_constant<int, k>) for k = 2..5 (checked by the callers).
template <typename F>
auto with_k(int k, F&& f) {
  switch (k) {
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    default: return f(std::integral_constant<int, 5>{});
  }
}
}  // namespace

// concurrent(s): the CTAs with s splits that run at once (one per SM; the wgmma kernel's splits
// are clusters, which a GPC holds fewer of), 0 where s cannot run. whole_groups: a CTA's share is
// counted as the most 256-column groups a split gets (ceil(G / s) of G; the wgmma kernel: 8 groups
// in 5 splits run 2 groups on the critical path, as 4 splits do, with more partials; session 23,
// Qwen3 gate/up M = 40-64: 5 splits 11.2-12.3 us, 4 splits 10.7-11.8), else as K / s (the tile kernel's
// measured fit, kept). split_tail (the wgmma kernel, WgmmaPlan): with s splits the full waves of concurrent(s)
// units run whole and only the units past them split (their partials alone charged).
struct CtaSplits {
  int splits;
  int64_t whole_units;  // units run whole before the split ones (a multiple of splits; 0 with one split)
};
template <typename Concurrent>
static CtaSplits splits_for_cta_tiles(int64_t M, int64_t tokens, int64_t row_tiles, int64_t N, int64_t K, int k,
                                      int max_splits, bool whole_groups, bool split_tail, Concurrent&& concurrent) {
  const int64_t groups = (K + 255) / 256, most = std::min<int64_t>(groups, max_splits);
  if (const int forced = forced_cta_splits(); forced > 0)
    return {static_cast<int>(std::clamp<int64_t>(forced, 1, most)), 0};
  const int64_t chunks = (M + tokens - 1) / tokens;
  const int64_t row_blocks = cta_row_blocks(N, row_tiles);
  const int64_t units = row_blocks * chunks;
  const double unit_bytes = 16.0 * row_tiles * K * (k + 0.25) / 8 + 2.0 * tokens * K;
  const int64_t sm_count = concurrent(1);
  CtaSplits best{1, 0};
  double best_cost = 0;
  for (int s = 1; s <= most; ++s) {
    const int64_t at_once = concurrent(s);
    if (at_once <= 0) continue;
    const int64_t whole = split_tail && s > 1 ? units / at_once * at_once : 0;  // full waves, whole units
    const int64_t split_units = units - whole;
    const double split_waves = double((split_units * s + at_once - 1) / at_once);
    const double share = whole_groups ? double((groups + s - 1) / s) / double(groups) : 1.0 / s;
    const double cost = double(whole / at_once) * (unit_bytes + kCtaFixedBytes) +
                        split_waves * (unit_bytes * share + kCtaFixedBytes) +
                        (s > 1 ? 8.0 * s * M * N * (double(split_units) / double(units)) / sm_count : 0.0);
    if (s == 1 || cost < 0.99 * best_cost) best = {s, whole}, best_cost = cost;
  }
  return best;
}

int tile_gemm_splits(int64_t M, int64_t N, int64_t K, int k, int sm_count) {
  return splits_for_cta_tiles(M, 8 * int64_t(tile_token_tiles(M)), kTileRowTiles, N, K, k, 32, false, false,
                              [&](int) { return sm_count; })
      .splits;
}

// The most shared memory per block of the shapes wgmma_plan's rule may pick for M (from M = 33 either warpgroup count,
// above 64 every chunk of 80-160 tokens); a shape the tuning aids force fits where these do (the stages of every
// compiled shape are capped at kTileSmemBudget, the opt-in on compute 9.0).
static int wgmma_smem_needed(int k, int64_t M) {
  if (M <= 32) return wgmma_smem_bytes(k, wgmma_plan_shape_small(M));
  int most = std::max(wgmma_smem_bytes(k, {64, 16}), wgmma_smem_bytes(k, {64, 8}));
  if (M > 64)
    for (const int tokens : kWgChunkTokens) most = std::max(most, wgmma_smem_bytes(k, {tokens, 8}));
  return most;
}

bool wgmma_gemm_available(int k, int64_t M, const cudaDeviceProp& prop) {
#ifdef KBIT_HAS_SM90A
  return prop.major == 9 && prop.minor == 0 && size_t(wgmma_smem_needed(k, M)) <= prop.sharedMemPerBlockOptin;
#else
  (void)k, (void)M, (void)prop;
  return false;
#endif
}

namespace {
std::atomic<int> wgmma_splits_forced{0};
std::atomic<int> wgmma_row_tiles_forced{0};
std::atomic<int> wgmma_tokens_forced{0};
std::atomic<int> wgmma_max_tokens{0};
std::atomic<int> wgmma_first_stage_alone_mode{0};
std::atomic<int> wgmma_whole_clusters_forced{-1};
std::atomic<int64_t> wgmma_grid_clusters_forced{0};
std::atomic<int> wgmma_stream_forced{0};

// A tuning aid's mode 0, 1 or 2 (`meanings` says what each is), checked, stored in `slot`; returns the previous mode.
int exchange_mode(std::atomic<int>& slot, int64_t mode, const char* aid, const char* meanings) {
  TORCH_CHECK(mode >= 0 && mode <= 2, "kbit._C.", aid, ": mode must be ", meanings, "; got ", mode);
  return slot.exchange(static_cast<int>(mode));
}
}  // namespace

int set_wgmma_tokens(int64_t tokens) {
  TORCH_CHECK(tokens == 0 || tokens == 16 || tokens == 32 || tokens == 64 ||
                  std::count(std::begin(kWgChunkTokens), std::end(kWgChunkTokens), tokens) == 1,
              "kbit._C._set_wgmma_tokens: tokens must be 0 (the rule), 16 or 32 (four warpgroups on 256 rows), 64 "
              "(the row tiles of _set_wgmma_row_tiles, else of the rule at M = 33-64), 80, 96, 112, 128, 144 or 160 "
              "(two warpgroups on 128 rows); got ", tokens);
  return wgmma_tokens_forced.exchange(static_cast<int>(tokens));
}

int set_wgmma_max_tokens(int64_t tokens) {
  TORCH_CHECK(tokens == 0 || tokens == 128 || tokens == 160, "kbit._C._set_wgmma_max_tokens: tokens must be 0 (the "
              "rule: balanced chunks of up to 160), 128 (the rule without its wide candidate: session 51's) or 160 "
              "(the wide candidate always chunks of 160: session 52's); got ", tokens);
  return wgmma_max_tokens.exchange(static_cast<int>(tokens));
}

int set_wgmma_row_tiles(int64_t row_tiles) {
  TORCH_CHECK(row_tiles == 0 || row_tiles == 8 || row_tiles == 16, "kbit._C._set_wgmma_row_tiles: row_tiles must be 0 "
              "(the rule), 8 (two warpgroups on 128 rows from M = 33) or 16 (four warpgroups on 256 rows, chunks of 64 "
              "tokens); got ", row_tiles);
  return wgmma_row_tiles_forced.exchange(static_cast<int>(row_tiles));
}

WgmmaShape wgmma_plan_shape_small(int64_t M) { return M <= 16 ? WgmmaShape{16, 16} : WgmmaShape{32, 16}; }

int set_wgmma_splits(int64_t splits) {
  TORCH_CHECK(splits >= 0 && splits <= kWgMaxSplits, "kbit._C._set_wgmma_splits: splits must be 0 (the rule) or 1 to ",
              kWgMaxSplits, "; got ", splits);
  return wgmma_splits_forced.exchange(static_cast<int>(splits));
}

// A CTA's groups: the most any split takes.
static int64_t wgmma_cta_groups(int64_t K, int splits) { return ((K + 255) / 256 + splits - 1) / splits; }

static int wgmma_clusters(int k, WgmmaShape shape, int splits) {
  return with_k(k, [&](auto kc) { return wgmma_resident_clusters<decltype(kc)::value>(shape, splits); });
}

int set_wgmma_whole_clusters(int64_t clusters) {
  TORCH_CHECK(clusters >= -1 && clusters <= (int64_t(1) << 30), "kbit._C._set_wgmma_whole_clusters: clusters must be "
              "-1 (the rule: the split tail), 0 (no whole units: the split model of every unit split) or a count of "
              "clusters of whole units (clamped to the units); got ", clusters);
  return wgmma_whole_clusters_forced.exchange(static_cast<int>(clusters));
}

int64_t set_wgmma_grid_clusters(int64_t clusters) {
  TORCH_CHECK(clusters >= -1 && clusters < (int64_t(1) << 31), "kbit._C._set_wgmma_grid_clusters: clusters must be "
              "0 (the rule), -1 (a cluster launched per cluster of work) or a count of clusters to launch (clamped to "
              "the work, and to at least its split units); got ", clusters);
  return wgmma_grid_clusters_forced.exchange(clusters);
}

WgmmaSplits wgmma_gemm_splits(int64_t M, int64_t N, int64_t K, int k, WgmmaShape shape, int sm_count) {
  const auto clusters = [&](int s) { return wgmma_clusters(k, shape, s); };
  const int whole_forced = wgmma_whole_clusters_forced.load(std::memory_order_relaxed);
  CtaSplits pick{1, 0};
  if (const int forced = wgmma_splits_forced.load(std::memory_order_relaxed); forced > 0)
    pick = {static_cast<int>(std::min<int64_t>(forced, (K + 255) / 256)), 0};
  else  // the model skips counts whose cluster cannot run; KBIT_TUNE_CTA_SPLITS (inside it) does not
    pick = splits_for_cta_tiles(M, shape.tokens, shape.row_tiles, N, K, k, kWgMaxSplits, true, whole_forced < 0,
                                [&](int s) -> int64_t { return s == 1 ? sm_count : int64_t(s) * clusters(s); });
  while (pick.splits > 1 && clusters(pick.splits) == 0) --pick.splits;  // a forced count on a GPU (partition) without room
  if (pick.splits == 1) return {1, 0};
  const int64_t units = wgmma_units(M, N, shape);
  int64_t whole_clusters = pick.whole_units / pick.splits;  // the model's (0 where it was forced)
  if (whole_forced >= 0) whole_clusters = whole_forced;
  whole_clusters = std::min(whole_clusters, units / pick.splits);  // (the tuning aid's count, clamped to the units)
  return {pick.splits, static_cast<int>(whole_clusters)};
}

static WgmmaPlan wgmma_plan_for(int64_t M, int64_t N, int64_t K, int k, int sm_count, WgmmaShape shape) {
  const WgmmaSplits s = wgmma_gemm_splits(M, N, K, k, shape, sm_count);
  return WgmmaPlan{shape, s.splits, s.whole_clusters, false};
}

// The clusters of `splits` CTAs of plan p the GPU runs at once (one CTA a SM without splits), and their CTAs.
static int64_t wgmma_clusters_at_once(int k, const WgmmaPlan& p, int sm_count) {
  return p.splits == 1 ? sm_count : wgmma_clusters(k, p.shape, p.splits);
}
static int64_t wgmma_ctas_at_once(int k, const WgmmaPlan& p, int sm_count) {
  return p.splits * wgmma_clusters_at_once(k, p, sm_count);
}

// Above M = 64: two warpgroups on 128 rows x chunks of 80-128 tokens. ceil(M / 128) chunks, balanced
// (wgmma_balanced_tokens): the same units as chunks of 128, each with as little tensor work and x as that many chunks
// allow. Session 51 run 1 (H200, k = 4, fp16, cold L2; 96 against 128 tokens, the same chunk count): Qwen3 Q, O,
// down, gate/up, KV, GLM shared gate/up and Llama-3 8B gate/up at M = 80 / 96 / 160 / 192 / 288 0.71-0.97x the time
// (Q M = 192 12.15 -> 10.59 us, 8B M = 160 67.5 -> 47.9). One chunk more, each smaller, where both plans run their
// CTAs in one wave and a CTA's modelled time, its groups x (96 + tokens) (a group's time at 96 tokens ~0.86x that at
// 128, run 1), is less: at M = 384 on Q, O, down and KV 96 tokens ran 0.91-0.95x of 128, and lost 5-48% where the
// extra chunk took a second wave (gate/up, GLM shared, 8B at M = 384 and 512, Q at 512) or halved the splits (O and
// down at M = 512: 1.37-1.44x).
// The rule against 128 tokens forced (runs 2 and 6, alternating in one process, M = 72-2048): every one of the 105
// cells whose plan differs 0.62-0.98x the time (median 0.91); a forced chunk beat the rule by more than 3% only on KV
// (80 or 96 tokens at M = 112, 352, 384, 512: 4-7%; at 352 and 384 the rule's one-chunk-more candidate, 96 tokens,
// was rejected by the model).
static WgmmaPlan wgmma_plan_balanced(int64_t M, int64_t N, int64_t K, int k, int sm_count) {
  const int64_t chunks = (M + 127) / 128;
  const WgmmaPlan fewer = wgmma_plan_for(M, N, K, k, sm_count, {wgmma_balanced_tokens(M, chunks), 8});
  const int more_tokens = wgmma_balanced_tokens(M, chunks + 1);
  // (one chunk more may balance to 48 or 64 tokens: no 8-row-tile shape of those runs persistent or at this M; equal
  // tokens are the same plan)
  if (more_tokens < 80 || more_tokens == fewer.shape.tokens) return fewer;
  const WgmmaPlan more = wgmma_plan_for(M, N, K, k, sm_count, {more_tokens, 8});
  const auto one_wave = [&](const WgmmaPlan& p) {
    return wgmma_work_ctas(M, N, p.shape, p.splits, p.whole_clusters) <= wgmma_ctas_at_once(k, p, sm_count);
  };
  const auto cta_time = [&](const WgmmaPlan& p) { return wgmma_cta_groups(K, p.splits) * (96 + p.shape.tokens); };
  return one_wave(fewer) && one_wave(more) && cta_time(more) < cta_time(fewer) ? more : fewer;
}

// A plan's modelled time above M = 64 (session 52, H200, k = 4, fp16; fitted to 44 pairs of plans timed against each
// other in one process, runs 1-2, and ordering every pair that differed by more than 3%): the work clusters go
// round-robin to the clusters that run at once (as the persistent launch deals them, and as the GPU refills its SMs
// where each cluster of work is launched), and a cluster's time is the sum of its work: a whole unit G groups x (128 +
// tokens) + 500, a split CTA its share of the groups x (128 + tokens) + 1000 (its partials' reduction); the plan's time
// is its busiest cluster's. Cluster b gets whole / at_once whole units' clusters, one more where b < whole % at_once,
// and of all the work likewise: at most three runs of clusters with the same share, each evaluated once. (With a loop
// over every cluster, two 64-bit divisions each, the rule's plan took 0.9-2.3 us more than session 51's; now 0.4-0.7:
// session 52 runs 9b, 10.) split_step: a split CTA's further cost per split of its cluster past 4 (0 in session 52's
// fit, kWgModelSplitStep in the rule's since session 53).
static int64_t wgmma_model_time(int64_t M, int64_t N, int64_t K, int k, const WgmmaPlan& p, int sm_count,
                                int64_t split_step) {
  const int64_t groups = (K + 255) / 256, units = wgmma_units(M, N, p.shape);
  const int64_t work = wgmma_work_clusters(M, N, p.shape, p.splits, p.whole_clusters);
  const int64_t whole = p.splits == 1 ? units : p.whole_clusters;  // the work clusters of whole units come first
  const int64_t at_once = std::min<int64_t>(std::max<int64_t>(wgmma_clusters_at_once(k, p, sm_count), 1), work);
  const int64_t per_group = 128 + p.shape.tokens;
  const int64_t whole_cost = groups * per_group + 500,
                split_cost = wgmma_cta_groups(K, p.splits) * per_group + 1000 + split_step * std::max(p.splits - 4, 0);
  const int64_t whole_q = whole / at_once, whole_r = whole % at_once, work_q = work / at_once, work_r = work % at_once;
  const auto time_of = [&](int64_t b) {  // cluster b's sum
    const int64_t whole_b = whole_q + (b < whole_r), all_b = work_q + (b < work_r);
    return whole_b * whole_cost + (all_b - whole_b) * split_cost;
  };
  // the first cluster of each run: 0, min(whole_r, work_r), max(whole_r, work_r) (those below at_once)
  int64_t busiest = time_of(0);
  for (const int64_t b : {std::min(whole_r, work_r), std::max(whole_r, work_r)})
    if (b < at_once) busiest = std::max(busiest, time_of(b));
  return busiest;
}

// A split CTA's modelled cost per split of its cluster past 4, on top of session 52's flat 1000. Session 53 runs 2-3:
// Qwen3 KV at M = 400 / 432 took 144 tokens in 8 splits (96 CTAs of 1 group) over 80 / 96 in 4 (80 CTAs of 2) by the
// model without it, and ran 13-14% slower (8.17 / 8.30 us against 7.14 / 7.28). A step of 50 on every split (run 3)
// also moved 2- and 3-split plans to fewer splits: mostly slower (Qwen3 Q at M = 257-288: 80 tokens x 1 split 13.5 us
// against 144 x 2's 12.4; O at 257-288: 80 x 2 15.5 against 144 x 3's 14.8; gate/up at 136-144: 9-11% slower), once
// faster (Q at M = 136: 80 x 2 about 6% faster than 144 x 3). So the step starts past 4 splits, where the evidence is
// one-sided (8 splits against 4).
constexpr int64_t kWgModelSplitStep = 100;

// The rule's plan above M = 64: session 51's (wgmma_plan_balanced), or the wide candidate where its chunks, ceil(M /
// 160), are fewer than chunks of 128 (M = 129-160, 257-320, 385-480, ...) and the model's time (wgmma_model_time) is
// less: those chunks balanced as session 51's are (wgmma_balanced_tokens: 144 or 160 tokens; session 53), so a unit
// runs no more padding columns than that chunk count needs (M = 136 one chunk of 144, 272 two, 400 three). Session 52
// runs 1-2 (alternating in one process): Llama-3 8B gate/up at M = 136-160 in 112 units of 160 tokens, one round on 132
// SMs, against 224 of 80 in two: 46.6 -> 30.5 us; 70B at M = 272 / 320 0.78x / 0.73x; where chunks of 160 are as many
// as of 128 (M = 192, 256) forcing 160 took 1.2-1.8x the time. kbit._C._set_wgmma_max_tokens(128) leaves the wide
// candidate out, 160 gives session 52's rule (chunks of 160, the model without the split step).
static WgmmaPlan wgmma_plan_large(int64_t M, int64_t N, int64_t K, int k, int sm_count) {
  const WgmmaPlan base = wgmma_plan_balanced(M, N, K, k, sm_count);
  const int max_tokens = wgmma_max_tokens.load(std::memory_order_relaxed);
  const int64_t wide_chunks = (M + 159) / 160;
  if (max_tokens == 128 || wide_chunks >= (M + 127) / 128) return base;
  // (fewer chunks than of 128 hold more than 128 tokens each: 144 or 160)
  const int tokens = max_tokens == 160 ? 160 : wgmma_balanced_tokens(M, wide_chunks);
  const int64_t step = max_tokens == 160 ? 0 : kWgModelSplitStep;
  const WgmmaPlan wide = wgmma_plan_for(M, N, K, k, sm_count, {tokens, 8});
  return wgmma_model_time(M, N, K, k, wide, sm_count, step) < wgmma_model_time(M, N, K, k, base, sm_count, step)
             ? wide
             : base;
}

// The CTA shape and splits (first_stage_alone left false: wgmma_plan sets it).
static WgmmaPlan wgmma_plan_shape(int64_t M, int64_t N, int64_t K, int k, int sm_count) {
  const auto plan_for = [&](WgmmaShape shape) { return wgmma_plan_for(M, N, K, k, sm_count, shape); };
  const int tokens = wgmma_tokens_forced.load(std::memory_order_relaxed);  // the tuning aid's chunk, 0: the rule's
  if (tokens == 16 || tokens == 32) return plan_for({tokens, 16});
  if (tokens >= 80) return plan_for({tokens, 8});
  if (M <= 32 && tokens == 0) return plan_for(wgmma_plan_shape_small(M));
  // From here chunks of 64 tokens (M = 33..64, or forced), or above M = 64 the rule's 80-160 (wgmma_plan_large).
  const bool chunks_of_64 = tokens == 64 || M <= 64;
  const int forced = wgmma_row_tiles_forced.load(std::memory_order_relaxed);
  if (forced == 16) return plan_for({64, 16});
  if (!chunks_of_64) return wgmma_plan_large(M, N, K, k, sm_count);
  if (forced == 8) return plan_for({64, 8});
  // M = 33..64 (or chunks of 64 forced): two warpgroups on 128 rows, unless that takes more CTA waves than four on
  // 256 rows (Llama-3 70B gate/up: 224 row blocks), or four run at least as many CTAs in no more waves, each on fewer
  // groups (split twice as often: half the x per weight a CTA reads). Session 31 run 6 (H200, M = 33 / 48 / 64, us),
  // four against two: Llama-3 8B gate/up 25.0 / 25.0 / 25.3 against 26.1 / 26.1 / 26.4 (112 CTAs each), GLM shared
  // gate/up 14.2 / 14.3 / 14.7 against 14.8 / 14.9 / 15.2 (80), Qwen3 gate/up 10.0 / 10.3 / 10.6 against 10.3 / 10.4 /
  // 10.8 (80); where four run fewer CTAs two win: Qwen3 down 12.1 / 12.7 / 13.5 against 10.2 / 10.6 / 10.9 (56
  // against 80), Q 9.8 / 10.0 / 10.4 against 9.0 / 9.2 / 9.5 (64 against 96; run 5).
  const WgmmaPlan four = plan_for({64, 16}), two = plan_for({64, 8});
  const auto ctas = [&](const WgmmaPlan& p) { return wgmma_work_ctas(M, N, p.shape, p.splits, p.whole_clusters); };
  const auto waves = [&](const WgmmaPlan& p) {
    const int64_t at_once = std::max<int64_t>(wgmma_ctas_at_once(k, p, sm_count), 1);
    return (ctas(p) + at_once - 1) / at_once;
  };
  // (The H100's session 23 run had two ahead by 2-5% on 8B and GLM shared gate/up at M = 40-64, with the kernels and
  // x rule of then; not re-measured: the device lent since session 26 is the H200.) With the split tail a plan's whole
  // CTAs run all of K, so its groups a CTA (the split CTAs') are an approximation there; no benchmark shape's 64-token
  // plan has a full wave of units (that takes N of ~15-30k).
  const bool four_as_wide = ctas(four) >= ctas(two) && waves(four) <= waves(two) &&
                            wgmma_cta_groups(K, four.splits) < wgmma_cta_groups(K, two.splits);
  return waves(two) > waves(four) || four_as_wide ? four : two;
}

int set_wgmma_stream(int64_t mode) {
  return exchange_mode(wgmma_stream_forced, mode, "_set_wgmma_stream",
                       "0 (the rule), 1 (never) or 2 (always, where the plan's shape is a persistent one)");
}

// The stream-K schedule of plan p's shape (wgmma_gemm.cuh, the partition's `stream`): a lane of CTAs a token chunk,
// as many in each as fit one CTA an SM (at most the lane's steps; at most kbit._C._set_wgmma_grid_clusters's count of
// CTAs in all where it forces one), where the shape is a persistent one and the launch fits the kernel's arithmetic
// (wgmma_stream_fits); else p unchanged (false).
static bool wgmma_stream_plan(int64_t M, int64_t N, int64_t K, int sm_count, WgmmaPlan& p) {
  if (!wgmma_persistent_shape(p.shape.tokens) || p.shape.row_tiles != 8) return false;
  const int64_t chunks = (M + p.shape.tokens - 1) / p.shape.tokens, row_blocks = cta_row_blocks(N, p.shape.row_tiles);
  const int64_t groups = (K + 255) / 256, forced = wgmma_grid_clusters_forced.load(std::memory_order_relaxed);
  int64_t lane_ctas = std::min<int64_t>(sm_count / chunks, row_blocks * groups);
  if (forced > 0) lane_ctas = std::min(lane_ctas, forced / chunks);
  if (!wgmma_stream_fits(row_blocks, groups, lane_ctas)) return false;
  p.splits = 1, p.whole_clusters = 0, p.grid_clusters = lane_ctas * chunks, p.stream = true;
  return true;
}

int set_wgmma_first_stage_alone(int64_t mode) {
  return exchange_mode(wgmma_first_stage_alone_mode, mode, "_set_wgmma_first_stage_alone",
                       "0 (the rule), 1 (never) or 2 (always)");
}

// The first stage's copies requested alone, the other stages' once it landed: every launch (the aid's 1: never).
// Session 32 run 6 (H200; then x from the image pass, the weights copied before the PDL wait), at the rule's shape and
// splits, M = 16-256 on seven shapes, alone against every stage at the start: Llama-3 8B gate/up M = 16 / 32 / 64 16.9
// / 18.6 / 24.5 us against 18.9 / 20.0 / 25.6, GLM shared gate/up M = 16 10.5 against 11.8, the Qwen3 shapes 2-6% less
// at M = 16-64 and 1-2% at 128; one cell slower (8B M = 128, 31.0 against 30.7). Session 35 run 4 (then x staged by
// the kernel's threads, its first group's weights prefetched before the wait as now): Qwen3 Q, gate/up and O at M =
// 8-32 0.1-0.2 us faster alone, Qwen3 down 0.1-0.2 and GLM shared gate/up 0.8-1.4 slower. Not yet re-measured with x
// by tensor copies.
static WgmmaPlan planned_wgmma(int64_t M, int64_t N, int64_t K, int k, int sm_count) {
  WgmmaPlan p = wgmma_plan_shape(M, N, K, k, sm_count);
  p.first_stage_alone = wgmma_first_stage_alone_mode.load(std::memory_order_relaxed) != 1;
  // Stream-K where forced (kbit._C._set_wgmma_stream); the rule never takes it. Session 54 (H200, k = 4, fp16, cold
  // L2; eight of #7's shapes at M = 192-1024, alternating in one process): in clusters (pieces through a workspace
  // behind the cluster barrier) the GPU runs clusters of 3-8 on only 117-120 of its 132 SMs, and clusters of 2 balance
  // no better than whole units (runs 1-2); over every CTA in lanes (a counter a unit, zero-filled each call),
  // 1.01-2.16x the rule's time on all 56 cells (run 5: Llama-3 70B 1.01-1.10x, 8B 1.01-1.18x, GLM shared 1.08-1.33x, Qwen3
  // 1.07-2.16x). Without the zero-fill (run 9: a counter buffer kept across calls, not committed) Llama-3 70B gate/up
  // at M = 256-512 took 0.95-0.97x and 8B at 512 0.97x, the other cells 1.01-1.39x: a kept counter buffer per stream,
  // safe under graph capture, comes before the rule may take it there.
  if (wgmma_stream_forced.load(std::memory_order_relaxed) == 2 && wgmma_stream_plan(M, N, K, sm_count, p)) return p;
  // Persistent (WgmmaPlan::grid_clusters; CTAs of 80-160 tokens only, else one cluster launched per cluster of work):
  // the clusters the GPU runs at once, where the split units (the work clusters from whole_clusters on) fit in them,
  // so that each is its CTA's last.
  const int64_t work = wgmma_work_clusters(M, N, p.shape, p.splits, p.whole_clusters);
  const int64_t split_clusters = p.splits == 1 ? 0 : work - p.whole_clusters;
  const int64_t forced = wgmma_grid_clusters_forced.load(std::memory_order_relaxed);
  p.grid_clusters = work;
  if (wgmma_persistent_shape(p.shape.tokens) && forced > 0) {
    p.grid_clusters = std::clamp<int64_t>(forced, std::max<int64_t>(split_clusters, 1), work);
  } else if (wgmma_persistent_shape(p.shape.tokens) && forced == 0) {
    // (as the split model and _wgmma_launch_plan count them: one CTA per SM without splits)
    const int64_t at_once = std::min<int64_t>(wgmma_clusters_at_once(k, p, sm_count), work);
    if (at_once > 0 && split_clusters <= at_once) p.grid_clusters = at_once;
  }
  return p;
}

// planned_wgmma, remembered (remembered_plans.h): the plan depends only on the call's shape, k, the device (its SMs
// and cluster occupancy) and the tuning aids, all in the key. Above M = 128 the rule evaluates the split model for
// three shapes and the cluster model twice; remembered, a repeated call costs one lookup.
WgmmaPlan wgmma_plan(int64_t M, int64_t N, int64_t K, int k, int sm_count) {
  struct Key {
    int64_t M, N, K, grid_clusters_forced;
    int k, sm_count, device;
    std::array<int, 7> aids;
    auto tied() const { return std::tie(M, N, K, grid_clusters_forced, k, sm_count, device, aids); }
    bool operator==(const Key& o) const { return tied() == o.tied(); }
    uint64_t hash() const {
      return plan_key_hash({M, N, K, grid_clusters_forced, k, sm_count, device, aids[0], aids[1], aids[2], aids[3],
                            aids[4], aids[5], aids[6]});
    }
  };
  const auto key_now = [&] {
    const auto aid = [](const auto& slot) { return slot.load(std::memory_order_relaxed); };
    return Key{M, N, K, aid(wgmma_grid_clusters_forced), k, sm_count, static_cast<int>(c10::cuda::current_device()),
               {{aid(wgmma_splits_forced), aid(wgmma_row_tiles_forced), aid(wgmma_tokens_forced), aid(wgmma_max_tokens),
                 aid(wgmma_first_stage_alone_mode), aid(wgmma_whole_clusters_forced), aid(wgmma_stream_forced)}}};
  };
  static RememberedPlans<Key, WgmmaPlan> plans;
  return plans.get(key_now, [&] { return planned_wgmma(M, N, K, k, sm_count); });
}

namespace {

template <typename T, int K>
void launch_path(DensePath kernel, const TcGemmArgs& args, cudaStream_t stream) {
  switch (kernel) {
    case DensePath::kTile: launch_tile_gemm<T, K>(args, stream); break;
    case DensePath::kWgmma: launch_wgmma_gemm<T, K>(args, stream); break;
    case DensePath::kGemv: launch_scalar_gemv<T, K>(args, stream); break;
    default: launch_tc_gemm<T, K>(args, stream); break;
  }
}

template <typename T>
void launch_for_k(int k, DensePath kernel, const TcGemmArgs& args, cudaStream_t stream) {
  with_k(k, [&](auto kc) { launch_path<T, decltype(kc)::value>(kernel, args, stream); });
}

}  // namespace

namespace {
std::atomic<int> gemv_min_slots{1};
std::atomic<bool> gemv_spread_on{true};
std::atomic<int> gemv_grouped_schedule_form{2};
std::atomic<int> gemv_unit_slots_most{kGemvMmaMaxWarps};
std::atomic<int> gemv_unit_warps_forced{0};
std::atomic<int> gemv_decode_path_rule_set{1};
std::atomic<int> gemv_chunk_rows_forced{0};
std::atomic<int> gemv_x_resident_mode{1};
std::atomic<int> gemv_grouped_x_shared_mode{1};
std::atomic<int> gemv_shared_x_run_set{0};
std::atomic<int> gemv_resident_stages_set{0};
std::atomic<int> gemv_split_mode{-1};
std::atomic<int> gemv_staged_layout_mode{-1};
std::atomic<int> gemv_staged_stages_set{0};
}  // namespace

int gemv_staged_layout() { return gemv_staged_layout_mode.load(std::memory_order_relaxed); }
int set_gemv_staged_layout(int64_t layout) {
  TORCH_CHECK(layout >= -1 && layout <= 2, "kbit._C._set_gemv_staged_layout: layout must be -1 (the rule), 0 (one "
              "unit per CTA), 1 (unit slots) or 2 (unit slots, the wide pair table); got ", layout);
  return gemv_staged_layout_mode.exchange(static_cast<int>(layout));
}
int gemv_staged_stages() { return gemv_staged_stages_set.load(std::memory_order_relaxed); }
int set_gemv_staged_stages(int64_t stages) {
  TORCH_CHECK(stages == 0 || (stages >= 2 && stages <= kGemvResidentMaxStages), "kbit._C._set_gemv_staged_stages: "
              "stages must be 0 (the rule) or 2 to ", kGemvResidentMaxStages, "; got ", stages);
  return gemv_staged_stages_set.exchange(static_cast<int>(stages));
}

int gemv_split_cluster() { return gemv_split_mode.load(std::memory_order_relaxed); }
int set_gemv_split_cluster(int64_t cluster) {
  TORCH_CHECK(cluster == -1 || cluster == 0 || cluster == 2 || cluster == 4 || cluster == 8, "kbit._C._set_gemv_split_cluster: "
              "cluster must be -1 (the rule), 0 (never) or 2, 4, 8 (that cluster size wherever the split applies); got ", cluster);
  return gemv_split_mode.exchange(static_cast<int>(cluster));
}

int gemv_resident_stages() { return gemv_resident_stages_set.load(std::memory_order_relaxed); }
int set_gemv_resident_stages(int64_t stages) {
  TORCH_CHECK(stages == 0 || (stages >= 2 && stages <= kGemvResidentMaxStages), "kbit._C._set_gemv_resident_stages: "
              "stages must be 0 (the rule) or 2 to ", kGemvResidentMaxStages, "; got ", stages);
  return gemv_resident_stages_set.exchange(static_cast<int>(stages));
}

int gemv_x_resident() { return gemv_x_resident_mode.load(std::memory_order_relaxed); }
int set_gemv_x_resident(int64_t mode) {
  return exchange_mode(gemv_x_resident_mode, mode, "_set_gemv_x_resident",
                       "0 (never), 1 (the rule) or 2 (at any token slots where it fits)");
}

int gemv_grouped_x_shared() { return gemv_grouped_x_shared_mode.load(std::memory_order_relaxed); }
int set_gemv_grouped_x_shared(int64_t mode) {
  TORCH_CHECK(mode >= 0 && mode <= 3, "kbit._C._set_gemv_grouped_x_shared: mode must be 0 (never), 1 (where it "
              "applies), 2 (there, in CTAs of at most 8 warps) or 3 (there, and at 4-7 token slots on K of 2 or 3 "
              "groups with one unit a warp a round too); got ", mode);
  return gemv_grouped_x_shared_mode.exchange(static_cast<int>(mode));
}

int gemv_shared_x_run() { return gemv_shared_x_run_set.load(std::memory_order_relaxed); }
int set_gemv_shared_x_run(int64_t run) {
  TORCH_CHECK(run == 0 || run == 1 || run == 2 || run == 4, "kbit._C._set_gemv_shared_x_run: run must be 0 (the "
              "rule), 1, 2 or 4 (units a warp runs back to back in a round); got ", run);
  return gemv_shared_x_run_set.exchange(static_cast<int>(run));
}

int gemv_unit_warps() { return gemv_unit_warps_forced.load(std::memory_order_relaxed); }
int set_gemv_unit_warps(int64_t warps) {
  TORCH_CHECK(warps >= 0 && warps <= kGemvMmaMaxWarps, "kbit._C._set_gemv_unit_warps: warps must be 0 (the rule) to ",
              kGemvMmaMaxWarps, "; got ", warps);
  return gemv_unit_warps_forced.exchange(static_cast<int>(warps));
}

int gemv_decode_path_rule() { return gemv_decode_path_rule_set.load(std::memory_order_relaxed); }
int set_gemv_decode_path_rule(int64_t rule) {
  TORCH_CHECK(rule == 0 || rule == 1, "kbit._C._set_gemv_decode_path_rule: rule must be 1 (the default, session 66's) "
              "or 0 (session 37's); got ", rule);
  return gemv_decode_path_rule_set.exchange(static_cast<int>(rule));
}

int gemv_grouped_chunk_rows_forced() { return gemv_chunk_rows_forced.load(std::memory_order_relaxed); }
int set_gemv_grouped_chunk_rows(int64_t rows) {
  TORCH_CHECK(rows >= 0 && rows <= kGemvMaxTokens, "kbit._C._set_gemv_grouped_chunk_rows: rows must be 0 (the rule) "
              "to ", kGemvMaxTokens, "; got ", rows);
  return gemv_chunk_rows_forced.exchange(static_cast<int>(rows));
}

int gemv_max_unit_slots() { return gemv_unit_slots_most.load(std::memory_order_relaxed); }
int set_gemv_max_unit_slots(int64_t slots) {
  TORCH_CHECK(slots >= 1 && slots <= kGemvMmaMaxWarps, "kbit._C._set_gemv_max_unit_slots: slots must be 1 to ",
              kGemvMmaMaxWarps, "; got ", slots);
  return gemv_unit_slots_most.exchange(static_cast<int>(slots));
}

int gemv_grouped_schedule() { return gemv_grouped_schedule_form.load(std::memory_order_relaxed); }
int set_gemv_grouped_schedule(int64_t form) {
  TORCH_CHECK(form >= 0 && form <= 3, "kbit._C._set_gemv_grouped_schedule: form must be 0 (per CTA, scans), 1 (per "
              "warp), 2 (per warp, static first chunks where T >= E; where the per-warp form does not fit, E > 32, per CTA "
              "by row with 1 row per chunk, T <= E) or 3 (per CTA by row where that applies); got ", form);
  return gemv_grouped_schedule_form.exchange(static_cast<int>(form));
}

bool gemv_spread() { return gemv_spread_on.load(std::memory_order_relaxed); }
bool set_gemv_spread(bool on) { return gemv_spread_on.exchange(on); }

int gemv_min_token_slots() { return gemv_min_slots.load(std::memory_order_relaxed); }

int set_gemv_min_token_slots(int64_t slots) {
  TORCH_CHECK(slots == 1 || slots == 2 || slots == 3 || slots == 4 || slots == 8 || slots == 16,
              "kbit._C._set_gemv_min_token_slots: slots must be 1, 2, 3, 4, 8 or 16 (the GEMV's token slots); got ",
              slots);
  return gemv_min_slots.exchange(static_cast<int>(slots));
}

GemvDecode parse_gemv_decode(const std::string& decode, const char* op) {
  if (decode == "auto") return GemvDecode::kAuto;
  if (decode == "shuffle") return GemvDecode::kShuffle;
  if (decode == "mma") return GemvDecode::kMma;
  TORCH_CHECK(false, "kbit: ", op, ": decode must be 'auto', 'mma' or 'shuffle'; got '", decode, "'");
}

namespace {

// The kernel reads x in 16-byte vectors: a view starting off a 16-byte boundary is copied.
at::Tensor aligned_activations(const at::Tensor& x) {
  return reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 == 0 ? x : x.clone();
}

TcGemmArgs tc_args(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                   const at::Tensor& row_scale, const at::Tensor& codebook, const WeightGeometry& g,
                   at::Tensor& y) {
  TcGemmArgs args{};
  args.x = x.data_ptr();
  args.packed = reinterpret_cast<const uint32_t*>(packed_t.data_ptr<int32_t>());
  args.absmax = absmax_t.data_ptr<uint8_t>();
  args.row_scale = row_scale.data_ptr<float>();
  args.codebook = codebook.data_ptr<float>();
  args.y = y.data_ptr();
  args.M = x.size(0);
  args.N = g.rows;
  args.K = g.cols;
  args.experts = 1;
  args.splits = 1;
  args.warps_per_unit = tc_warps_per_unit(g.cols);
  args.tokens_per_unit = args.M;
  return args;
}

// A tensor-core kernel (small-M, tile or wgmma) in x's dtype, on the current stream.
void launch(const at::Tensor& x, int k, DensePath kernel, const TcGemmArgs& args) {
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  if (x.scalar_type() == at::kHalf) launch_for_k<c10::Half>(k, kernel, args, stream);
  else launch_for_k<c10::BFloat16>(k, kernel, args, stream);
}

// Dense split-K: the fp32 partials [splits, M, N16] (kept alive by the caller until launch).
at::Tensor split_workspace(TcGemmArgs& args, const at::Tensor& x, const WeightGeometry& g) {
  if (args.splits <= 1) return at::Tensor();
  at::Tensor workspace = at::empty({args.splits, args.M, g.row_tiles() * 16}, x.options().dtype(at::kFloat));
  args.workspace = workspace.data_ptr<float>();
  return workspace;
}

// The tile kernel's shared memory for a token tile picked from `tokens`, or a clear error.
void check_tile_fits(int k, int64_t tokens, bool grouped, const cudaDeviceProp& prop) {
  TORCH_CHECK(tile_gemm_fits(k, tokens, grouped, prop), "kbit: ", grouped ? "grouped_tile_gemm" : "tile_gemm",
              " needs ", tile_smem_bytes(k, tile_token_tiles(tokens), grouped),
              " bytes of shared memory per block for k=", k, " and ", tokens, " tokens", grouped ? " per expert" : "",
              "; this GPU (", prop.name, ") allows ", prop.sharedMemPerBlockOptin, ". Use ",
              grouped ? "grouped_gemm" : "gemm", ", which picks a kernel that fits.");
}

// y = x @ W^T by one tensor-core kernel on x (aligned, contiguous); configure(args) sets what
// the kernel needs beyond tc_args (splits, warps per unit, the wgmma kernel's plan).
template <typename Configure>
at::Tensor run_dense_kernel(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                            const at::Tensor& row_scale, const at::Tensor& codebook, const WeightGeometry& g,
                            DensePath kernel, Configure&& configure) {
  const at::Tensor cb = codebook.contiguous();
  at::Tensor y = at::empty({x.size(0), g.rows}, x.options());
  TcGemmArgs args = tc_args(x, packed_t, absmax_t, row_scale, cb, g, y);
  configure(args);
  // the wgmma kernel's splits add their partials in shared memory (a cluster), the others' in a workspace
  const at::Tensor workspace = kernel == DensePath::kWgmma ? at::Tensor() : split_workspace(args, x, g);
  launch(x, g.k, kernel, args);
  return y;
}

// warps_per_unit: 0 = tc_dense_warps_per_unit's choice, else that many (checked by the caller).
at::Tensor gemm_tc(const at::Tensor& x_in, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                   const at::Tensor& row_scale, const at::Tensor& codebook, const WeightGeometry& g,
                   int warps_per_unit) {
  const at::Tensor x = aligned_activations(x_in);
  const int64_t M = x.size(0);
  const cudaDeviceProp& prop = *at::cuda::getCurrentDeviceProperties();
  return run_dense_kernel(x, packed_t, absmax_t, row_scale, codebook, g, DensePath::kSmallM, [&](TcGemmArgs& args) {
    args.warps_per_unit = warps_per_unit > 0 ? warps_per_unit : tc_dense_warps_per_unit(M, g.rows, g.cols, g.k, prop);
    args.splits = tc_gemm_splits(g.rows, g.cols, M, args.warps_per_unit, prop.multiProcessorCount);
  });
}

at::Tensor gemm_tile(const at::Tensor& x_in, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                     const at::Tensor& row_scale, const at::Tensor& codebook, const WeightGeometry& g) {
  const at::Tensor x = aligned_activations(x_in);
  const int64_t M = x.size(0);
  const cudaDeviceProp& prop = *at::cuda::getCurrentDeviceProperties();
  check_tile_fits(g.k, M, false, prop);
  return run_dense_kernel(x, packed_t, absmax_t, row_scale, codebook, g, DensePath::kTile, [&](TcGemmArgs& args) {
    args.splits = tile_gemm_splits(M, g.rows, g.cols, g.k, prop.multiProcessorCount);
  });
}

at::Tensor gemm_wgmma(const at::Tensor& x_in, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                      const at::Tensor& row_scale, const at::Tensor& codebook, const WeightGeometry& g) {
  const at::Tensor x = aligned_activations(x_in);
  const int64_t M = x.size(0);
  const cudaDeviceProp& prop = *at::cuda::getCurrentDeviceProperties();
#ifndef KBIT_HAS_SM90A
  TORCH_CHECK(false, "kbit: wgmma_gemm is not in this build (no sm_90a target: build with KBIT_CUDA_ARCHS "
              "including 90a). Use gemm, which picks a kernel this build has.");
#endif
  TORCH_CHECK(prop.major == 9 && prop.minor == 0, "kbit: wgmma_gemm runs on compute-9.0 GPUs (Hopper) only; this GPU is ",
              prop.name, " (compute ", prop.major, ".", prop.minor, "). Use gemm, which picks a kernel this GPU runs.");
  // before the plan: planning asks the kernels' cluster occupancy, which raises their shared-memory limit
  TORCH_CHECK(wgmma_gemm_available(g.k, M, prop), "kbit: wgmma_gemm needs up to ", wgmma_smem_needed(g.k, M),
              " bytes of shared memory per block for k=", g.k, " and M=", M, "; this GPU (", prop.name, ") allows ",
              prop.sharedMemPerBlockOptin, ". Use gemm, which picks a kernel that fits.");
  // once per call (the tuning aids may change between reads): the splits and launch agree
  const WgmmaPlan plan = wgmma_plan(M, g.rows, g.cols, g.k, prop.multiProcessorCount);
  const int64_t units = wgmma_units(M, g.rows, plan.shape);
  // stream-K's fp32 slots (each written before its unit's last piece reads it) and its units' counters (zeros)
  const at::Tensor stream_workspace =
      plan.stream ? at::empty({wgmma_stream_workspace_floats(plan)}, x.options().dtype(at::kFloat)) : at::Tensor();
  const at::Tensor stream_counters = plan.stream ? at::zeros({units}, x.options().dtype(at::kInt)) : at::Tensor();
  // x is contiguous (dense_gemm) and 16-byte aligned (aligned_activations), as the tensor map over it needs
  // (wgmma_gemm.cuh, wgmma_x_tensor_map: its rows K * 2 bytes apart, a multiple of 64)
  return run_dense_kernel(x, packed_t, absmax_t, row_scale, codebook, g, DensePath::kWgmma, [&](TcGemmArgs& args) {
    args.splits = plan.splits;
    args.wgmma_whole_clusters = plan.whole_clusters;
    args.wgmma_work_clusters =
        plan.stream ? units : wgmma_work_clusters(M, g.rows, plan.shape, plan.splits, plan.whole_clusters);
    args.wgmma_stream = plan.stream;
    if (plan.stream) {
      args.workspace = stream_workspace.data_ptr<float>();
      args.wgmma_stream_counters = reinterpret_cast<uint32_t*>(stream_counters.data_ptr<int32_t>());
    }
    args.wgmma_grid_clusters = plan.grid_clusters;
    args.wgmma_tokens = plan.shape.tokens;
    args.wgmma_row_tiles = plan.shape.row_tiles;
    args.wgmma_first_stage_alone = plan.first_stage_alone;
  });
}

at::Tensor gemm_gemv(const at::Tensor& x_in, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                     const at::Tensor& row_scale, const at::Tensor& codebook, const WeightGeometry& g,
                     GemvDecode decode) {
  TORCH_CHECK(x_in.size(0) <= kGemvMaxRows, "kbit: gemv_gemm takes at most ", kGemvMaxRows,
              " rows of x (M <= ", kGemvMaxRows, "); got M=", x_in.size(0), ". Use gemm, which picks a kernel for any M.");
  TORCH_CHECK(decode != GemvDecode::kShuffle || x_in.size(0) <= kGemvShuffleMaxTokens,
              "kbit: gemv_gemm with decode='shuffle' takes at most ", kGemvShuffleMaxTokens, " rows of x; got M=",
              x_in.size(0), ". decode='mma' or 'auto' takes up to ", kGemvMaxRows, ".");
  return run_dense_kernel(aligned_activations(x_in), packed_t, absmax_t, row_scale, codebook, g, DensePath::kGemv,
                          [&](TcGemmArgs& args) { args.gemv_decode = decode; });
}

// gemm (no path given: dense_gemm_path, tc_dispatch.h), mma_gemm (always the small-M kernel),
// gemv_gemm (always the GEMV, M <= kGemvMaxRows = 128, M <= 4 with the shuffle decode, its decode as asked),
// tile_gemm (always the tile kernel), wgmma_gemm (always the wgmma kernel; Hopper) and
// dequant_cublas_gemm (always the fallback).
at::Tensor dense_gemm(const at::Tensor& x_in, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                      const at::Tensor& row_scale, const at::Tensor& codebook, int64_t k,
                      std::optional<DensePath> path, int small_m_warps_per_unit = 0,
                      GemvDecode gemv_decode = GemvDecode::kAuto) {
  const WeightGeometry g = check_gemm_args(x_in, packed_t, absmax_t, row_scale, codebook, k, false);
  if (small_m_warps_per_unit != 0) {  // mma_gemm's tuning argument (benchmarks/tune_dispatch.py sweeps it)
    const int w = small_m_warps_per_unit, most = tc_warps_per_unit(g.cols);
    TORCH_CHECK(w <= most, "kbit: mma_gemm: warps_per_unit=", w, " exceeds ", most, " for K=", g.cols,
                " (a unit's warps split its ", g.col_tiles(), " groups of 256 columns: at most that many, rounded "
                "down to a power of two, and 8)");
  }
  const c10::cuda::CUDAGuard guard(x_in.device());
  const at::Tensor x = x_in.contiguous();
  if (x.size(0) == 0) return at::empty({0, g.rows}, x.options());
  const DensePath chosen =
      path ? *path : dense_gemm_path(x.size(0), g.rows, g.cols, g.k, x.scalar_type() == at::kBFloat16,
                                     *at::cuda::getCurrentDeviceProperties());
  if (chosen == DensePath::kSmallM) return gemm_tc(x, packed_t, absmax_t, row_scale, codebook, g, small_m_warps_per_unit);
  if (chosen == DensePath::kTile) return gemm_tile(x, packed_t, absmax_t, row_scale, codebook, g);
  if (chosen == DensePath::kWgmma) return gemm_wgmma(x, packed_t, absmax_t, row_scale, codebook, g);
  if (chosen == DensePath::kGemv) return gemm_gemv(x, packed_t, absmax_t, row_scale, codebook, g, gemv_decode);
  return gemm_dequant_cublas(x, packed_t, absmax_t, row_scale, codebook, k, g);
}

at::Tensor gemm_cuda(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                     const at::Tensor& row_scale, const at::Tensor& codebook, int64_t k) {
  return dense_gemm(x, packed_t, absmax_t, row_scale, codebook, k, std::nullopt);
}

at::Tensor mma_gemm_cuda(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                         const at::Tensor& row_scale, const at::Tensor& codebook, int64_t k, int64_t warps_per_unit) {
  TORCH_CHECK(warps_per_unit == 0 || warps_per_unit == 1 || warps_per_unit == 2 || warps_per_unit == 4 ||
                  warps_per_unit == 8,
              "kbit: mma_gemm: warps_per_unit must be 0 (the dispatch's choice), 1, 2, 4 or 8; got ", warps_per_unit);
  return dense_gemm(x, packed_t, absmax_t, row_scale, codebook, k, DensePath::kSmallM, static_cast<int>(warps_per_unit));
}

at::Tensor gemv_gemm_cuda(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                          const at::Tensor& row_scale, const at::Tensor& codebook, int64_t k, c10::string_view decode) {
  const GemvDecode d = parse_gemv_decode(std::string(decode), "gemv_gemm");
  return dense_gemm(x, packed_t, absmax_t, row_scale, codebook, k, DensePath::kGemv, 0, d);
}

at::Tensor tile_gemm_cuda(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                          const at::Tensor& row_scale, const at::Tensor& codebook, int64_t k) {
  return dense_gemm(x, packed_t, absmax_t, row_scale, codebook, k, DensePath::kTile);
}

at::Tensor wgmma_gemm_cuda(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                           const at::Tensor& row_scale, const at::Tensor& codebook, int64_t k) {
  return dense_gemm(x, packed_t, absmax_t, row_scale, codebook, k, DensePath::kWgmma);
}

at::Tensor dequant_cublas_gemm_cuda(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                    const at::Tensor& row_scale, const at::Tensor& codebook, int64_t k) {
  return dense_gemm(x, packed_t, absmax_t, row_scale, codebook, k, DensePath::kDequantCublas);
}

// Grouped, E <= kTcMaxExperts: the GEMV (DensePath::kGemv, decode gemv_decode), small-M (kSmallM) or tile
// (kTile) kernel.
at::Tensor grouped_launch(const at::Tensor& x_in, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                          const at::Tensor& row_scale, const at::Tensor& codebook, const at::Tensor& expert_offsets,
                          const WeightGeometry& g, DensePath kernel, GemvDecode gemv_decode = GemvDecode::kAuto,
                          bool gated_silu = false) {
  TORCH_INTERNAL_ASSERT(!gated_silu || kernel == DensePath::kGemv, "only the grouped GEMV fuses silu_and_mul");
  const at::Tensor x = aligned_activations(x_in.contiguous()), cb = codebook.contiguous();
  const at::Tensor offsets = expert_offsets.contiguous();
  at::Tensor y = at::empty({x.size(0), gated_silu ? g.rows / 2 : g.rows}, x.options());
  if (x.size(0) == 0) return y;  // an empty result on any GPU
  const cudaDeviceProp& prop = *at::cuda::getCurrentDeviceProperties();
  TcGemmArgs args = tc_args(x, packed_t, absmax_t, row_scale, cb, g, y);
  args.experts = g.experts;
  args.expert_offsets = offsets.data_ptr<int32_t>();
  args.tokens_per_unit = tc_grouped_tokens_hint(args.M, g.experts);
  args.gemv_decode = gemv_decode;
  args.gated_silu = gated_silu;
  if (kernel == DensePath::kGemv) {
    args.tokens_per_unit = gemv_grouped_chunk_rows(args.M, g.experts, gemv_decode);
    // (grouped_gemm_silu_and_mul asked for the rows per chunk just before; a tuning aid set in between could change
    // them: refused here, and the launch checks the kernel's token slots again)
    TORCH_CHECK(!gated_silu || args.tokens_per_unit <= kGemvGatedMaxTokens, "kbit: grouped_gemm_silu_and_mul: the "
                "grouped GEMV's gated epilogue takes chunks of at most ", kGemvGatedMaxTokens, " rows; got ",
                args.tokens_per_unit);
  } else if (kernel == DensePath::kTile) {
    check_tile_fits(g.k, args.tokens_per_unit, true, prop);
  } else if (std::min<int64_t>(g.experts, args.M) * g.row_tiles() >= 8 * int64_t(prop.multiProcessorCount)) {
    // Small-M kernel: one warp per unit once the units alone fill the GPU (at most min(E, T)
    // experts have rows; no sync to count them exactly): a warp then walks all of K for its 16
    // rows, so there is no hand-off of partial sums per unit, and the CTA's 8 warps take 8 row
    // tiles of the same expert and token(s), sharing the x loads. H100, k = 4, vs 8 warps per
    // unit: Qwen3 MoE gate/up 256 x 1 token 211.5 -> 89.0 us, 512 x 1 422.6 -> 170.2 us, 64 x 1
    // 38.3 -> 24.0 us; down 256 x 1 200.4 -> 132.4 us; with 8 experts (too few units) it lost
    // (10.4 -> 14.1 us).
    args.warps_per_unit = 1;
  }
  launch(x, g.k, kernel, args);
  return y;
}

WeightGeometry check_grouped(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                             const at::Tensor& row_scale, const at::Tensor& codebook,
                             const at::Tensor& expert_offsets, int64_t k, const char* op = "grouped_gemm") {
  const WeightGeometry g = check_gemm_args(x, packed_t, absmax_t, row_scale, codebook, k, true, op);
  check_same_device({{"x", &x}, {"expert_offsets", &expert_offsets}});
  check_expert_offsets(expert_offsets, g.experts, x.size(0), /*check_values=*/false);
  return g;
}

at::Tensor grouped_gemm_cuda(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                             const at::Tensor& row_scale, const at::Tensor& codebook,
                             const at::Tensor& expert_offsets, int64_t k) {
  const WeightGeometry g = check_grouped(x, packed_t, absmax_t, row_scale, codebook, expert_offsets, k);
  const c10::cuda::CUDAGuard guard(x.device());
  if (g.experts > kTcMaxExperts)
    return grouped_gemm_dequant_cublas(x.contiguous(), packed_t, absmax_t, row_scale, codebook, expert_offsets, k, g);
  const cudaDeviceProp& prop = *at::cuda::getCurrentDeviceProperties();
  const DensePath kernel = grouped_gemm_path(x.size(0), g.experts, g.rows, g.cols, g.k, prop);
  return grouped_launch(x, packed_t, absmax_t, row_scale, codebook, expert_offsets, g, kernel);
}

// kbit.Experts' gate/up call: the grouped GEMM of a weight whose rows are gate and up interleaved in 8s, then
// silu_and_mul. Where grouped_gemm takes the grouped GEMV with chunks of 1-2 rows (decode), its epilogue writes
// silu(gate) * up (TcGemmArgs::gated_silu: one kernel fewer in the decode step's chain); elsewhere grouped_gemm, then
// silu_and_mul reading the interleaved columns. The same bits either way.
at::Tensor grouped_gemm_silu_and_mul_cuda(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                          const at::Tensor& row_scale, const at::Tensor& codebook,
                                          const at::Tensor& expert_offsets, int64_t k) {
  const WeightGeometry g =
      check_grouped(x, packed_t, absmax_t, row_scale, codebook, expert_offsets, k, "grouped_gemm_silu_and_mul");
  check_gated_rows(g.rows, "grouped_gemm_silu_and_mul");
  const c10::cuda::CUDAGuard guard(x.device());
  if (g.experts <= kTcMaxExperts) {
    const cudaDeviceProp& prop = *at::cuda::getCurrentDeviceProperties();
    if (grouped_gemm_path(x.size(0), g.experts, g.rows, g.cols, g.k, prop) == DensePath::kGemv &&
        gemv_grouped_chunk_rows(x.size(0), g.experts, GemvDecode::kAuto) <= kGemvGatedMaxTokens)
      return grouped_launch(x, packed_t, absmax_t, row_scale, codebook, expert_offsets, g, DensePath::kGemv,
                            GemvDecode::kAuto, /*gated_silu=*/true);
  }
  return silu_and_mul_interleaved(grouped_gemm_cuda(x, packed_t, absmax_t, row_scale, codebook, expert_offsets, k));
}

// A gated MLP's fused gate/up call (kbit.nn.GatedMLP): the dense GEMM of a weight whose rows are gate and up
// interleaved in 8s, then silu_and_mul. Where gemm takes the GEMV at M = 1 (decode; kGemvDenseGatedMaxTokens) in a plan
// with the gated epilogue (gemv_fuses_silu), its epilogue writes silu(gate) * up; elsewhere gemm, then silu_and_mul
// reading the interleaved columns. The same bits either way.
at::Tensor gemm_silu_and_mul_cuda(const at::Tensor& x_in, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                  const at::Tensor& row_scale, const at::Tensor& codebook, int64_t k) {
  const WeightGeometry g =
      check_gemm_args(x_in, packed_t, absmax_t, row_scale, codebook, k, false, "gemm_silu_and_mul");
  check_gated_rows(g.rows, "gemm_silu_and_mul");
  const c10::cuda::CUDAGuard guard(x_in.device());
  const int64_t M = x_in.size(0);
  if (M == 0) return at::empty({0, g.rows / 2}, x_in.options());
  const cudaDeviceProp& prop = *at::cuda::getCurrentDeviceProperties();
  if (M <= kGemvDenseGatedMaxTokens &&
      dense_gemm_path(M, g.rows, g.cols, g.k, x_in.scalar_type() == at::kBFloat16, prop) == DensePath::kGemv) {
    const at::Tensor x = aligned_activations(x_in.contiguous()), cb = codebook.contiguous();
    at::Tensor y = at::empty({M, g.rows / 2}, x.options());
    TcGemmArgs args = tc_args(x, packed_t, absmax_t, row_scale, cb, g, y);
    args.gated_silu = true;
    const bool fuses = with_k(g.k, [&](auto kc) {
      constexpr int K = decltype(kc)::value;
      return x.scalar_type() == at::kHalf ? gemv_fuses_silu<c10::Half, K>(args)
                                          : gemv_fuses_silu<c10::BFloat16, K>(args);
    });
    if (fuses) {
      launch(x, g.k, DensePath::kGemv, args);
      return y;
    }
  }
  return silu_and_mul_interleaved(dense_gemm(x_in, packed_t, absmax_t, row_scale, codebook, k, std::nullopt));
}

// The grouped kernels called directly (grouped_gemv_gemm / grouped_mma_gemm / grouped_tile_gemm):
// E <= kTcMaxExperts.
at::Tensor grouped_kernel(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                          const at::Tensor& row_scale, const at::Tensor& codebook, const at::Tensor& expert_offsets,
                          int64_t k, DensePath kernel, GemvDecode gemv_decode = GemvDecode::kAuto) {
  const WeightGeometry g = check_grouped(x, packed_t, absmax_t, row_scale, codebook, expert_offsets, k);
  const char* name = kernel == DensePath::kTile   ? "grouped_tile_gemm"
                     : kernel == DensePath::kGemv ? "grouped_gemv_gemm"
                                                  : "grouped_mma_gemm";
  TORCH_CHECK(g.experts <= kTcMaxExperts, "kbit: ", name, " takes at most ", kTcMaxExperts, " experts (got E=",
              g.experts, "); grouped_gemm handles more");
  const c10::cuda::CUDAGuard guard(x.device());
  return grouped_launch(x, packed_t, absmax_t, row_scale, codebook, expert_offsets, g, kernel, gemv_decode);
}

at::Tensor grouped_tile_gemm_cuda(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                  const at::Tensor& row_scale, const at::Tensor& codebook,
                                  const at::Tensor& expert_offsets, int64_t k) {
  return grouped_kernel(x, packed_t, absmax_t, row_scale, codebook, expert_offsets, k, DensePath::kTile);
}

at::Tensor grouped_gemv_gemm_cuda(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                  const at::Tensor& row_scale, const at::Tensor& codebook,
                                  const at::Tensor& expert_offsets, int64_t k, c10::string_view decode) {
  const GemvDecode d = parse_gemv_decode(std::string(decode), "grouped_gemv_gemm");
  return grouped_kernel(x, packed_t, absmax_t, row_scale, codebook, expert_offsets, k, DensePath::kGemv, d);
}

at::Tensor grouped_mma_gemm_cuda(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                 const at::Tensor& row_scale, const at::Tensor& codebook,
                                 const at::Tensor& expert_offsets, int64_t k) {
  return grouped_kernel(x, packed_t, absmax_t, row_scale, codebook, expert_offsets, k, DensePath::kSmallM);
}

}  // namespace

std::optional<at::Tensor> grouped_gemv_slots(const at::Tensor& x_in, const at::Tensor& packed_t,
                                             const at::Tensor& absmax_t, const at::Tensor& row_scale,
                                             const at::Tensor& codebook, const at::Tensor& top_k_index,
                                             const WeightGeometry& g, bool gated_silu) {
  const int64_t T = x_in.size(0), S = top_k_index.numel();
  if (T == 0 || S == 0 || S > kGemvMaxSlots || g.experts > kTcMaxExperts) return std::nullopt;
  const c10::cuda::CUDAGuard guard(x_in.device());
  const at::Tensor x = aligned_activations(x_in.contiguous()), cb = codebook.contiguous();
  const at::Tensor ids = top_k_index.contiguous();
  at::Tensor y = at::empty({S, gated_silu ? g.rows / 2 : g.rows}, x.options());
  TcGemmArgs args = tc_args(x, packed_t, absmax_t, row_scale, cb, g, y);
  args.M = S;  // the slots, one row each
  args.experts = S;
  args.tokens_per_unit = 1;
  args.expert_offsets = static_cast<const int32_t*>(ids.data_ptr());  // (by slot: the ids, int32 or int64)
  args.slot_ids_32 = ids.scalar_type() == at::kInt;
  args.slot_x_div = static_cast<int32_t>(S / T);
  args.slot_stacked_experts = static_cast<int32_t>(g.experts);
  args.gated_silu = gated_silu;
  const bool takes = with_k(g.k, [&](auto kc) {
    constexpr int K = decltype(kc)::value;
    return x.scalar_type() == at::kHalf ? gemv_takes_slots<c10::Half, K>(args)
                                        : gemv_takes_slots<c10::BFloat16, K>(args);
  });
  if (!takes) return std::nullopt;
  launch(x, g.k, DensePath::kGemv, args);
  return y;
}

namespace {
// kbit.Experts' decode calls: the grouped GEMV by slot where it takes the call, else the op composed of others.
at::Tensor grouped_gemm_slots_cuda(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                   const at::Tensor& row_scale, const at::Tensor& codebook,
                                   const at::Tensor& top_k_index, int64_t k, bool silu_and_mul) {
  const WeightGeometry g =
      check_grouped_gemm_slots_args(x, packed_t, absmax_t, row_scale, codebook, top_k_index, k, silu_and_mul);
  if (auto y = grouped_gemv_slots(x, packed_t, absmax_t, row_scale, codebook, top_k_index, g, silu_and_mul)) return *y;
  return grouped_gemm_slots_composite(x, packed_t, absmax_t, row_scale, codebook, top_k_index, k, silu_and_mul);
}
}  // namespace

WgmmaLaunchQuery wgmma_launch_plan(int64_t M, int64_t N, int64_t K, int k, int device) {
  check_k(k);
  TORCH_CHECK(M >= 1 && N >= 1 && K >= 1, "kbit._C._wgmma_launch_plan: needs M, N, K >= 1; got M=", M, ", N=", N,
              ", K=", K);
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  const cudaDeviceProp& prop = *at::cuda::getCurrentDeviceProperties();
  TORCH_CHECK(wgmma_gemm_available(k, M, prop), "kbit._C._wgmma_launch_plan: wgmma_gemm does not run for k=", k,
              " on this GPU (", prop.name, ") or build (see kbit._C.wgmma_gemm_runs)");
  const WgmmaPlan p = wgmma_plan(M, N, K, k, prop.multiProcessorCount);
  return {p.shape.tokens, p.shape.row_tiles, p.splits,
          p.stream ? p.grid_clusters : wgmma_work_ctas(M, N, p.shape, p.splits, p.whole_clusters),
          p.grid_clusters * p.splits, p.first_stage_alone,
          p.splits == 1 ? int64_t(prop.multiProcessorCount) : int64_t(wgmma_clusters(k, p.shape, p.splits)),
          wgmma_units(M, N, p.shape), p.stream ? 0 : wgmma_whole_units(M, N, p.shape, p.splits, p.whole_clusters),
          p.stream};
}

GemvLaunchQuery gemv_launch_plan(int64_t M, int64_t N, int64_t K, int k, const std::string& decode, int device) {
  check_k(k);
  TORCH_CHECK(M >= 1 && M <= kGemvMaxRows && N >= 1 && K >= 1, "kbit._C._gemv_launch_plan: needs 1 <= M <= ",
              kGemvMaxRows, " and N, K >= 1; got M=", M, ", N=", N, ", K=", K);
  const GemvDecode d = parse_gemv_decode(decode, "_gemv_launch_plan");
  TORCH_CHECK(d != GemvDecode::kShuffle || M <= kGemvShuffleMaxTokens, "kbit._C._gemv_launch_plan: decode='shuffle' "
              "takes at most ", kGemvShuffleMaxTokens, " rows; got M=", M);
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  TcGemmArgs args{};
  args.M = M;
  args.N = N;
  args.K = K;
  args.experts = 1;
  args.tokens_per_unit = M;
  args.gemv_decode = d;
  const GemvLaunchPlan p = with_k(k, [&](auto kc) { return plan_scalar_gemv<c10::Half, decltype(kc)::value>(args); });
  return {p.token_slots, p.token_chunks, gemv_decode_name(p.decode), p.x_resident, p.ring_stages, p.warps,
          p.warps_per_unit, p.smem_bytes, p.launch_smem_bytes, p.ctas_per_sm, p.grid, p.split_cluster, 0, "",
          static_cast<int64_t>(p.staged_layout), p.x_shared, p.x_shared_run};
}

GemvLaunchQuery grouped_gemv_launch_plan(int64_t T, int64_t E, int64_t N, int64_t K, int k, const std::string& decode,
                                         int device) {
  check_k(k);
  TORCH_CHECK(T >= 1 && E >= 1 && E <= kTcMaxExperts && N >= 1 && K >= 1, "kbit._C._grouped_gemv_launch_plan: needs "
              "T >= 1, 1 <= E <= ", kTcMaxExperts, " and N, K >= 1; got T=", T, ", E=", E, ", N=", N, ", K=", K);
  const GemvDecode d = parse_gemv_decode(decode, "_grouped_gemv_launch_plan");
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  TcGemmArgs args{};
  args.M = T;
  args.N = N;
  args.K = K;
  args.experts = E;
  static const int32_t kNotRead = 0;
  args.expert_offsets = &kNotRead;  // (grouped; planning reads no offsets)
  args.tokens_per_unit = gemv_grouped_chunk_rows(T, E, d);
  args.gemv_decode = d;
  const GemvLaunchPlan p = with_k(k, [&](auto kc) { return plan_scalar_gemv<c10::Half, decltype(kc)::value>(args); });
  const char* schedule = p.warp_schedule ? (p.static_first_chunks ? "per_warp_static" : "per_warp")
                         : p.row_schedule ? "per_cta_rows"
                                          : "per_cta_scans";
  return {p.token_slots, p.token_chunks, gemv_decode_name(p.decode), p.x_resident, p.ring_stages, p.warps,
          p.warps_per_unit, p.smem_bytes, p.launch_smem_bytes, p.ctas_per_sm, p.grid, p.split_cluster,
          args.tokens_per_unit, schedule, static_cast<int64_t>(p.staged_layout), p.x_shared, p.x_shared_run};
}

}  // namespace cuda

TORCH_LIBRARY_IMPL(kbit, CUDA, m) {
  m.impl("gemm", &cuda::gemm_cuda);
  m.impl("grouped_gemm", &cuda::grouped_gemm_cuda);
  m.impl("grouped_gemm_silu_and_mul", &cuda::grouped_gemm_silu_and_mul_cuda);
  m.impl("gemm_silu_and_mul", &cuda::gemm_silu_and_mul_cuda);
  m.impl("grouped_gemm_slots", &cuda::grouped_gemm_slots_cuda);
  m.impl("mma_gemm", &cuda::mma_gemm_cuda);
  m.impl("gemv_gemm", &cuda::gemv_gemm_cuda);
  m.impl("tile_gemm", &cuda::tile_gemm_cuda);
  m.impl("wgmma_gemm", &cuda::wgmma_gemm_cuda);
  m.impl("dequant_cublas_gemm", &cuda::dequant_cublas_gemm_cuda);
  m.impl("grouped_mma_gemm", &cuda::grouped_mma_gemm_cuda);
  m.impl("grouped_gemv_gemm", &cuda::grouped_gemv_gemm_cuda);
  m.impl("grouped_tile_gemm", &cuda::grouped_tile_gemm_cuda);
}

}  // namespace kbit

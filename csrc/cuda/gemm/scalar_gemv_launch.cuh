#pragma once
// Host side of the GEMV (scalar_gemv.cuh): which kernel a call takes (decode, token slots), its
// launch plan (warps, shared memory, grid) and the launch. plan_scalar_gemv answers what
// launch_scalar_gemv would launch, without launching (kbit._C._gemv_launch_plan: tests, tuning).
#include <ATen/cuda/CUDAContext.h>

#include <algorithm>
#include <array>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../common/dependent_launch.h"
#include "../common/kernel_residency.h"
#include "../common/remembered_plans.h"
#include "scalar_gemv.cuh"
#include "scalar_gemv.h"
#include "scalar_gemv_split.cuh"

namespace kbit {
namespace cuda {

// The decode a launch takes (resolve_gemv_decode) and its kernel's
// token slots: gemv_token_slots of the rows per unit (dense: min(M, 16); more rows are token
// chunks), raised for dense mma launches to the tuning floor (gemv_min_token_slots; grouped launches chunk by their slots, so never there).
inline std::pair<GemvDecode, int> gemv_decode_and_slots(const TcGemmArgs& args) {
  const bool grouped = args.expert_offsets != nullptr;
  int slots = gemv_token_slots(grouped ? args.tokens_per_unit : std::min<int64_t>(args.M, kGemvMaxTokens));
  const GemvDecode decode = resolve_gemv_decode(args.gemv_decode);
  if (!grouped && decode == GemvDecode::kMma) slots = std::max(slots, gemv_min_token_slots());
  return {decode, slots};
}

template <int kTokens>
using GemvSlots = std::integral_constant<int, kTokens>;
template <GemvDecode kDecode>
using GemvDecodeTag = std::integral_constant<GemvDecode, kDecode>;

// f(GemvSlots<kTokens>, GemvDecodeTag<decode>) for the kernel the launch takes (gemv_decode_and_slots).
template <typename F>
auto with_gemv_kernel(const TcGemmArgs& args, F&& f) {
  const bool grouped = args.expert_offsets != nullptr;
  TORCH_CHECK(!grouped || (args.tokens_per_unit >= 1 && args.tokens_per_unit <= kGemvMaxTokens), "kbit: the grouped "
              "GEMV takes 1 to ", kGemvMaxTokens, " rows per unit; got ", args.tokens_per_unit);
  TORCH_CHECK(grouped || (args.M >= 1 && args.M <= kGemvMaxRows), "kbit: the GEMV takes 1 to ", kGemvMaxRows,
              " rows; got ", args.M);
  const auto [decode, slots] = gemv_decode_and_slots(args);
  // gemm_cuda.cpp refuses a shuffle decode above 4 rows first, with the op's name; a guard for new callers.
  TORCH_CHECK(decode != GemvDecode::kShuffle || (slots <= kGemvShuffleMaxTokens && (grouped || args.M <= slots)),
              "kbit: the GEMV's shuffle decode takes at most ", kGemvShuffleMaxTokens, " rows per unit; got ",
              grouped ? args.tokens_per_unit : args.M);
  const bool shuffle = decode == GemvDecode::kShuffle;
  constexpr GemvDecodeTag<GemvDecode::kShuffle> kShuffle{};
  constexpr GemvDecodeTag<GemvDecode::kMma> kMma{};
  switch (slots) {
    case 1: return shuffle ? f(GemvSlots<1>{}, kShuffle) : f(GemvSlots<1>{}, kMma);
    case 2: return shuffle ? f(GemvSlots<2>{}, kShuffle) : f(GemvSlots<2>{}, kMma);
    case 3: return shuffle ? f(GemvSlots<3>{}, kShuffle) : f(GemvSlots<3>{}, kMma);
    case 4: return shuffle ? f(GemvSlots<4>{}, kShuffle) : f(GemvSlots<4>{}, kMma);
    case 8: return f(GemvSlots<8>{}, kMma);
    default: return f(GemvSlots<16>{}, kMma);
  }
}

// The grouped GEMV by slot (TcGemmArgs::slot_x_div > 0; kbit::grouped_gemm_slots).
template <typename T, int K>
auto gemv_by_slot_kernel() {
  return scalar_gemv_kernel<T, K, 1, true, GemvDecode::kMma, false, false, GemvStagedLayout::kSingle, false, true>;
}

// The kernel of a launch: grouped, dense, or dense x-resident (mma decode only).
template <typename T, int K, int kTokens, GemvDecode kDecode>
const void* gemv_kernel_of(bool grouped, bool x_resident) {
  TORCH_CHECK(!x_resident || (!grouped && kDecode == GemvDecode::kMma), "kbit: x resident is dense, mma decode only");
  if constexpr (kDecode == GemvDecode::kMma)
    if (x_resident) return reinterpret_cast<const void*>(scalar_gemv_kernel<T, K, kTokens, false, kDecode, true>);
  return grouped ? reinterpret_cast<const void*>(scalar_gemv_kernel<T, K, kTokens, true, kDecode, false>)
                 : reinterpret_cast<const void*>(scalar_gemv_kernel<T, K, kTokens, false, kDecode, false>);
}
// The grouped x-shared kernel (scalar_gemv.cuh kSharedX; gemv_can_share_x's token slots and decode only).
template <typename T, int K, int kTokens, GemvDecode kDecode>
auto gemv_shared_x_kernel() {
  static_assert(gemv_can_share_x(true, kDecode, kTokens), "x shared: mma decode, 4-8 token slots");
  return scalar_gemv_kernel<T, K, kTokens, true, kDecode, false, false, GemvStagedLayout::kSingle, true>;
}

// The dense x-staged mma-decode kernel of a CTA layout with unit slots (GemvStagedLayout::kSlots, or kWide at
// k = 4), up to kGemvShuffleMaxTokens token slots.
using GemvKernel = void (*)(TcGemmArgs);
template <typename T, int K, int kTokens, GemvStagedLayout kLayout>
GemvKernel gemv_slots_kernel() {
  if constexpr (kTokens <= kGemvShuffleMaxTokens && (kLayout == GemvStagedLayout::kSlots || K == 4))
    return scalar_gemv_kernel<T, K, kTokens, false, GemvDecode::kMma, false, false, kLayout>;
  TORCH_CHECK(false, "kbit: the GEMV's unit-slot layouts take up to ", kGemvShuffleMaxTokens,
              " rows, the wide table k = 4");
  return nullptr;
}
template <typename T, int K, int kTokens>
GemvKernel gemv_staged_kernel_of(GemvStagedLayout layout) {
  return layout == GemvStagedLayout::kWide ? gemv_slots_kernel<T, K, kTokens, GemvStagedLayout::kWide>()
                                           : gemv_slots_kernel<T, K, kTokens, GemvStagedLayout::kSlots>();
}

// The dense gated kernels (scalar_gemv.cuh kDenseGated): x staged or resident, mma decode, the single layout, up to
// kGemvDenseGatedMaxTokens token slots.
template <typename T, int K, int kTokens>
GemvKernel gemv_dense_gated_kernel(bool x_resident) {
  if constexpr (kTokens <= kGemvDenseGatedMaxTokens) {
    constexpr auto kMma = GemvDecode::kMma;
    constexpr auto kSingle = GemvStagedLayout::kSingle;
    return x_resident ? scalar_gemv_kernel<T, K, kTokens, false, kMma, true, false, kSingle, false, false, true>
                      : scalar_gemv_kernel<T, K, kTokens, false, kMma, false, false, kSingle, false, false, true>;
  }
  TORCH_CHECK(false, "kbit: the dense gated GEMV takes ", kGemvDenseGatedMaxTokens, " token slot");
  return nullptr;
}

// The cluster split of a dense launch (scalar_gemv_split.cuh: M <= 4, mma decode, x staged) of `warps`
// warps per CTA: its cluster size (0: none), shared memory, CTAs per SM and grid (clusters x size).
// The rule (session 28): k = 5 only, clusters of 2 where the plain grid takes the tiles in two or more rounds. At
// k = 4 the plain kernel overtook it (its item loop stepped by adds and x loaded by the lanes that use it: 70B
// gate/up M = 1 40.1 against 41.3 us, session 28 runs 5-6), and at M = 2-4 on such shapes x resident runs (the
// decode rule of plan_gemv_kernel). Session 27 (H200, us, plain / clusters of 2; runs 5 and 7): at k >= 4, clusters of 2 where the
// plain grid (plain_grid CTAs) takes the tiles in two or more rounds: k = 4, Llama-3 70B gate/up M = 1 (3.4
// rounds) 43.4 / 40.4, M = 2-4 (4.5) 46.3-50.5 / 44.6-47.9, 8B gate/up M = 2-4 (2.3) 15.3-16.6 / 14.7-15.3;
// k = 5, 70B M = 1-4 78.5-90.5 / 75.9-82.3. At k = 2 and 3 a step is cheaper and the split's own work
// (its pieces' sums, the cluster barrier) did not pay: 70B k = 2 M = 1-4 37.9-44.7 / 39.1-45.4, k = 3
// 39.4-46.0 / 39.9-46.2. The
// kernel's partial last round runs faster than its share of the work (fewer warps share each SM), so
// under two rounds the split lost or tied: 8B M = 1 (1.7 rounds) 13.0 / 13.2, GLM shared gate/up M = 1
// (1.2) 6.9 / 7.1, M = 2-4 (1.6) even; on one round (the Qwen3 shapes) it took 0.3-0.9 us more. Clusters
// of 4 lost to 2 but on KV (70B M = 1 41.8, 8B M = 4 16.0; KV 3.0-3.2 against 3.1-3.2, where neither pays). Only on
// sm_90+ (clusters). A forced size (gemv_split_cluster > 0) is
// taken wherever it fits. Every cluster gets at least as many steps as it has CTAs (none without work).
struct GemvSplitChoice {
  int cluster, smem_bytes, ctas_per_sm;
  int64_t grid;
};
template <typename T, int K, int kTokens>
GemvSplitChoice choose_gemv_split(int64_t tiles, int64_t cols, int warps, int64_t plain_grid,
                                  const cudaDeviceProp& prop, int optin) {
  const int forced = gemv_split_cluster();
  const void* kernel = reinterpret_cast<const void*>(scalar_gemv_split_kernel<T, K, kTokens>);
  const int64_t n_steps = gemv_split_steps(cols, warps);
  if (forced < 0 && (K < 5 || tiles < 2 * plain_grid)) return GemvSplitChoice{0, 0, 0, 0};
  // clusters: sm_90+, and this GPU's code for the kernel built for it (else its body is compiled out)
  if (prop.major < 9 || !kernel_built_for_sm90(kernel)) return GemvSplitChoice{0, 0, 0, 0};
  const int c = forced > 0 ? forced : 2;
  const int smem = gemv_split_smem_bytes(K, kTokens, warps, c);
  if (smem > optin) return GemvSplitChoice{0, 0, 0, 0};
  const int per_sm = resident_ctas_per_sm(kernel, 32 * warps, smem, optin);
  const int64_t fit = std::min<int64_t>(resident_clusters(kernel, 32 * warps, smem, c),
                                        int64_t(per_sm) * prop.multiProcessorCount / c);
  const int64_t clusters = std::min<int64_t>(fit, tiles / ((c + n_steps - 1) / n_steps));  // >= c steps each
  if (clusters < 1 || (tiles + clusters - 1) / clusters * n_steps > kGemvSplitMaxSteps) return GemvSplitChoice{0, 0, 0, 0};
  return GemvSplitChoice{c, smem, per_sm, clusters * c};
}

template <typename T, int K, int kTokens, GemvDecode kDecode>
GemvLaunchPlan plan_gemv_kernel(const TcGemmArgs& args) {
  const bool grouped = args.expert_offsets != nullptr;
  const cudaDeviceProp& prop = *at::cuda::getCurrentDeviceProperties();
  const int optin = static_cast<int>(prop.sharedMemPerBlockOptin);
  const int experts = grouped ? static_cast<int>(args.experts) : -1;
  const int64_t tiles = (args.N + kTileRows - 1) / kTileRows;
  // The kernel's dynamic shared-memory limit (one value per kernel and device, kernel_residency.h):
  // all the GPU grants a block, for the spread's padding. (The kernel has no static shared memory,
  // so a block of that many bytes fits on an SM by itself.)
  const int smem_limit = optin;
  // Warps with x resident or staged (and that launch's ring stages): shuffle decode, one per
  // 256-column group (gemv_warps); mma decode, gemv_mma_warps, but with 8 or 16 token slots
  // whichever of 4 or 8 keeps more warps resident per SM (16 slots: the x slots make a 4-warp CTA
  // too big for two per SM; only where K has >= 8 groups, so warps <= groups holds either way;
  // grouped launches then rebuild 8-warp CTAs from unit slots, below). Fewer where this GPU's
  // shared memory per block cannot hold that many rings (~100 KB per block: k = 5, or M = 3-4; the
  // H100's 227 KB always can with x staged). warps_per_sm: then resident per SM (0: nothing fits).
  // x resident: one CTA of up to kGemvResidentMaxWarps warps shares one table and one x image, in 1,
  // 2 or 4 unit slots of wpu warps (at most K's groups, so 9-15 too: K = 2080 takes 9); the
  // candidates are one slot of the staged rule's warps, 16, 8 and 4, then the same in 2 and 4 slots
  // (at most gemv_max_unit_slots), each with the most ring stages (4, 3, 2; or the tuning aid's) that
  // keep its CTAs per SM. The most warps per SM wins; among those, the shortest critical path in
  // items per warp: unit rounds (units over the GPU's unit slots) x ceil(groups / warps per unit),
  // then fewer rounds (a round's units run side by side, a later round's tail on few SMs), then the
  // earlier candidate (even where a later one had more stages). Session 16, H100, k = 4, us, 8 / 4
  // warps per unit (two / four slots of a 16-warp CTA): Qwen3 Q M = 16 5.45 / 7.06 (1 / 2 items),
  // M = 32 8.21 / 7.40 (2 / 2 items, 2 / 1 rounds), M = 64 13.74 / 11.96 (4 / 4, 4 / 2); gate/up
  // (320 tiles) M = 16 8.04 / 7.26 (2 / 2, 2 / 1), M = 32 10.88 / 11.64 (3 / 4 items).
  const int chunks = grouped ? 1 : gemv_token_chunks(args.M);
  TORCH_CHECK(chunks == 1 || kTokens == kGemvMaxTokens, "kbit: GEMV token chunks need ", kGemvMaxTokens, " slots");
  struct WarpChoice {
    int warps, slots, stages, warps_per_sm;  // warps per unit; CTA = slots x warps
    int64_t rounds;                         // x resident: unit rounds over the GPU's slots
  };
  // K's 256-column groups, and a launch's critical path in items: rounds of units x a warp's share of a unit's groups
  // (the x-resident chooser and the decode rule below).
  const int64_t groups = (args.K + 255) / 256;
  const auto critical_path = [groups](int64_t rounds, int warps) { return rounds * ((groups + warps - 1) / warps); };
  // only_warps > 0: x resident at that many warps per unit only (the decode rules below); stage_cap > 0: at most that
  // many ring stages (where the stages aid is at 0); x resident, CTAs of at most max_cta_warps warps.
  const auto choose_warps = [&](bool resident, int only_warps, int stage_cap = 0,
                                int max_cta_warps = kGemvResidentMaxWarps) {
    const void* kern = gemv_kernel_of<T, K, kTokens, kDecode>(grouped, resident);
    const auto bytes_of = [&](int w, int st) {
      return gemv_smem_bytes(K, kTokens, w, experts, kDecode, st, resident, args.K);
    };
    const auto per_sm = [&](int w, int st) {
      return bytes_of(w, st) > optin ? 0 : w * resident_ctas_per_sm(kern, 32 * w, bytes_of(w, st), smem_limit);
    };
    int w = kDecode == GemvDecode::kMma ? gemv_mma_warps(args.K, tiles, grouped, prop.multiProcessorCount)
                                        : gemv_warps(args.K);
    if (kDecode == GemvDecode::kMma && gemv_unit_warps() > 0) w = std::min(gemv_unit_warps(), gemv_warps(args.K));
    const bool one_warps = gemv_unit_warps() > 0 || (resident && only_warps > 0);
    if (resident && only_warps > 0 && gemv_unit_warps() == 0) w = std::min(only_warps, gemv_warps(args.K));
    if (resident) {
      const auto critical_items = [&](const WarpChoice& c) { return critical_path(c.rounds, c.warps); };
      WarpChoice best{w, 1, kGemvStages, 0, 0};
      const int most_stages = gemv_resident_stages() > 0 ? gemv_resident_stages()
                              : stage_cap > 0              ? stage_cap
                                                           : kGemvResidentMaxStages;
      const int least_stages = gemv_resident_stages() > 0 ? gemv_resident_stages() : kGemvStages;
      for (int slots = 1; slots <= std::min(kGemvResidentMaxSlots, gemv_max_unit_slots()); slots *= 2) {
        for (int cand : {w, kGemvResidentMaxWarps, 8, 4}) {
          cand = std::min(cand, gemv_warps(args.K));
          if ((one_warps && cand != w) || cand * slots > max_cta_warps) continue;
          for (int st = least_stages; st <= most_stages; ++st) {  // more stages only at the same warps per SM
            const int ps = per_sm(cand * slots, st);
            if (ps == 0) break;  // (more stages only take more shared memory)
            const int64_t unit_slots = int64_t(ps / cand) * prop.multiProcessorCount;  // (ps / cand: CTAs x slots)
            const WarpChoice c{cand, slots, st, ps, (tiles * chunks + unit_slots - 1) / unit_slots};
            const bool better =
                ps != best.warps_per_sm ? ps > best.warps_per_sm
                : critical_items(c) != critical_items(best) ? critical_items(c) < critical_items(best)
                : c.rounds != best.rounds ? c.rounds < best.rounds
                : cand == best.warps && slots == best.slots && st > best.stages;
            if (better) best = c;
          }
        }
      }
      return best;
    }
    if (kDecode == GemvDecode::kMma && kTokens >= 8 && gemv_warps(args.K) >= 8 &&
        gemv_unit_warps() == 0) {  // (M <= 4: the rule, measured)
      const int alternative = w == 8 ? 4 : 8;
      if (per_sm(alternative, kGemvStages) > per_sm(w, kGemvStages)) w = alternative;
    }
    while (w > 1 && bytes_of(w, kGemvStages) > optin) --w;
    return WarpChoice{w, 1, kGemvStages, per_sm(w, kGemvStages), 0};
  };
  // x resident (dense, mma decode; scalar_gemv.cuh): mode 2 wherever the x image fits; mode 1 (the
  // rule) from kGemvXResidentMinTokens token slots where x is reused (more units than the staged
  // launch's CTAs) and the warps per SM are at least staged x's, or M > 16 (token chunks) (session 15, H100, k = 4, us, staged /
  // resident: Llama-3 8B gate/up M = 8 / 16 / 32 21.3 / 17.6, 36.6 / 25.8, 68.5 / 45.3; Qwen3
  // gate/up M = 8 6.97 / 6.10, 16 9.74 / 8.56; with one unit per CTA it lost even with more warps:
  // O and down (128 tiles) at M = 8 4.14 / 4.54 and 4.86 / 5.14; with fewer warps, O at M = 16
  // 6.1 / 8.4 and 70B at M = 8 64.8 / 74.1 in the first version; at M <= 4 it lost or tied).
  const WarpChoice staged = choose_warps(false, 0);
  WarpChoice chosen = staged;
  bool x_resident = false;
  const int64_t staged_ctas = int64_t(staged.warps_per_sm / std::max(1, staged.warps)) * prop.multiProcessorCount;
  // Decode calls of 2-4 rows (session 28, H200, k = 4, us; the staged rule / x resident): x resident where the staged
  // grid takes the tiles in two or more rounds, with the warps per unit that give each warp 4 of a unit's 256-column
  // groups (4 to 8): Llama-3 8B gate/up (16 groups, 2.3 rounds), 4 warps, M = 2 / 3 / 4 14.67 / 14.92 / 15.06 against
  // 13.46 / 14.51 / 13.65 (8 warps: 14.43-14.99); 70B (32 groups, 4.5 rounds), 8 warps, 45.0 / 46.2 / 47.2 against
  // 41.0 / 42.4 / 40.9 (4 warps: 44.2-48.6). Under two rounds it lost (Qwen3 gate/up 4.3-4.4 against 5.2-5.7; GLM
  // shared gate/up, 1.6 rounds, 6.8-7.1 against 8.1-9.0; Q, down), and at M = 1 (8B 13.0 against 13.8 with 4
  // warps, 70B 40.1 against 40.9 with 8; layout version 3: since version 4, one row at k = 4 below).
  // Session 29 (run 1, us, the staged rule / x resident at 4 warps per unit): also from 1.5 rounds where K has 16 or
  // more groups (each warp 4 of a unit's groups): 8B gate/up (1.7 rounds at k = 2, 3, 5), M = 2 / 3 / 4, k = 2
  // 13.80 / 14.14 / 14.30 against 13.30 / 13.94 / 13.88, k = 3 13.95 / 14.49 / 14.67 against 13.46 / 14.28 / 14.04,
  // k = 5 22.22 / 23.46 / 23.63 against 22.05 / 22.57 / 22.93 (GLM shared gate/up, 8 groups, lost at 1.6 rounds).
  const bool reuse_pays = tiles >= 2 * staged_ctas || (groups >= 16 && 2 * tiles >= 3 * staged_ctas);
  // (the decode rules below: dense mma decode, one token chunk, the x-resident aid at the rule)
  const bool decode_rules = kDecode == GemvDecode::kMma && !grouped && chunks == 1 && gemv_x_resident() == 1;
  // One row, k = 4 (session 36 runs 7-8, H200, layout version 4, us; the staged rule / x resident at the rule's warps
  // per unit, 8 for 70B): x resident where the staged grid takes the tiles in three or more rounds: Llama-3 70B
  // gate/up (1792 tiles on 528 staged CTAs, 3.4 rounds) 43.60 against 39.78 (version 3's staged kernel: 40.1). Under
  // that it loses: 8B gate/up (896 tiles on 528, 1.7 rounds) 13.07 against 13.44 at 4 warps per unit, GLM shared
  // gate/up 6.73 against 7.18. Other k (session 37 run 1, 70B, the rule's kernel / x resident): k = 2 38.19 / 39.22,
  // k = 3 39.34 / 39.72, k = 5 (a cluster split of 2) 76.43 / 75.48: the k = 4 staged kernel is the slow one (k = 5's
  // 1.2%, in one run of two repetitions, left to the cluster split).
  const bool one_row_reside = args.M == 1 && K == 4 && tiles >= 3 * staged_ctas;
  const bool decode_reside =
      decode_rules && kTokens <= kGemvShuffleMaxTokens && ((args.M >= 2 && reuse_pays) || one_row_reside);
  const int decode_warps = static_cast<int>(std::clamp<int64_t>(groups / 4, 4, kGemvMmaMaxWarps));
  // 8 token slots (5-8 rows; fewer with the slot-floor aid), k <= 4, where the rule below takes x resident (decided with
  // the chooser's plan, as before): 4 warps per unit in unit slots, not the critical-path chooser's (session 29 run 1,
  // us, chooser / 4 warps per unit, M = 5 / 8; k = 4 unless said): 8B gate/up 16 warps per unit, 17.86 / 18.60 against
  // 16.96 / 17.21 (k = 2 M = 8 14.73 / 14.46, k = 3 15.94 / 14.50); GLM shared gate/up 8, 8.72 / 9.03 against 8.53 /
  // 8.78; 70B and Qwen3 gate/up: the chooser's pick is 4. At k = 5 the 16-warp unit won (8B M = 8 25.36 against 26.23);
  // at 16 slots it depends on the shape (Qwen3 Q M = 16: 8 warps 6.26, 4 warps 7.82). And 2 ring stages, not the most
  // that keep the CTAs per SM (run 4, 8B M = 8, one CTA of four slots: k = 4 15.82 us at 2 stages against 17.26 at 3; k =
  // 3 15.13 at 3 against 14.48 in two 8-warp CTAs of 2; Nsight Compute, k = 4: long-scoreboard stalls 1.21 a warp
  // instruction at 3 stages, 0.53 at 2).
  const bool eight_slots_four_warps = decode_rules && kTokens == 8 && K <= 4;
  // Session 47 (runs 1-2, H200, us, the rule above / 8 warps per unit, x resident, 2 stages): 8 warps per unit
  // instead where K has 16 or more groups, or where the 4-warp plan's CTAs would sit unevenly on the SMs (more CTAs
  // than SMs, fewer than fit, not a multiple of the SMs: some SMs run more CTAs' units than others). Qwen3 gate/up
  // (320 tiles, 160 CTAs of two 4-warp slots on 132 SMs) M = 5 / 8 5.48 / 5.77 against 4.80 / 5.10 (264 CTAs of one
  // 8-warp unit), k = 3 M = 8 5.65 / 4.89; Llama-3 70B (32 groups) M = 5 / 8 49.25 / 52.70 against 48.44 / 49.09; 8B
  // (16 groups) M = 8 k = 2 15.74 / 14.28, k = 3 15.94 / 14.54, k = 4 14.55 / 14.56 (k = 4 M = 5: 14.27 / 14.49 here,
  // 14.17 / 14.44 in run 4). Where the 4-warp CTAs fill the SMs evenly on 8 groups it loses: GLM shared gate/up (640
  // tiles, 264 CTAs) M = 5 / 8 6.98 / 7.28 against 7.53 / 7.74, k = 3 M = 8 6.96 against 7.99.
  const bool sixteen_slots_eight_warp_ctas = decode_rules && kTokens == 16 && K >= 4;
  // 16 token slots (9-16 rows), k = 4 and 5, where x resides: CTAs of at most 8 warps, 2 ring stages (session 47 run
  // 2, H200, k = 4, us, M = 12 / 16, the chooser's 16-warp CTAs / 8-warp CTAs at 2 stages, whose warps per unit the
  // chooser then picks): Qwen3 Q 4.89 / 5.06 against 4.48 / 4.61 (two 4-warp slots), gate/up 6.60 / 6.75 against
  // 6.13 / 6.63 (one 8-warp slot), GLM shared gate/up 9.30 / 9.94 against 9.04 / 9.95 (one 8-warp slot); Llama-3 8B
  // (8-warp CTAs already, 3 stages) 19.14 / 20.94 against 19.06-19.14 / 20.76-20.92 at 2: ties. Run 4 (builds A/B):
  // k = 5 gate/up 11.35 / 11.50 against 8.29 / 8.84, GLM 15.66 / 16.26 against 12.36 / 13.57, 8B 30.28 / 31.94
  // against 28.70 / 30.23; at k = 2 and 3 it lost (8B M = 16 19.76 / 19.35 against 21.92 / 21.93; GLM and gate/up at
  // k = 3 M = 16 +3%): not there.
  // (Other decode calls skip the resident plan's occupancy lookups.)
  // 1-4 rows, where the rules above consider x resident (session 66; the aid at 0: session 37's rule above). A call's
  // time follows its critical path in items: a warp's share of a unit's groups x the rounds of units over the GPU's unit
  // slots (with few rounds the last round's idle slots, and with K's groups not a multiple of the warps per unit the idle
  // warps, are part of it). So x resident at the warps per unit whose path is shortest, where it is at least 10% shorter
  // than the base's: the warps above rounded down to 4 or 8 (K of 20-31 groups took 5-7: at 4 rows those CTAs fit fewer
  // warps per SM than x staged's, so those shapes ran x staged; at 2 rows x resident in 5-warp CTAs), against 2, 4 and 8
  // at k = 4 and at k = 5 on 2-4 rows, 2 at other k (session 66 run 7, the k = 4 rule at every k: at k = 2 and 3 the
  // 8-warp units lost 1-14% where the path took them; at k = 5 and 2 / 4 rows they won, 28672 x 4096 40.59 / 40.45
  // against 44.35 / 44.33, 37888 x 3584 46.63 / 46.31 against 48.38 / 48.45, the rest within 0.4%; session 67). Then at
  // 2-4 rows as above (the warps per SM against x staged's; where the shorter candidate fits fewer, the base if it fits
  // as many), at one row (k = 4 only) where the path is at least 10% shorter than x staged's, else x staged. The model
  // has no cost per warp's start: where paths tie, 8 warps a unit on 8 groups (one item a warp) ran 13-14% slower than 4
  // (one row, 151936 x 2048 and 65536 x 2048), so a candidate takes fewer warps per unit than K has groups (session 67).
  // Runs 1-3 (H200, k = 4, us, cold L2; session 37's rule / x staged / x resident at 2 / 4 / 8 warps per unit): one row,
  // Qwen2.5-7B gate/up 37888 x 3584 (14 groups) 27.37 / 25.67 / 24.70 / 27.38 / 26.22 and lm_head 152064 x 3584 91.78 /
  // 86.63 / 82.55 / 92.53 / 97.71; Llama-3 8B gate/up fused 28672 x 4096 24.24 / 23.06 / 23.40 / 24.24 / 21.86 (1792
  // tiles: 3.4 rounds at 4 warps, 6.8 at 8); 57344 x 4096 40.33 / 39.22 / 43.37 / 40.43 / 41.03; 70B gate/up fused 57344
  // x 8192 76.41 / 74.78 / 82.44 / 75.35 / 76.59; Qwen3-14B gate/up 34816 x 5120 29.84 / 29.85 / 33.47 / 31.60 / 31.38.
  // Four rows (session 37's / x resident at 2 / 4 / 8): 34816 x 5120 (x staged, 4-warp CTAs, three an SM) 37.54 / 34.05 /
  // 31.56 / 32.28; 151936 x 5120 148.65 / 119.15 / 126.50 / 134.94; 152064 x 3584 94.55 / 84.23 / 98.38 / 102.42. Run 4
  // (k = 4, this rule against session 37's on 26 shapes at 1, 2, 4 rows, in one process; cells of one plan differ by up
  // to 7% between the two passes on the largest weights): 8B gate/up fused 21.71 / 22.28 / 22.53 against 24.03 / 23.52 /
  // 23.89, 70B's fused gate/up at one row 74.17 against 80.04 (run 3: 74.78 against 76.41), 152064 x 3584 81.26 / 82.78 /
  // 89.26 against 91.10 / 96.55 / 93.77, 151936 x 5120 at 4 rows 125.76 against 152.39; the worst cell 10240 x 5120 at 2
  // rows 12.99 against 12.78; 56 of 78 cells the same plan. Run 8 (k = 2, 3, 5, 2-4 rows, the rule of then and now): K =
  // 5120 5-15% faster, 152064 x 3584 1-7%.
  const bool decode_by_path = decode_reside && gemv_decode_path_rule() == 1 && gemv_unit_warps() == 0;
  const bool every_candidate = K == 4 || (K == 5 && args.M >= 2);
  const auto decode_plan_by_path = [&]() -> std::pair<WarpChoice, bool> {
    const auto path = [&](const WarpChoice& c) { return critical_path(c.rounds, c.warps); };
    const int base_warps = static_cast<int>(std::min<int64_t>(decode_warps >= 8 ? 8 : 4, groups));
    const WarpChoice base = choose_warps(true, base_warps);
    WarpChoice best = base;
    for (int w : {2, 4, 8}) {  // (w < groups: not one group a warp)
      if (w == base_warps || w >= groups || (!every_candidate && w != 2)) continue;
      const WarpChoice c = choose_warps(true, w);
      if (c.warps_per_sm > 0 && (best.warps_per_sm == 0 || path(c) < path(best))) best = c;
    }
    if (base.warps_per_sm > 0 && 10 * path(best) > 9 * path(base)) best = base;
    if (args.M >= 2) {  // (the base where the shorter candidate fits fewer warps per SM than x staged)
      const auto resides = [&](const WarpChoice& c) {
        return c.warps_per_sm > 0 && tiles > staged_ctas && c.warps_per_sm >= staged.warps_per_sm;
      };
      return resides(best) || !resides(base) ? std::pair{best, resides(best)} : std::pair{base, true};
    }
    if (best.warps_per_sm == 0) return {best, false};
    const int64_t staged_slots = std::max<int64_t>(1, staged_ctas);  // (0 only where x staged fits no CTA)
    return {best, 10 * path(best) <= 9 * critical_path((tiles + staged_slots - 1) / staged_slots, staged.warps)};
  };
  const bool may_reside = gemv_x_resident() == 2 || decode_reside ||
                          (gemv_x_resident() == 1 && kTokens >= kGemvXResidentMinTokens);
  if (!grouped && kDecode == GemvDecode::kMma && may_reside) {
    // (its warps and stages are the launch's if taken)
    WarpChoice resident{};
    if (decode_by_path) {
      std::tie(resident, x_resident) = decode_plan_by_path();
    } else {
      resident = sixteen_slots_eight_warp_ctas ? choose_warps(true, 0, kGemvStages, kGemvMmaMaxWarps)
                                               : choose_warps(true, decode_reside ? decode_warps : 0);
      // (reuse is counted in units against staged CTAs: a slotted CTA takes several units at a time)
      // With token chunks (M > 16) also at fewer warps per SM: staged x copies the chunk's rows again for
      // every unit (session 16, Qwen3 down, K = 5120, M = 24 / 32 / 48 / 64, us: staged, 8 warps per SM,
      // 12.11 / 12.99 / 18.94 / 24.93; resident, 4, 11.47 / 11.93 / 16.43 / 20.86).
      x_resident = resident.warps_per_sm > 0 &&
                   (gemv_x_resident() == 2 ||
                    (tiles * chunks > staged_ctas && (resident.warps_per_sm >= staged.warps_per_sm || chunks > 1)));
    }
    if (x_resident) chosen = resident;
    if (x_resident && eight_slots_four_warps) {
      const WarpChoice four = choose_warps(true, 4, kGemvStages);
      const int64_t sms = prop.multiProcessorCount;
      const int64_t four_ctas = (tiles + four.slots - 1) / four.slots;
      const int64_t four_fit = four.warps_per_sm / std::max(1, four.warps * four.slots) * sms;
      const bool uneven = four_ctas > sms && four_ctas < four_fit && four_ctas % sms != 0;
      const WarpChoice eight = (groups >= 16 || uneven) ? choose_warps(true, 8, kGemvStages) : WarpChoice{};
      if (eight.warps_per_sm > 0) chosen = eight;
      else if (four.warps_per_sm > 0) chosen = four;
    }
  }
  // The CTA layout of a dense x-staged launch (GemvStagedLayout; the rule: kSingle): one token chunk of up to
  // kGemvShuffleMaxTokens slots; with unit slots (the tuning aid), the staged rule's warps per unit in as many slots
  // as make up kGemvMmaMaxWarps warps and (kSlots) the aid's ring stages, fewer stages and then fewer slots where the
  // GPU's shared memory per block cannot hold them, one unit per CTA where not even one slot fits.
  GemvStagedLayout layout = GemvStagedLayout::kSingle;
  int layout_slots = 1, stages = chosen.stages;
  if constexpr (kDecode == GemvDecode::kMma && kTokens <= kGemvShuffleMaxTokens)
    if (!grouped && !x_resident && chunks == 1) {
      const int asked = gemv_staged_layout();
      if (asked == 1 || (asked == 2 && K == 4)) {
        int s = std::max(1, kGemvMmaMaxWarps / chosen.warps);
        int st = asked == 1 && gemv_staged_stages() > 0 ? gemv_staged_stages() : kGemvStages;
        const auto fits = [&] {
          return gemv_smem_bytes(K, kTokens, chosen.warps * s, experts, kDecode, st, false, args.K, asked == 2) <= optin;
        };
        while (!fits() && (st > kGemvStages || s > 1)) (st > kGemvStages ? st : s) -= 1;
        if (fits()) {
          layout = static_cast<GemvStagedLayout>(asked);
          layout_slots = s;
          stages = st;
        }
      }
    }
  const bool wide = layout == GemvStagedLayout::kWide;
  // (a dense gated call, TcGemmArgs::gated_silu, where gemv_plan_fuses_silu will take the plan: the grid's CTAs per
  // SM and the dynamic shared-memory limit resident_ctas_per_sm raises are those of the kernel it launches; the
  // choices above asked the plain kernels, of the same launch bounds and shared memory. The gated flag is in the
  // remembered plan's key.)
  const bool dense_gated = !grouped && args.gated_silu && kDecode == GemvDecode::kMma &&
                           kTokens <= kGemvDenseGatedMaxTokens && layout == GemvStagedLayout::kSingle;
  const void* kernel = layout != GemvStagedLayout::kSingle
                           ? reinterpret_cast<const void*>(gemv_staged_kernel_of<T, K, kTokens>(layout))
                       : dense_gated ? reinterpret_cast<const void*>(gemv_dense_gated_kernel<T, K, kTokens>(x_resident))
                                     : gemv_kernel_of<T, K, kTokens, kDecode>(grouped, x_resident);
  bool x_shared = false;  // grouped: decided below, once the warps per unit and slots are
  const auto smem_of = [&](int w) {
    return gemv_smem_bytes(K, kTokens, w, experts, kDecode, stages, x_resident, args.K, wide, x_shared);
  };
  int warps = chosen.warps;  // per unit
  // Units: dense, one per tile and token chunk; grouped, at most (T / kTokens + min(E, T)) chunks per tile (static
  // first chunks add at most E - min(E, T): none where they are taken, T >= E), and with uniform
  // routing min(E, T) experts of ceil(ceil(T / min(E, T)) / kTokens) chunks.
  const int64_t active = std::min<int64_t>(args.experts, args.M);
  const int64_t units = grouped ? (args.M / kTokens + active) * tiles : tiles * chunks;
  const int64_t uniform_chunks = active > 0 ? ((args.M + active - 1) / active + kTokens - 1) / kTokens : 0;
  const int64_t uniform_units = grouped ? active * uniform_chunks * tiles : units;
  // Grouped x shared (scalar_gemv.cuh, TcGemmArgs::grouped_x_shared): one warp per unit, so a CTA's slots take `slots`
  // x run consecutive units a round (each slot `run` adjacent ones, below), and with 16-row tiles a multiple of that
  // those are one chunk of one expert (an expert's chunks are tiles units each, from a multiple of tiles): its x is
  // copied once per CTA (each warp its share of the groups) instead of by every warp for every unit, and the rings
  // carry codes only. A round's x joins the commit group of an item `stages` items after the previous round's barrier,
  // so the ring takes at most K's groups of stages (a warp's items a unit; a round has run x as many). The kernels of
  // kGemvSharedXMinTokens .. 8 token slots only (at fewer slots x is a small share of a stage, and 16 slots keep the
  // other kernel's registers), and at 4-7 slots on K of 2 or 3 groups only with runs of 2 or 4 (below). With one unit
  // a warp a round, a round's barrier every 2 items, it lost there (session 38 run 4, H200, Qwen3 MoE down, K = 512,
  // us, x shared / staged, 64 x 4 and 512 x 4 rows: k = 2 21.99 / 21.19, 146.97 / 141.67; k = 3 22.37 / 21.54, 148.16 /
  // 143.26; k = 5 30.40 / 29.95, 206.20 / 193.66; session 41 run 1, k = 4: 18.57 / 18.54, 119.02 / 115.13); with runs
  // it wins (session 41 run 1, x shared in runs of 4 / 2 / staged: k = 4 64 x 4 17.13 / 17.50 / 18.54, 512 x 4 107.74 /
  // 111.51 / 115.13; k = 2, runs of 4, 16.48 / - / 19.56, 106.78 / - / 130.21).
  // Stages, k = 4 and 5: 2 (or the resident-stages aid's, at most K's groups). Session 39 run 2 (H200, k = 4, every
  // x-shared cell): 2 stages were as fast or faster than 3-4 at the same CTAs per SM, e.g. Qwen3 MoE gate/up 64 / 128 /
  // 512 x 8 17.04 / 30.16 / 105.37 us against 18.18 / 31.51 / 106.82 with 3, GLM gate/up 64 x 8 42.53 against 43.99:
  // each warp's decode is the SM's bound, and a deeper ring only queues more first copies at the DRAM. k = 2 and 3
  // (half-size stages, not measured with 2): as before, the most stages (up to kGemvResidentMaxStages) that keep the
  // CTA's most CTAs per SM.
  // The CTA: 8 or (where the unit-slot aid is at the rule and the x-shared aid not at 2) 16 slots, whichever keeps more
  // warps per SM (8 on a tie); but at k = 4, 5, where that CTA's expected units (uniform routing) would leave SMs
  // without a CTA, the other if it gives them a shorter critical path, measured as the most units an SM runs: rounds
  // (of the grid's slots) x the warps of its CTAs that have units (session 39 run 2, Qwen3 MoE gate/up, k = 4: 32 x 8,
  // 1024 units, in 8-warp CTAs, 128 on as many SMs, 10.91 us; in 16-warp CTAs, 64 on 64 SMs, 15.21). Only then: with
  // every SM busy, 16 warps run more units per us than 8 (64 x 8, 2048 units: 16-warp CTAs, one round, 17.04 us;
  // 8-warp, one CTA per SM, two rounds, 20.89).
  // Runs (TcGemmArgs::shared_x_run): each warp takes 4 or 2 adjacent units of the round's chunk back to back (the
  // round barrier, the round's x lookup and copy and the warp's unit lookup once per run), the longer where the tiles
  // are a multiple of it x the slots and the runs keep the units' critical path: the most units one warp runs (the
  // expected units), run x its runs, not more than with one unit a round.
  // Session 40 run 2 (H200, k = 4, us, run of 1 / 2): Qwen3 MoE down (K = 512, 2 groups) 64 / 128 / 512 x 8 18.91 /
  // 17.61, 34.18 / 31.47, 122.44 / 112.37 (k = 2, 64 x 8: 18.46 / 16.90); gate/up (8 groups) 512 x 8 103.28 / 100.84;
  // GLM MoE down (6 groups) 64 x 8 41.29 / 40.36. Where they would lengthen it, they lose: gate/up 64 x 8 (2048 units,
  // one a warp) 16.78 / 27.26. Run 5 (run of 4 / 2 / 1): down 64 x 8 16.84 / 17.51 / 18.81, 512 x 8 106.58 / 112.19 /
  // 123.39; GLM down 64 x 8 39.37 / 40.13 / 41.19.
  struct SharedX {
    int slots, stages, warps_per_sm;  // slots 0: x not shared; warps_per_sm: what fits
    int64_t busy_warps_per_sm;        // the most warps with units on one SM (the expected units)
    int run;                          // units a warp runs back to back in a round (1, 2 or 4)
  };
  const auto shared_x_choice = [&]() {
    SharedX best{0, 0, 0, 0, 1};
    if constexpr (gemv_can_share_x(true, kDecode, kTokens)) {
      if (gemv_grouped_x_shared() == 0 || groups < 2) return best;
      // (4-7 token slots on K of 2 or 3 groups: only with runs, below, but for the aid's mode 3)
      const bool runs_only = kTokens < 8 && groups < 4 && gemv_grouped_x_shared() != 3;
      const int base = std::min(kGemvMmaMaxWarps, gemv_max_unit_slots());
      const void* shared_kernel = reinterpret_cast<const void*>(gemv_shared_x_kernel<T, K, kTokens, kDecode>());
      const int64_t sms = prop.multiProcessorCount, want = std::max<int64_t>(1, uniform_units);
      const auto ctas_fit = [&](int s, int st) {
        const int bytes = gemv_smem_bytes(K, kTokens, s, experts, kDecode, st, false, args.K, false, true);
        return bytes > optin ? 0 : resident_ctas_per_sm(shared_kernel, 32 * s, bytes, smem_limit);
      };
      // The CTAs (at most ctas_per_sm an SM) for the expected units at per_cta units a CTA a round, and their rounds.
      const auto grid_of = [&](int64_t per_cta, int64_t ctas_per_sm) {
        const int64_t ctas = std::min<int64_t>((want + per_cta - 1) / per_cta, ctas_per_sm * sms);
        return std::pair<int64_t, int64_t>{ctas, (want + ctas * per_cta - 1) / (ctas * per_cta)};
      };
      SharedX cand[2];
      int64_t cost[2] = {0, 0};
      int n = 0;
      for (int s : {base, kGemvSharedXMaxWarps}) {
        if (s < 2 || tiles % s != 0 ||
            (s != base && (base != kGemvMmaMaxWarps || gemv_grouped_x_shared() == 2)))
          continue;
        const int most = static_cast<int>(std::min<int64_t>(kGemvResidentMaxStages, groups));
        int st = static_cast<int>(std::min<int64_t>(gemv_resident_stages() > 0 ? gemv_resident_stages() : kGemvStages,
                                                    groups));
        const int ctas_per_sm = ctas_fit(s, st);
        if (ctas_per_sm == 0) continue;
        if (K < 4 && gemv_resident_stages() == 0)
          while (st < most && ctas_fit(s, st + 1) == ctas_per_sm) ++st;
        const auto [ctas, rounds] = grid_of(s, ctas_per_sm);
        const int64_t busy = s * std::min<int64_t>(ctas_per_sm, (ctas + sms - 1) / sms);
        cand[n] = SharedX{s, st, s * ctas_per_sm, busy, 1};
        cost[n++] = rounds * busy;
      }
      if (n == 0) return best;
      int pick = n == 2 && cand[1].warps_per_sm > cand[0].warps_per_sm ? 1 : 0;  // more warps per SM, 8 on a tie
      const int other = 1 - pick;
      if (K >= 4 && n == 2 && (want + cand[pick].slots - 1) / cand[pick].slots < sms && cost[other] < cost[pick])
        pick = other;  // (k = 2, 3: not measured; there the CTA and the step below are session 38's)
      best = cand[pick];
      const int run_asked = gemv_shared_x_run(), s = best.slots;  // (the aid: that run where the tiles allow it)
      const int64_t ctas_per_sm = best.warps_per_sm / s;
      const auto most_units = [&](int64_t run) { return run * grid_of(s * run, ctas_per_sm).second; };  // of one warp
      for (int run : {4, 2})
        if (tiles % (run * s) == 0 && (run_asked == run || (run_asked == 0 && most_units(run) <= most_units(1)))) {
          best.run = run;
          break;
        }
      if (runs_only && best.run == 1) return SharedX{0, 0, 0, 0, 1};
    }
    return best;
  };
  // (grouped mma-decode launches only: slots 0 elsewhere)
  const SharedX shared_x = grouped && kDecode == GemvDecode::kMma ? shared_x_choice() : SharedX{0, 0, 0, 0, 1};
  // Grouped, mma decode: half the warps per unit (twice the unit slots) while the expected units
  // would still fill every slot of the GPU's 8-warp CTAs (session 14, Qwen3 MoE experts, us:
  // gate/up 8 x 1 token 4.28 / 5.59 / 7.94 with 8 / 4 / 2 warps per unit, 64 x 1 26.9 / 20.5 /
  // 18.1, 256 x 1 97.0 / 70.6 / 58.5; down, K = 512, 8 x 1 4.32 / 5.91 with 2 / 1, 64 x 1 26.3 /
  // 20.4, 256 x 1 94.2 / 69.5).
  if (grouped && kDecode == GemvDecode::kMma && gemv_unit_warps() == 0) {
    const int full_bytes = smem_of(kGemvMmaMaxWarps);
    const int64_t full_ctas = full_bytes > optin ? 0 : int64_t(prop.multiProcessorCount) *
        resident_ctas_per_sm(kernel, 32 * kGemvMmaMaxWarps, full_bytes, smem_limit);
    while (full_ctas > 0 && warps > 1 && uniform_units >= full_ctas * (kGemvMmaMaxWarps / (warps / 2))) warps /= 2;
    // One token slot, 8 groups, 8 warps a unit left by the loop (fewer units than twice the 8-warp CTAs): 4 warps a
    // unit where the units fill at least 2/3 of the slots at 4 (as the 2 / 1 choice below fills those at 1), else 8.
    // Between one and two rounds of the 8-warp CTAs both run 2 items on the critical path, but with few units past one
    // round those run on an idle GPU. Session 59 runs 15 and 18 (H200, Qwen3 MoE gate/up compacted, 264 CTAs, 528
    // slots at 4; us, 8 / 4 warps a unit): 9 x 1 (288 units, 55%) k = 2 / 4 / 5 5.28 / 5.56, 5.78 / 5.85, 7.50 / 8.47;
    // 10 x 1 (61%) k = 4 5.80 / 5.83; 12 x 1 (73%) 6.41 / 5.56, 6.44 / 5.90, 8.85 / 8.41; 16 x 1 (97%) 6.39 / 5.61,
    // 6.41 / 5.91, 8.88 / 8.48 (k = 3 not measured).
    if (kTokens == 1 && full_ctas > 0 && warps == kGemvMmaMaxWarps && groups == kGemvMmaMaxWarps &&
        3 * uniform_units >= 2 * (2 * full_ctas))
      warps = kGemvMmaMaxWarps / 2;
    // One token slot, K of 2 or more groups, where the loop ends at 2 or 1: by the critical path (the most items one
    // warp runs under the expected units: rounds of the slots x a unit's items per warp), 2 warps per unit where theirs
    // is at most 3/4 of one warp's, else 1 where the units fill at least 2/3 of those CTAs' slots at one warp per unit.
    // Session 41 runs 4-6 (H200, k = 4, two 8-warp CTAs per SM, 2112 slots; us, 2 / 1 warps per unit; paths 2 : 1):
    // Qwen3 MoE gate/up (8 groups) 40 / 48 / 56 / 64 x 1 (1280-2048 units, 8 : 8) 12.36 / 14.34, 15.12 / 14.35, 15.11 /
    // 14.50, 15.41 / 14.79 (k = 2 alike), 72 x 1 (12 : 16) 18.01 / 20.15; down (2 groups) 12 / 16 x 1 (2 : 2) 6.47 /
    // 5.68, 6.42 / 5.69, 24 x 1 (3 : 4) 8.57 / 9.04, 32 x 1 (4 : 4) 10.72 / 9.12, 512 x 1 (63 : 64) 126.79 / 96.05.
    // (Not measured: k = 3, 5, paths between 3/4 and 1 but at 512 x 1, K of 3 or more than 8 groups.)
    if (kTokens == 1 && full_ctas > 0 && (warps == 1 || warps == 2) && groups >= 2) {
      const int64_t slots1 = full_ctas * kGemvMmaMaxWarps;  // at one warp per unit
      const auto path = [&](int64_t w) {
        return (uniform_units * w + slots1 - 1) / slots1 * ((groups + w - 1) / w);
      };
      warps = 4 * path(2) <= 3 * path(1) ? 2 : 3 * uniform_units >= 2 * slots1 ? 1 : 2;
    }
    // From 2 (k = 4, 5: or 3) warps per unit to 1 where x would then be shared and the units fill at least 2/3 of its
    // slots (session 38 run 5, H200, Qwen3 MoE gate/up, k = 2: two 8-warp CTAs per SM, so the loop stops at 2 below
    // 2112 units; us, 2 / 1 warps per unit (x shared, two 8-warp CTAs per SM: 2112 slots), 4 and 8 rows per expert: 40
    // experts (1280 units, 61%) 15.75 / 18.05, 17.19 / 18.40; 48 (1536, 73%) 19.99 / 18.28, 22.08 / 18.59; 56 20.04 /
    // 18.61, 22.21 / 18.93; run 4, 64 (2048): k = 2 19.94 / 18.73, 22.10 / 19.13, k = 3 20.15 / 19.50, 20.79 / 16.67, k
    // = 5 (4 rows) 29.45 / 28.32. At k = 4, 4 rows, 40 experts one warp per unit won too, 18.91 / 16.32; gate/up at
    // 16-32 experts lost at k = 2 and 4, e.g. k = 2, 32 x 8 12.48 / 17.12: one warp's unit is then the call's critical
    // path. Down at 16 x 8, k = 2, 2048 units, won: 8.77 / 7.03.)
    // (k = 4, 5: the slots are those of shared_x's CTAs that have units, where it spreads them over more SMs than it
    // fills: session 39 runs 3-4, Qwen3 MoE gate/up 24-32 x 8, 768-1024 units: one warp per unit in 8-warp CTAs, one on
    // each of as many SMs, k = 4 10.84-10.92 us against 2 warps per unit, x staged, 13.65-13.78; k = 5 15.61-15.70
    // against 18.77-18.86; GLM MoE gate/up 8 x 8 10.55 us against 11.71 with 3 warps per unit forced (run 6); and from
    // 3 warps per unit too (K's 6 or 7 groups halve to 3; K of 3 groups starts there): run 6, GLM MoE down, K = 1536, 8
    // x 8 8.71 us against the rule's 3 warps per unit before, 9.64. At k = 2 and 3 one warp per unit with x shared in
    // 8-warp CTAs ran slower than k = 4's (Qwen3 gate/up 32 x 8, k = 2: 16.25 us, against 11.25 with 2 warps per unit x
    // staged, run 3): there, as before, 2 warps and all the CTA's slots.)
    const int64_t shared_slots_per_sm = K >= 4 ? shared_x.busy_warps_per_sm : shared_x.warps_per_sm;
    if ((warps == 2 || (warps == 3 && K >= 4)) && shared_x.slots > 0 &&
        3 * uniform_units >= 2 * int64_t(prop.multiProcessorCount) * shared_slots_per_sm)
      warps = 1;
  }
  // Unit slots (scalar_gemv.cuh; grouped mma-decode launches): as many slots of `warps` warps as
  // make up to kGemvMmaMaxWarps warps (at most gemv_max_unit_slots, a tuning aid), fewer where the
  // shared memory cannot hold them.
  // x-resident launches: the slots chosen above.
  const int warps_per_unit = warps;
  int slots = x_resident                              ? chosen.slots
              : layout != GemvStagedLayout::kSingle ? layout_slots
                                                    : 1;
  if (grouped && kDecode == GemvDecode::kMma && warps < kGemvMmaMaxWarps)
    slots = std::max(1, std::min(kGemvMmaMaxWarps / warps_per_unit, gemv_max_unit_slots()));
  while (slots > 1 && smem_of(warps_per_unit * slots) > optin) --slots;
  warps = warps_per_unit * slots;
  // Grouped x shared (shared_x above): one warp per unit.
  if (warps_per_unit == 1 && shared_x.slots > 0) {
    x_shared = true;
    slots = warps = shared_x.slots;
    stages = shared_x.stages;
    if constexpr (gemv_can_share_x(true, kDecode, kTokens))
      kernel = reinterpret_cast<const void*>(gemv_shared_x_kernel<T, K, kTokens, kDecode>());
  }
  const int smem = smem_of(warps);
  TORCH_CHECK(smem <= optin, "kbit: the GEMV (", kDecode == GemvDecode::kMma ? "mma" : "shuffle", " decode) needs ", smem,
              " bytes of shared memory per block for k=", K, ", ", kTokens, " rows per unit and ", args.experts,
              " expert(s); this GPU (", prop.name, ") allows ", optin,
              kDecode == GemvDecode::kMma ? ". decode='shuffle' needs no pair table." : "");
  // CTAs for the units: one unit per slot at a time (x shared: a run of them).
  // (Token chunks: a CTA keeps one chunk, so each chunk's tiles are spread over its own CTAs.)
  // (x shared: a CTA's round is slots x run units)
  const int run = x_shared ? shared_x.run : 1;
  const int64_t unit_ctas = chunks * ((units / chunks + slots * run - 1) / (slots * run));
  GemvLaunchPlan plan{};
  plan.token_slots = kTokens;
  plan.decode = kDecode;
  plan.warps = warps;
  plan.warps_per_unit = warps_per_unit;
  plan.x_resident = x_resident;
  plan.token_chunks = chunks;
  plan.ring_stages = stages;
  plan.staged_layout = layout;
  plan.x_shared = x_shared;
  plan.x_shared_run = run;
  // Grouped, mma decode: the schedule's form (gemv_grouped_schedule): per warp where WarpSchedule
  // fits (forms 1 and 2; static first chunks, form 2, only where T >= E), else per CTA: one row per
  // chunk (RowSchedule, tc_work.cuh; forms 2 and 3) where that applies, else the scans.
  const int form = grouped && kDecode == GemvDecode::kMma ? gemv_grouped_schedule() : 0;
  const bool warp_fits = warp_schedule_fits(args.M, args.experts, tiles, kTokens);
  plan.warp_schedule = (form == 1 || form == 2) && warp_fits;
  plan.static_first_chunks = form == 2 && warp_fits && args.M >= args.experts;
  plan.row_schedule = !plan.warp_schedule && (form == 2 || form == 3) && kTokens == 1 &&
                      RowSchedule::fits(args.M, args.experts, tiles);
  // (the row schedule's kernel is another instantiation of the same resources; the opt-in to its
  // shared memory, which resident_ctas_per_sm sets)
  // (and so is the by-slot kernel, TcGemmArgs::slot_x_div: the remembered plan's key tells the two apart)
  if constexpr (kDecode == GemvDecode::kMma && kTokens == 1) {
    if (plan.row_schedule)
      kernel = reinterpret_cast<const void*>(scalar_gemv_kernel<T, K, kTokens, true, kDecode, false, true>);
    else if (args.slot_x_div > 0 && plan.warp_schedule && plan.static_first_chunks)
      kernel = reinterpret_cast<const void*>(gemv_by_slot_kernel<T, K>());
  }
  plan.smem_bytes = smem;
  // Dense: a grid smaller than what fits is spread over the SMs (kernel_residency.h); grouped
  // launches only know a bound on their units.
  if (!grouped && gemv_spread()) {
    const SpreadLaunch spread = spread_over_sms(kernel, 32 * warps, smem, smem_limit, unit_ctas, prop);
    plan.launch_smem_bytes = spread.smem_bytes;
    plan.ctas_per_sm = spread.ctas_per_sm;
  } else {
    plan.launch_smem_bytes = smem;
    plan.ctas_per_sm = resident_ctas_per_sm(kernel, 32 * warps, smem, smem_limit);
  }
  plan.grid = std::max<int64_t>(1, std::min<int64_t>(unit_ctas, int64_t(plan.ctas_per_sm) * prop.multiProcessorCount));
  // Token chunks: a CTA keeps one chunk (blockIdx.x % chunks) for all its units.
  if (chunks > 1) plan.grid = std::max<int64_t>(chunks, plan.grid / chunks * chunks);
  plan.split_cluster = 0;
  if constexpr (kDecode == GemvDecode::kMma && kTokens <= kGemvShuffleMaxTokens)
    if (!grouped && !x_resident && layout == GemvStagedLayout::kSingle && chunks == 1 && slots == 1 &&
        gemv_split_cluster() != 0) {
      const GemvSplitChoice c = choose_gemv_split<T, K, kTokens>(tiles, args.K, warps, plan.grid, prop, optin);
      if (c.cluster > 0) {
        plan.split_cluster = c.cluster;
        plan.smem_bytes = plan.launch_smem_bytes = c.smem_bytes;
        plan.ctas_per_sm = c.ctas_per_sm;
        plan.grid = c.grid;
      }
    }
  return plan;
}

// plan_gemv_kernel, remembered (remembered_plans.h): a plan depends only on the device, the call's shape (M, N, K,
// experts, rows per unit), the tuning aids and its kernel's kind (grouped, by slot, dense gated), all in the key, so
// a repeated call costs one lookup instead of its plan's occupancy queries (up to ~40 cached lookups behind a mutex
// for dense calls of 8+ rows). One table per kernel instantiation.
template <typename T, int K, int kTokens, GemvDecode kDecode>
GemvLaunchPlan remembered_gemv_plan(const TcGemmArgs& args) {
  struct Key {
    int64_t rows, out_features, cols, experts, rows_per_unit;  // x [rows, cols] @ W[out_features, cols]^T
    int device;
    std::array<int, 13> aids;
    bool grouped, by_slot, gated;  // (by slot, dense gated: their own kernels' residency, plan_gemv_kernel)
    auto tied() const {
      return std::tie(rows, out_features, cols, experts, rows_per_unit, device, aids, grouped, by_slot, gated);
    }
    bool operator==(const Key& o) const { return tied() == o.tied(); }
    uint64_t hash() const {
      return plan_key_hash({rows, out_features, cols, experts, rows_per_unit, device, grouped, by_slot, gated, aids[0],
                            aids[1], aids[2], aids[3], aids[4], aids[5], aids[6], aids[7], aids[8], aids[9], aids[10],
                            aids[11], aids[12]});
    }
  };
  const bool grouped = args.expert_offsets != nullptr;
  const auto key_now = [&] {
    return Key{args.M, args.N, args.K, args.experts, grouped ? args.tokens_per_unit : 0,
               static_cast<int>(c10::cuda::current_device()),
               {{gemv_unit_warps(), gemv_resident_stages(), gemv_max_unit_slots(), gemv_x_resident(),
                 gemv_spread() ? 1 : 0, gemv_grouped_schedule(), gemv_min_token_slots(), gemv_split_cluster(),
                 gemv_staged_layout(), gemv_staged_stages(), gemv_grouped_x_shared(), gemv_shared_x_run(),
                 gemv_decode_path_rule()}},
               grouped, args.slot_x_div > 0, !grouped && args.gated_silu};
  };
  static RememberedPlans<Key, GemvLaunchPlan> plans;
  return plans.get(key_now, [&] { return plan_gemv_kernel<T, K, kTokens, kDecode>(args); });
}

template <typename T, int K>
GemvLaunchPlan plan_scalar_gemv(const TcGemmArgs& args) {
  return with_gemv_kernel(args, [&](auto slots, auto decode) {
    return plan_gemv_kernel<T, K, decltype(slots)::value, decltype(decode)::value>(args);
  });
}

// Whether the launch of args (grouped, TcGemmArgs::slot_x_div > 0) takes its slots: the remembered plan (the one
// the launch then uses) is the 1-token-slot mma kernel's per warp with static first chunks, the only kernel that reads
// the slots. Elsewhere (the GEMV's tuning aids) the caller composes the op from others.
template <typename T, int K>
bool gemv_takes_slots(const TcGemmArgs& args) {
  static_assert(kGemvMaxSlots == kWarpScheduleMaxExperts, "a slot a lane of the per-warp schedule");
  return with_gemv_kernel(args, [&](auto slots, auto decode) {
    if constexpr (decltype(slots)::value == 1 && decltype(decode)::value == GemvDecode::kMma) {
      const GemvLaunchPlan p = remembered_gemv_plan<T, K, 1, GemvDecode::kMma>(args);
      return p.warp_schedule && p.static_first_chunks;
    }
    return false;
  });
}

// Whether a launch of kTokens slots under `plan` runs the gated epilogue (TcGemmArgs::gated_silu): grouped,
// scalar_gemv_kernel of at most kGemvGatedMaxTokens slots; dense, of one slot (kGemvDenseGatedMaxTokens) in its
// x-staged single layout or x resident (the cluster split's kernel and the staged layouts' tuning aids write [M, N]).
inline bool gemv_plan_fuses_silu(bool grouped, int token_slots, const GemvLaunchPlan& plan) {
  return token_slots <= (grouped ? kGemvGatedMaxTokens : kGemvDenseGatedMaxTokens) && plan.split_cluster == 0 &&
         plan.staged_layout == GemvStagedLayout::kSingle && plan.decode == GemvDecode::kMma;
}

// Whether the launch of args (gated_silu set) writes silu(gate) * up itself: the remembered plan (the one the launch
// then uses) is gemv_plan_fuses_silu's. Elsewhere the caller composes the op (the GEMM, then silu_and_mul).
template <typename T, int K>
bool gemv_fuses_silu(const TcGemmArgs& args) {
  return with_gemv_kernel(args, [&](auto slots, auto decode) {
    constexpr int kTokens = decltype(slots)::value;
    if constexpr (kTokens <= kGemvGatedMaxTokens)
      return gemv_plan_fuses_silu(args.expert_offsets != nullptr, kTokens,
                                  remembered_gemv_plan<T, K, kTokens, decltype(decode)::value>(args));
    return false;
  });
}

// Dense: M rows, in token chunks past kGemvMaxTokens (gemv_token_chunks). Grouped: the chunk rows (gemv_grouped_chunk_rows); the kernel's chunk
// is its token slots (gemv_token_slots: 1-4, 8 or 16), and an expert with more rows takes several
// chunks.
template <typename T, int K>
void launch_scalar_gemv(const TcGemmArgs& args, cudaStream_t stream) {
  with_gemv_kernel(args, [&](auto slots, auto decode) {
    constexpr int kTokens = decltype(slots)::value;
    constexpr GemvDecode kDecode = decltype(decode)::value;
    const GemvLaunchPlan plan = remembered_gemv_plan<T, K, kTokens, kDecode>(args);
    const cudaDeviceProp& prop = *at::cuda::getCurrentDeviceProperties();
    const bool dependent = dependent_launch_enabled(prop);
    const bool grouped = args.expert_offsets != nullptr;
    // (a kernel without the gated epilogue would write [M, N] rows into the caller's [M, N / 2] y; gemv_fuses_silu
    // is asked first)
    TORCH_CHECK(!args.gated_silu || gemv_plan_fuses_silu(grouped, kTokens, plan), "kbit: the GEMV's gated epilogue "
                "runs in scalar_gemv_kernel launches of at most ", kGemvGatedMaxTokens, " token slots (dense: ",
                kGemvDenseGatedMaxTokens, ", not the cluster split or a staged layout's tuning aid); this launch has ",
                kTokens, " token slots");
    TcGemmArgs a = args;
    a.warps_per_unit = plan.warps_per_unit;
    a.token_chunks = plan.token_chunks;
    a.ring_stages = plan.ring_stages;
    TORCH_CHECK(plan.ring_stages >= 2 && plan.ring_stages <= kGemvResidentMaxStages,
                "kbit: GEMV ring stages must be 2 to ", kGemvResidentMaxStages, "; got ", plan.ring_stages);
    TORCH_CHECK(!plan.x_shared || (grouped && plan.warps_per_unit == 1 && plan.ring_stages <= (args.K + 255) / 256),
                "kbit: grouped shared x needs one warp per unit and at most K's 256-column groups of ring stages");
    const int64_t row_tiles = (args.N + kTileRows - 1) / kTileRows;
    TORCH_CHECK(plan.x_shared_run == 1 || (plan.x_shared && (plan.x_shared_run == 2 || plan.x_shared_run == 4) &&
                                           row_tiles % (plan.x_shared_run * plan.warps) == 0),
                "kbit: grouped shared x runs 1 unit, or 2 or 4 where the 16-row tiles are a multiple of that x the "
                "slots");
    a.grouped_x_shared = plan.x_shared;
    a.shared_x_run = plan.x_shared_run;
    a.warp_schedule = plan.warp_schedule;
    a.static_first_chunks = plan.static_first_chunks;
    a.row_schedule = plan.row_schedule;
    // (a kernel of another plan would read offsets that are not there: gemv_takes_slots is asked first)
    TORCH_CHECK(args.slot_x_div == 0 || (kTokens == 1 && kDecode == GemvDecode::kMma && plan.warp_schedule &&
                                                plan.static_first_chunks && !plan.row_schedule && !plan.x_shared),
                "kbit: a grouped GEMV by slot needs the 1-token-slot mma kernel's per-warp schedule with static first "
                "chunks");
    // Grouped launches: no L2 prefetch (scalar_gemv.cuh).
    const bool prefetch = dependent && !grouped;
    // (each slot's first warp prefetches its own first tile: sized by the unit's warps)
    a.l2_prefetch_bytes = prefetch ? dependent_launch_prefetch_bytes(int64_t(plan.warps_per_unit) * 512 * K) : 0u;
    const dim3 grid(static_cast<unsigned>(plan.grid)), block(32 * plan.warps);
    if (plan.split_cluster > 0) {
      if constexpr (kDecode == GemvDecode::kMma && kTokens <= kGemvShuffleMaxTokens) {
        const unsigned c = static_cast<unsigned>(plan.split_cluster);
        const int64_t clusters = plan.grid / c, tiles = (args.N + kTileRows - 1) / kTileRows;
        a.split_tiles = static_cast<uint32_t>(tiles / clusters);
        a.split_tiles_extra = static_cast<uint32_t>(tiles % clusters);
        a.split_steps = static_cast<uint32_t>(gemv_split_steps(args.K, plan.warps));
        launch_kernel_in_clusters(scalar_gemv_split_kernel<T, K, kTokens>, dim3(static_cast<unsigned>(plan.grid) / c, c),
                                  dim3(1, c, 1), block, plan.launch_smem_bytes, stream, dependent, a);
        return;
      }
      TORCH_CHECK(false, "kbit: the GEMV's cluster split is mma decode, up to ", kGemvShuffleMaxTokens, " rows");
    }
    if (grouped) {
      if constexpr (kDecode == GemvDecode::kMma && kTokens == 1) {
        if (args.slot_x_div > 0) {  // (the check above: the per-warp static plan)
          launch_kernel(gemv_by_slot_kernel<T, K>(), grid, block, plan.launch_smem_bytes, stream, dependent, a);
          return;
        }
        if (plan.row_schedule) {
          launch_kernel(scalar_gemv_kernel<T, K, kTokens, true, kDecode, false, true>, grid, block,
                        plan.launch_smem_bytes, stream, dependent, a);
          return;
        }
      }
      TORCH_CHECK(!plan.row_schedule, "kbit: the row schedule is mma decode, 1 token slot only");
      if constexpr (gemv_can_share_x(true, kDecode, kTokens))
        if (plan.x_shared) {
          launch_kernel(gemv_shared_x_kernel<T, K, kTokens, kDecode>(), grid, block, plan.launch_smem_bytes, stream,
                        dependent, a);
          return;
        }
      TORCH_CHECK(!plan.x_shared, "kbit: grouped shared x is mma decode, 4-8 token slots only");
      launch_kernel(scalar_gemv_kernel<T, K, kTokens, true, kDecode, false>, grid, block, plan.launch_smem_bytes,
                    stream, dependent, a);
    } else if (plan.staged_layout != GemvStagedLayout::kSingle) {
      launch_kernel(gemv_staged_kernel_of<T, K, kTokens>(plan.staged_layout), grid, block, plan.launch_smem_bytes,
                    stream, dependent, a);
    } else if (args.gated_silu) {  // (the check above: mma decode, one token slot, single layout)
      if constexpr (kDecode == GemvDecode::kMma) {
        // (planned on this kernel, which raised its dynamic shared-memory limit: plan_gemv_kernel)
        launch_kernel(gemv_dense_gated_kernel<T, K, kTokens>(plan.x_resident), grid, block, plan.launch_smem_bytes,
                      stream, dependent, a);
      } else {
        TORCH_CHECK(false, "kbit: the dense gated GEMV is mma decode only");
      }
    } else if (plan.x_resident) {
      if constexpr (kDecode == GemvDecode::kMma)
        launch_kernel(scalar_gemv_kernel<T, K, kTokens, false, kDecode, true>, grid, block, plan.launch_smem_bytes,
                      stream, dependent, a);
      else TORCH_CHECK(false, "kbit: x resident is dense, mma decode only");
    } else {
      launch_kernel(scalar_gemv_kernel<T, K, kTokens, false, kDecode, false>, grid, block, plan.launch_smem_bytes,
                    stream, dependent, a);
    }
  });
}

}  // namespace cuda
}  // namespace kbit

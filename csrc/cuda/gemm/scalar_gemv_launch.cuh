#pragma once
// Host side of the GEMV (scalar_gemv.cuh): which kernel a call takes (decode, token slots), its
// launch plan (warps, shared memory, grid) and the launch. plan_scalar_gemv answers what
// launch_scalar_gemv would launch, without launching (kbit._C._gemv_launch_plan: tests, tuning).
#include <ATen/cuda/CUDAContext.h>

#include <algorithm>
#include <type_traits>
#include <utility>

#include "../common/dependent_launch.h"
#include "../common/kernel_residency.h"
#include "scalar_gemv.cuh"
#include "scalar_gemv.h"

namespace kbit {
namespace cuda {

// The decode a launch takes (resolve_gemv_decode) and its kernel's
// token slots: gemv_token_slots of the rows per unit, raised for dense mma launches to the
// tuning floor (gemv_min_token_slots; grouped launches chunk by their slots, so never there).
inline std::pair<GemvDecode, int> gemv_decode_and_slots(const TcGemmArgs& args) {
  const bool grouped = args.expert_offsets != nullptr;
  int slots = gemv_token_slots(args.tokens_per_unit);
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
  TORCH_CHECK(args.tokens_per_unit >= 1 && args.tokens_per_unit <= kGemvMaxTokens, "kbit: the GEMV takes 1 to ",
              kGemvMaxTokens, " rows per unit; got ", args.tokens_per_unit);
  const auto [decode, slots] = gemv_decode_and_slots(args);
  // gemm_cuda.cpp refuses a shuffle decode above 4 rows first, with the op's name; a guard for new callers.
  TORCH_CHECK(decode != GemvDecode::kShuffle || slots <= kGemvShuffleMaxTokens, "kbit: the GEMV's shuffle decode takes "
              "at most ", kGemvShuffleMaxTokens, " rows per unit; got ", args.tokens_per_unit);
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

template <typename T, int K, int kTokens, GemvDecode kDecode>
const void* gemv_kernel_of(bool grouped) {
  return grouped ? reinterpret_cast<const void*>(scalar_gemv_kernel<T, K, kTokens, true, kDecode>)
                 : reinterpret_cast<const void*>(scalar_gemv_kernel<T, K, kTokens, false, kDecode>);
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
  const void* kernel = gemv_kernel_of<T, K, kTokens, kDecode>(grouped);
  // Warps: shuffle decode, one per 256-column group (gemv_warps); mma decode, gemv_mma_warps, but
  // with 8 or 16 token slots whichever of 4 or 8 keeps more warps resident per SM (16 slots: the x
  // slots make a 4-warp CTA too big for two per SM; only where K has >= 8 groups, so warps <= groups
  // holds either way; grouped launches then rebuild 8-warp CTAs from unit slots, below). Fewer where
  // this GPU's shared memory per block cannot hold that many rings (~100 KB per block: k = 5, or
  // M = 3-4; the H100's 227 KB always can).
  int warps = kDecode == GemvDecode::kMma ? gemv_mma_warps(args.K, tiles, grouped, prop.multiProcessorCount)
                                          : gemv_warps(args.K);
  if (kDecode == GemvDecode::kMma && gemv_unit_warps() > 0) warps = std::min(gemv_unit_warps(), gemv_warps(args.K));
  const auto resident_warps = [&](int w) {
    const int bytes = gemv_smem_bytes(K, kTokens, w, experts, kDecode);
    return bytes > optin ? 0 : w * resident_ctas_per_sm(kernel, 32 * w, bytes, smem_limit);
  };
  if (kDecode == GemvDecode::kMma && kTokens >= 8 && gemv_warps(args.K) >= 8 &&
      gemv_unit_warps() == 0) {  // (M <= 4: the rule, measured)
    const int alternative = warps == 8 ? 4 : 8;
    if (resident_warps(alternative) > resident_warps(warps)) warps = alternative;
  }
  while (warps > 1 && gemv_smem_bytes(K, kTokens, warps, experts, kDecode) > optin) --warps;
  // Units: dense, one per tile; grouped, at most (T / kTokens + min(E, T)) chunks per tile (static
  // first chunks add at most E - min(E, T): none where they are taken, T >= E), and with uniform
  // routing min(E, T) experts of ceil(ceil(T / min(E, T)) / kTokens) chunks.
  const int64_t active = std::min<int64_t>(args.experts, args.M);
  const int64_t units = grouped ? (args.M / kTokens + active) * tiles : tiles;
  const int64_t uniform_chunks = active > 0 ? ((args.M + active - 1) / active + kTokens - 1) / kTokens : 0;
  const int64_t uniform_units = grouped ? active * uniform_chunks * tiles : units;
  // Grouped, mma decode: half the warps per unit (twice the unit slots) while the expected units
  // would still fill every slot of the GPU's 8-warp CTAs (session 14, Qwen3 MoE experts, us:
  // gate/up 8 x 1 token 4.28 / 5.59 / 7.94 with 8 / 4 / 2 warps per unit, 64 x 1 26.9 / 20.5 /
  // 18.1, 256 x 1 97.0 / 70.6 / 58.5; down, K = 512, 8 x 1 4.32 / 5.91 with 2 / 1, 64 x 1 26.3 /
  // 20.4, 256 x 1 94.2 / 69.5).
  if (grouped && kDecode == GemvDecode::kMma && gemv_unit_warps() == 0) {
    const int full_bytes = gemv_smem_bytes(K, kTokens, kGemvMmaMaxWarps, experts, kDecode);
    const int64_t full_ctas = full_bytes > optin ? 0 : int64_t(prop.multiProcessorCount) *
        resident_ctas_per_sm(kernel, 32 * kGemvMmaMaxWarps, full_bytes, smem_limit);
    while (full_ctas > 0 && warps > 1 && uniform_units >= full_ctas * (kGemvMmaMaxWarps / (warps / 2))) warps /= 2;
  }
  // Unit slots (scalar_gemv.cuh; grouped mma-decode launches): as many slots of `warps` warps as
  // make up to kGemvMmaMaxWarps warps (at most gemv_max_unit_slots, a tuning aid), fewer where the
  // shared memory cannot hold them.
  const int warps_per_unit = warps;
  int slots = 1;
  if (grouped && kDecode == GemvDecode::kMma && warps < kGemvMmaMaxWarps)
    slots = std::max(1, std::min(kGemvMmaMaxWarps / warps_per_unit, gemv_max_unit_slots()));
  while (slots > 1 && gemv_smem_bytes(K, kTokens, warps_per_unit * slots, experts, kDecode) > optin) --slots;
  warps = warps_per_unit * slots;
  const int smem = gemv_smem_bytes(K, kTokens, warps, experts, kDecode);
  TORCH_CHECK(smem <= optin, "kbit: the GEMV (", kDecode == GemvDecode::kMma ? "mma" : "shuffle", " decode) needs ", smem,
              " bytes of shared memory per block for k=", K, ", ", kTokens, " rows per unit and ", args.experts,
              " expert(s); this GPU (", prop.name, ") allows ", optin,
              kDecode == GemvDecode::kMma ? ". decode='shuffle' needs no pair table." : "");
  // CTAs for the units: one unit per slot at a time.
  const int64_t unit_ctas = (units + slots - 1) / slots;
  GemvLaunchPlan plan{};
  plan.token_slots = kTokens;
  plan.decode = kDecode;
  plan.warps = warps;
  plan.warps_per_unit = warps_per_unit;
  // Grouped, mma decode: the schedule's form (gemv_grouped_schedule) where WarpSchedule fits, static
  // first chunks only where T >= E.
  const int form = grouped && kDecode == GemvDecode::kMma && warp_schedule_fits(args.M, args.experts, tiles, kTokens)
                       ? gemv_grouped_schedule() : 0;
  plan.warp_schedule = form >= 1;
  plan.static_first_chunks = form == 2 && args.M >= args.experts;
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
  return plan;
}

template <typename T, int K>
GemvLaunchPlan plan_scalar_gemv(const TcGemmArgs& args) {
  return with_gemv_kernel(args, [&](auto slots, auto decode) {
    return plan_gemv_kernel<T, K, decltype(slots)::value, decltype(decode)::value>(args);
  });
}

// Dense: tokens_per_unit = M. Grouped: the chunk rows (gemv_grouped_chunk_rows); the kernel's chunk
// is its token slots (gemv_token_slots: 1-4, 8 or 16), and an expert with more rows takes several
// chunks.
template <typename T, int K>
void launch_scalar_gemv(const TcGemmArgs& args, cudaStream_t stream) {
  with_gemv_kernel(args, [&](auto slots, auto decode) {
    constexpr int kTokens = decltype(slots)::value;
    constexpr GemvDecode kDecode = decltype(decode)::value;
    const GemvLaunchPlan plan = plan_gemv_kernel<T, K, kTokens, kDecode>(args);
    const cudaDeviceProp& prop = *at::cuda::getCurrentDeviceProperties();
    const bool dependent = dependent_launch_enabled(prop);
    const bool grouped = args.expert_offsets != nullptr;
    TcGemmArgs a = args;
    a.warps_per_unit = plan.warps_per_unit;
    a.warp_schedule = plan.warp_schedule;
    a.static_first_chunks = plan.static_first_chunks;
    // Grouped launches: no L2 prefetch (scalar_gemv.cuh).
    const bool prefetch = dependent && !grouped;
    a.l2_prefetch_bytes = prefetch ? dependent_launch_prefetch_bytes(int64_t(plan.warps) * 512 * K) : 0u;
    const dim3 grid(static_cast<unsigned>(plan.grid)), block(32 * plan.warps);
    if (grouped)
      launch_kernel(scalar_gemv_kernel<T, K, kTokens, true, kDecode>, grid, block, plan.launch_smem_bytes, stream,
                    dependent, a);
    else
      launch_kernel(scalar_gemv_kernel<T, K, kTokens, false, kDecode>, grid, block, plan.launch_smem_bytes, stream,
                    dependent, a);
  });
}

}  // namespace cuda
}  // namespace kbit

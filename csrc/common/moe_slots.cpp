// kbit::grouped_gemm_slots' rules and its composed form (moe_slots.h).
#include "moe_slots.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <limits>
#include <tuple>

#include "moe_aten.h"
#include "moe_checks.h"

namespace kbit {

WeightGeometry check_grouped_gemm_slots_args(const at::Tensor& x, const at::Tensor& packed_t,
                                             const at::Tensor& absmax_t, const at::Tensor& row_scale,
                                             const at::Tensor& codebook, const at::Tensor& top_k_index, int64_t k,
                                             bool silu_and_mul) {
  const WeightGeometry g = check_gemm_args(x, packed_t, absmax_t, row_scale, codebook, k, true, "grouped_gemm_slots");
  TORCH_CHECK(top_k_index.dim() == 2 && top_k_index.size(0) == x.size(0), "kbit.grouped_gemm_slots: top_k_index must "
              "be 2-D [T, r] with x's T = ", x.size(0), " rows (got ", top_k_index.sizes(), ")");
  TORCH_CHECK(top_k_index.scalar_type() == at::kLong || top_k_index.scalar_type() == at::kInt,
              "kbit.grouped_gemm_slots: top_k_index must be int64 or int32 (got ", top_k_index.scalar_type(), ")");
  TORCH_CHECK(top_k_index.numel() <= std::numeric_limits<int32_t>::max(), "kbit.grouped_gemm_slots: at most ",
              std::numeric_limits<int32_t>::max(), " slots (got ", top_k_index.numel(), ")");
  check_same_device({{"x", &x}, {"top_k_index", &top_k_index}});
  if (silu_and_mul) check_gated_rows(g.rows, "grouped_gemm_slots");
  return g;
}

at::Tensor grouped_gemm_slots_composite(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                        const at::Tensor& row_scale, const at::Tensor& codebook,
                                        const at::Tensor& top_k_index, int64_t k, bool silu_and_mul) {
  const WeightGeometry g =
      check_grouped_gemm_slots_args(x, packed_t, absmax_t, row_scale, codebook, top_k_index, k, silu_and_mul);
  const int64_t S = top_k_index.numel();
  if (S == 0) return at::empty({0, silu_and_mul ? g.rows / 2 : g.rows}, x.options());
  using Route = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>(const at::Tensor&, int64_t,
                                                                          const at::Tensor&);
  using Grouped = at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                             const at::Tensor&, const at::Tensor&, int64_t);
  static const auto route =
      c10::Dispatcher::singleton().findSchemaOrThrow("kbit::moe_route_gather", "").typed<Route>();
  static const auto grouped = c10::Dispatcher::singleton().findSchemaOrThrow("kbit::grouped_gemm", "").typed<Grouped>();
  static const auto grouped_gated =
      c10::Dispatcher::singleton().findSchemaOrThrow("kbit::grouped_gemm_silu_and_mul", "").typed<Grouped>();
  // rows grouped by expert (an id outside [0, E): expert E - 1's), then put back in slot order (pair p's row)
  const auto [offsets, row_token, pair_row, xs] = route.call(top_k_index, g.experts, x);
  const at::Tensor ys = (silu_and_mul ? grouped_gated : grouped).call(xs, packed_t, absmax_t, row_scale, codebook,
                                                                       offsets, k);
  at::Tensor y = ys.index_select(0, pair_row);
  const at::Tensor ids = top_k_index.reshape({S});
  y.masked_fill_(ids.lt(0).logical_or(ids.ge(g.experts)).unsqueeze(1), std::numeric_limits<float>::quiet_NaN());
  return y;
}

}  // namespace kbit

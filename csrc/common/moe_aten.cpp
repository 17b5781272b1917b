#include "moe_aten.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <limits>

#include "moe_checks.h"

namespace kbit {

std::tuple<at::Tensor, at::Tensor, at::Tensor> moe_route_aten(const at::Tensor& top_k_index, int64_t num_experts) {
  check_moe_route_args(top_k_index, num_experts);
  const int64_t P = top_k_index.numel(), topk = top_k_index.size(1);
  const at::Tensor ids = top_k_index.reshape({-1}).to(at::kLong);
  const at::Tensor valid = ids.ge(0).logical_and(ids.lt(num_experts));
  // pairs of no expert (ids outside [0, E)) join expert E - 1's rows (computed, skipped by moe_combine)
  const at::Tensor key = at::where(valid, ids, at::full({}, num_experts - 1, ids.options()));
  const auto sorted = at::sort(key, /*stable=*/true, /*dim=*/0, /*descending=*/false);
  const at::Tensor& order = std::get<1>(sorted);  // row r <- pair order[r]
  at::Tensor offsets = at::searchsorted(std::get<0>(sorted), at::arange(num_experts + 1, ids.options()),
                                        /*out_int32=*/true);
  at::Tensor row_token = P > 0 ? order.div(topk, "floor") : order.clone();
  at::Tensor pair_row = at::empty({P}, ids.options().dtype(at::kInt));
  pair_row.index_put_({order}, at::arange(P, ids.options().dtype(at::kInt)));
  return {offsets, row_token, pair_row};
}

at::Tensor moe_gather_aten(const at::Tensor& x, const at::Tensor& row_token) {
  check_moe_gather_args(x, row_token);
  // (CUDA cannot check row_token's values without a host sync: an entry out of range makes its row NaN there; here
  // it is a clear error)
  const int64_t T = x.size(0);
  TORCH_CHECK(!row_token.device().is_cpu() || row_token.numel() == 0 ||
                  (row_token.min().item<int64_t>() >= 0 && row_token.max().item<int64_t>() < T),
              "kbit.moe_gather: row_token must hold rows of x, 0 <= row < ", T, " (moe_route's row_token)");
  return x.index_select(0, row_token).contiguous();
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> moe_route_gather_aten(const at::Tensor& top_k_index,
                                                                                  int64_t num_experts,
                                                                                  const at::Tensor& x) {
  check_moe_route_gather_args(top_k_index, num_experts, x);
  auto [offsets, row_token, pair_row] = moe_route_aten(top_k_index, num_experts);
  return {offsets, row_token, pair_row, x.index_select(0, row_token).contiguous()};
}

at::Tensor silu_and_mul_interleaved(const at::Tensor& h) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("kbit::silu_and_mul", "")
                             .typed<at::Tensor(const at::Tensor&, bool)>();
  return op.call(h, /*interleaved=*/true);
}

void check_gated_rows(int64_t rows, const char* op) {
  TORCH_CHECK(rows % 16 == 0, "kbit.", op, ": the weight's N must be a multiple of 16 (gate and up rows interleaved "
              "in 8s; got N=", rows, ")");
}

at::Tensor silu_and_mul_aten(const at::Tensor& h_in, bool interleaved) {
  check_silu_and_mul_args(h_in, interleaved);
  const int64_t R = h_in.size(0), I = h_in.size(1) / 2;
  // (interleaved: the columns put in order, gate then up)
  const at::Tensor h = interleaved ? h_in.reshape({R, I / 8, 2, 8}).transpose(1, 2).reshape({R, 2 * I}) : h_in;
  const at::Tensor gate = h.narrow(1, 0, I).to(at::kFloat), up = h.narrow(1, I, I).to(at::kFloat);
  return (at::silu(gate) * up).to(h.scalar_type()).contiguous();  // (as the CUDA op and the fake kernel)
}

at::Tensor moe_combine_aten(const at::Tensor& y, const at::Tensor& top_k_weights, const at::Tensor& top_k_index,
                            const std::optional<at::Tensor>& pair_row_opt, int64_t num_experts) {
  check_moe_combine_args(y, top_k_weights, top_k_index, pair_row_opt, num_experts);
  // (none: the pairs' rows in order)
  const at::Tensor pair_row = pair_row_opt ? *pair_row_opt
                                           : at::arange(top_k_index.numel(), y.options().dtype(at::kInt));
  const int64_t T = top_k_index.size(0), topk = top_k_index.size(1), H = y.size(1);
  // (CUDA cannot check pair_row's values without a host sync: an entry out of range makes its token's
  // outputs NaN there; here it is a clear error)
  TORCH_CHECK(!pair_row.device().is_cpu() || pair_row.numel() == 0 ||
                  (pair_row.min().item<int32_t>() >= 0 && pair_row.max().item<int64_t>() < pair_row.numel()),
              "kbit.moe_combine: pair_row must hold rows 0 .. ", pair_row.numel() - 1, " (moe_route's pair_row)");
  const at::Tensor valid = top_k_index.ge(0).logical_and(top_k_index.lt(num_experts));  // [T, topk]
  at::Tensor out = at::zeros({T, H}, y.options().dtype(at::kFloat));
  if (T == 0 || topk == 0) return out.to(y.scalar_type());
  // (rows of pairs of no expert are never read: their index is clamped and their term is 0)
  const at::Tensor rows = at::where(valid.reshape({-1}), pair_row, at::zeros({}, pair_row.options())).to(at::kLong);
  const at::Tensor picked = y.index_select(0, rows).to(at::kFloat).view({T, topk, H});
  const at::Tensor w = top_k_weights.to(at::kFloat);
  for (int64_t j = 0; j < topk; ++j) {  // slot order, as the CUDA kernel
    const at::Tensor term = picked.select(1, j) * w.select(1, j).unsqueeze(1);
    out.add_(at::where(valid.select(1, j).unsqueeze(1), term, at::zeros({}, term.options())));
  }
  return out.to(y.scalar_type());
}

std::tuple<at::Tensor, at::Tensor> router_topk_aten(const at::Tensor& logits, int64_t top_k, bool normalize) {
  check_router_topk_args(logits, top_k);
  // One zero (-0 + 0 = +0) and one NaN (a negative NaN sorts below every number in CUDA's radix sort): the kernel's
  // order on every device.
  at::Tensor l = logits.to(at::kFloat) + 0.0;
  l = at::where(at::isnan(l), std::numeric_limits<float>::quiet_NaN(), l);
  const at::Tensor ids = std::get<1>(at::sort(l, /*stable=*/true, /*dim=*/-1, /*descending=*/true))
                             .narrow(1, 0, top_k)
                             .contiguous();
  at::Tensor w = at::softmax(l, -1).gather(1, ids);
  if (normalize) w = w / w.sum(-1, /*keepdim=*/true);
  return {w.to(logits.scalar_type()), ids};
}

}  // namespace kbit

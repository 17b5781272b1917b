#include "moe_checks.h"

#include "checks.h"

namespace kbit {

namespace {
void check_ids(const at::Tensor& top_k_index, const char* op) {
  TORCH_CHECK(top_k_index.dim() == 2, "kbit.", op, ": top_k_index must be 2-D [tokens, topk] (got ",
              top_k_index.dim(), "-D)");
  TORCH_CHECK(top_k_index.scalar_type() == at::kLong || top_k_index.scalar_type() == at::kInt, "kbit.", op,
              ": top_k_index must be int64 or int32 (got ", top_k_index.scalar_type(), ")");
}
}  // namespace

namespace {
void check_route(const at::Tensor& top_k_index, int64_t num_experts, const char* op) {
  check_ids(top_k_index, op);
  TORCH_CHECK(num_experts >= 1 && num_experts <= INT32_MAX, "kbit.", op, ": num_experts must be 1 to ", INT32_MAX,
              " (got ", num_experts, ")");
  TORCH_CHECK(top_k_index.numel() <= INT32_MAX, "kbit.", op, ": at most ", INT32_MAX, " (token, slot) pairs (got ",
              top_k_index.numel(), ")");
}

void check_rows(const at::Tensor& x, const char* op) {
  const auto t = x.scalar_type();
  TORCH_CHECK(x.dim() == 2 && (t == at::kHalf || t == at::kBFloat16 || t == at::kFloat), "kbit.", op, ": x must "
              "be 2-D [tokens, H] float16, bfloat16 or float32 (got ", x.dim(), "-D ", t, ")");
}
}  // namespace

void check_moe_route_args(const at::Tensor& top_k_index, int64_t num_experts) {
  check_route(top_k_index, num_experts, "moe_route");
}

void check_moe_route_gather_args(const at::Tensor& top_k_index, int64_t num_experts, const at::Tensor& x) {
  check_route(top_k_index, num_experts, "moe_route_gather");
  check_rows(x, "moe_route_gather");
  TORCH_CHECK(x.size(0) == top_k_index.size(0), "kbit.moe_route_gather: x must have one row per token of "
              "top_k_index (got ", x.size(0), " rows for ", top_k_index.size(0), " tokens)");
  check_same_device({{"top_k_index", &top_k_index}, {"x", &x}});
}

void check_moe_gather_args(const at::Tensor& x, const at::Tensor& row_token) {
  check_rows(x, "moe_gather");
  TORCH_CHECK(row_token.dim() == 1 && (row_token.scalar_type() == at::kLong || row_token.scalar_type() == at::kInt),
              "kbit.moe_gather: row_token must be 1-D int64 or int32 (moe_route's; got ", row_token.dim(), "-D ",
              row_token.scalar_type(), ")");
  check_same_device({{"x", &x}, {"row_token", &row_token}});
}

void check_silu_and_mul_args(const at::Tensor& h, bool interleaved) {
  TORCH_CHECK(h.dim() == 2, "kbit.silu_and_mul: h must be 2-D [rows, 2 I] (got ", h.dim(), "-D)");
  TORCH_CHECK(h.size(1) % 2 == 0, "kbit.silu_and_mul: h's last dim must be even (gate then up; got ", h.size(1), ")");
  const auto t = h.scalar_type();
  TORCH_CHECK(t == at::kHalf || t == at::kBFloat16 || t == at::kFloat, "kbit.silu_and_mul: h must be float16, "
              "bfloat16 or float32 (got ", t, ")");
  TORCH_CHECK(!interleaved || h.size(1) % 16 == 0, "kbit.silu_and_mul: interleaved h's last dim must be a multiple of "
              "16 (gate and up in groups of 8; got ", h.size(1), ")");
}

void check_moe_combine_args(const at::Tensor& y, const at::Tensor& top_k_weights, const at::Tensor& top_k_index,
                            const std::optional<at::Tensor>& pair_row_opt, int64_t num_experts) {
  check_ids(top_k_index, "moe_combine");
  TORCH_CHECK(num_experts >= 1 && num_experts <= INT32_MAX, "kbit.moe_combine: num_experts must be 1 to ",
              INT32_MAX, " (got ", num_experts, ")");
  const auto t = y.scalar_type();
  TORCH_CHECK(y.dim() == 2 && (t == at::kHalf || t == at::kBFloat16 || t == at::kFloat), "kbit.moe_combine: y must "
              "be 2-D [tokens x topk, H] float16, bfloat16 or float32 (got ", y.dim(), "-D ", t, ")");
  TORCH_CHECK(y.size(0) == top_k_index.numel(), "kbit.moe_combine: y must have one row per (token, slot) pair of "
              "top_k_index (", top_k_index.numel(), "; got ", y.size(0), ")");
  const auto wt = top_k_weights.scalar_type();
  TORCH_CHECK(top_k_weights.sizes() == top_k_index.sizes() &&
                  (wt == at::kHalf || wt == at::kBFloat16 || wt == at::kFloat || wt == at::kDouble),
              "kbit.moe_combine: top_k_weights must be float16, bfloat16, float32 or float64 with top_k_index's "
              "shape ", top_k_index.sizes(), " (got ", wt, " ", top_k_weights.sizes(), ")");
  check_same_device({{"y", &y}, {"top_k_weights", &top_k_weights}, {"top_k_index", &top_k_index}});
  if (!pair_row_opt) return;
  const at::Tensor& pair_row = *pair_row_opt;
  TORCH_CHECK(pair_row.dim() == 1 && pair_row.size(0) == top_k_index.numel() && pair_row.scalar_type() == at::kInt,
              "kbit.moe_combine: pair_row must be moe_route's int32 [tokens x topk] or None (got ",
              pair_row.scalar_type(), " ", pair_row.sizes(), ")");
  check_same_device({{"y", &y}, {"pair_row", &pair_row}});
}

void check_router_topk_args(const at::Tensor& logits, int64_t top_k) {
  const auto t = logits.scalar_type();
  TORCH_CHECK(logits.dim() == 2 && (t == at::kHalf || t == at::kBFloat16 || t == at::kFloat), "kbit.router_topk: "
              "logits must be 2-D [tokens, experts] float16, bfloat16 or float32 (got ", logits.dim(), "-D ", t, ")");
  TORCH_CHECK(logits.size(1) <= INT32_MAX, "kbit.router_topk: at most ", INT32_MAX, " experts (got ", logits.size(1),
              ")");
  TORCH_CHECK(top_k >= 0 && top_k <= logits.size(1), "kbit.router_topk: top_k must be 0 to the number of experts ",
              logits.size(1), " (got ", top_k, ")");
}

}  // namespace kbit

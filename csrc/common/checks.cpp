#include "checks.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

namespace kbit {

void check_k(int64_t k) {
  TORCH_CHECK(k >= 2 && k <= 5, "kbit: k must be 2, 3, 4 or 5 (got k=", k, ")");
}

void check_codebook(const at::Tensor& codebook, int64_t k) {
  check_k(k);
  TORCH_CHECK(codebook.dim() == 1 && codebook.numel() == (int64_t{1} << k),
              "kbit: codebook must be a 1-D tensor of 2^k = ", int64_t{1} << k,
              " entries for k=", k, " (got shape ", codebook.sizes(), ")");
  TORCH_CHECK(codebook.scalar_type() == at::kFloat, "kbit: codebook must be float32 (got ",
              codebook.scalar_type(), ")");
}

static bool is_float_weight(at::ScalarType t) {
  return t == at::kHalf || t == at::kBFloat16 || t == at::kFloat;
}

WeightGeometry check_quantize_args(const at::Tensor& W, const at::Tensor& codebook, int64_t k) {
  check_codebook(codebook, k);
  TORCH_CHECK(W.dim() == 2 || W.dim() == 3,
              "kbit: W must be 2-D [N, K] or 3-D [E, N, K] (got ", W.dim(), "-D, shape ",
              W.sizes(), ")");
  TORCH_CHECK(is_float_weight(W.scalar_type()),
              "kbit: W must be float16, bfloat16 or float32 (got ", W.scalar_type(), ")");
  WeightGeometry g;
  g.k = static_cast<int>(k);
  g.experts = W.dim() == 3 ? W.size(0) : 0;
  g.rows = W.size(-2);
  g.cols = W.size(-1);
  TORCH_CHECK(g.rows >= 1 && (W.dim() == 2 || g.experts >= 1),
              "kbit: W must have at least one row and one expert (got shape ", W.sizes(), ")");
  TORCH_CHECK(g.cols % 32 == 0 && g.cols > 0,
              "kbit: K (the last dim of W) must be a positive multiple of 32, the block size (got K=",
              g.cols, ")");
  check_same_device({{"W", &W}, {"codebook", &codebook}});
  return g;
}

WeightGeometry check_flat(const at::Tensor& packed, const at::Tensor& absmax) {
  TORCH_CHECK(packed.dim() == 3 || packed.dim() == 4,
              "kbit: packed (flat layout) must be [N, K/32, k] or [E, N, K/32, k] (got shape ",
              packed.sizes(), ")");
  TORCH_CHECK(packed.scalar_type() == at::kInt, "kbit: packed must be int32 (got ",
              packed.scalar_type(), ")");
  TORCH_CHECK(absmax.scalar_type() == at::kByte, "kbit: absmax must be uint8 (got ",
              absmax.scalar_type(), ")");
  WeightGeometry g;
  g.k = static_cast<int>(packed.size(-1));
  check_k(g.k);
  g.experts = packed.dim() == 4 ? packed.size(0) : 0;
  g.rows = packed.size(-3);
  g.cols = packed.size(-2) * 32;
  TORCH_CHECK(g.rows >= 1 && g.cols >= 32 && (packed.dim() == 3 || g.experts >= 1),
              "kbit: packed (flat) must hold at least one row, block and expert (got shape ",
              packed.sizes(), ")");
  TORCH_CHECK(absmax.sizes() == packed.sizes().slice(0, packed.dim() - 1),
              "kbit: absmax must have shape ", packed.sizes().slice(0, packed.dim() - 1),
              " to match packed ", packed.sizes(), " (got ", absmax.sizes(), ")");
  TORCH_CHECK(packed.is_contiguous() && absmax.is_contiguous(),
              "kbit: packed and absmax must be contiguous");
  check_same_device({{"packed", &packed}, {"absmax", &absmax}});
  return g;
}

WeightGeometry check_tiled(const at::Tensor& packed, const at::Tensor& absmax, int64_t N,
                           int64_t K) {
  TORCH_CHECK(N >= 1, "kbit: N must be >= 1 (got ", N, ")");
  TORCH_CHECK(K >= 32 && K % 32 == 0, "kbit: K must be a positive multiple of 32 (got ", K, ")");
  TORCH_CHECK(packed.dim() == 5 || packed.dim() == 6,
              "kbit: packed (tiled layout) must be [N/16, K/256, k, 32, 4] or "
              "[E, N/16, K/256, k, 32, 4] (got shape ", packed.sizes(), ")");
  TORCH_CHECK(packed.scalar_type() == at::kInt, "kbit: packed must be int32 (got ",
              packed.scalar_type(), ")");
  TORCH_CHECK(absmax.scalar_type() == at::kByte, "kbit: absmax must be uint8 (got ",
              absmax.scalar_type(), ")");
  WeightGeometry g;
  g.k = static_cast<int>(packed.size(-3));
  check_k(g.k);
  g.experts = packed.dim() == 6 ? packed.size(0) : 0;
  g.rows = N;
  g.cols = K;
  TORCH_CHECK(packed.dim() == 5 || g.experts >= 1, "kbit: an expert stack needs E >= 1 (got shape ",
              packed.sizes(), ")");
  const int b = packed.dim() == 6 ? 1 : 0;
  TORCH_CHECK(packed.size(b) == g.row_tiles() && packed.size(b + 1) == g.col_tiles() &&
                  packed.size(-2) == 32 && packed.size(-1) == 4,
              "kbit: packed (tiled) has shape ", packed.sizes(), " but a weight of N=", N,
              ", K=", K, " needs [", g.row_tiles(), ", ", g.col_tiles(), ", k, 32, 4]");
  std::vector<int64_t> want;
  if (b) want.push_back(g.experts);
  want.insert(want.end(), {g.row_tiles(), g.col_tiles(), 128});
  TORCH_CHECK(absmax.sizes() == at::IntArrayRef(want), "kbit: absmax (tiled) must have shape ",
              at::IntArrayRef(want), " (got ", absmax.sizes(), ")");
  TORCH_CHECK(packed.is_contiguous() && absmax.is_contiguous(),
              "kbit: packed and absmax must be contiguous");
  // The kernels read tiles with 16-byte vector loads: a view starting mid-tile would fault.
  TORCH_CHECK(reinterpret_cast<uintptr_t>(packed.data_ptr()) % 16 == 0 &&
                  reinterpret_cast<uintptr_t>(absmax.data_ptr()) % 16 == 0,
              "kbit: packed and absmax (tiled) must start on a 16-byte boundary (a view that does not "
              "start at a tile?)");
  check_same_device({{"packed", &packed}, {"absmax", &absmax}});
  return g;
}

void check_row_scale(const at::Tensor& row_scale, const WeightGeometry& g) {
  TORCH_CHECK(row_scale.scalar_type() == at::kFloat, "kbit: row_scale must be float32 (got ",
              row_scale.scalar_type(), ")");
  std::vector<int64_t> want;
  if (g.experts) want.push_back(g.experts);
  want.push_back(g.rows);
  TORCH_CHECK(row_scale.sizes() == at::IntArrayRef(want), "kbit: row_scale must have shape ",
              at::IntArrayRef(want), " (got ", row_scale.sizes(), ")");
  TORCH_CHECK(row_scale.is_contiguous(), "kbit: row_scale must be contiguous");
}

void check_same_device(std::initializer_list<std::pair<const char*, const at::Tensor*>> tensors) {
  const auto& first = *tensors.begin();
  for (const auto& t : tensors) {
    TORCH_CHECK(t.second->device() == first.second->device(), "kbit: all tensors must be on one device: ",
                first.first, " is on ", first.second->device(), " but ", t.first, " is on ",
                t.second->device());
  }
}

void check_activation(const at::Tensor& x, int64_t K, const char* name) {
  TORCH_CHECK(x.dim() == 2, "kbit: ", name, " must be 2-D [M, K] (got shape ", x.sizes(), ")");
  TORCH_CHECK(x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16, "kbit: ", name,
              " must be float16 or bfloat16 (got ", x.scalar_type(), ")");
  TORCH_CHECK(x.size(1) == K, "kbit: ", name, " has K=", x.size(1),
              " in its last dim but the weight has K=", K);
}

void check_out_dtype(at::ScalarType dtype) {
  TORCH_CHECK(dtype == at::kHalf || dtype == at::kBFloat16 || dtype == at::kFloat,
              "kbit: dtype must be float16, bfloat16 or float32 (got ", dtype, ")");
}

WeightGeometry check_gemm_args(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                               const at::Tensor& row_scale, const at::Tensor& codebook, int64_t k,
                               bool grouped, const char* op) {
  TORCH_CHECK(x.dim() == 2, "kbit: x must be 2-D [M, K] (got shape ", x.sizes(), ")");
  TORCH_CHECK(row_scale.dim() == (grouped ? 2 : 1), "kbit: row_scale must be ",
              grouped ? "[E, N]" : "[N]", " (got shape ", row_scale.sizes(), ")");
  const WeightGeometry g = check_tiled(packed_t, absmax_t, row_scale.size(-1), x.size(1));
  if (op == nullptr) op = grouped ? "grouped_gemm" : "gemm";
  TORCH_CHECK((g.experts > 0) == grouped, "kbit: ", op, " needs a ",
              grouped ? "3-D [E, N, K] (expert stack)" : "2-D [N, K]", " weight (got packed of shape ",
              packed_t.sizes(), ")");
  TORCH_CHECK(g.k == k, "kbit: packed holds k=", g.k, " but k=", k, " was passed");
  check_codebook(codebook, k);
  check_row_scale(row_scale, g);
  check_activation(x, g.cols, "x");
  check_same_device({{"x", &x}, {"packed", &packed_t}, {"row_scale", &row_scale}, {"codebook", &codebook}});
  return g;
}

void check_expert_offsets(const at::Tensor& offsets, int64_t experts, int64_t tokens,
                          bool check_values) {
  TORCH_CHECK(offsets.scalar_type() == at::kInt, "kbit: expert_offsets must be int32 (got ",
              offsets.scalar_type(), ")");
  TORCH_CHECK(offsets.dim() == 1 && offsets.size(0) == experts + 1,
              "kbit: expert_offsets must be 1-D of length E+1 = ", experts + 1, " (got shape ",
              offsets.sizes(), ")");
  if (!check_values) return;
  const at::Tensor o = offsets.contiguous();
  const int32_t* p = o.data_ptr<int32_t>();
  TORCH_CHECK(p[0] == 0, "kbit: expert_offsets[0] must be 0 (got ", p[0], ")");
  for (int64_t e = 0; e < experts; ++e) {
    TORCH_CHECK(p[e + 1] >= p[e], "kbit: expert_offsets must be non-decreasing (offsets[", e,
                "]=", p[e], " > offsets[", e + 1, "]=", p[e + 1], ")");
  }
  TORCH_CHECK(p[experts] == tokens, "kbit: expert_offsets[E] must equal the number of tokens T=",
              tokens, " (got ", p[experts], ")");
}

}  // namespace kbit

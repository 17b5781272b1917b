#pragma once
// Argument validation shared by every backend of every op: the rules live here
// once, and each message names the argument and the rule it broke. The fake
// (meta) kernels in kbit/_fake.py mirror these checks for torch.compile.
#include <torch/types.h>
#include <cstdint>

namespace kbit {

// Shape of a weight stack: `experts` is 0 for a plain [N, K] matrix.
struct WeightGeometry {
  int64_t experts = 0;   // E for [E, N, K], 0 for [N, K]
  int64_t rows = 0;      // N
  int64_t cols = 0;      // K
  int k = 0;             // bits per index
  int64_t batch() const { return experts == 0 ? 1 : experts; }
  int64_t blocks_per_row() const { return cols / 32; }
  int64_t row_tiles() const { return (rows + 15) / 16; }
  int64_t col_tiles() const { return (cols + 255) / 256; }
};

void check_k(int64_t k);
void check_codebook(const at::Tensor& codebook, int64_t k);  // metadata only: size, dtype

WeightGeometry check_quantize_args(const at::Tensor& W, const at::Tensor& codebook, int64_t k);

// Flat layout: packed [*, N, K/32, k] int32, absmax [*, N, K/32] uint8.
WeightGeometry check_flat(const at::Tensor& packed, const at::Tensor& absmax);
// Tiled layout: packed [*, N/16, K/256, k, 32, 4] int32, absmax [*, N/16, K/256, 128] uint8,
// for a weight of N rows and K columns.
WeightGeometry check_tiled(const at::Tensor& packed, const at::Tensor& absmax, int64_t N, int64_t K);
void check_row_scale(const at::Tensor& row_scale, const WeightGeometry& g);
void check_same_device(std::initializer_list<std::pair<const char*, const at::Tensor*>> tensors);
void check_activation(const at::Tensor& x, int64_t K, const char* name);
void check_out_dtype(at::ScalarType dtype);
// gemm / grouped_gemm: x [M, K] fp16/bf16, a tiled weight ([N, K] or, when grouped,
// [E, N, K]) with N = row_scale.size(-1), all on x's device. op names the caller in the weight-rank error
// (default: "gemm" or "grouped_gemm").
WeightGeometry check_gemm_args(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                               const at::Tensor& row_scale, const at::Tensor& codebook, int64_t k,
                               bool grouped, const char* op = nullptr);
void check_expert_offsets(const at::Tensor& offsets, int64_t experts, int64_t tokens,
                          bool check_values);

}  // namespace kbit

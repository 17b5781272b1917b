// CPU quantize: W [*, N, K] -> flat bit-planes, E4M4 absmax, per-row scale.
// The reference the CUDA kernel must match bit for bit (docs/format.md).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <cmath>

#include "../common/checks.h"
#include "../common/dispatch.h"
#include "../common/block_quantizer.h"
#include "../common/quant_math.h"

namespace kbit {
namespace {

template <typename scalar_t, int K>
void quantize_rows(const at::Tensor& W, const float* cb, int64_t rows, int64_t cols,
                   uint32_t* packed, uint8_t* absmax, float* row_scale) {
  const scalar_t* w = W.data_ptr<scalar_t>();
  const int64_t blocks = cols / 32;
  float table[BlockQuantizer<K>::kTableSize];
  for (int i = 0; i < (1 << K); ++i) BlockQuantizer<K>::fill_table(cb, table, i);
  const BlockQuantizer<K> q{table};
  at::parallel_for(0, rows, 16, [&](int64_t r0, int64_t r1) {
    float buf[32];
    uint32_t planes[K];
    for (int64_t r = r0; r < r1; ++r) {
      const scalar_t* wr = w + r * cols;
      float row_max = 0.0f;
      bool finite = true;
      for (int64_t c = 0; c < cols; ++c) {
        const float v = static_cast<float>(wr[c]);
        finite = finite && std::isfinite(v);
        row_max = std::fmax(row_max, std::fabs(v));
      }
      const float rs = row_scale_for(row_max, finite);
      row_scale[r] = rs;
      for (int64_t b = 0; b < blocks; ++b) {
        for (int i = 0; i < 32; ++i) buf[i] = static_cast<float>(wr[b * 32 + i]);
        absmax[r * blocks + b] = static_cast<uint8_t>(q.quantize(buf, rs, planes));
        for (int j = 0; j < K; ++j) packed[(r * blocks + b) * K + j] = planes[j];
      }
    }
  });
}

template <int K>
void quantize_dispatch(const at::Tensor& W, const float* cb, int64_t rows, int64_t cols,
                       uint32_t* packed, uint8_t* absmax, float* row_scale) {
  KBIT_DISPATCH_FLOAT_TYPES(W.scalar_type(), "kbit_quantize_cpu", [&] {
    quantize_rows<scalar_t, K>(W, cb, rows, cols, packed, absmax, row_scale);
  });
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> quantize_cpu(const at::Tensor& W_in,
                                                            const at::Tensor& codebook,
                                                            int64_t k) {
  const WeightGeometry g = check_quantize_args(W_in, codebook, k);
  const at::Tensor W = W_in.contiguous();
  const at::Tensor cb = codebook.contiguous();
  std::vector<int64_t> lead(W.sizes().begin(), W.sizes().end() - 1);  // [*, N]
  std::vector<int64_t> psize = lead, asize = lead;
  psize.push_back(g.blocks_per_row());
  psize.push_back(k);
  asize.push_back(g.blocks_per_row());
  at::Tensor packed = at::empty(psize, W.options().dtype(at::kInt));
  at::Tensor absmax = at::empty(asize, W.options().dtype(at::kByte));
  at::Tensor row_scale = at::empty(lead, W.options().dtype(at::kFloat));
  const int64_t rows = g.batch() * g.rows;
  if (rows == 0) return {packed, absmax, row_scale};
  auto* p = reinterpret_cast<uint32_t*>(packed.data_ptr<int32_t>());
  auto* a = absmax.data_ptr<uint8_t>();
  auto* rs = row_scale.data_ptr<float>();
  const float* c = cb.data_ptr<float>();
  switch (k) {
    case 2: quantize_dispatch<2>(W, c, rows, g.cols, p, a, rs); break;
    case 3: quantize_dispatch<3>(W, c, rows, g.cols, p, a, rs); break;
    case 4: quantize_dispatch<4>(W, c, rows, g.cols, p, a, rs); break;
    case 5: quantize_dispatch<5>(W, c, rows, g.cols, p, a, rs); break;
  }
  return {packed, absmax, row_scale};
}

}  // namespace

TORCH_LIBRARY_IMPL(kbit, CPU, m) { m.impl("quantize", &quantize_cpu); }

}  // namespace kbit

// CPU quantize: W [*, N, K] -> flat bit-planes, E4M4 absmax, per-row scale.
// The reference the CUDA kernel must match bit for bit (docs/format.md).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <cmath>

#include "../common/checks.h"
#include "../common/dispatch.h"
#include "../common/quant_math.h"

namespace kbit {
namespace {

// Sum of 32 values in the order of a warp's xor-butterfly (offsets 16, 8, 4, 2, 1),
// so the CUDA kernel's shuffle reduction yields the same bits.
float butterfly_sum32(float* v) {
  for (int off = 16; off >= 1; off >>= 1)
    for (int i = 0; i < off; ++i) v[i] = fadd_rn(v[i], v[i + off]);
  return v[0];
}

template <int K>
struct BlockQuantizer {
  const float* cb;   // 2^K codebook entries
  float mid[(1 << K) - 1];

  explicit BlockQuantizer(const float* codebook) : cb(codebook) {
    for (int i = 0; i + 1 < (1 << K); ++i) mid[i] = codebook_midpoint(cb, i);
  }

  // Indices of w[32] under block scale s, and their squared error (butterfly sum).
  float quantize(const float* w, float s, uint32_t* idx) const {
    float sq[32];
    const float inv_s = scale_reciprocal(s);
    for (int i = 0; i < 32; ++i) {
      idx[i] = static_cast<uint32_t>(nearest_index<K>(normalize(w[i], inv_s), mid));
      sq[i] = squared_error(w[i], cb[idx[i]], s);
    }
    return butterfly_sum32(sq);
  }

  // One block: choose between the two E4M4 codes bracketing its absmax the one
  // with the smaller squared error (ties: the larger code, which never clips).
  void block(const float* w, float row_scale, uint32_t* planes, uint8_t* code_out) const {
    uint32_t idx[32];
    uint32_t code = 0;
    if (std::isnan(row_scale)) {
      for (int i = 0; i < 32; ++i) idx[i] = 0;
    } else {
      float amax = 0.0f;
      for (int i = 0; i < 32; ++i) amax = std::fmax(amax, std::fabs(w[i]));
      const float a = amax / row_scale;  // exact: row_scale is a power of two
      const uint32_t down = e4m4_floor_code(a);
      const uint32_t up = (e4m4_decode(down) == a || down == 255u) ? down : down + 1u;
      code = up;
      const float err_up = quantize(w, block_scale(up, row_scale), idx);
      if (down != up) {
        uint32_t idx_down[32];
        const float err_down = quantize(w, block_scale(down, row_scale), idx_down);
        if (err_down < err_up) {
          code = down;
          for (int i = 0; i < 32; ++i) idx[i] = idx_down[i];
        }
      }
    }
    for (int j = 0; j < K; ++j) {
      uint32_t p = 0;
      for (int i = 0; i < 32; ++i) p |= ((idx[i] >> j) & 1u) << i;
      planes[j] = p;
    }
    *code_out = static_cast<uint8_t>(code);
  }
};

template <typename scalar_t, int K>
void quantize_rows(const at::Tensor& W, const float* cb, int64_t rows, int64_t cols,
                   uint32_t* packed, uint8_t* absmax, float* row_scale) {
  const scalar_t* w = W.data_ptr<scalar_t>();
  const int64_t blocks = cols / 32;
  const BlockQuantizer<K> q(cb);
  at::parallel_for(0, rows, 16, [&](int64_t r0, int64_t r1) {
    float buf[32];
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
        q.block(buf, rs, packed + (r * blocks + b) * K, absmax + r * blocks + b);
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

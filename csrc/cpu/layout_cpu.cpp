// CPU repack / unrepack between the flat and tiled layouts, and dequantize from
// either. Layouts: docs/format.md and csrc/common/tiled_layout.h.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "../common/checks.h"
#include "../common/dispatch.h"
#include "../common/quant_math.h"
#include "../common/tiled_layout.h"
#include "tiled_decode.h"

namespace kbit {
namespace {

std::vector<int64_t> tiled_packed_shape(const WeightGeometry& g) {
  std::vector<int64_t> s;
  if (g.experts) s.push_back(g.experts);
  s.insert(s.end(), {g.row_tiles(), g.col_tiles(), g.k, 32, 4});
  return s;
}
std::vector<int64_t> tiled_absmax_shape(const WeightGeometry& g) {
  std::vector<int64_t> s;
  if (g.experts) s.push_back(g.experts);
  s.insert(s.end(), {g.row_tiles(), g.col_tiles(), 128});
  return s;
}

std::tuple<at::Tensor, at::Tensor> repack_cpu(const at::Tensor& packed, const at::Tensor& absmax) {
  const WeightGeometry g = check_flat(packed, absmax);
  at::Tensor out_p = at::empty(tiled_packed_shape(g), packed.options());
  at::Tensor out_a = at::empty(tiled_absmax_shape(g), absmax.options());
  const auto* src = reinterpret_cast<const uint32_t*>(packed.data_ptr<int32_t>());
  const uint8_t* src_a = absmax.data_ptr<uint8_t>();
  auto* dst = reinterpret_cast<uint32_t*>(out_p.data_ptr<int32_t>());
  uint8_t* dst_a = out_a.data_ptr<uint8_t>();
  const int k = g.k;
  const int64_t NT = g.row_tiles(), G = g.col_tiles(), KB = g.blocks_per_row();
  const int64_t tiles = g.batch() * NT * G;
  at::parallel_for(0, tiles, 8, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t e = t / (NT * G), nt = (t / G) % NT, grp = t % G;
      const uint32_t* planes = src + e * g.rows * KB * k;
      const uint8_t* am = src_a + e * g.rows * KB;
      uint32_t* tile = dst + t * tile_words(k);
      for (int lane = 0; lane < 32; ++lane) {
        uint32_t stream[20] = {0};
        for (int c = 0; c < kCodesPerLane; ++c) {
          const int64_t row = nt * 16 + code_row(lane, c), col = grp * 256 + code_col(lane, c);
          uint32_t a = 0, b = 0;
          if (row < g.rows && col < g.cols) {
            const uint32_t* pl = planes + (row * KB + col / 32) * k;
            a = flat_index(pl, k, static_cast<int>(col % 32));
            b = flat_index(pl, k, static_cast<int>(col % 32) + 1);
          }
          put_pair(stream, k, c, a, b);
        }
        for (int w = 0; w < 4 * k; ++w) tile[stream_word_offset(lane, w)] = stream[w];
      }
      uint8_t* tile_a = dst_a + t * kAbsmaxBytesPerTile;
      for (int r = 0; r < 16; ++r) {
        for (int b = 0; b < 8; ++b) {
          const int64_t row = nt * 16 + r, kb = grp * 8 + b;
          tile_a[absmax_offset(r, b)] = (row < g.rows && kb < KB) ? am[row * KB + kb] : 0;
        }
      }
    }
  });
  return {out_p, out_a};
}

std::tuple<at::Tensor, at::Tensor> unrepack_cpu(const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                                int64_t N, int64_t K) {
  const WeightGeometry g = check_tiled(packed_t, absmax_t, N, K);
  const int k = g.k;
  const int64_t NT = g.row_tiles(), G = g.col_tiles(), KB = g.blocks_per_row();
  std::vector<int64_t> ps, as;
  if (g.experts) { ps.push_back(g.experts); as.push_back(g.experts); }
  ps.insert(ps.end(), {N, KB, k});
  as.insert(as.end(), {N, KB});
  at::Tensor out_p = at::zeros(ps, packed_t.options());
  at::Tensor out_a = at::empty(as, absmax_t.options());
  const auto* src = reinterpret_cast<const uint32_t*>(packed_t.data_ptr<int32_t>());
  const uint8_t* src_a = absmax_t.data_ptr<uint8_t>();
  auto* dst = reinterpret_cast<uint32_t*>(out_p.data_ptr<int32_t>());
  uint8_t* dst_a = out_a.data_ptr<uint8_t>();
  const int64_t tiles = g.batch() * NT * G;
  // Each flat block (row, 32 columns) lies in exactly one tile: tiles write disjoint words.
  at::parallel_for(0, tiles, 8, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t e = t / (NT * G), nt = (t / G) % NT, grp = t % G;
      uint32_t* planes = dst + e * N * KB * k;
      uint8_t* am = dst_a + e * N * KB;
      const uint32_t* tile = src + t * tile_words(k);
      for (int lane = 0; lane < 32; ++lane) {
        uint32_t stream[20];
        for (int w = 0; w < 4 * k; ++w) stream[w] = tile[stream_word_offset(lane, w)];
        for (int c = 0; c < kCodesPerLane; ++c) {
          const int64_t row = nt * 16 + code_row(lane, c), col = grp * 256 + code_col(lane, c);
          if (row >= N || col >= K) continue;
          uint32_t a, b;
          get_pair(stream, k, c, a, b);
          uint32_t* pl = planes + (row * KB + col / 32) * k;
          const int i = static_cast<int>(col % 32);
          for (int j = 0; j < k; ++j) pl[j] |= ((a >> j) & 1u) << i | ((b >> j) & 1u) << (i + 1);
        }
      }
      const uint8_t* tile_a = src_a + t * kAbsmaxBytesPerTile;
      for (int r = 0; r < 16; ++r) {
        for (int b = 0; b < 8; ++b) {
          const int64_t row = nt * 16 + r, kb = grp * 8 + b;
          if (row < N && kb < KB) am[row * KB + kb] = tile_a[absmax_offset(r, b)];
        }
      }
    }
  });
  return {out_p, out_a};
}

template <typename out_t>
void dequantize_flat_rows(const uint32_t* packed, const uint8_t* absmax, const float* row_scale,
                          const float* cb, int k, int64_t rows, int64_t K, out_t* out) {
  const int64_t KB = K / 32;
  at::parallel_for(0, rows, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t b = 0; b < KB; ++b) {
        const uint32_t* pl = packed + (r * KB + b) * k;
        const float s = block_scale(absmax[r * KB + b], row_scale[r]);
        for (int i = 0; i < 32; ++i)
          out[r * K + b * 32 + i] = static_cast<out_t>(dequant_value(cb[flat_index(pl, k, i)], s));
      }
    }
  });
}

at::Tensor dequantize_cpu(const at::Tensor& packed, const at::Tensor& absmax, const at::Tensor& row_scale,
                          const at::Tensor& codebook, int64_t k, at::ScalarType dtype) {
  const WeightGeometry g = check_flat(packed, absmax);
  TORCH_CHECK(g.k == k, "kbit: packed holds k=", g.k, " bit-planes but k=", k, " was passed");
  check_codebook(codebook, k);
  check_row_scale(row_scale, g);
  check_out_dtype(dtype);
  check_same_device({{"packed", &packed}, {"row_scale", &row_scale}, {"codebook", &codebook}});
  std::vector<int64_t> shape(packed.sizes().begin(), packed.sizes().end() - 2);
  shape.push_back(g.cols);
  at::Tensor out = at::empty(shape, packed.options().dtype(dtype));
  const at::Tensor cb = codebook.contiguous();
  KBIT_DISPATCH_FLOAT_TYPES(dtype, "kbit_dequantize_cpu", [&] {
    dequantize_flat_rows<scalar_t>(reinterpret_cast<const uint32_t*>(packed.data_ptr<int32_t>()),
                                   absmax.data_ptr<uint8_t>(), row_scale.data_ptr<float>(),
                                   cb.data_ptr<float>(), g.k, g.batch() * g.rows, g.cols,
                                   out.data_ptr<scalar_t>());
  });
  return out;
}

at::Tensor dequantize_tiled_cpu(const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                const at::Tensor& row_scale, const at::Tensor& codebook, int64_t k,
                                int64_t K, at::ScalarType dtype) {
  TORCH_CHECK(row_scale.dim() >= 1, "kbit: row_scale must be [N] or [E, N]");
  const WeightGeometry g = check_tiled(packed_t, absmax_t, row_scale.size(-1), K);
  TORCH_CHECK(g.k == k, "kbit: packed holds k=", g.k, " but k=", k, " was passed");
  check_codebook(codebook, k);
  check_row_scale(row_scale, g);
  check_out_dtype(dtype);
  check_same_device({{"packed", &packed_t}, {"row_scale", &row_scale}, {"codebook", &codebook}});
  std::vector<int64_t> shape;
  if (g.experts) shape.push_back(g.experts);
  shape.insert(shape.end(), {g.rows, g.cols});
  at::Tensor out = at::empty(shape, packed_t.options().dtype(dtype));
  const at::Tensor cb = codebook.contiguous();
  const int64_t NT = g.row_tiles(), G = g.col_tiles();
  KBIT_DISPATCH_FLOAT_TYPES(dtype, "kbit_dequantize_tiled_cpu", [&] {
    const auto* src = reinterpret_cast<const uint32_t*>(packed_t.data_ptr<int32_t>());
    const uint8_t* src_a = absmax_t.data_ptr<uint8_t>();
    const float* rs = row_scale.data_ptr<float>();
    const float* c = cb.data_ptr<float>();
    scalar_t* o = out.data_ptr<scalar_t>();
    at::parallel_for(0, g.batch() * NT * G, 8, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t e = t / (NT * G), nt = (t / G) % NT, grp = t % G;
        scalar_t* oe = o + e * g.rows * g.cols;
        for_each_tile_pair(src + t * tile_words(g.k), src_a + t * kAbsmaxBytesPerTile, g.k, c,
                           rs + e * g.rows, g.rows, g.cols, nt, grp,
                           [&](int64_t row, int64_t col, float v0, float v1) {
                             oe[row * g.cols + col] = static_cast<scalar_t>(v0);
                             oe[row * g.cols + col + 1] = static_cast<scalar_t>(v1);
                           });
      }
    });
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(kbit, CPU, m) {
  m.impl("repack", &repack_cpu);
  m.impl("unrepack", &unrepack_cpu);
  m.impl("dequantize", &dequantize_cpu);
  m.impl("dequantize_tiled", &dequantize_tiled_cpu);
}

}  // namespace kbit

// CPU gemm and grouped_gemm over the tiled layout: dequantize a chunk of rows to
// fp32 (parallel over tiles), multiply with fp32 BLAS, write the output dtype. grouped_gemm_silu_and_mul and
// gemm_silu_and_mul: grouped_gemm or gemm, then silu_and_mul of its interleaved columns.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

#include "../common/checks.h"
#include "../common/e4m4.h"
#include "../common/moe_aten.h"
#include "../common/tiled_layout.h"
#include "tiled_decode.h"

namespace kbit {
namespace {

// Small M (decode): multiply-accumulate straight from the pair codes, without writing
// fp32 weights. Per tile and 256-column group the products of each 32-column block are
// summed unscaled, then multiplied by the block's E4M4 scale; the row scale is applied
// once per output. y: [M, N] fp32 with row stride ldy.
constexpr int64_t kSmallM = 16;

template <int K>
void gemm_small_m(const float* x, int64_t M, const uint32_t* packed, const uint8_t* absmax,
                  const float* row_scale, const float* cb, int64_t N, int64_t cols, float* y, int64_t ldy) {
  const int64_t NT = (N + 15) / 16, G = (cols + 255) / 256;
  at::parallel_for(0, NT, 1, [&](int64_t t0, int64_t t1) {
    std::vector<float> blk(16 * 8 * M);  // [row][block][m]: unscaled block sums
    std::vector<float> acc(16 * M);      // [row][m]
    for (int64_t nt = t0; nt < t1; ++nt) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t grp = 0; grp < G; ++grp) {
        const int64_t t = nt * G + grp, col0 = grp * 256;
        const int valid_blocks = static_cast<int>(std::min<int64_t>(8, (cols - col0) / 32));
        const uint32_t* tile = packed + t * tile_words(K);
        std::fill(blk.begin(), blk.end(), 0.0f);
        for (int lane = 0; lane < 32; ++lane) {
          uint32_t stream[4 * K];
          for (int w = 0; w < 4 * K; ++w) stream[w] = tile[stream_word_offset(lane, w)];
          const int g = lane >> 2;
          // Per block, this lane's 8 codes feed two rows (g and g + 8): sum them in
          // registers, then add once into blk. Unrolled, so code offsets are constants.
#pragma GCC unroll 8
          for (int b = 0; b < 8; ++b) {
            if (b >= valid_blocks) break;
            float lo[kSmallM] = {}, hi[kSmallM] = {};
#pragma GCC unroll 8
            for (int q = 0; q < 8; ++q) {
              const int c = 8 * b + q;  // step 2b + q / 4, register q % 4
              uint32_t a, bb;
              get_pair(stream, K, c, a, bb);
              const float v0 = cb[a], v1 = cb[bb];
              const float* xc = x + col0 + code_col(lane, c);
              float* dst = (q & 1) ? hi : lo;
              for (int64_t m = 0; m < M; ++m) dst[m] += v0 * xc[m * cols] + v1 * xc[m * cols + 1];
            }
            float* blo = blk.data() + (g * 8 + b) * M;
            float* bhi = blk.data() + ((g + 8) * 8 + b) * M;
            for (int64_t m = 0; m < M; ++m) { blo[m] += lo[m]; bhi[m] += hi[m]; }
          }
        }
        const uint8_t* am = absmax + t * kAbsmaxBytesPerTile;
        for (int r = 0; r < 16; ++r) {
          for (int b = 0; b < valid_blocks; ++b) {
            const float s = e4m4_decode(am[absmax_offset(r, b)]);
            const float* bp = blk.data() + (r * 8 + b) * M;
            for (int64_t m = 0; m < M; ++m) acc[r * M + m] += s * bp[m];
          }
        }
      }
      for (int r = 0; r < 16; ++r) {
        const int64_t row = nt * 16 + r;
        if (row >= N) break;
        for (int64_t m = 0; m < M; ++m) y[m * ldy + row] = acc[r * M + m] * row_scale[row];
      }
    }
  });
}

// y[M, N] (a column slice is fine) = xf[M, K] @ W^T for one weight matrix given by
// its tiled words/absmax (no expert dim) and row scales.
void gemm_one(const at::Tensor& xf, const uint32_t* packed, const uint8_t* absmax,
              const float* row_scale, const float* cb, int k, int64_t N, int64_t K, at::Tensor y) {
  if (xf.size(0) <= kSmallM && y.stride(1) == 1) {
    const float* x = xf.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    const int64_t M = xf.size(0), ldy = y.stride(0);
    switch (k) {
      case 2: gemm_small_m<2>(x, M, packed, absmax, row_scale, cb, N, K, yp, ldy); break;
      case 3: gemm_small_m<3>(x, M, packed, absmax, row_scale, cb, N, K, yp, ldy); break;
      case 4: gemm_small_m<4>(x, M, packed, absmax, row_scale, cb, N, K, yp, ldy); break;
      case 5: gemm_small_m<5>(x, M, packed, absmax, row_scale, cb, N, K, yp, ldy); break;
    }
    return;
  }
  const int64_t G = (K + 255) / 256;
  // Chunk of rows whose fp32 copy stays around 8 MB.
  const int64_t chunk = std::max<int64_t>(16, ((int64_t{2} << 20) / K) / 16 * 16);
  for (int64_t n0 = 0; n0 < N; n0 += chunk) {
    const int64_t rows = std::min(chunk, N - n0);
    at::Tensor Wf = at::empty({rows, K}, xf.options());
    float* w = Wf.data_ptr<float>();
    const int64_t nt0 = n0 / 16, nts = (rows + 15) / 16;
    at::parallel_for(0, nts * G, 4, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t nt = nt0 + t / G, grp = t % G;
        const int64_t tile = nt * G + grp;
        for_each_tile_pair(packed + tile * tile_words(k), absmax + tile * kAbsmaxBytesPerTile, k, cb,
                           row_scale, N, K, nt, grp, [&](int64_t row, int64_t col, float v0, float v1) {
                             float* dst = w + (row - n0) * K + col;
                             dst[0] = v0;
                             dst[1] = v1;
                           });
      }
    });
    y.narrow(1, n0, rows).copy_(at::mm(xf, Wf.t()));
  }
}

at::Tensor gemm_cpu(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                    const at::Tensor& row_scale, const at::Tensor& codebook, int64_t k) {
  const WeightGeometry g = check_gemm_args(x, packed_t, absmax_t, row_scale, codebook, k, false);
  const int64_t M = x.size(0), N = g.rows;
  at::Tensor y = at::empty({M, N}, x.options().dtype(at::kFloat));
  const at::Tensor cb = codebook.contiguous();
  if (M > 0)
    gemm_one(x.to(at::kFloat).contiguous(), reinterpret_cast<const uint32_t*>(packed_t.data_ptr<int32_t>()),
             absmax_t.data_ptr<uint8_t>(), row_scale.data_ptr<float>(), cb.data_ptr<float>(), g.k, N,
             g.cols, y);
  return y.to(x.scalar_type());
}

at::Tensor grouped_gemm_cpu(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                            const at::Tensor& row_scale, const at::Tensor& codebook,
                            const at::Tensor& expert_offsets, int64_t k) {
  const WeightGeometry g = check_gemm_args(x, packed_t, absmax_t, row_scale, codebook, k, true);
  check_same_device({{"x", &x}, {"expert_offsets", &expert_offsets}});
  const int64_t T = x.size(0), N = g.rows, E = g.experts;
  check_expert_offsets(expert_offsets, E, T, /*check_values=*/true);
  at::Tensor y = at::empty({T, N}, x.options().dtype(at::kFloat));
  const at::Tensor xf = x.to(at::kFloat).contiguous();
  const at::Tensor offs = expert_offsets.contiguous();
  const int32_t* o = offs.data_ptr<int32_t>();
  const int64_t words = g.row_tiles() * g.col_tiles() * tile_words(g.k);
  const int64_t abytes = g.row_tiles() * g.col_tiles() * kAbsmaxBytesPerTile;
  const auto* packed = reinterpret_cast<const uint32_t*>(packed_t.data_ptr<int32_t>());
  const uint8_t* absmax = absmax_t.data_ptr<uint8_t>();
  const float* rs = row_scale.data_ptr<float>();
  const at::Tensor cb = codebook.contiguous();
  for (int64_t e = 0; e < E; ++e) {
    const int64_t m = o[e + 1] - o[e];
    if (m == 0) continue;  // an expert with no tokens costs nothing
    gemm_one(xf.narrow(0, o[e], m), packed + e * words, absmax + e * abytes, rs + e * N,
             cb.data_ptr<float>(), g.k, N, g.cols, y.narrow(0, o[e], m));
  }
  return y.to(x.scalar_type());
}

at::Tensor grouped_gemm_silu_and_mul_cpu(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                         const at::Tensor& row_scale, const at::Tensor& codebook,
                                         const at::Tensor& expert_offsets, int64_t k) {
  const WeightGeometry g =
      check_gemm_args(x, packed_t, absmax_t, row_scale, codebook, k, true, "grouped_gemm_silu_and_mul");
  check_gated_rows(g.rows, "grouped_gemm_silu_and_mul");
  return silu_and_mul_interleaved(grouped_gemm_cpu(x, packed_t, absmax_t, row_scale, codebook, expert_offsets, k));
}

at::Tensor gemm_silu_and_mul_cpu(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                 const at::Tensor& row_scale, const at::Tensor& codebook, int64_t k) {
  const WeightGeometry g = check_gemm_args(x, packed_t, absmax_t, row_scale, codebook, k, false, "gemm_silu_and_mul");
  check_gated_rows(g.rows, "gemm_silu_and_mul");
  return silu_and_mul_interleaved(gemm_cpu(x, packed_t, absmax_t, row_scale, codebook, k));
}

}  // namespace

TORCH_LIBRARY_IMPL(kbit, CPU, m) {
  m.impl("gemm", &gemm_cpu);
  m.impl("grouped_gemm", &grouped_gemm_cpu);
  m.impl("grouped_gemm_silu_and_mul", &grouped_gemm_silu_and_mul_cpu);
  m.impl("gemm_silu_and_mul", &gemm_silu_and_mul_cpu);
}

}  // namespace kbit

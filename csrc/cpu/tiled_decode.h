#pragma once
// CPU helper: walk one tile (16 rows x 256 columns) of the tiled layout and hand
// every in-range weight pair to a callback. Used by dequantize_tiled and gemm.
#include <cstdint>

#include "../common/quant_math.h"
#include "../common/tiled_layout.h"

namespace kbit {

// tile_words: the tile's 128k packed words; tile_absmax: its 128 absmax bytes;
// row_scale: the weight's [N] row scales; (tile_row, tile_col): the tile's position.
// fn(row, col, value_col, value_col_plus_1) receives dequantized fp32 values.
template <typename Fn>
inline void for_each_tile_pair(const uint32_t* tile_words, const uint8_t* tile_absmax, int k,
                               const float* cb, const float* row_scale, int64_t N, int64_t K,
                               int64_t tile_row, int64_t tile_col, Fn&& fn) {
  float scale[16][8];  // block scale per (row in tile, block in tile)
  for (int r = 0; r < 16; ++r) {
    const int64_t row = tile_row * 16 + r;
    for (int b = 0; b < 8; ++b)
      scale[r][b] = row < N ? block_scale(tile_absmax[absmax_offset(r, b)], row_scale[row]) : 0.0f;
  }
  uint32_t stream[20];
  for (int lane = 0; lane < 32; ++lane) {
    for (int w = 0; w < 4 * k; ++w) stream[w] = tile_words[stream_word_offset(lane, w)];
    for (int c = 0; c < kCodesPerLane; ++c) {
      const int r = code_row(lane, c), cc = code_col(lane, c);
      const int64_t row = tile_row * 16 + r, col = tile_col * 256 + cc;
      if (row >= N || col >= K) continue;
      uint32_t a, b;
      get_pair(stream, k, c, a, b);
      const float s = scale[r][cc >> 5];
      fn(row, col, dequant_value(cb[a], s), dequant_value(cb[b], s));
    }
  }
}

}  // namespace kbit

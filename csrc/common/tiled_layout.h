#pragma once
// The GEMM-side ("tiled") layout of kbit weights: docs/format.md, "Tiled layout".
// Private to the GEMM kernels and versioned (kTiledLayoutVersion): it may change.
//
// Weights W[N, K] are cut into tiles of 16 rows (n) x 256 columns (k). A tile is
// exactly the A operand of 16 tensor-core steps mma.m16n8k16 (A = W rows, B = x^T),
// two steps per 32-column block. The mma's 16 k-slots of a step need not be 16
// consecutive columns: any permutation applied to both A and B gives the same sum.
// Version 4 takes them in natural order: k-slot j of step s = 2b + h is column 32b + 16h + j, so
// the wgmma kernel's B operand (16-byte shared-memory rows of 8 consecutive k-slots) is x itself,
// copied by the tensor-memory accelerator with no permutation. In step s, lane l (g = l / 4,
// t = l % 4) owns the A fragment registers (columns within the tile)
//
//     reg r = 0: row g,     cols 32b + 16h + 2t + {0, 1}
//     reg r = 1: row g + 8, cols 32b + 16h + 2t + {0, 1}
//     reg r = 2: row g,     cols 32b + 16h + 8 + 2t + {0, 1}
//     reg r = 3: row g + 8, cols 32b + 16h + 8 + 2t + {0, 1}
//
// so lane t's B fragments of a block are x's column pairs t, t + 4, t + 8, t + 12 (words t + 4i
// of the block's 64 bytes): the mma.sync kernels take them with one ldmatrix.x4 per block and 8
// tokens (matrix i = the tokens' 16-byte chunks i; mma.cuh, ldmatrix_x4) where version 3 had one
// 16-byte load of x per lane (columns 8t .. 8t + 7, which the wgmma kernel needed transposed).
//
// and each register is a *pair* of consecutive-k weights of one row. Lane l stores
// the 64 pair codes c = 4 s + r of its tile (s = 0..15, r = 0..3) in a private
// stream of 16k bytes (k 16-byte vectors). A pair code holds index a (first
// column) and index b (second column); its bits sit in the stream as follows:
//
//   k = 2: code = a | b << 2, 4 bits, nibble c of the stream (word c/8, bit 4(c%8)).
//   k = 4: code = a | b << 4, 8 bits, byte c of the stream (word c/4, bit 8(c%4)).
//   k = 3: code = a | b << 3, 6 bits at bits 6c .. 6c+5 of the lane's 384-bit stream
//          (word 6c/32, bit 6c%32; codes with 6c%32 > 26, c % 16 = 5 or 10, continue
//          in the low bits of the next word), so every code is one funnel shift and
//          one mask (layout version 2 spread the last 16 codes over three words).
//   k = 5: byte c (words 0..15) = (a & 15) | (b & 15) << 4; the two high bits
//          (a >> 4) | (b >> 4) << 1 sit at bit 2(c%16) of word 16 + c/16.
//
// So every index extraction is a byte (or nibble) move, and a kernel can turn a
// pair code into two dequantized values with one shared-memory table lookup.
//
// Memory order (int32 words): packed[ntile][kgroup][v][lane][4] with v = 0..k-1
// the vector index: lane l's stream word w lives at [w / 4][l][w % 4], so a warp
// reading vector v reads 512 contiguous bytes. Absmax bytes of a tile:
// absmax[ntile][kgroup][g][h][b] (128 bytes) = code of row g + 8h, k-block b of the
// group (8 blocks of 32): lane l reads the 16 bytes at g * 16.
// Rows >= N and columns >= K are padding: index 0 and absmax code 0 (value 0).
#include <cstdint>
#include "hd.h"

namespace kbit {

constexpr int kTiledLayoutVersion = 4;
constexpr int kTileRows = 16;                        // n per tile
constexpr int kTileCols = 256;                       // k per tile (8 blocks)
constexpr int kBlocksPerTile = kTileCols / 32;       // 8
constexpr int kCodesPerLane = 64;                    // 16 steps x 4 registers
constexpr int kAbsmaxBytesPerTile = kTileRows * kBlocksPerTile;  // 128

KBIT_HD int tile_words(int k) { return 128 * k; }    // 32 lanes x 4k words

// Row (0..15) and first column (0..255) of pair code c of lane `lane` in a tile.
KBIT_HD int code_row(int lane, int c) { return (lane >> 2) + 8 * (c & 1); }
KBIT_HD int code_col(int lane, int c) {
  return 32 * (c >> 3) + 16 * ((c >> 2) & 1) + 8 * ((c >> 1) & 1) + 2 * (lane & 3);
}

// Offset (in words) of stream word w of lane `lane` inside a tile's packed words.
KBIT_HD int stream_word_offset(int lane, int w) { return ((w >> 2) * 32 + lane) * 4 + (w & 3); }

// Offset of the absmax byte of tile row r (0..15), tile block b (0..7).
KBIT_HD int absmax_offset(int r, int b) { return (r & 7) * 16 + (r >> 3) * 8 + b; }

// Write the pair (a, b) as code c into a lane's stream (4k words, zero-initialised).
KBIT_HD void put_pair(uint32_t* stream, int k, int c, uint32_t a, uint32_t b) {
  switch (k) {
    case 2: stream[c >> 3] |= (a | b << 2) << (4 * (c & 7)); break;
    case 4: stream[c >> 2] |= (a | b << 4) << (8 * (c & 3)); break;
    case 3: {
      const uint32_t code = a | b << 3;
      const int w = (6 * c) >> 5, sh = (6 * c) & 31;
      stream[w] |= code << sh;
      if (sh > 26) stream[w + 1] |= code >> (32 - sh);
      break;
    }
    case 5:
      stream[c >> 2] |= ((a & 15u) | (b & 15u) << 4) << (8 * (c & 3));
      stream[16 + (c >> 4)] |= ((a >> 4) | (b >> 4) << 1) << (2 * (c & 15));
      break;
    default: break;
  }
}

// k = 3: the 6-bit code c (a | b << 3), which may straddle two stream words.
KBIT_HD uint32_t k3_code(const uint32_t* stream, int c) {
  const int w = (6 * c) >> 5, sh = (6 * c) & 31;
  uint32_t bits = stream[w] >> sh;
  if (sh > 26) bits |= stream[w + 1] << (32 - sh);
  return bits & 63u;
}

// Read code c of a lane's stream back as the pair (a, b).
KBIT_HD void get_pair(const uint32_t* stream, int k, int c, uint32_t& a, uint32_t& b) {
  switch (k) {
    case 2: {
      const uint32_t code = (stream[c >> 3] >> (4 * (c & 7))) & 15u;
      a = code & 3u; b = code >> 2; break;
    }
    case 4: {
      const uint32_t code = (stream[c >> 2] >> (8 * (c & 3))) & 255u;
      a = code & 15u; b = code >> 4; break;
    }
    case 3: {
      const uint32_t code = k3_code(stream, c);
      a = code & 7u; b = code >> 3; break;
    }
    case 5: {
      const uint32_t lo = (stream[c >> 2] >> (8 * (c & 3))) & 255u;
      const uint32_t hi = (stream[16 + (c >> 4)] >> (2 * (c & 15))) & 3u;
      a = (lo & 15u) | (hi & 1u) << 4; b = (lo >> 4) | (hi >> 1) << 4; break;
    }
    default: a = b = 0; break;
  }
}

// Pair-table index of code c: the code's bits as one integer, in [0, 2^(2k)). For
// k = 2, 3, 4 it is a | b << k; for k = 5 it is (low byte) | (high bits) << 8.
// A GEMM kernel looks this index up in a table of (cb[a], cb[b]) pairs.
KBIT_HD uint32_t get_lut_index(const uint32_t* stream, int k, int c) {
  switch (k) {
    case 2: return (stream[c >> 3] >> (4 * (c & 7))) & 15u;
    case 4: return (stream[c >> 2] >> (8 * (c & 3))) & 255u;
    case 3: return k3_code(stream, c);
    case 5:
      return ((stream[c >> 2] >> (8 * (c & 3))) & 255u) | ((stream[16 + (c >> 4)] >> (2 * (c & 15))) & 3u) << 8;
    default: return 0;
  }
}

// The pair (a, b) a pair-table index stands for (inverse of get_lut_index).
KBIT_HD void lut_index_pair(int k, uint32_t index, uint32_t& a, uint32_t& b) {
  if (k == 5) {
    a = (index & 15u) | ((index >> 8) & 1u) << 4;
    b = ((index >> 4) & 15u) | ((index >> 9) & 1u) << 4;
  } else {
    a = index & ((1u << k) - 1u);
    b = index >> k;
  }
}

// Index of weight i (0..31) of a flat block: bit i of bit-plane j is bit j of it.
KBIT_HD uint32_t flat_index(const uint32_t* planes, int k, int i) {
  uint32_t idx = 0;
  for (int j = 0; j < k; ++j) idx |= ((planes[j] >> i) & 1u) << j;
  return idx;
}

}  // namespace kbit

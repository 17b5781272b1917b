#pragma once
// Host interface of the tensor-core tile GEMM (tile_gemm.cuh): dense y[M, N] = x[M, K] @ W^T
// from the tiled layout for M from ~8 up, with x staged once per CTA in shared memory and
// shared by the 8 warps of a 256-row tile, and its grouped (MoE) form (expert_offsets read on
// the device). Arguments: TcGemmArgs (it reads x, packed, absmax, row_scale, codebook,
// expert_offsets, y, workspace, M, N, K, experts, splits (dense), tokens_per_unit).
#include <cstdint>

#include "../../common/tiled_layout.h"
#include "tc_gemm.h"

namespace kbit {
namespace cuda {

constexpr int kTileWarps = 8;
constexpr int kTileTilesPerWarp = 2;                              // 16-row tiles per warp
constexpr int kTileRowTiles = kTileWarps * kTileTilesPerWarp;     // per CTA: 256 rows
constexpr int kTileSmemBudget = 227 * 1024;                       // sm_90's opt-in maximum per block

// CTAs along N of a kernel whose CTA takes row_tiles 16-row tiles of W (the tile kernel: kTileRowTiles;
// the wgmma kernel: its shape's row_tiles).
constexpr int64_t cta_row_blocks(int64_t N, int64_t row_tiles) { return ((N + 15) / 16 + row_tiles - 1) / row_tiles; }

// Token tiles of 8 per CTA: 1, 2, 4 or 8 (M <= 8, 16, 32, more: chunks of 64). Grouped: from
// tc_grouped_tokens_hint (twice the mean rows per expert).
inline int tile_token_tiles(int64_t M) { return M <= 8 ? 1 : M <= 16 ? 2 : M <= 32 ? 4 : 8; }

// One pipeline stage: x[8 mt][256] + every warp's two weight tiles (k x 512 + 128 bytes).
constexpr int tile_stage_bytes(int k, int mt) {
  return 8 * mt * 512 + kTileRowTiles * (k * 512 + kAbsmaxBytesPerTile);
}
constexpr int kTileCodebookBytes = 32 * 4;
// Grouped: scan scratch + row_begin[E + 1] + unit_end[E] (int64) for up to kTcMaxExperts.
constexpr int kTileScheduleBytes = 8 * (32 + 2 * kTcMaxExperts + 1);
constexpr int tile_reserved_bytes(int k, bool grouped) {
  return pair_table_bytes(k) + kTileCodebookBytes + (grouped ? kTileScheduleBytes : 0);
}
// As many stages (2..4) as fit next to the pair table (and the grouped schedule).
constexpr int tile_stages(int k, int mt, bool grouped) {
  const int fit = (kTileSmemBudget - tile_reserved_bytes(k, grouped)) / tile_stage_bytes(k, mt);
  return fit > 4 ? 4 : fit;
}
constexpr int tile_smem_bytes(int k, int mt, bool grouped) {
  return tile_reserved_bytes(k, grouped) + tile_stages(k, mt, grouped) * tile_stage_bytes(k, mt);
}

// Splits along K (grid.y) for y[M, N] on a GPU of sm_count SMs (one CTA per SM).
int tile_gemm_splits(int64_t M, int64_t N, int64_t K, int k, int sm_count);

template <typename T, int K>
void launch_tile_gemm(const TcGemmArgs& args, cudaStream_t stream);

}  // namespace cuda
}  // namespace kbit

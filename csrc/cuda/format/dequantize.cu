// CUDA dequantize from the flat layout and from the tiled (GEMM) layout.
// Values identical to the CPU ops: cb[i] * (e4m4(code) * row_scale), fp32, then rounded.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>

#include <atomic>
#include <limits>
#include <torch/library.h>

#include "../../common/checks.h"
#include "../../common/dispatch.h"
#include "../../common/quant_math.h"
#include "../../common/tiled_layout.h"
#include "../common/dependent_launch.cuh"
#include "../common/dependent_launch.h"
#include "../common/device_utils.cuh"
#include "dequantize_tiled.h"

namespace kbit {
namespace cuda {
namespace {

// Eight consecutive outputs go out as one 16-byte store (two for fp32).
template <typename out_t>
__device__ __forceinline__ void store8(out_t* dst, const float (&v)[8]) {
  if constexpr (sizeof(out_t) == 4) {
    reinterpret_cast<float4*>(dst)[0] = make_float4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<float4*>(dst)[1] = make_float4(v[4], v[5], v[6], v[7]);
  } else {
    union { out_t h[8]; uint4 u; } pack;
#pragma unroll
    for (int i = 0; i < 8; ++i) pack.h[i] = from_float<out_t>(v[i]);
    *reinterpret_cast<uint4*>(dst) = pack.u;
  }
}

// a[i] for a runtime i in 0..3 (selects: no local-memory array).
__device__ __forceinline__ uint32_t pick4(const uint32_t (&a)[4], int i) {
  return i == 0 ? a[0] : i == 1 ? a[1] : i == 2 ? a[2] : a[3];
}

// The four lanes t of a quad each hold words p[j] (j = 0..3); afterwards lane t holds q[j] = lane j's p[t] (a 4 x 4
// transpose across the quad): in round k lane t takes lane (t + k) % 4's p[t], which that lane selects as its p[(t' -
// k) % 4]; then q[j] is round (j - t) % 4's word.
__device__ __forceinline__ void quad_transpose(const uint32_t (&p)[4], uint32_t (&q)[4], int lane) {
  const int t = lane & 3, quad = lane & ~3;
  uint32_t got[4];
  got[0] = pick4(p, t);
#pragma unroll
  for (int k = 1; k < 4; ++k) got[k] = __shfl_sync(0xffffffffu, pick4(p, (t - k) & 3), quad | ((t + k) & 3));
#pragma unroll
  for (int j = 0; j < 4; ++j) q[j] = pick4(got, (j - t) & 3);
}

// ---- flat layout: one thread per 8 consecutive weights of a block ---------------------
template <typename out_t, int K>
__global__ void __launch_bounds__(256)
dequantize_flat_kernel(const uint32_t* __restrict__ packed,    // [rows, cols/32, K]
                       const uint8_t* __restrict__ absmax,     // [rows, cols/32]
                       const float* __restrict__ row_scale,    // [rows]
                       const float* __restrict__ codebook,     // [2^K]
                       int64_t rows, int64_t blocks_per_row,
                       out_t* __restrict__ out) {              // [rows, cols]
  __shared__ float cb[1 << K];
  if (threadIdx.x < (1 << K)) cb[threadIdx.x] = codebook[threadIdx.x];
  __syncthreads();
  const int64_t groups = rows * blocks_per_row * 4;
  for (int64_t gi = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; gi < groups;
       gi += int64_t(gridDim.x) * blockDim.x) {
    const int64_t blk = gi >> 2;
    const int sub = static_cast<int>(gi & 3);  // which 8 of the block's 32 weights
    const uint32_t* pl = packed + blk * K;
    uint32_t bits[K];
#pragma unroll
    for (int j = 0; j < K; ++j) bits[j] = __ldg(pl + j) >> (8 * sub);
    const float s = block_scale(__ldg(absmax + blk), __ldg(row_scale + blk / blocks_per_row));
    float v[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      uint32_t idx = 0;
#pragma unroll
      for (int j = 0; j < K; ++j) idx |= ((bits[j] >> i) & 1u) << j;
      v[i] = dequant_value(cb[idx], s);
    }
    store8(out + gi * 8, v);
  }
}

// ---- tiled layout: one warp per tile (or per part of one), 16-byte stores ---------------
// Lane (g, t) holds, in block b of its tile, the pairs c = 8 b + 2 j (row g) and 8 b + 2 j + 1 (row
// g + 8), j = 0..3, at columns 32 b + 8 j + 2 t (code_row / code_col: layout version 4's natural k-slot order,
// docs/format.md section 5). Lane t of row g's quad then needs the 8 consecutive columns 32 b + 8 t .. + 7 for one
// 16-byte store (two for fp32). 16-bit outputs on sm_90+: the lane's four words are the mma fragment of four 8 x 8
// matrices (matrix j: the 8 rows' columns 8 j .. + 7), which one stmatrix.x4 writes to the warp's 512-byte row tile
// in shared memory (RowTile below), read back as one 16-byte load a lane (session 37). Else, and for fp32: a 4 x 4
// transpose across the row's quad (quad_transpose: 3 shuffles and 24 selects per 16-byte store; session 36: 11.0
// against layout version 3's 8.4 us on Qwen3 Q). A warp's store of one (block, row half) writes 8 rows x 64
// contiguous bytes (128 for fp32), whole 32-byte sectors. (Session 36: one 4-byte store a pair, 8 rows x 16 bytes a
// warp store, took 2-3x the time: 18.5 against 8.5 us on Qwen3 Q.) Session 31: the kernel before staged each tile
// through shared memory (33 KB a CTA, 4 warps, at most 24 warps an SM) and read absmax byte by byte; it took 10.0 us
// on Qwen3 Q (16.8 MB out) and 55 us on Llama-3 8B gate/up (117 MB) on the H200, ~2 TB/s. Now shared memory holds
// only the codebook and (sm_90+, 16-bit outputs) the warps' row tiles, 8 KB a CTA; 8 warps a CTA, 4 CTAs an SM,
// and each warp asks for its next tile in L2 (a bulk prefetch) while it decodes and stores the current one.
// A warp's work item is one part of a tile: its 8 blocks split into 2^parts_log2 runs of adjacent blocks. One tile
// is a chain of 16 (block, row half) rounds; where the tiles are fewer than the warps the GPU holds, one warp a tile
// leaves each SM a few warps deep in those chains (session 49: Qwen3 KV, 256 tiles, 4.45 us for 2.6 MB), so the
// launch splits tiles where the items still fit the resident warps (dequant_parts_log2). Every part loads the tile's
// whole codes and absmax words (L2 reads; the part's blocks select what is used).
constexpr int kDequantTiledWarps = 8;
constexpr int kDequantTiledCtasPerSm = 4;

// A warp's row tile in shared memory: 8 rows x 32 16-bit columns (64 bytes a row); row r's 16-byte chunk c (columns
// 8 c .. + 7) sits at 64 r + 16 (c ^ (r / 2 % 4)), so that the 8 rows of one stmatrix matrix (one chunk) and the 8
// lanes of a quarter-warp's 16-byte loads (rows 2 q, 2 q + 1, chunks 0-3) each cover all 32 banks once.
struct RowTile {
  static constexpr int kBytes = 512;
  static __device__ __forceinline__ int chunk_at(int r, int c) { return 64 * r + 16 * (c ^ ((r >> 1) & 3)); }
};

template <typename out_t, int K>
__global__ void __launch_bounds__(kDequantTiledWarps * 32, kDequantTiledCtasPerSm)  // 32 warps an SM: <= 64 registers
dequantize_tiled_kernel(const uint32_t* __restrict__ packed,   // [E, NT, G, K, 32, 4]
                        const uint8_t* __restrict__ absmax,    // [E, NT, G, 128]
                        const float* __restrict__ row_scale,   // [E, N]
                        float scale_cap,                       // row scales above it are taken as it
                        const float* __restrict__ codebook,    // [2^K]
                        int64_t experts, int64_t N, int64_t cols,
                        int parts_log2,                        // a tile's blocks in 2^parts_log2 items
                        out_t* __restrict__ out) {             // [E, N, cols]
  __shared__ float cb[1 << K];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // two row tiles a warp, one per row half h: a tile is rewritten two stores later, the other half's __syncwarp
  // between its loads and that stmatrix
  __shared__ __align__(16) unsigned char row_tiles[kDequantTiledWarps][2][RowTile::kBytes];
#endif
  const int lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
  const int64_t NT = (N + 15) / 16, G = (cols + 255) / 256;
  const int64_t items = (experts * NT * G) << parts_log2, step = int64_t(gridDim.x) * kDequantTiledWarps;
  const int part_blocks = 8 >> parts_log2;
  // Launched with PDL in the dequantize + cuBLAS path (dependent_launch.cuh): until the wait this CTA may overlap the
  // previous kernel, so it reads nothing global before it. (An L2 prefetch of each warp's first tile there moved that
  // path by -1.1 to +0.4 us a call, by cell, with no clear gain: docs/design.md, "Session 56".)
  allow_dependents();
  grid_dependency_wait();
  if (threadIdx.x < (1 << K)) cb[threadIdx.x] = codebook[threadIdx.x];
  __syncthreads();
  for (int64_t item = blockIdx.x * int64_t(kDequantTiledWarps) + (threadIdx.x >> 5); item < items; item += step) {
    const int64_t tile = item >> parts_log2;
    const int part = static_cast<int>(item & ((1 << parts_log2) - 1));  // of the tile's 2^parts_log2
    // the warp's next tile into L2 meanwhile, by the warp of its first part only (step >= 8 >= the parts, so the
    // next item is always another tile)
    if (lane == 0 && item + step < items && part == 0) {
      const int64_t next_tile = (item + step) >> parts_log2;
      prefetch_l2(packed + next_tile * tile_words(K), K * 512);
      prefetch_l2(absmax + next_tile * kAbsmaxBytesPerTile, kAbsmaxBytesPerTile);
    }
    const int64_t grp = tile % G, col0 = grp * 256;
    const int tail_blocks = static_cast<int>(cols - col0 < 256 ? (cols - col0) / 32 : 8);  // K % 32 == 0
    const int first_block = part * part_blocks;
    const int end_block = min(first_block + part_blocks, tail_blocks);
    if (first_block >= end_block) continue;  // a part wholly past K: the same for the whole warp
    // The lane's codes (its stream: k 16-byte vectors) and its rows' absmax bytes (row g: bytes 0-7 of the 16
    // at g * 16, blocks 0-7; row g + 8: bytes 8-15).
    uint32_t codes[4 * K];
#pragma unroll
    for (int v = 0; v < K; ++v) {
      const uint4 q = __ldg(reinterpret_cast<const uint4*>(packed + tile * tile_words(K)) + v * 32 + lane);
      codes[4 * v] = q.x; codes[4 * v + 1] = q.y; codes[4 * v + 2] = q.z; codes[4 * v + 3] = q.w;
    }
    const uint4 am = __ldg(reinterpret_cast<const uint4*>(absmax + tile * kAbsmaxBytesPerTile + g * 16));
    const uint32_t am_words[4] = {am.x, am.y, am.z, am.w};
    const int64_t e = tile / (NT * G), nt = (tile / G) % NT;
    float rs[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = nt * 16 + g + 8 * h;
      const float r = row >= N ? 0.0f : __ldg(row_scale + e * N + row);
      rs[h] = r > scale_cap ? scale_cap : r;  // a NaN scale stays NaN
    }
#pragma unroll
    for (int b = 0; b < 8; ++b) {  // unrolled (the codes stay in registers); the item's blocks, uniform tests
      if (b < first_block) continue;
      if (b >= end_block) break;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t row = nt * 16 + g + 8 * h;
        const uint32_t code = (am_words[2 * h + (b >> 2)] >> (8 * (b & 3))) & 0xFFu;
        const float s = block_scale(code, rs[h]);
        float v[8];  // v[2 j], v[2 j + 1]: columns 32 b + 8 j + 2 t4, + 1
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          uint32_t lo, hi;
          get_pair(codes, K, 8 * b + 2 * j + h, lo, hi);
          v[2 * j] = dequant_value(cb[lo], s);
          v[2 * j + 1] = dequant_value(cb[hi], s);
        }
        float w[8];  // columns 32 b + 8 t4 .. + 7
        if constexpr (sizeof(out_t) == 4) {
#pragma unroll
          for (int e2 = 0; e2 < 2; ++e2) {
            uint32_t p[4], q[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) p[j] = __float_as_uint(v[2 * j + e2]);
            quad_transpose(p, q, lane);
#pragma unroll
            for (int j = 0; j < 4; ++j) w[2 * j + e2] = __uint_as_float(q[j]);
          }
          if (row < N) store8(out + (e * N + row) * cols + col0 + 32 * b + 8 * t4, w);
        } else {
          uint32_t p[4];
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            union { out_t h[2]; uint32_t u; } pack;
            pack.h[0] = from_float<out_t>(v[2 * j]);
            pack.h[1] = from_float<out_t>(v[2 * j + 1]);
            p[j] = pack.u;
          }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
          // stmatrix: lane 8 j + r addresses matrix j's row r; then lane (g, t4) loads row g's chunk t4
          unsigned char* tile_h = row_tiles[threadIdx.x >> 5][h];
          stmatrix_x4(tile_h + RowTile::chunk_at(lane & 7, lane >> 3), p);
          __syncwarp();
          const uint4 q4 = *reinterpret_cast<const uint4*>(tile_h + RowTile::chunk_at(g, t4));
          if (row < N) *reinterpret_cast<uint4*>(out + (e * N + row) * cols + col0 + 32 * b + 8 * t4) = q4;
#else
          uint32_t q[4];
          quad_transpose(p, q, lane);
          if (row < N) *reinterpret_cast<uint4*>(out + (e * N + row) * cols + col0 + 32 * b + 8 * t4) =
              make_uint4(q[0], q[1], q[2], q[3]);
#endif
        }
      }
    }
  }
}

template <typename out_t>
void launch_flat(const at::Tensor& packed, const at::Tensor& absmax, const at::Tensor& row_scale,
                 const at::Tensor& cb, int k, int64_t rows, int64_t bpr, at::Tensor& out) {
  const auto stream = at::cuda::getCurrentCUDAStream();
  const int64_t work = (rows * bpr * 4 + 255) / 256;
  const dim3 grid(static_cast<unsigned>(grid_for(work, 16)));
  auto* p = reinterpret_cast<const uint32_t*>(packed.data_ptr<int32_t>());
  auto* a = absmax.data_ptr<uint8_t>();
  auto* rs = row_scale.data_ptr<float>();
  auto* c = cb.data_ptr<float>();
  auto* o = out.data_ptr<out_t>();
  switch (k) {
    case 2: dequantize_flat_kernel<out_t, 2><<<grid, 256, 0, stream>>>(p, a, rs, c, rows, bpr, o); break;
    case 3: dequantize_flat_kernel<out_t, 3><<<grid, 256, 0, stream>>>(p, a, rs, c, rows, bpr, o); break;
    case 4: dequantize_flat_kernel<out_t, 4><<<grid, 256, 0, stream>>>(p, a, rs, c, rows, bpr, o); break;
    case 5: dequantize_flat_kernel<out_t, 5><<<grid, 256, 0, stream>>>(p, a, rs, c, rows, bpr, o); break;
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The dequantized weight of geometry g: [E, N, K] or [N, K] in dtype, on packed_t's device.
at::Tensor tiled_output(const at::Tensor& packed_t, const WeightGeometry& g, at::ScalarType dtype) {
  std::vector<int64_t> shape;
  if (g.experts) shape.push_back(g.experts);
  shape.insert(shape.end(), {g.rows, g.cols});
  return at::empty(shape, packed_t.options().dtype(dtype));
}

std::atomic<int> forced_dequant_parts{0};  // kbit._C._set_dequant_parts: 0 = the rule

// log2 of the items a tile is split into, 1, 2, 4 or 8: the most whose items the warps the GPU holds at once take in
// one round, or the aid's. Session 49 run 2 (H200, k = 4, fp16): Qwen3 KV (256 tiles) 4.45 us whole, 3.23-3.31 at 4-8
// parts; Qwen3 Q and O (2048 tiles) 7.4-7.6 at 1 or 2 parts, 8.0-8.4 at 4 (two rounds of items), 11.2-11.8 at 8 (four);
// gate/up, down (2560) and larger ones whole. (The same launch read up to 10% apart in that run: the 4-part loss is at
// the noise's edge, the 8-part one is not.)
int dequant_parts_log2(int64_t tiles) {
  const int forced = forced_dequant_parts.load(std::memory_order_relaxed);
  if (forced > 0) return forced == 1 ? 0 : forced == 2 ? 1 : forced == 4 ? 2 : 3;
  const int64_t resident_warps = static_cast<int64_t>(at::cuda::getCurrentDeviceProperties()->multiProcessorCount) *
                                 kDequantTiledCtasPerSm * kDequantTiledWarps;
  int log2 = 0;
  while (log2 < 3 && (tiles << (log2 + 1)) <= resident_warps) ++log2;
  return log2;
}

// pdl: launched with PDL where the GPU has it (the dequantize + cuBLAS path; not the dequantize_tiled op: below).
template <typename out_t>
void launch_tiled(const at::Tensor& packed, const at::Tensor& absmax, const float* rs, float scale_cap,
                  const at::Tensor& cb, const WeightGeometry& g, bool pdl, at::Tensor& out) {
  const auto stream = at::cuda::getCurrentCUDAStream();
  const int64_t tiles = g.batch() * g.row_tiles() * g.col_tiles();
  const int parts_log2 = dequant_parts_log2(tiles);
  const int64_t items = tiles << parts_log2;
  const dim3 grid(static_cast<unsigned>(
      grid_for((items + kDequantTiledWarps - 1) / kDequantTiledWarps, kDequantTiledCtasPerSm)));  // resident at once
  const dim3 block(kDequantTiledWarps * 32);
  auto* p = reinterpret_cast<const uint32_t*>(packed.data_ptr<int32_t>());
  auto* a = absmax.data_ptr<uint8_t>();
  auto* c = cb.data_ptr<float>();
  auto* o = out.data_ptr<out_t>();
  const int64_t E = g.batch(), N = g.rows, K = g.cols;
  // With PDL (the kernel waits before its first load and store): its launch overlaps the previous kernel's tail.
  const bool dependent = pdl && dependent_launch_enabled();
  const auto launch = [&](auto kernel) {
    launch_kernel(kernel, grid, block, 0, stream, dependent, p, a, rs, scale_cap, c, E, N, K, parts_log2, o);
  };
  switch (g.k) {
    case 2: launch(dequantize_tiled_kernel<out_t, 2>); break;
    case 3: launch(dequantize_tiled_kernel<out_t, 3>); break;
    case 4: launch(dequantize_tiled_kernel<out_t, 4>); break;
    case 5: launch(dequantize_tiled_kernel<out_t, 5>); break;
  }
}

at::Tensor dequantize_cuda(const at::Tensor& packed, const at::Tensor& absmax, const at::Tensor& row_scale,
                           const at::Tensor& codebook, int64_t k, at::ScalarType dtype) {
  const WeightGeometry g = check_flat(packed, absmax);
  TORCH_CHECK(g.k == k, "kbit: packed holds k=", g.k, " bit-planes but k=", k, " was passed");
  check_codebook(codebook, k);
  check_row_scale(row_scale, g);
  check_out_dtype(dtype);
  check_same_device({{"packed", &packed}, {"row_scale", &row_scale}, {"codebook", &codebook}});
  const c10::cuda::CUDAGuard guard(packed.device());
  std::vector<int64_t> shape(packed.sizes().begin(), packed.sizes().end() - 2);
  shape.push_back(g.cols);
  at::Tensor out = at::empty(shape, packed.options().dtype(dtype));
  const int64_t rows = g.batch() * g.rows;
  if (rows == 0) return out;
  const at::Tensor cb = codebook.contiguous();
  KBIT_DISPATCH_FLOAT_TYPES(dtype, "kbit_dequantize_cuda", [&] {
    launch_flat<scalar_t>(packed, absmax, row_scale, cb, g.k, rows, g.blocks_per_row(), out);
  });
  return out;
}

at::Tensor dequantize_tiled_cuda(const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                 const at::Tensor& row_scale, const at::Tensor& codebook, int64_t k,
                                 int64_t K, at::ScalarType dtype) {
  TORCH_CHECK(row_scale.dim() >= 1, "kbit: row_scale must be [N] or [E, N]");
  const WeightGeometry g = check_tiled(packed_t, absmax_t, row_scale.size(-1), K);
  TORCH_CHECK(g.k == k, "kbit: packed holds k=", g.k, " but k=", k, " was passed");
  check_codebook(codebook, k);
  check_row_scale(row_scale, g);
  check_out_dtype(dtype);
  check_same_device({{"packed", &packed_t}, {"row_scale", &row_scale}, {"codebook", &codebook}});
  const c10::cuda::CUDAGuard guard(packed_t.device());
  at::Tensor out = tiled_output(packed_t, g, dtype);
  const at::Tensor cb = codebook.contiguous();
  KBIT_DISPATCH_FLOAT_TYPES(dtype, "kbit_dequantize_tiled_cuda", [&] {
    // (without PDL: back to back on Llama-3 8B gate/up's weight, 58.7 M weights, the op took 52.0-55.7 us with it
    // against 49.6-51.5 without, medians of rounds in session 56's runs 1-2; docs/design.md, "Session 56")
    launch_tiled<scalar_t>(packed_t, absmax_t, row_scale.data_ptr<float>(), std::numeric_limits<float>::infinity(), cb,
                           g, /*pdl=*/false, out);
  });
  return out;
}

}  // namespace

int dequant_tiled_parts(int64_t tiles) {
  TORCH_CHECK(tiles >= 1, "kbit._C._dequant_parts: tiles must be >= 1, got ", tiles);
  return 1 << dequant_parts_log2(tiles);
}

int set_dequant_tiled_parts(int64_t parts) {
  TORCH_CHECK(parts == 0 || parts == 1 || parts == 2 || parts == 4 || parts == 8,
              "kbit._C._set_dequant_parts: parts must be 0 (the rule), 1, 2, 4 or 8, got ", parts);
  return forced_dequant_parts.exchange(static_cast<int>(parts));
}

at::Tensor dequantize_tiled_capped(const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                  const at::Tensor& row_scale, const at::Tensor& codebook, const WeightGeometry& g,
                                  float scale_cap, at::ScalarType dtype) {
  at::Tensor out = tiled_output(packed_t, g, dtype);
  KBIT_DISPATCH_FLOAT_TYPES(dtype, "kbit_dequantize_tiled_capped", [&] {
    launch_tiled<scalar_t>(packed_t, absmax_t, row_scale.data_ptr<float>(), scale_cap, codebook, g, /*pdl=*/true, out);
  });
  return out;
}

}  // namespace cuda

TORCH_LIBRARY_IMPL(kbit, CUDA, m) {
  m.impl("dequantize", &cuda::dequantize_cuda);
  m.impl("dequantize_tiled", &cuda::dequantize_tiled_cuda);
}

}  // namespace kbit

#pragma once
// Tensor-core GEMM for small M (1..64) straight from the tiled layout.
//
// Work partition (docs/format.md section 5 for the layout):
//
//   grid.x = persistent CTAs looping over the N/16 row tiles, grid.y = splits along K
//   CTA    = 8 warps on one 16-row tile at a time; warp w of split s takes the
//            256-column groups grp = s * 8 + w, + 8 * splits, ... (a warp owns whole
//            groups) and loads the next group while it computes the current one
//
//   per group, per lane:  k x 16-byte loads (its pair stream) + 16 bytes of absmax
//   per 32-column block:  2 x mma.m16n8k16 per 8 tokens, weights = A (16 rows x 16 cols),
//                         x^T = B (16 cols x 8 tokens), fresh fp32 accumulators D;
//                         then acc += e4m4(absmax) * D for the lane's two rows
//   A registers:          one shared-memory lookup per register in a table of
//                         (cb[a], cb[b]) pairs indexed by the stored pair code
//
// The pair table holds unscaled codebook values, so one table serves the whole weight;
// the block scale multiplies fp32 accumulators once per block and row, and the row scale
// once per output. For k <= 4 every lane has its own copy of the table (entry i of lane l
// at word 32 i + l): lookups with random codes never conflict on a bank (FLUTE's idea).
// The 8 warps' partial sums are added in a fixed order in shared memory; with splits > 1
// the CTAs write fp32 partials that tc_reduce_splits adds in a fixed order: the result is
// the same bits on every run.
#include <algorithm>
#include <cstdint>

#include "../../common/e4m4.h"
#include "../../common/tiled_layout.h"
#include "../common/device_utils.cuh"
#include "mma.cuh"
#include "tc_gemm.h"

namespace kbit {
namespace cuda {

template <int K, int kTokenTiles>
struct TcGemmConfig {
  static constexpr int kWarps = 8;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kTokens = 8 * kTokenTiles;
  static constexpr int kLutEntries = 1 << (2 * K);
  static constexpr int kLutCopies = K <= 4 ? 32 : 1;  // k = 5: 1024 entries, one copy (4 KB)
  static constexpr int kLutWords = kLutEntries * kLutCopies;
  static constexpr int kReduceWords = kWarps * kTileRows * kTokens;
  static constexpr int kSmemBytes = 4 * (kLutWords + kReduceWords);
};

template <int K>
__device__ __forceinline__ uint32_t lut_word(uint32_t index, int lane) {
  if constexpr (K <= 4) return (index << 5) | static_cast<uint32_t>(lane);
  else return index;
}

// Byte b (0..15) of a 16-byte vector.
__device__ __forceinline__ uint32_t byte_of(const uint4& v, int b) {
  const uint32_t w = b < 4 ? v.x : b < 8 ? v.y : b < 12 ? v.z : v.w;
  return (w >> (8 * (b & 3))) & 255u;
}

template <typename T, int K, int kTokenTiles>
__global__ void __launch_bounds__(TcGemmConfig<K, kTokenTiles>::kThreads)
tc_gemm_kernel(const T* __restrict__ x,                // [M, cols]
               const uint32_t* __restrict__ packed,    // [NT, G, K, 32, 4]
               const uint8_t* __restrict__ absmax,     // [NT, G, 128]
               const float* __restrict__ row_scale,    // [N]
               const float* __restrict__ codebook,     // [2^K]
               T* __restrict__ y,                      // [M, N]            (splits == 1)
               float* __restrict__ workspace,          // [splits, M, NT*16] (splits > 1)
               int64_t M, int64_t N, int64_t cols, int64_t row_tiles) {
  using Cfg = TcGemmConfig<K, kTokenTiles>;
  extern __shared__ uint32_t smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;

  // Pair table: word lut_word(i, l) = (cb[a], cb[b]) of pair index i, as two T. Built
  // once per CTA (the grid is persistent); with 32 copies, thread i writes entry i's
  // 32 consecutive words with 16-byte stores.
  for (int i = threadIdx.x; i < Cfg::kLutEntries; i += Cfg::kThreads) {
    uint32_t a, b;
    lut_index_pair(K, static_cast<uint32_t>(i), a, b);
    const uint32_t v = pack_pair<T>(__ldg(codebook + a), __ldg(codebook + b));
    if constexpr (Cfg::kLutCopies == 32) {
      uint4* dst = reinterpret_cast<uint4*>(smem + 32 * i);
#pragma unroll
      for (int q = 0; q < 8; ++q) dst[q] = make_uint4(v, v, v, v);
    } else {
      smem[i] = v;
    }
  }
  float* red = reinterpret_cast<float*>(smem + Cfg::kLutWords);  // [kWarps][16 rows][kTokens]
  __syncthreads();

  const int64_t G = (cols + 255) / 256;
  const int split = blockIdx.y, splits = gridDim.y;
  const int64_t grp_first = int64_t(split) * Cfg::kWarps + warp, grp_step = int64_t(splits) * Cfg::kWarps;

  // Rows of x this lane feeds as B (token mt * 8 + g); rows past M read as zeros.
  const uint32_t* xrow[kTokenTiles];
  bool xvalid[kTokenTiles];
#pragma unroll
  for (int mt = 0; mt < kTokenTiles; ++mt) {
    const int64_t token = mt * 8 + g;
    xvalid[mt] = token < M;
    xrow[mt] = reinterpret_cast<const uint32_t*>(x + (xvalid[mt] ? token : 0) * cols) + t;
  }

  for (int64_t nt = blockIdx.x; nt < row_tiles; nt += gridDim.x) {
    const uint4* tiles = reinterpret_cast<const uint4*>(packed + nt * G * tile_words(K));
    const uint4* scales = reinterpret_cast<const uint4*>(absmax + nt * G * kAbsmaxBytesPerTile) + g;

    float acc[kTokenTiles][4];
#pragma unroll
    for (int mt = 0; mt < kTokenTiles; ++mt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mt][i] = 0.0f;

    // Software pipeline: the next group's stream and scales are in flight while the
    // current group is multiplied.
    uint4 next[K], next_am = make_uint4(0, 0, 0, 0);
    if (grp_first < G) {
#pragma unroll
      for (int v = 0; v < K; ++v) next[v] = __ldg(tiles + (grp_first * K + v) * 32 + lane);
      next_am = __ldg(scales + grp_first * (kAbsmaxBytesPerTile / 16));
    }
    for (int64_t grp = grp_first; grp < G; grp += grp_step) {
      uint32_t stream[4 * K];
#pragma unroll
      for (int v = 0; v < K; ++v) {
        stream[4 * v] = next[v].x; stream[4 * v + 1] = next[v].y;
        stream[4 * v + 2] = next[v].z; stream[4 * v + 3] = next[v].w;
      }
      const uint4 am = next_am;
      const int64_t grp_next = grp + grp_step;
      if (grp_next < G) {
#pragma unroll
        for (int v = 0; v < K; ++v) next[v] = __ldg(tiles + (grp_next * K + v) * 32 + lane);
        next_am = __ldg(scales + grp_next * (kAbsmaxBytesPerTile / 16));
      }
      const int blocks = static_cast<int>((cols - grp * 256) / 32 < 8 ? (cols - grp * 256) / 32 : 8);
      const uint32_t* xg[kTokenTiles];
#pragma unroll
      for (int mt = 0; mt < kTokenTiles; ++mt) xg[mt] = xrow[mt] + grp * 128;  // 256 columns = 128 words
#pragma unroll
      for (int blk = 0; blk < 8; ++blk) {
        if (blk >= blocks) break;  // K tail: same for the whole warp
        float d[kTokenTiles][4];
#pragma unroll
        for (int mt = 0; mt < kTokenTiles; ++mt)
#pragma unroll
          for (int i = 0; i < 4; ++i) d[mt][i] = 0.0f;
#pragma unroll
        for (int st = 0; st < 2; ++st) {
          const int s = 2 * blk + st;
          uint32_t a[4];
#pragma unroll
          for (int r = 0; r < 4; ++r) a[r] = smem[lut_word<K>(get_lut_index(stream, K, 4 * s + r), lane)];
#pragma unroll
          for (int mt = 0; mt < kTokenTiles; ++mt) {
            // B = x^T: columns 16 s + 2t (+1) and 16 s + 2t + 8 (+9) of token mt * 8 + g.
            const uint32_t b0 = xvalid[mt] ? __ldg(xg[mt] + 8 * s) : 0u;
            const uint32_t b1 = xvalid[mt] ? __ldg(xg[mt] + 8 * s + 4) : 0u;
            mma_m16n8k16<T>(d[mt], a, b0, b1);
          }
        }
        const float s_lo = e4m4_decode(byte_of(am, blk));      // row g
        const float s_hi = e4m4_decode(byte_of(am, 8 + blk));  // row g + 8
#pragma unroll
        for (int mt = 0; mt < kTokenTiles; ++mt) {
          acc[mt][0] = fmaf(s_lo, d[mt][0], acc[mt][0]);
          acc[mt][1] = fmaf(s_lo, d[mt][1], acc[mt][1]);
          acc[mt][2] = fmaf(s_hi, d[mt][2], acc[mt][2]);
          acc[mt][3] = fmaf(s_hi, d[mt][3], acc[mt][3]);
        }
      }
    }

    // Cross-warp sum in a fixed order: red[w][row][token].
#pragma unroll
    for (int mt = 0; mt < kTokenTiles; ++mt) {
      float* base = red + (warp * kTileRows + g) * Cfg::kTokens + mt * 8 + 2 * t;
      base[0] = acc[mt][0];
      base[1] = acc[mt][1];
      base[8 * Cfg::kTokens] = acc[mt][2];
      base[8 * Cfg::kTokens + 1] = acc[mt][3];
    }
    __syncthreads();
    for (int i = threadIdx.x; i < kTileRows * Cfg::kTokens; i += Cfg::kThreads) {
      const int r = i % kTileRows, tok = i / kTileRows;  // rows fastest: stores along N
      float sum = red[r * Cfg::kTokens + tok];
#pragma unroll
      for (int w = 1; w < Cfg::kWarps; ++w) sum += red[(w * kTileRows + r) * Cfg::kTokens + tok];
      const int64_t row = nt * kTileRows + r;
      if (tok >= M || row >= N) continue;
      if (splits == 1) {
        y[tok * N + row] = from_float<T>(sum * __ldg(row_scale + row));
      } else {
        workspace[(int64_t(split) * M + tok) * (row_tiles * kTileRows) + row] = sum;
      }
    }
    __syncthreads();  // red is rewritten by the next tile
  }
}

// y = row_scale * (sum of the splits' partials, in split order).
template <typename T>
__global__ void tc_reduce_splits(const float* __restrict__ workspace, const float* __restrict__ row_scale,
                                 T* __restrict__ y, int64_t M, int64_t N, int64_t n16, int splits) {
  const int64_t total = M * N;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t tok = i / N, row = i % N;
    float sum = workspace[tok * n16 + row];
    for (int s = 1; s < splits; ++s) sum += workspace[(int64_t(s) * M + tok) * n16 + row];
    y[i] = from_float<T>(sum * row_scale[row]);
  }
}

template <typename T, int K, int kTokenTiles>
void launch_tc_gemm_tiles(const TcGemmArgs& args, cudaStream_t stream) {
  using Cfg = TcGemmConfig<K, kTokenTiles>;
  auto kernel = tc_gemm_kernel<T, K, kTokenTiles>;
  static bool configured = [&] {
    C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
    return true;
  }();
  (void)configured;
  const int64_t NT = (args.N + 15) / 16;
  // Persistent: as many CTAs as fit on the device at once (each builds the pair table
  // once), or fewer when there are fewer tiles.
  static const int ctas_per_sm = [&] {
    int n = 0;
    C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, Cfg::kThreads, Cfg::kSmemBytes));
    return n > 0 ? n : 1;
  }();
  const int64_t resident = int64_t(ctas_per_sm) * at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const int64_t ctas_x = std::max<int64_t>(1, std::min<int64_t>(NT, resident / args.splits));
  const dim3 grid(static_cast<unsigned>(ctas_x), static_cast<unsigned>(args.splits));
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(
      static_cast<const T*>(args.x), args.packed, args.absmax, args.row_scale, args.codebook,
      static_cast<T*>(args.y), args.workspace, args.M, args.N, args.K, NT);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  if (args.splits > 1) {
    const int64_t total = args.M * args.N;
    const unsigned blocks = static_cast<unsigned>(grid_for((total + 255) / 256, 4));
    tc_reduce_splits<T><<<blocks, 256, 0, stream>>>(args.workspace, args.row_scale, static_cast<T*>(args.y),
                                                     args.M, args.N, NT * 16, args.splits);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
}

template <typename T, int K>
void launch_tc_gemm(const TcGemmArgs& args, cudaStream_t stream) {
  switch (tc_token_tiles(args.M)) {
    case 1: launch_tc_gemm_tiles<T, K, 1>(args, stream); break;
    case 2: launch_tc_gemm_tiles<T, K, 2>(args, stream); break;
    case 4: launch_tc_gemm_tiles<T, K, 4>(args, stream); break;
    default: launch_tc_gemm_tiles<T, K, 8>(args, stream); break;
  }
}

}  // namespace cuda
}  // namespace kbit

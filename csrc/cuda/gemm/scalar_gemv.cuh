#pragma once
// Scalar GEMV for M = 1..4 (dense) straight from the tiled layout (docs/format.md section 5).
//
// Why: on small weights the tensor-core kernel's fixed chain (codebook -> pair table -> CTA
// barrier, per-warp staged copies, mbarrier hand-offs, one persistent wave with a second round)
// is most of a call (docs/design.md, "Session 8"). This kernel has none of it: weights go from
// global memory straight into registers, the codebook lives in lane registers and is read with
// shuffles, and the only barrier is the final cross-warp sum.
//
// Work partition: CTA = one 16-row tile of W, gemv_warps(K) (<= 16) warps; warp w takes the 256-column
// groups w, w + warps, ... (the next group's loads in flight while the current one is decoded).
// Lane (g = lane / 4, t = lane % 4) decodes its 64 pair codes of a group (tiled_layout.h): for
// block b, codes 8 b + 4 h + r hold row g (r even) or g + 8 (r odd) at the lane's columns
// 32 b + 8 t + 4 h + 2 (r / 2) + {0, 1}: 2 rows x the 8 consecutive columns 8 t .. 8 t + 7 of
// each block, so one 16-byte load of x per block and token feeds 16 weights.
// Codebook lookup: lane i holds cb[i mod 2^k]; __shfl_sync takes the source lane modulo 32, so
// an index only needs its low k bits right (no masking; a k = 3 code straddling two words is
// one funnel shift). Per weight: ~1 shift, 1 shuffle, 1 FFMA per token.
// Numerics: fp32 products and sums; per block and row, sum * block scale into the row's
// accumulator; the lanes t of a row (shuffles) and then the warps (shared memory, warp order)
// are added in a fixed order: the same bits on every run.
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "../../common/tiled_layout.h"
#include "../common/device_utils.cuh"
#include "mma.cuh"
#include "pair_table.cuh"
#include "scalar_gemv.h"

namespace kbit {
namespace cuda {

// A 16-byte weight load that bypasses L1 (read once; L1 keeps x).
__device__ __forceinline__ uint4 load_streaming_16(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// The stream bits from bit `pos` on (compile-time pos after unrolling), low k bits valid.
template <int K>
__device__ __forceinline__ uint32_t stream_bits(const uint32_t* stream, int pos) {
  const int w = pos >> 5, sh = pos & 31;
  if (sh + K <= 32) return stream[w] >> sh;
  return __funnelshift_r(stream[w], stream[w + 1], sh);
}

// Shuffle sources (low k bits = the index) of the two weights of pair code c.
template <int K>
__device__ __forceinline__ void pair_sources(const uint32_t* stream, int c, uint32_t& a, uint32_t& b) {
  if constexpr (K == 5) {
    get_pair(stream, 5, c, a, b);
  } else {
    const int pos = (K == 3 ? 6 : 2 * K) * c;  // code c = a | b << k at bit 4c (k=2), 6c (k=3), 8c (k=4)
    a = stream_bits<K>(stream, pos);
    b = stream_bits<K>(stream, pos + K);
  }
}

// Registers: at most 64 for M <= 2 (two CTAs of 16 warps or four of 8 per SM: Qwen3 gate/up's 320
// CTAs in one wave; with ~100 registers they took two and 5.8 -> 7.8 us at k = 4), 128 above.
template <typename T, int K, int kTokens>
__global__ void __launch_bounds__(32 * kGemvMaxWarps, kTokens <= 2 ? 2 : 1) scalar_gemv_kernel(const TcGemmArgs args) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const float cb_lane = __ldg(args.codebook + (lane & ((1 << K) - 1)));
  const int64_t N = args.N, cols = args.K, G = (cols + 255) / 256;
  const int64_t tile = blockIdx.x;
  const T* x = static_cast<const T*>(args.x);
  // The row scale of the output(s) this thread writes at the end (row i % 16 for i = threadIdx.x,
  // + blockDim.x, ...), loaded now: after the sums it would be one more memory round trip.
  const int64_t out_row = tile * kTileRows + threadIdx.x % kTileRows;
  const float rs = threadIdx.x < kTokens * kTileRows && out_row < N ? __ldg(args.row_scale + out_row) * kHalfScaleFix : 0.0f;

  const auto load_group = [&](int64_t grp, uint32_t (&stream)[4 * K], uint4& am) {
    const int64_t tix = tile * G + grp;
    const unsigned char* src = reinterpret_cast<const unsigned char*>(args.packed + tix * tile_words(K)) + lane * 16;
#pragma unroll
    for (int v = 0; v < K; ++v) {
      const uint4 q = load_streaming_16(src + v * 512);
      stream[4 * v] = q.x; stream[4 * v + 1] = q.y; stream[4 * v + 2] = q.z; stream[4 * v + 3] = q.w;
    }
    am = load_streaming_16(args.absmax + tix * kAbsmaxBytesPerTile + g * 16);
  };

  float acc[kTokens][2];  // rows g, g + 8
#pragma unroll
  for (int m = 0; m < kTokens; ++m) acc[m][0] = acc[m][1] = 0.0f;

  uint32_t stream[4 * K];
  uint4 am;
  if (warp < G) load_group(warp, stream, am);
  for (int64_t grp = warp; grp < G; grp += warps) {
    uint32_t next[4 * K];
    uint4 next_am = make_uint4(0, 0, 0, 0);
    if (grp + warps < G) load_group(grp + warps, next, next_am);
    uint32_t halves[4][2];
    absmax_half_pairs(am, halves);
    const int blocks = static_cast<int>(cols - grp * 256 < 256 ? (cols - grp * 256) / 32 : 8);
    const T* xg = x + grp * 256 + 8 * t;
#pragma unroll
    for (int blk = 0; blk < 8; ++blk) {
      if (blk >= blocks) break;  // K tail: the same for the whole warp
      uint32_t xw[kTokens][4];  // x[m][32 blk + 8 t .. + 7] as 4 pairs
#pragma unroll
      for (int m = 0; m < kTokens; ++m) {
        const uint4 xv = __ldg(reinterpret_cast<const uint4*>(xg + m * cols + blk * 32));
        xw[m][0] = xv.x; xw[m][1] = xv.y; xw[m][2] = xv.z; xw[m][3] = xv.w;
      }
      float lo[kTokens], hi[kTokens];  // the block's sums for rows g, g + 8
#pragma unroll
      for (int m = 0; m < kTokens; ++m) lo[m] = hi[m] = 0.0f;
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // columns 4 h .. 4 h + 3 of the lane's 8: x pairs 2 h, 2 h + 1
        float w_lo[4], w_hi[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          uint32_t ia, ib;
          pair_sources<K>(stream, 8 * blk + 4 * h + r, ia, ib);
          const float va = __shfl_sync(0xffffffffu, cb_lane, static_cast<int>(ia));
          const float vb = __shfl_sync(0xffffffffu, cb_lane, static_cast<int>(ib));
          const int j = 2 * (r >> 1);
          if (r & 1) { w_hi[j] = va; w_hi[j + 1] = vb; }
          else { w_lo[j] = va; w_lo[j + 1] = vb; }
        }
#pragma unroll
        for (int m = 0; m < kTokens; ++m)
#pragma unroll
          for (int q = 0; q < 2; ++q) {
            const float2 f = unpack_pair<T>(xw[m][2 * h + q]);
            lo[m] = fmaf(w_lo[2 * q], f.x, lo[m]);
            lo[m] = fmaf(w_lo[2 * q + 1], f.y, lo[m]);
            hi[m] = fmaf(w_hi[2 * q], f.x, hi[m]);
            hi[m] = fmaf(w_hi[2 * q + 1], f.y, hi[m]);
          }
      }
      const float s_lo = half_bits_to_float(block_scale_bits(halves, blk, false));
      const float s_hi = half_bits_to_float(block_scale_bits(halves, blk, true));
#pragma unroll
      for (int m = 0; m < kTokens; ++m) {
        acc[m][0] = fmaf(s_lo, lo[m], acc[m][0]);
        acc[m][1] = fmaf(s_hi, hi[m], acc[m][1]);
      }
    }
#pragma unroll
    for (int w = 0; w < 4 * K; ++w) stream[w] = next[w];
    am = next_am;
  }

  // Row sums: the 4 lanes t of a row (fixed butterfly), then the warps in order.
#pragma unroll
  for (int m = 0; m < kTokens; ++m)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      acc[m][e] += __shfl_xor_sync(0xffffffffu, acc[m][e], 1);
      acc[m][e] += __shfl_xor_sync(0xffffffffu, acc[m][e], 2);
    }
  __shared__ float red[kGemvMaxWarps][kTokens][kTileRows];
  if (t == 0) {
#pragma unroll
    for (int m = 0; m < kTokens; ++m) {
      red[warp][m][g] = acc[m][0];
      red[warp][m][g + 8] = acc[m][1];
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kTokens * kTileRows; i += blockDim.x) {  // one warp: 32 threads, 64 outputs
    const int m = i / kTileRows, r = i % kTileRows;
    if (out_row < N) {  // r = threadIdx.x % 16 (blockDim.x is a multiple of 32): row out_row, scale rs
      float sum = red[0][m][r];
      for (int w = 1; w < warps; ++w) sum += red[w][m][r];
      static_cast<T*>(args.y)[m * N + out_row] = from_float<T>(sum * rs);
    }
  }
}

template <typename T, int K>
void launch_scalar_gemv(const TcGemmArgs& args, cudaStream_t stream) {
  const int64_t tiles = (args.N + kTileRows - 1) / kTileRows;
  TORCH_CHECK(tiles < (int64_t(1) << 31), "kbit: gemv_gemm needs N < 2^35 (one CTA per 16-row tile); got N=", args.N);
  const dim3 grid(static_cast<unsigned>(tiles)), block(32 * gemv_warps(args.K));
  switch (args.M) {
    case 1: scalar_gemv_kernel<T, K, 1><<<grid, block, 0, stream>>>(args); break;
    case 2: scalar_gemv_kernel<T, K, 2><<<grid, block, 0, stream>>>(args); break;
    case 3: scalar_gemv_kernel<T, K, 3><<<grid, block, 0, stream>>>(args); break;
    default: scalar_gemv_kernel<T, K, 4><<<grid, block, 0, stream>>>(args); break;
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace cuda
}  // namespace kbit

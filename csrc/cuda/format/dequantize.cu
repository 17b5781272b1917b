// CUDA dequantize from the flat layout and from the tiled (GEMM) layout.
// Values identical to the CPU ops: cb[i] * (e4m4(code) * row_scale), fp32, then rounded.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "../../common/checks.h"
#include "../../common/dispatch.h"
#include "../../common/quant_math.h"
#include "../../common/tiled_layout.h"
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

// ---- tiled layout: one warp per tile, staged through shared memory --------------------
// The warp decodes its tile's 16 x 256 weights into shared memory (each lane owns the
// pairs of docs/format.md section 5), then writes the 16 rows with coalesced 16-byte
// stores. Rows are padded by 8 elements so that the lanes' pair stores hit 32 distinct banks.
template <typename out_t> struct TiledDequantConfig {
  static constexpr int kWarps = sizeof(out_t) == 4 ? 2 : 4;  // smem: 33 KB either way
  static constexpr int kStride = kTileCols + 8;                // elements per smem row
};

template <typename out_t>
__device__ __forceinline__ void store_pair(out_t* dst, float v0, float v1) {
  if constexpr (sizeof(out_t) == 4) {
    *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
  } else {
    union { out_t h[2]; uint32_t u; } pack;
    pack.h[0] = from_float<out_t>(v0);
    pack.h[1] = from_float<out_t>(v1);
    *reinterpret_cast<uint32_t*>(dst) = pack.u;
  }
}

// Copy 8 elements (16 or 32 bytes, 16-byte aligned) from shared to global memory.
template <typename out_t>
__device__ __forceinline__ void copy8(out_t* dst, const out_t* src) {
#pragma unroll
  for (int i = 0; i < int(sizeof(out_t)) / 2; ++i)
    reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
}

template <typename out_t, int K>
__global__ void __launch_bounds__(TiledDequantConfig<out_t>::kWarps * 32)
dequantize_tiled_kernel(const uint32_t* __restrict__ packed,   // [E, NT, G, K, 32, 4]
                        const uint8_t* __restrict__ absmax,    // [E, NT, G, 128]
                        const float* __restrict__ row_scale,   // [E, N], or null: all 1
                        const float* __restrict__ codebook,    // [2^K]
                        int64_t experts, int64_t N, int64_t cols,
                        out_t* __restrict__ out) {             // [E, N, cols]
  constexpr int kWarps = TiledDequantConfig<out_t>::kWarps;
  constexpr int kStride = TiledDequantConfig<out_t>::kStride;
  __shared__ float cb[1 << K];
  __shared__ __align__(16) out_t tile_buf[kWarps][kTileRows][kStride];
  if (threadIdx.x < (1 << K)) cb[threadIdx.x] = codebook[threadIdx.x];
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t NT = (N + 15) / 16, G = (cols + 255) / 256;
  const int64_t tiles = experts * NT * G;
  out_t (*buf)[kStride] = tile_buf[warp];
  for (int64_t t = blockIdx.x * int64_t(kWarps) + warp; t < tiles; t += int64_t(gridDim.x) * kWarps) {
    const int64_t e = t / (NT * G), nt = (t / G) % NT, grp = t % G;
    const uint32_t* src = packed + t * tile_words(K);
    uint32_t stream[4 * K];
#pragma unroll
    for (int v = 0; v < K; ++v) {
      const uint4 q = __ldg(reinterpret_cast<const uint4*>(src) + v * 32 + lane);
      stream[4 * v] = q.x; stream[4 * v + 1] = q.y; stream[4 * v + 2] = q.z; stream[4 * v + 3] = q.w;
    }
    // Block scales of this lane's rows g and g + 8 (8 blocks each).
    const int g = lane >> 2;
    float scale[2][8];
    const uint8_t* am = absmax + t * kAbsmaxBytesPerTile + g * 16;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = nt * 16 + g + 8 * h;
      const float rs = row >= N ? 0.0f : row_scale ? __ldg(row_scale + e * N + row) : 1.0f;
#pragma unroll
      for (int b = 0; b < 8; ++b) scale[h][b] = block_scale(__ldg(am + 8 * h + b), rs);
    }
#pragma unroll
    for (int c = 0; c < kCodesPerLane; ++c) {
      uint32_t a, b;
      get_pair(stream, K, c, a, b);
      const int r = code_row(lane, c), col = code_col(lane, c);
      const float s = scale[c & 1][col >> 5];
      store_pair(&buf[r][col], dequant_value(cb[a], s), dequant_value(cb[b], s));
    }
    __syncwarp();
    // Coalesced write-out, 8 elements per lane per step.
    const int64_t col0 = grp * 256;
    const int valid_cols = static_cast<int>(cols - col0 < 256 ? cols - col0 : 256);
    constexpr int kChunksPerRow = kTileCols / 8;
#pragma unroll 4
    for (int ch = lane; ch < kTileRows * kChunksPerRow; ch += 32) {
      const int r = ch / kChunksPerRow, c8 = (ch % kChunksPerRow) * 8;
      const int64_t row = nt * 16 + r;
      if (row < N && c8 < valid_cols) copy8(out + (e * N + row) * cols + col0 + c8, &buf[r][c8]);
    }
    __syncwarp();
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

template <typename out_t>
void launch_tiled(const at::Tensor& packed, const at::Tensor& absmax, const float* rs,
                  const at::Tensor& cb, const WeightGeometry& g, at::Tensor& out) {
  constexpr int kWarps = TiledDequantConfig<out_t>::kWarps;
  const auto stream = at::cuda::getCurrentCUDAStream();
  const int64_t tiles = g.batch() * g.row_tiles() * g.col_tiles();
  const dim3 grid(static_cast<unsigned>(grid_for((tiles + kWarps - 1) / kWarps, 8)));
  const dim3 block(kWarps * 32);
  auto* p = reinterpret_cast<const uint32_t*>(packed.data_ptr<int32_t>());
  auto* a = absmax.data_ptr<uint8_t>();
  auto* c = cb.data_ptr<float>();
  auto* o = out.data_ptr<out_t>();
  const int64_t E = g.batch(), N = g.rows, K = g.cols;
  switch (g.k) {
    case 2: dequantize_tiled_kernel<out_t, 2><<<grid, block, 0, stream>>>(p, a, rs, c, E, N, K, o); break;
    case 3: dequantize_tiled_kernel<out_t, 3><<<grid, block, 0, stream>>>(p, a, rs, c, E, N, K, o); break;
    case 4: dequantize_tiled_kernel<out_t, 4><<<grid, block, 0, stream>>>(p, a, rs, c, E, N, K, o); break;
    case 5: dequantize_tiled_kernel<out_t, 5><<<grid, block, 0, stream>>>(p, a, rs, c, E, N, K, o); break;
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
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
    launch_tiled<scalar_t>(packed_t, absmax_t, row_scale.data_ptr<float>(), cb, g, out);
  });
  return out;
}

}  // namespace

at::Tensor dequantize_tiled_unscaled(const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                     const at::Tensor& codebook, const WeightGeometry& g, at::ScalarType dtype) {
  at::Tensor out = tiled_output(packed_t, g, dtype);
  KBIT_DISPATCH_FLOAT_TYPES(dtype, "kbit_dequantize_tiled_unscaled", [&] {
    launch_tiled<scalar_t>(packed_t, absmax_t, nullptr, codebook, g, out);
  });
  return out;
}

}  // namespace cuda

TORCH_LIBRARY_IMPL(kbit, CUDA, m) {
  m.impl("dequantize", &cuda::dequantize_cuda);
  m.impl("dequantize_tiled", &cuda::dequantize_tiled_cuda);
}

}  // namespace kbit

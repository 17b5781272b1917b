// CUDA repack (flat -> tiled) and unrepack (tiled -> flat); docs/format.md section 5.
// One warp per tile (16 rows x 256 columns): the tile's flat bit-planes are staged in
// shared memory, where each lane gathers (repack) or scatters (unrepack) its 64 pairs.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "../../common/checks.h"
#include "../../common/tiled_layout.h"
#include "../common/device_utils.cuh"

namespace kbit {
namespace cuda {
namespace {

constexpr int kWarps = 4;

// A tile's flat planes in shared memory: [16 rows][8 blocks * K words], rows padded by
// one word (odd stride) so the 8 rows a warp touches at once sit in distinct banks.
template <int K> struct TilePlanes {
  static constexpr int kRowWords = kBlocksPerTile * K + 1;
  uint32_t w[kTileRows][kRowWords];
};

// Flat word `i` of the tile (row-major over [16][8K]) and whether it exists.
struct FlatTileIndex {
  int64_t first_word;  // flat word index of the tile's (row 0, block 0, plane 0)
  int64_t row0, N, KB, grp;
};

template <int K>
__device__ __forceinline__ bool flat_word(const FlatTileIndex& f, int i, int& r, int& w, int64_t& src) {
  r = i / (kBlocksPerTile * K);
  w = i % (kBlocksPerTile * K);
  const int64_t row = f.row0 + r, kb = f.grp * kBlocksPerTile + w / K;
  src = f.first_word + (r * f.KB) * K + w;
  return row < f.N && kb < f.KB;
}

// absmax byte o of a tile (o = 16 g + 8 h + b) <-> (tile row g + 8h, block b).
__device__ __forceinline__ int absmax_row(int o) { return (o >> 4) + 8 * ((o >> 3) & 1); }

template <int K>
__global__ void __launch_bounds__(kWarps * 32)
repack_kernel(const uint32_t* __restrict__ flat,      // [E, N, KB, K]
              const uint8_t* __restrict__ absmax,     // [E, N, KB]
              int64_t experts, int64_t N, int64_t KB,
              uint32_t* __restrict__ tiled,           // [E, NT, G, K, 32, 4]
              uint8_t* __restrict__ tiled_absmax) {   // [E, NT, G, 128]
  __shared__ TilePlanes<K> smem[kWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  TilePlanes<K>& planes = smem[warp];
  const int64_t NT = (N + 15) / 16, G = (KB + 7) / 8, tiles = experts * NT * G;
  for (int64_t t = blockIdx.x * int64_t(kWarps) + warp; t < tiles; t += int64_t(gridDim.x) * kWarps) {
    const int64_t e = t / (NT * G), nt = (t / G) % NT, grp = t % G;
    const FlatTileIndex f{((e * N + nt * 16) * KB + grp * 8) * K, nt * 16, N, KB, grp};
    for (int i = lane; i < kTileRows * kBlocksPerTile * K; i += 32) {
      int r, w;
      int64_t src;
      const bool ok = flat_word<K>(f, i, r, w, src);
      planes.w[r][w] = ok ? __ldg(flat + src) : 0u;
    }
    __syncwarp();
    uint32_t stream[4 * K];
#pragma unroll
    for (int w = 0; w < 4 * K; ++w) stream[w] = 0;
#pragma unroll
    for (int c = 0; c < kCodesPerLane; ++c) {
      const int r = code_row(lane, c), col = code_col(lane, c);
      const uint32_t* pl = &planes.w[r][(col >> 5) * K];
      put_pair(stream, K, c, flat_index(pl, K, col & 31), flat_index(pl, K, (col & 31) + 1));
    }
    uint4* dst = reinterpret_cast<uint4*>(tiled + t * tile_words(K));
#pragma unroll
    for (int v = 0; v < K; ++v)
      dst[v * 32 + lane] = make_uint4(stream[4 * v], stream[4 * v + 1], stream[4 * v + 2], stream[4 * v + 3]);
    // Absmax: lane writes bytes 4 lane .. 4 lane + 3 of the tile's 128.
    uint32_t word = 0;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int o = 4 * lane + q;
      const int64_t row = nt * 16 + absmax_row(o), kb = grp * 8 + (o & 7);
      const uint32_t code = (row < N && kb < KB) ? __ldg(absmax + (e * N + row) * KB + kb) : 0u;
      word |= code << (8 * q);
    }
    reinterpret_cast<uint32_t*>(tiled_absmax + t * kAbsmaxBytesPerTile)[lane] = word;
    __syncwarp();
  }
}

template <int K>
__global__ void __launch_bounds__(kWarps * 32)
unrepack_kernel(const uint32_t* __restrict__ tiled,        // [E, NT, G, K, 32, 4]
                const uint8_t* __restrict__ tiled_absmax,  // [E, NT, G, 128]
                int64_t experts, int64_t N, int64_t KB,
                uint32_t* __restrict__ flat,               // [E, N, KB, K]
                uint8_t* __restrict__ absmax) {            // [E, N, KB]
  __shared__ TilePlanes<K> smem[kWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  TilePlanes<K>& planes = smem[warp];
  const int64_t NT = (N + 15) / 16, G = (KB + 7) / 8, tiles = experts * NT * G;
  for (int64_t t = blockIdx.x * int64_t(kWarps) + warp; t < tiles; t += int64_t(gridDim.x) * kWarps) {
    const int64_t e = t / (NT * G), nt = (t / G) % NT, grp = t % G;
    for (int i = lane; i < kTileRows * TilePlanes<K>::kRowWords; i += 32) (&planes.w[0][0])[i] = 0;
    __syncwarp();
    const uint4* src = reinterpret_cast<const uint4*>(tiled + t * tile_words(K));
    uint32_t stream[4 * K];
#pragma unroll
    for (int v = 0; v < K; ++v) {
      const uint4 q = __ldg(src + v * 32 + lane);
      stream[4 * v] = q.x; stream[4 * v + 1] = q.y; stream[4 * v + 2] = q.z; stream[4 * v + 3] = q.w;
    }
#pragma unroll
    for (int c = 0; c < kCodesPerLane; ++c) {
      uint32_t a, b;
      get_pair(stream, K, c, a, b);
      const int r = code_row(lane, c), col = code_col(lane, c), i = col & 31;
      uint32_t* pl = &planes.w[r][(col >> 5) * K];
#pragma unroll
      for (int j = 0; j < K; ++j) {
        const uint32_t bits = ((a >> j) & 1u) << i | ((b >> j) & 1u) << (i + 1);
        if (bits) atomicOr(pl + j, bits);  // the 4 lanes of a row share these words
      }
    }
    __syncwarp();
    const FlatTileIndex f{((e * N + nt * 16) * KB + grp * 8) * K, nt * 16, N, KB, grp};
    for (int i = lane; i < kTileRows * kBlocksPerTile * K; i += 32) {
      int r, w;
      int64_t dst;
      if (flat_word<K>(f, i, r, w, dst)) flat[dst] = planes.w[r][w];
    }
    const uint32_t word = __ldg(reinterpret_cast<const uint32_t*>(tiled_absmax + t * kAbsmaxBytesPerTile) + lane);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int o = 4 * lane + q;
      const int64_t row = nt * 16 + absmax_row(o), kb = grp * 8 + (o & 7);
      if (row < N && kb < KB) absmax[(e * N + row) * KB + kb] = static_cast<uint8_t>(word >> (8 * q));
    }
    __syncwarp();
  }
}

std::vector<int64_t> with_experts(const WeightGeometry& g, std::initializer_list<int64_t> tail) {
  std::vector<int64_t> s;
  if (g.experts) s.push_back(g.experts);
  s.insert(s.end(), tail);
  return s;
}

std::tuple<at::Tensor, at::Tensor> repack_cuda(const at::Tensor& packed, const at::Tensor& absmax) {
  const WeightGeometry g = check_flat(packed, absmax);
  const c10::cuda::CUDAGuard guard(packed.device());
  at::Tensor out_p = at::empty(with_experts(g, {g.row_tiles(), g.col_tiles(), g.k, 32, 4}), packed.options());
  at::Tensor out_a = at::empty(with_experts(g, {g.row_tiles(), g.col_tiles(), 128}), absmax.options());
  const int64_t tiles = g.batch() * g.row_tiles() * g.col_tiles();
  if (tiles == 0) return {out_p, out_a};
  const auto stream = at::cuda::getCurrentCUDAStream();
  const dim3 grid(static_cast<unsigned>(grid_for((tiles + kWarps - 1) / kWarps, 8)));
  auto* src = reinterpret_cast<const uint32_t*>(packed.data_ptr<int32_t>());
  auto* dst = reinterpret_cast<uint32_t*>(out_p.data_ptr<int32_t>());
  auto* sa = absmax.data_ptr<uint8_t>();
  auto* da = out_a.data_ptr<uint8_t>();
  const int64_t E = g.batch(), N = g.rows, KB = g.blocks_per_row();
  switch (g.k) {
    case 2: repack_kernel<2><<<grid, kWarps * 32, 0, stream>>>(src, sa, E, N, KB, dst, da); break;
    case 3: repack_kernel<3><<<grid, kWarps * 32, 0, stream>>>(src, sa, E, N, KB, dst, da); break;
    case 4: repack_kernel<4><<<grid, kWarps * 32, 0, stream>>>(src, sa, E, N, KB, dst, da); break;
    case 5: repack_kernel<5><<<grid, kWarps * 32, 0, stream>>>(src, sa, E, N, KB, dst, da); break;
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {out_p, out_a};
}

std::tuple<at::Tensor, at::Tensor> unrepack_cuda(const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                                 int64_t N, int64_t K) {
  const WeightGeometry g = check_tiled(packed_t, absmax_t, N, K);
  const c10::cuda::CUDAGuard guard(packed_t.device());
  at::Tensor out_p = at::empty(with_experts(g, {N, g.blocks_per_row(), g.k}), packed_t.options());
  at::Tensor out_a = at::empty(with_experts(g, {N, g.blocks_per_row()}), absmax_t.options());
  const int64_t tiles = g.batch() * g.row_tiles() * g.col_tiles();
  if (tiles == 0) return {out_p, out_a};
  const auto stream = at::cuda::getCurrentCUDAStream();
  const dim3 grid(static_cast<unsigned>(grid_for((tiles + kWarps - 1) / kWarps, 8)));
  auto* src = reinterpret_cast<const uint32_t*>(packed_t.data_ptr<int32_t>());
  auto* dst = reinterpret_cast<uint32_t*>(out_p.data_ptr<int32_t>());
  auto* sa = absmax_t.data_ptr<uint8_t>();
  auto* da = out_a.data_ptr<uint8_t>();
  const int64_t E = g.batch(), KB = g.blocks_per_row();
  switch (g.k) {
    case 2: unrepack_kernel<2><<<grid, kWarps * 32, 0, stream>>>(src, sa, E, N, KB, dst, da); break;
    case 3: unrepack_kernel<3><<<grid, kWarps * 32, 0, stream>>>(src, sa, E, N, KB, dst, da); break;
    case 4: unrepack_kernel<4><<<grid, kWarps * 32, 0, stream>>>(src, sa, E, N, KB, dst, da); break;
    case 5: unrepack_kernel<5><<<grid, kWarps * 32, 0, stream>>>(src, sa, E, N, KB, dst, da); break;
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {out_p, out_a};
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(kbit, CUDA, m) {
  m.impl("repack", &cuda::repack_cuda);
  m.impl("unrepack", &cuda::unrepack_cuda);
}

}  // namespace kbit

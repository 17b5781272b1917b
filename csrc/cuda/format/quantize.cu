// CUDA quantize: W [*, N, K] -> flat bit-planes, E4M4 absmax, per-row scale.
// Bit-identical to csrc/cpu/quantize_cpu.cpp (same rule, docs/format.md section 4).
//
// One CTA per row (grid-stride): the CTA first reduces the row's max |w| (-> row
// scale), then each warp quantizes whole blocks, lane j holding weight j of the
// block; the k bit-planes come out of k __ballot_sync calls.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "../../common/checks.h"
#include "../../common/dispatch.h"
#include "../../common/quant_math.h"
#include "../common/device_utils.cuh"

namespace kbit {
namespace cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

template <int K>
struct BlockCandidate {
  uint32_t idx;  // this lane's index
  float err;     // block squared error (same on all lanes)
};

template <int K>
__device__ __forceinline__ BlockCandidate<K> quantize_lane(float w, float s, const float* cb,
                                                           const float* mid) {
  const float inv_s = scale_reciprocal(s);
  const uint32_t idx = static_cast<uint32_t>(nearest_index<K>(normalize(w, inv_s), mid));
  return {idx, warp_sum_butterfly(squared_error(w, cb[idx], s))};
}

template <typename scalar_t, int K>
__global__ void __launch_bounds__(kThreads)
quantize_rows_kernel(const scalar_t* __restrict__ W,        // [rows, cols]
                     int64_t rows, int64_t cols,
                     const float* __restrict__ codebook,    // [2^K]
                     uint32_t* __restrict__ packed,         // [rows, cols/32, K]
                     uint8_t* __restrict__ absmax,          // [rows, cols/32]
                     float* __restrict__ row_scale) {       // [rows]
  constexpr int kEntries = 1 << K;
  __shared__ float cb[kEntries];
  __shared__ float mid[kEntries];  // kEntries - 1 used; 31 distinct banks: conflict-free lookups
  __shared__ float red_max[kWarps];
  __shared__ int red_bad[kWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (threadIdx.x < kEntries) cb[threadIdx.x] = codebook[threadIdx.x];
  __syncthreads();
  if (threadIdx.x + 1 < kEntries) mid[threadIdx.x] = codebook_midpoint(cb, threadIdx.x);
  __syncthreads();

  const int64_t blocks = cols / 32;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const scalar_t* wr = W + r * cols;
    // Phase 1: row max |w| and finiteness.
    float m = 0.0f;
    int bad = 0;
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) {
      const float v = to_float(wr[c]);
      bad |= !isfinite(v);
      m = fmaxf(m, fabsf(v));
    }
    m = warp_max(m);
    bad = __any_sync(kFullMask, bad);
    if (lane == 0) { red_max[warp] = m; red_bad[warp] = bad; }
    __syncthreads();
    m = red_max[0];
    bad = red_bad[0];
#pragma unroll
    for (int i = 1; i < kWarps; ++i) { m = fmaxf(m, red_max[i]); bad |= red_bad[i]; }
    const float rs = row_scale_for(m, !bad);
    if (threadIdx.x == 0) row_scale[r] = rs;

    // Phase 2: one warp per block.
    for (int64_t b = warp; b < blocks; b += kWarps) {
      const float w = to_float(wr[b * 32 + lane]);
      uint32_t idx = 0, code = 0;
      if (!isnan(rs)) {
        const float a = warp_max(fabsf(w)) / rs;  // exact: rs is a power of two
        const uint32_t down = e4m4_floor_code(a);
        const uint32_t up = (e4m4_decode(down) == a || down == 255u) ? down : down + 1u;
        const BlockCandidate<K> cu = quantize_lane<K>(w, block_scale(up, rs), cb, mid);
        idx = cu.idx;
        code = up;
        if (down != up) {
          const BlockCandidate<K> cd = quantize_lane<K>(w, block_scale(down, rs), cb, mid);
          if (cd.err < cu.err) { idx = cd.idx; code = down; }
        }
      }
      uint32_t* dst = packed + (r * blocks + b) * K;
#pragma unroll
      for (int j = 0; j < K; ++j) {
        const uint32_t plane = __ballot_sync(kFullMask, (idx >> j) & 1u);
        if (lane == j) dst[j] = plane;
      }
      if (lane == 0) absmax[r * blocks + b] = static_cast<uint8_t>(code);
    }
    __syncthreads();  // red_* are reused by the next row
  }
}

template <typename scalar_t>
void launch_quantize(const at::Tensor& W, const at::Tensor& cb, int k, int64_t rows, int64_t cols,
                     at::Tensor& packed, at::Tensor& absmax, at::Tensor& row_scale) {
  const auto stream = at::cuda::getCurrentCUDAStream();
  const dim3 grid(static_cast<unsigned>(grid_for(rows, 8)));
  auto* p = reinterpret_cast<uint32_t*>(packed.data_ptr<int32_t>());
  auto* w = W.data_ptr<scalar_t>();
  auto* c = cb.data_ptr<float>();
  auto* a = absmax.data_ptr<uint8_t>();
  auto* rs = row_scale.data_ptr<float>();
  switch (k) {
    case 2: quantize_rows_kernel<scalar_t, 2><<<grid, kThreads, 0, stream>>>(w, rows, cols, c, p, a, rs); break;
    case 3: quantize_rows_kernel<scalar_t, 3><<<grid, kThreads, 0, stream>>>(w, rows, cols, c, p, a, rs); break;
    case 4: quantize_rows_kernel<scalar_t, 4><<<grid, kThreads, 0, stream>>>(w, rows, cols, c, p, a, rs); break;
    case 5: quantize_rows_kernel<scalar_t, 5><<<grid, kThreads, 0, stream>>>(w, rows, cols, c, p, a, rs); break;
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> quantize_cuda(const at::Tensor& W_in,
                                                             const at::Tensor& codebook, int64_t k) {
  const WeightGeometry g = check_quantize_args(W_in, codebook, k);
  const c10::cuda::CUDAGuard guard(W_in.device());
  const at::Tensor W = W_in.contiguous();
  const at::Tensor cb = codebook.contiguous();
  std::vector<int64_t> lead(W.sizes().begin(), W.sizes().end() - 1);
  std::vector<int64_t> psize = lead, asize = lead;
  psize.insert(psize.end(), {g.blocks_per_row(), k});
  asize.push_back(g.blocks_per_row());
  at::Tensor packed = at::empty(psize, W.options().dtype(at::kInt));
  at::Tensor absmax = at::empty(asize, W.options().dtype(at::kByte));
  at::Tensor row_scale = at::empty(lead, W.options().dtype(at::kFloat));
  const int64_t rows = g.batch() * g.rows;
  if (rows == 0) return {packed, absmax, row_scale};
  KBIT_DISPATCH_FLOAT_TYPES(W.scalar_type(), "kbit_quantize_cuda", [&] {
    launch_quantize<scalar_t>(W, cb, static_cast<int>(k), rows, g.cols, packed, absmax, row_scale);
  });
  return {packed, absmax, row_scale};
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(kbit, CUDA, m) { m.impl("quantize", &cuda::quantize_cuda); }

}  // namespace kbit

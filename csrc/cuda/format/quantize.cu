// CUDA quantize: W [*, N, K] -> flat bit-planes, E4M4 absmax, per-row scale.
// Bit-identical to csrc/cpu/quantize_cpu.cpp (same rule, docs/format.md section 4).
//
// One CTA per row (grid-stride): the CTA first reduces the row's max |w| (-> row
// scale), then each thread quantizes whole 32-weight blocks with the shared
// BlockQuantizer (csrc/common/block_quantizer.h). A thread per block, not a warp per
// block: the per-block work (absmax, E4M4 bracketing, the reciprocal, the error sum)
// is then done once instead of 32 times in lock-step, and no shuffles are needed.
// The row is read twice; the second read hits L1/L2.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "../../common/checks.h"
#include "../../common/dispatch.h"
#include "../../common/block_quantizer.h"
#include "../../common/quant_math.h"
#include "../common/device_utils.cuh"

namespace kbit {
namespace cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

// A 16-bit float given by its bits, as fp32.
template <typename scalar_t> __device__ __forceinline__ float half_bits_to_float(uint32_t bits);
template <> __device__ __forceinline__ float half_bits_to_float<c10::Half>(uint32_t bits) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
}
template <> __device__ __forceinline__ float half_bits_to_float<c10::BFloat16>(uint32_t bits) {
  return __uint_as_float(bits << 16);
}
template <> __device__ __forceinline__ float half_bits_to_float<float>(uint32_t) { return 0.0f; }

// The 32 weights of a block as fp32; 16-byte loads when the row start is aligned.
template <typename scalar_t, bool kAligned>
__device__ __forceinline__ void load_block(const scalar_t* __restrict__ src, float (&w)[32]) {
  if constexpr (kAligned && sizeof(scalar_t) == 2) {
#pragma unroll
    for (int v = 0; v < 4; ++v) {
      const uint4 q = __ldg(reinterpret_cast<const uint4*>(src) + v);
      const uint32_t words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        w[8 * v + 2 * i] = half_bits_to_float<scalar_t>(words[i] & 0xffffu);
        w[8 * v + 2 * i + 1] = half_bits_to_float<scalar_t>(words[i] >> 16);
      }
    }
  } else if constexpr (kAligned && sizeof(scalar_t) == 4) {
#pragma unroll
    for (int v = 0; v < 8; ++v) {
      const float4 q = __ldg(reinterpret_cast<const float4*>(src) + v);
      w[4 * v] = q.x; w[4 * v + 1] = q.y; w[4 * v + 2] = q.z; w[4 * v + 3] = q.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < 32; ++i) w[i] = to_float(src[i]);
  }
}

template <typename scalar_t, int K, bool kAligned>
__global__ void __launch_bounds__(kThreads)
quantize_rows_kernel(const scalar_t* __restrict__ W,        // [rows, cols]
                     int64_t rows, int64_t cols,
                     const float* __restrict__ codebook,    // [2^K]
                     uint32_t* __restrict__ packed,         // [rows, cols/32, K]
                     uint8_t* __restrict__ absmax,          // [rows, cols/32]
                     float* __restrict__ row_scale) {       // [rows]
  constexpr int kEntries = 1 << K;
  __shared__ float cb[kEntries];
  __shared__ float mid[kEntries];  // 2^K - 1 used; distinct banks, so lookups never conflict
  __shared__ float red_max[kWarps];
  __shared__ int red_bad[kWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (threadIdx.x < kEntries) cb[threadIdx.x] = codebook[threadIdx.x];
  __syncthreads();
  if (threadIdx.x + 1 < kEntries) mid[threadIdx.x] = codebook_midpoint(cb, threadIdx.x);
  __syncthreads();
  const BlockQuantizer<K> quantizer{cb, mid};

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

    // Phase 2: one thread per block.
    for (int64_t b = threadIdx.x; b < blocks; b += kThreads) {
      float w[32];
      load_block<scalar_t, kAligned>(wr + b * 32, w);
      uint32_t planes[K];
      const uint32_t code = quantizer.quantize(w, rs, planes);
      uint32_t* dst = packed + (r * blocks + b) * K;
#pragma unroll
      for (int j = 0; j < K; ++j) dst[j] = planes[j];
      absmax[r * blocks + b] = static_cast<uint8_t>(code);
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
  // Every block starts 64 (fp16) or 128 (fp32) bytes after the row start: vector loads
  // need only the base pointer aligned.
  const bool aligned = reinterpret_cast<uintptr_t>(w) % 16 == 0;
#define KBIT_LAUNCH(KB)                                                                          \
  if (aligned)                                                                                   \
    quantize_rows_kernel<scalar_t, KB, true><<<grid, kThreads, 0, stream>>>(w, rows, cols, c, p, a, rs); \
  else                                                                                           \
    quantize_rows_kernel<scalar_t, KB, false><<<grid, kThreads, 0, stream>>>(w, rows, cols, c, p, a, rs);
  switch (k) {
    case 2: KBIT_LAUNCH(2); break;
    case 3: KBIT_LAUNCH(3); break;
    case 4: KBIT_LAUNCH(4); break;
    case 5: KBIT_LAUNCH(5); break;
  }
#undef KBIT_LAUNCH
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

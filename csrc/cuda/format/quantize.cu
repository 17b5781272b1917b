// CUDA quantize: W [*, N, K] -> flat bit-planes, E4M4 absmax, per-row scale.
// Bit-identical to csrc/cpu/quantize_cpu.cpp (same rule, docs/format.md section 4).
//
// A group of threads per row - one warp for rows of up to kMaxBlocksPerWarpRow blocks,
// the whole CTA for longer ones - first reduces the row's max |w| (-> row scale), then
// each thread quantizes whole 32-weight blocks with the shared BlockQuantizer
// (csrc/common/block_quantizer.h). A thread per block, not a warp per block: the
// per-block work (absmax, E4M4 bracketing, the reciprocal, the error sums) is then done
// once instead of 32 times in lock-step, and no shuffles are needed.
//
// Cost: the two candidate scales' nearest-index searches dominate. For k >= 4 and for k = 3
// from bf16 they go through BucketSearch (one LDS.128 per weight and candidate;
// bucket_search.cuh) where its table reproduces the binary search; otherwise through
// BlockQuantizer's binary search (plane bits set by predicated ORs inside the search). The
// row max runs on the raw bits (|w| as an unsigned integer is monotone in |w|; >= the Inf
// pattern means non-finite), two integer ops per weight on 16-byte loads. The row is read twice; the second read
// hits L1/L2.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <type_traits>

#include "../../common/checks.h"
#include "../../common/dispatch.h"
#include "../../common/block_quantizer.h"
#include "../../common/quant_math.h"
#include "../common/device_utils.cuh"
#include "bucket_search.cuh"

namespace kbit {
namespace cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int64_t kMaxBlocksPerWarpRow = 1024;  // rows up to K = 32768 go a warp each

// A storage type's bits as fp32 (value), and the smallest |w| bit pattern that is not
// finite (kInf).
template <typename scalar_t> struct AbsBits;
template <> struct AbsBits<c10::Half> {
  static constexpr uint32_t kInf = 0x7c00u;
  __device__ __forceinline__ static float value(uint32_t bits) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
  }
};
template <> struct AbsBits<c10::BFloat16> {
  static constexpr uint32_t kInf = 0x7f80u;
  __device__ __forceinline__ static float value(uint32_t bits) { return __uint_as_float(bits << 16); }
};
template <> struct AbsBits<float> {
  static constexpr uint32_t kInf = 0x7f800000u;
  __device__ __forceinline__ static float value(uint32_t bits) { return __uint_as_float(bits); }
};

template <typename scalar_t>
__device__ __forceinline__ uint32_t abs_bits(scalar_t v) {
  if constexpr (sizeof(scalar_t) == 4) return __float_as_uint(to_float(v)) & 0x7fffffffu;
  else return static_cast<uint32_t>(v.x) & 0x7fffu;
}

// This thread's share (columns t*V, t*V + G*V, ...) of the row's max |w| bits.
template <typename scalar_t, bool kAligned>
__device__ __forceinline__ uint32_t partial_row_max_bits(const scalar_t* __restrict__ row,
                                                         int64_t cols, int t, int G) {
  if constexpr (kAligned && sizeof(scalar_t) == 2) {
    // Two accumulators: the low and the high half of each word, masked in place.
    uint32_t lo = 0, hi = 0;
    const uint4* v = reinterpret_cast<const uint4*>(row);
    for (int64_t i = t; i < cols / 8; i += G) {
      const uint4 q = __ldg(v + i);
      lo = max(lo, max(max(q.x & 0x7fffu, q.y & 0x7fffu), max(q.z & 0x7fffu, q.w & 0x7fffu)));
      hi = max(hi, max(max(q.x & 0x7fff0000u, q.y & 0x7fff0000u),
                       max(q.z & 0x7fff0000u, q.w & 0x7fff0000u)));
    }
    return max(lo, hi >> 16);
  } else if constexpr (kAligned) {
    uint32_t m = 0;
    const uint4* v = reinterpret_cast<const uint4*>(row);
    for (int64_t i = t; i < cols / 4; i += G) {
      const uint4 q = __ldg(v + i);
      m = max(m, max(max(q.x & 0x7fffffffu, q.y & 0x7fffffffu),
                     max(q.z & 0x7fffffffu, q.w & 0x7fffffffu)));
    }
    return m;
  } else {
    uint32_t m = 0;
    for (int64_t c = t; c < cols; c += G) m = max(m, abs_bits(row[c]));
    return m;
  }
}

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
        w[8 * v + 2 * i] = AbsBits<scalar_t>::value(words[i] & 0xffffu);
        w[8 * v + 2 * i + 1] = AbsBits<scalar_t>::value(words[i] >> 16);
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

// kWarpPerRow: warp w of the grid-stride loop owns row r; else the CTA owns it.
template <typename scalar_t, int K, bool kAligned, bool kWarpPerRow>
__global__ void __launch_bounds__(kThreads)
quantize_rows_kernel(const scalar_t* __restrict__ W,        // [rows, cols]
                     int64_t rows, int64_t cols,
                     const float* __restrict__ codebook,    // [2^K]
                     uint32_t* __restrict__ packed,         // [rows, cols/32, K]
                     uint8_t* __restrict__ absmax,          // [rows, cols/32]
                     float* __restrict__ row_scale) {       // [rows]
  __shared__ float table[BlockQuantizer<K>::kTableSize];
  // Where the bucket lookup pays (H100, 8192 x 28672; docs/design.md, "Quantize v3"): k >= 4
  // (fp16: k = 4 543 -> 434 us, k = 5 632 -> 447 us) and k = 3 from bf16 (455 -> 434 us). The
  // binary search is shorter at k = 2 (fp16 356 vs 414 us) and at k = 3 from fp16 (414 vs 434
  // us): its cost grows with k, the lookup's does not. (fp32 input at k = 3, and GPUs other than
  // the H100, where the table's 33 KB of shared memory allows fewer CTAs per SM: not measured.)
  constexpr bool kLookup = K >= 4 || (K == 3 && std::is_same_v<scalar_t, c10::BFloat16>);
  __shared__ float4 buckets[kLookup ? BucketSearch<K>::kBuckets * BucketSearch<K>::kCopies : 1];
  __shared__ uint32_t red_max[kWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (threadIdx.x < (1 << K)) BlockQuantizer<K>::fill_table(codebook, table, threadIdx.x);
  __syncthreads();
  const BlockQuantizer<K> quantizer{table};
  // The bucket lookup where it reproduces the binary search (every default codebook), else
  // the binary search itself: the same for the whole CTA.
  const bool use_buckets = kLookup && BucketSearch<K>::build(table, buckets);
  const BucketSearch<K> bucket_search(buckets);

  constexpr int G = kWarpPerRow ? 32 : kThreads;   // threads per row
  const int t = kWarpPerRow ? lane : threadIdx.x;  // this thread's rank in its row
  const int64_t first = kWarpPerRow ? int64_t(blockIdx.x) * kWarps + warp : blockIdx.x;
  const int64_t stride = kWarpPerRow ? int64_t(gridDim.x) * kWarps : gridDim.x;
  const int64_t blocks = cols / 32;
  for (int64_t r = first; r < rows; r += stride) {
    const scalar_t* wr = W + r * cols;
    // Phase 1: row max |w| bits (a warp max, then across warps for a CTA row).
    uint32_t m = __reduce_max_sync(kFullMask, partial_row_max_bits<scalar_t, kAligned>(wr, cols, t, G));
    if constexpr (!kWarpPerRow) {
      if (lane == 0) red_max[warp] = m;
      __syncthreads();
#pragma unroll
      for (int i = 0; i < kWarps; ++i) m = max(m, red_max[i]);
    }
    const bool finite = m < AbsBits<scalar_t>::kInf;
    const float rs = row_scale_for(finite ? AbsBits<scalar_t>::value(m) : 0.0f, finite);
    if (t == 0) row_scale[r] = rs;

    // Phase 2: one thread per block.
    for (int64_t b = t; b < blocks; b += G) {
      float w[32];
      load_block<scalar_t, kAligned>(wr + b * 32, w);
      uint32_t planes[K];
      uint32_t code;
      if constexpr (kLookup) {
        code = use_buckets ? quantize_block<K>(bucket_search, w, rs, planes) : quantizer.quantize(w, rs, planes);
      } else {
        code = quantizer.quantize(w, rs, planes);
      }
      uint32_t* dst = packed + (r * blocks + b) * K;
#pragma unroll
      for (int j = 0; j < K; ++j) dst[j] = planes[j];
      absmax[r * blocks + b] = static_cast<uint8_t>(code);
    }
    if constexpr (!kWarpPerRow) __syncthreads();  // red_max is reused by the next row
  }
}

template <typename scalar_t>
void launch_quantize(const at::Tensor& W, const at::Tensor& cb, int k, int64_t rows, int64_t cols,
                     at::Tensor& packed, at::Tensor& absmax, at::Tensor& row_scale) {
  const auto stream = at::cuda::getCurrentCUDAStream();
  auto* p = reinterpret_cast<uint32_t*>(packed.data_ptr<int32_t>());
  auto* w = W.data_ptr<scalar_t>();
  auto* c = cb.data_ptr<float>();
  auto* a = absmax.data_ptr<uint8_t>();
  auto* rs = row_scale.data_ptr<float>();
  // Every block starts 64 (fp16) or 128 (fp32) bytes after the row start: vector loads
  // need only the base pointer aligned.
  const bool aligned = reinterpret_cast<uintptr_t>(w) % 16 == 0;
  const bool warp_per_row = cols / 32 <= kMaxBlocksPerWarpRow;
  const dim3 grid(static_cast<unsigned>(grid_for(warp_per_row ? (rows + kWarps - 1) / kWarps : rows, 8)));
#define KBIT_LAUNCH_ROWS(KB, ALIGNED)                                                            \
  if (warp_per_row)                                                                              \
    quantize_rows_kernel<scalar_t, KB, ALIGNED, true><<<grid, kThreads, 0, stream>>>(w, rows, cols, c, p, a, rs); \
  else                                                                                           \
    quantize_rows_kernel<scalar_t, KB, ALIGNED, false><<<grid, kThreads, 0, stream>>>(w, rows, cols, c, p, a, rs);
#define KBIT_LAUNCH(KB)                                                                          \
  if (aligned) { KBIT_LAUNCH_ROWS(KB, true) } else { KBIT_LAUNCH_ROWS(KB, false) }
  switch (k) {
    case 2: KBIT_LAUNCH(2); break;
    case 3: KBIT_LAUNCH(3); break;
    case 4: KBIT_LAUNCH(4); break;
    case 5: KBIT_LAUNCH(5); break;
  }
#undef KBIT_LAUNCH
#undef KBIT_LAUNCH_ROWS
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

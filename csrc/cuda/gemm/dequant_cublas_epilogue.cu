// The epilogue of the dequantize + cuBLAS path (dequant_cublas_epilogue.h). A thread owns one column of y: a CTA's
// 256 columns go down the rows of its row slice, so every row's store is 256 consecutive outputs. Every thread of
// the grid also discards its share of W's 128-byte L2 lines.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include <algorithm>
#include <atomic>

#include "../../common/dispatch.h"
#include "../common/device_utils.cuh"
#include "dequant_cublas_epilogue.h"

namespace kbit {
namespace cuda {
namespace {

constexpr int kColumnsPerCta = 256;
constexpr int64_t kL2Line = 128;

std::atomic<bool> l2_discard{true};

// Drops the L2 line at line (128-byte aligned, wholly inside a dead buffer) without writing it back.
__device__ __forceinline__ void discard_l2_line(const void* line) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("discard.global.L2 [%0], 128;\n" ::"l"(line) : "memory");
#else
  (void)line;
#endif
}

template <typename out_t>
__global__ void __launch_bounds__(kColumnsPerCta)
dequant_cublas_epilogue_kernel(out_t* __restrict__ y, const float* __restrict__ row_scale, float scale_cap,
                               int64_t M, int64_t N, const char* discard_base, int64_t discard_lines) {
  const int64_t threads = int64_t(gridDim.x) * gridDim.y * kColumnsPerCta;
  const int64_t thread = (int64_t(blockIdx.y) * gridDim.x + blockIdx.x) * kColumnsPerCta + threadIdx.x;
  for (int64_t line = thread; line < discard_lines; line += threads) discard_l2_line(discard_base + line * kL2Line);
  const int64_t n = blockIdx.x * int64_t(kColumnsPerCta) + threadIdx.x;
  const float rs = n < N ? __ldg(row_scale + n) : 0.0f;
  // rs / scale_cap: a power of two >= 2, exact; a NaN scale was folded whole (NaN > cap is false)
  const float factor = rs > scale_cap ? rs / scale_cap : 1.0f;
  if (!__syncthreads_or(factor != 1.0f)) return;  // the common case: no column of this CTA was capped
  if (factor == 1.0f) return;
  for (int64_t m = blockIdx.y; m < M; m += gridDim.y) {
    out_t* at = y + m * N + n;
    *at = from_float<out_t>(to_float(*at) * factor);  // exact, or Inf where the true output overflows
  }
}

}  // namespace

bool set_dequant_cublas_l2_discard(bool discard) { return l2_discard.exchange(discard); }

void dequant_cublas_epilogue(at::Tensor& y, const at::Tensor& row_scale, float scale_cap, const at::Tensor& W) {
  const int64_t M = y.size(0), N = y.size(1);
  if (M == 0 || N == 0) return;
  const auto stream = at::cuda::getCurrentCUDAStream();
  const cudaDeviceProp* prop = at::cuda::getCurrentDeviceProperties();
  const int64_t column_ctas = (N + kColumnsPerCta - 1) / kColumnsPerCta;
  // about one CTA an SM: most calls only check the scales; the rare weight with capped rows gets a slow epilogue
  const int64_t slices = std::min<int64_t>(M, std::max<int64_t>(1, prop->multiProcessorCount / column_ctas));
  const dim3 grid(static_cast<unsigned>(column_ctas), static_cast<unsigned>(std::min<int64_t>(slices, 65535)));
  // W's whole lines (the caching allocator aligns a block to 512 bytes; a partial last line is left alone), where W
  // can still be in L2
  const int64_t bytes = W.numel() * W.element_size();
  const bool discard = l2_discard.load(std::memory_order_relaxed) && bytes <= 2 * int64_t(prop->l2CacheSize) &&
                       reinterpret_cast<uintptr_t>(W.data_ptr()) % kL2Line == 0;
  const char* base = static_cast<const char*>(W.data_ptr());
  const int64_t lines = discard ? bytes / kL2Line : 0;
  KBIT_DISPATCH_FLOAT_TYPES(y.scalar_type(), "kbit_dequant_cublas_epilogue", [&] {
    dequant_cublas_epilogue_kernel<scalar_t><<<grid, kColumnsPerCta, 0, stream>>>(
        y.data_ptr<scalar_t>(), row_scale.data_ptr<float>(), scale_cap, M, N, base, lines);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace cuda
}  // namespace kbit

// The epilogue of the dequantize + cuBLAS path (dequant_cublas_epilogue.h). A thread owns one column of y: a CTA's
// 256 columns go down the rows of its row slice, so every row's store is 256 consecutive outputs. (Session 42 also
// dropped the dead workspace's L2 lines here, discard.global.L2: 8-14% slower at M = 2048-4096 on the Qwen3
// shapes, not kept; docs/design.md.)
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include <algorithm>

#include "../../common/dispatch.h"
#include "../common/dependent_launch.cuh"
#include "../common/dependent_launch.h"
#include "../common/device_utils.cuh"
#include "dequant_cublas_epilogue.h"

namespace kbit {
namespace cuda {
namespace {

constexpr int kColumnsPerCta = 256;

template <typename out_t>
__global__ void __launch_bounds__(kColumnsPerCta)
dequant_cublas_epilogue_kernel(out_t* __restrict__ y, const float* __restrict__ row_scale, float scale_cap,
                               int64_t M, int64_t N) {
  const int64_t n = blockIdx.x * int64_t(kColumnsPerCta) + threadIdx.x;
  // Launched with PDL (dependent_launch.cuh): before the wait, only the CTA's row scales asked of L2 (1 KB, 8 lines).
  allow_dependents();
  if (threadIdx.x % 32 == 0 && n < N) prefetch_l2_line(row_scale + n);
  grid_dependency_wait();
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

void dequant_cublas_epilogue(at::Tensor& y, const at::Tensor& row_scale, float scale_cap) {
  const int64_t M = y.size(0), N = y.size(1);
  if (M == 0 || N == 0) return;
  const auto stream = at::cuda::getCurrentCUDAStream();
  const int64_t column_ctas = (N + kColumnsPerCta - 1) / kColumnsPerCta;
  // about one CTA an SM: most calls only check the scales; the rare weight with capped rows gets a slow epilogue
  const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const int64_t slices = std::min<int64_t>(M, std::max<int64_t>(1, sms / column_ctas));
  const dim3 grid(static_cast<unsigned>(column_ctas), static_cast<unsigned>(std::min<int64_t>(slices, 65535)));
  // With PDL where the GPU has it: the launch overlaps cuBLAS's tail (most calls only check the scales).
  const bool dependent = dependent_launch_enabled();
  KBIT_DISPATCH_FLOAT_TYPES(y.scalar_type(), "kbit_dequant_cublas_epilogue", [&] {
    launch_kernel(dequant_cublas_epilogue_kernel<scalar_t>, grid, dim3(kColumnsPerCta), 0, stream, dependent,
                  y.data_ptr<scalar_t>(), row_scale.data_ptr<float>(), scale_cap, M, N);
  });
}

}  // namespace cuda
}  // namespace kbit

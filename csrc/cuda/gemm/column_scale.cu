// The epilogue of the dequantize + cuBLAS path: y[m, n] = out_t(acc[m, n] * row_scale[n]),
// the fp32 product of the row-normalized weights times the power-of-two row scales
// (exact), rounded once to the output dtype. One launch instead of a multiply and a cast.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include "../../common/dispatch.h"
#include "../common/device_utils.cuh"
#include "column_scale.h"

namespace kbit {
namespace cuda {
namespace {

// Four consecutive columns per thread (N % 4 == 0, so a group never crosses a row).
template <typename out_t>
__global__ void __launch_bounds__(256)
scale_columns4_kernel(const float4* __restrict__ acc, const float* __restrict__ row_scale,
                      int64_t groups, int64_t N, out_t* __restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < groups; i += int64_t(gridDim.x) * blockDim.x) {
    const float4 a = __ldg(acc + i);
    const int64_t n = (4 * i) % N;
    y[4 * i] = from_float<out_t>(__fmul_rn(a.x, __ldg(row_scale + n)));
    y[4 * i + 1] = from_float<out_t>(__fmul_rn(a.y, __ldg(row_scale + n + 1)));
    y[4 * i + 2] = from_float<out_t>(__fmul_rn(a.z, __ldg(row_scale + n + 2)));
    y[4 * i + 3] = from_float<out_t>(__fmul_rn(a.w, __ldg(row_scale + n + 3)));
  }
}

template <typename out_t>
__global__ void __launch_bounds__(256)
scale_columns_kernel(const float* __restrict__ acc, const float* __restrict__ row_scale,
                     int64_t total, int64_t N, out_t* __restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = from_float<out_t>(__fmul_rn(__ldg(acc + i), __ldg(row_scale + i % N)));
}

}  // namespace

void scale_columns_into(const at::Tensor& acc, const at::Tensor& row_scale, at::Tensor& y) {
  const int64_t M = acc.size(0), N = acc.size(1);
  if (M == 0 || N == 0) return;
  const auto stream = at::cuda::getCurrentCUDAStream();
  const bool by4 = N % 4 == 0 && reinterpret_cast<uintptr_t>(acc.data_ptr()) % 16 == 0;
  const int64_t work = by4 ? M * N / 4 : M * N;
  const dim3 grid(static_cast<unsigned>(grid_for((work + 255) / 256, 8)));
  KBIT_DISPATCH_FLOAT_TYPES(y.scalar_type(), "kbit_scale_columns", [&] {
    if (by4)
      scale_columns4_kernel<scalar_t><<<grid, 256, 0, stream>>>(
          reinterpret_cast<const float4*>(acc.data_ptr<float>()), row_scale.data_ptr<float>(), work, N,
          y.data_ptr<scalar_t>());
    else
      scale_columns_kernel<scalar_t><<<grid, 256, 0, stream>>>(acc.data_ptr<float>(), row_scale.data_ptr<float>(),
                                                              work, N, y.data_ptr<scalar_t>());
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace cuda
}  // namespace kbit

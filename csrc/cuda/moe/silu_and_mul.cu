// kbit::silu_and_mul on CUDA: kbit.Experts' activation in one kernel (it was four torch ops):
// out[r, i] = silu(h[r, i]) * h[r, I + i] for h [R, 2 I], fp32 math (silu(g) = g / (1 + e^-g)), rounded
// once to h's dtype; a thread per output element (a grid-stride loop). Interleaved (kbit::grouped_gemm_silu_and_mul's
// columns, gate and up in alternating groups of 8): gate h[r, 16 (i / 8) + i % 8], up 8 columns after it.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "../../common/dispatch.h"
#include "../../common/moe_checks.h"
#include "../common/dependent_launch.cuh"
#include "../common/dependent_launch.h"
#include "../common/device_utils.cuh"

namespace kbit {
namespace cuda {
namespace {

constexpr int kThreads = 256;

template <typename T, bool kInterleaved>
__global__ void __launch_bounds__(kThreads) silu_and_mul_kernel(const T* __restrict__ h, int64_t rows, int64_t I,
                                                                T* __restrict__ out) {
  // Launched with PDL (dependent_launch.cuh): h is the grouped gate/up call's output, read after the wait.
  allow_dependents();
  grid_dependency_wait();
  for (int64_t i = blockIdx.x * int64_t(kThreads) + threadIdx.x; i < rows * I; i += int64_t(gridDim.x) * kThreads) {
    const int64_t r = i / I, c = i - r * I;
    const int64_t gate_col = kInterleaved ? 16 * (c / 8) + c % 8 : c, up_col = kInterleaved ? gate_col + 8 : I + c;
    const float gate = to_float(h[r * 2 * I + gate_col]), up = to_float(h[r * 2 * I + up_col]);
    out[i] = from_float<T>(silu_mul(gate, up));
  }
}

int grid_for(int64_t threads) {
  const int64_t blocks = (threads + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < (1 << 20) ? blocks : (1 << 20));
}

at::Tensor silu_and_mul_cuda(const at::Tensor& h_in, bool interleaved) {
  check_silu_and_mul_args(h_in, interleaved);
  const c10::cuda::CUDAGuard guard(h_in.device());
  const at::Tensor h = h_in.contiguous();
  const int64_t rows = h.size(0), I = h.size(1) / 2;
  at::Tensor out = at::empty({rows, I}, h.options());
  if (rows * I == 0) return out;
  KBIT_DISPATCH_FLOAT_TYPES(h.scalar_type(), "kbit_silu_and_mul_cuda", [&] {
    launch_kernel(interleaved ? silu_and_mul_kernel<scalar_t, true> : silu_and_mul_kernel<scalar_t, false>,
                  dim3(grid_for(rows * I)), dim3(kThreads), 0, at::cuda::getCurrentCUDAStream(),
                  dependent_launch_enabled(), h.data_ptr<scalar_t>(), rows, I, out.data_ptr<scalar_t>());
  });
  return out;
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(kbit, CUDA, m) { m.impl("silu_and_mul", &cuda::silu_and_mul_cuda); }

}  // namespace kbit

// kbit::silu_and_mul and kbit::moe_combine on CUDA: kbit.Experts' activation and weighted sum over
// the top-k slots, one kernel each (they were four and eight torch ops).
//   silu_and_mul: out[r, i] = silu(h[r, i]) * h[r, I + i], fp32 math (silu(g) = g / (1 + e^-g)),
//                 rounded once to h's dtype; a thread per output element.
//   moe_combine:  out[t, h] = sum over slots j in order of w[t, j] * y[pair_row[t topk + j], h] for the
//                 slots with an expert (ids in [0, E); the others, computed as expert E - 1's by
//                 moe_route's rows, are skipped, their y rows never read), fp32, each product and sum rounded on its own (no FMA contraction:
//                 moe_combine_aten's bits), rounded once to y's dtype. Block b: token b / hb, columns
//                 (b % hb) 256 .. + 255 (hb = ceil(H / 256)); a warp's y loads are 32 consecutive
//                 columns of one row.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "../../common/dispatch.h"
#include "../../common/moe_checks.h"
#include "../common/device_utils.cuh"

namespace kbit {
namespace cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kThreads) silu_and_mul_kernel(const T* __restrict__ h, int64_t rows, int64_t I,
                                                                T* __restrict__ out) {
  for (int64_t i = blockIdx.x * int64_t(kThreads) + threadIdx.x; i < rows * I; i += int64_t(gridDim.x) * kThreads) {
    const int64_t r = i / I, c = i - r * I;
    const float gate = to_float(h[r * 2 * I + c]), up = to_float(h[r * 2 * I + I + c]);
    out[i] = from_float<T>(__fmul_rn(__fdiv_rn(gate, __fadd_rn(1.0f, expf(-gate))), up));
  }
}

template <typename T, typename W, typename Id>
__global__ void __launch_bounds__(kThreads) moe_combine_kernel(const T* __restrict__ y, const W* __restrict__ w,
                                                               const Id* __restrict__ ids,
                                                               const int32_t* __restrict__ pair_row, int64_t H,
                                                               int32_t topk, int64_t E, int64_t col_blocks,
                                                               T* __restrict__ out) {
  const int64_t t = blockIdx.x / col_blocks;
  const int64_t col = (blockIdx.x - t * col_blocks) * kThreads + threadIdx.x;
  if (col >= H) return;
  float acc = 0.0f;
  for (int32_t j = 0; j < topk; ++j) {
    const int64_t p = t * topk + j;
    const Id e = ids[p];
    if (e < 0 || e >= E) continue;
    acc = __fadd_rn(acc, __fmul_rn(to_float(y[int64_t(pair_row[p]) * H + col]), static_cast<float>(w[p])));
  }
  out[t * H + col] = from_float<T>(acc);
}

int grid_for(int64_t threads) {
  const int64_t blocks = (threads + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < (1 << 20) ? blocks : (1 << 20));
}

at::Tensor silu_and_mul_cuda(const at::Tensor& h_in) {
  check_silu_and_mul_args(h_in);
  const c10::cuda::CUDAGuard guard(h_in.device());
  const at::Tensor h = h_in.contiguous();
  const int64_t rows = h.size(0), I = h.size(1) / 2;
  at::Tensor out = at::empty({rows, I}, h.options());
  if (rows * I == 0) return out;
  KBIT_DISPATCH_FLOAT_TYPES(h.scalar_type(), "kbit_silu_and_mul_cuda", [&] {
    silu_and_mul_kernel<scalar_t><<<grid_for(rows * I), kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
        h.data_ptr<scalar_t>(), rows, I, out.data_ptr<scalar_t>());
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

at::Tensor moe_combine_cuda(const at::Tensor& y_in, const at::Tensor& top_k_weights, const at::Tensor& top_k_index,
                            const at::Tensor& pair_row_in, int64_t num_experts) {
  check_moe_combine_args(y_in, top_k_weights, top_k_index, pair_row_in, num_experts);
  const c10::cuda::CUDAGuard guard(y_in.device());
  const int64_t T = top_k_index.size(0), topk = top_k_index.size(1), H = y_in.size(1);
  at::Tensor out = at::empty({T, H}, y_in.options());
  if (T * H == 0) return out;
  if (topk == 0) return out.zero_();
  const at::Tensor y = y_in.contiguous(), ids = top_k_index.contiguous(), pair_row = pair_row_in.contiguous();
  const at::Tensor w = top_k_weights.scalar_type() == at::kDouble ? top_k_weights.to(at::kFloat).contiguous()
                                                                   : top_k_weights.contiguous();
  const int64_t col_blocks = (H + kThreads - 1) / kThreads;
  TORCH_CHECK(T * col_blocks <= INT32_MAX, "kbit.moe_combine: too many tokens x columns (", T, " x ", H, ")");
  const auto stream = at::cuda::getCurrentCUDAStream();
  KBIT_DISPATCH_FLOAT_TYPES(y.scalar_type(), "kbit_moe_combine_cuda", [&] {
    using y_t = scalar_t;
    KBIT_DISPATCH_FLOAT_TYPES(w.scalar_type(), "kbit_moe_combine_cuda_w", [&] {
      using w_t = scalar_t;
      const auto launch = [&](const auto* id_ptr) {
        moe_combine_kernel<y_t, w_t><<<static_cast<unsigned>(T * col_blocks), kThreads, 0, stream>>>(
            y.data_ptr<y_t>(), w.data_ptr<w_t>(), id_ptr, pair_row.data_ptr<int32_t>(), H,
            static_cast<int32_t>(topk), num_experts, col_blocks, out.data_ptr<y_t>());
      };
      if (ids.scalar_type() == at::kLong) launch(ids.data_ptr<int64_t>());
      else launch(ids.data_ptr<int32_t>());
    });
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(kbit, CUDA, m) {
  m.impl("silu_and_mul", &cuda::silu_and_mul_cuda);
  m.impl("moe_combine", &cuda::moe_combine_cuda);
}

}  // namespace kbit

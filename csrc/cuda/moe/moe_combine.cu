// kbit::moe_combine on CUDA: kbit.Experts' weighted sum over the top-k slots in one kernel (it was
// eight torch ops).
//   out[t, h] = sum over slots j in order of w[t, j] * y[pair_row[t topk + j], h], over the slots with
//   an expert (ids in [0, E); the others, moe_route's rows computed as expert E - 1's, are skipped: their
//   rows are loaded with the rest, not summed); fp32, each product and sum rounded on its own (no FMA
//   contraction: the bits of moe_combine_aten), rounded once to y's dtype. A pair_row entry outside
//   [0, T topk) (not moe_route's; it cannot be checked without a host sync) makes the output NaN instead
//   of a read outside y. Block b: token b / hb, columns (b % hb) 256 .. + 255 (hb = ceil(H / 256)); a
//   warp's y loads are 32 consecutive columns of one row.
//   The slots go kSlotChunk at a time, every load of a chunk unconditional (a slot past topk reloads slot
//   topk - 1's entries, a row out of range reads row 0; neither is summed), so the chunk's ids, rows and
//   weights are one round of loads and its y values a second. Loads under a condition were issued one at a
//   time, each converted before the next (cuobjdump): ~8 dependent loads a token's column, 3.1-3.4 us a
//   call at decode against ~1 us for the other glue kernels (docs/design.md, session 57).
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <type_traits>

#include "../../common/dispatch.h"
#include "../../common/moe_checks.h"
#include "../common/dependent_launch.cuh"
#include "../common/dependent_launch.h"
#include "../common/device_utils.cuh"

namespace kbit {
namespace cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kSlotChunk = 8;

template <typename T, typename W, typename Id>
__global__ void __launch_bounds__(kThreads) moe_combine_kernel(const T* __restrict__ y, const W* __restrict__ w,
                                                               const Id* __restrict__ ids,
                                                               const int32_t* __restrict__ pair_row, int64_t y_rows,
                                                               int64_t H, int32_t topk, int64_t E, int64_t col_blocks,
                                                               T* __restrict__ out) {
  // Launched with PDL (dependent_launch.cuh): y is the grouped down call's output, read after the wait.
  allow_dependents();
  grid_dependency_wait();
  const int64_t t = blockIdx.x / col_blocks;
  const int64_t col = (blockIdx.x - t * col_blocks) * kThreads + threadIdx.x;
  if (col >= H) return;
  float acc = 0.0f;
  bool bad_row = false;
  for (int32_t j0 = 0; j0 < topk; j0 += kSlotChunk) {
    Id e[kSlotChunk];
    int32_t row[kSlotChunk];
    W wt[kSlotChunk];
    T yv[kSlotChunk];
#pragma unroll
    for (int i = 0; i < kSlotChunk; ++i) {  // the chunk's ids, rows and weights (p < T topk: in bounds)
      const int64_t p = t * topk + min(j0 + i, topk - 1);
      e[i] = ids[p];
      row[i] = pair_row[p];
      wt[i] = w[p];
    }
#pragma unroll
    for (int i = 0; i < kSlotChunk; ++i) {  // y's rows (one out of range, not moe_route's, reads row 0)
      const bool in_y = row[i] >= 0 && row[i] < y_rows;
      bad_row |= j0 + i < topk && e[i] >= 0 && e[i] < E && !in_y;
      yv[i] = y[int64_t(in_y ? row[i] : 0) * H + col];
    }
#pragma unroll
    for (int i = 0; i < kSlotChunk; ++i)  // the slots with an expert, in slot order: one slot after another's bits
      if (j0 + i < topk && e[i] >= 0 && e[i] < E)
        acc = __fadd_rn(acc, __fmul_rn(to_float(yv[i]), static_cast<float>(wt[i])));
  }
  out[t * H + col] = from_float<T>(bad_row ? __int_as_float(0x7fc00000) : acc);
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
  const bool dependent = dependent_launch_enabled();
  KBIT_DISPATCH_FLOAT_TYPES(y.scalar_type(), "kbit_moe_combine_cuda", [&] {
    using y_t = scalar_t;
    KBIT_DISPATCH_FLOAT_TYPES(w.scalar_type(), "kbit_moe_combine_cuda_w", [&] {
      using w_t = scalar_t;
      const auto launch = [&](const auto* id_ptr) {
        using index_t = std::remove_const_t<std::remove_pointer_t<decltype(id_ptr)>>;
        launch_kernel(moe_combine_kernel<y_t, w_t, index_t>, dim3(static_cast<unsigned>(T * col_blocks)),
                      dim3(kThreads), 0, stream, dependent, y.data_ptr<y_t>(), w.data_ptr<w_t>(), id_ptr,
                      pair_row.data_ptr<int32_t>(), y.size(0), H, static_cast<int32_t>(topk), num_experts,
                      col_blocks, out.data_ptr<y_t>());
      };
      if (ids.scalar_type() == at::kLong) launch(ids.data_ptr<int64_t>());
      else launch(ids.data_ptr<int32_t>());
    });
  });
  return out;
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(kbit, CUDA, m) {
  m.impl("moe_combine", &cuda::moe_combine_cuda);
}

}  // namespace kbit

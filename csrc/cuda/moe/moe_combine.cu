// kbit::moe_combine on CUDA: kbit.Experts' weighted sum over the top-k slots in one kernel (it was
// eight torch ops).
//   out[t, h] = sum over slots j in order of w[t, j] * y[pair_row[t topk + j], h] (pair_row none: row t topk + j), over the slots with
//   an expert (ids in [0, E); the others, moe_route's rows computed as expert E - 1's, are skipped: their
//   rows are not read, their chunk's load reads row 0 instead); fp32, each product and sum rounded on its
//   own (no FMA contraction: the bits of moe_combine_aten), rounded once to y's dtype. A pair_row entry
//   outside [0, T topk) (not moe_route's; it cannot be checked without a host sync) makes the output NaN
//   instead of a read outside y. Block b: token b / hb, columns (b % hb) 256 .. + 255 (hb = ceil(H / 256));
//   a warp's y loads are 32 consecutive columns of one row.
//   Every thread of a CTA sums the same token's slots, so each slot's row (kNoExpert / kBadRow by its id and
//   row) and weight are loaded once, by one thread, into shared memory (up to kThreads slots a round); then
//   each thread issues a chunk's kSlotChunk y loads at once (addresses from shared memory) and sums them in
//   slot order. (The form before, every thread loading every slot's entries, left ~8 dependent loads on a
//   column's path: docs/design.md, session 57.)
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

// A staged slot: its y row, or kNoExpert (skipped) or kBadRow (not moe_route's: the output NaN).
constexpr int32_t kNoExpert = -1, kBadRow = -2;

template <typename T, typename W, typename Id>
__global__ void __launch_bounds__(kThreads) moe_combine_kernel(const T* __restrict__ y, const W* __restrict__ w,
                                                               const Id* __restrict__ ids,
                                                               const int32_t* __restrict__ pair_row, int64_t y_rows,
                                                               int64_t H, int32_t topk, int64_t E, int64_t col_blocks,
                                                               T* __restrict__ out) {
  // Up to kThreads slots of the CTA's token a round; the entries past the round's last slot are kNoExpert, so a
  // chunk reads its kSlotChunk entries without a bound check (a chunk never passes kThreads).
  static_assert(kThreads % kSlotChunk == 0, "chunks tile a round's slots");
  __shared__ int32_t slot_row[kThreads];
  __shared__ float slot_w[kThreads];
  // Launched with PDL (dependent_launch.cuh): y is the grouped down call's output, read after the wait.
  allow_dependents();
  grid_dependency_wait();
  const int tid = threadIdx.x;
  const int64_t t = blockIdx.x / col_blocks;
  const int64_t col = (blockIdx.x - t * col_blocks) * kThreads + tid;
  float acc = 0.0f;
  bool bad_row = false;
  for (int32_t s0 = 0; s0 < topk; s0 += kThreads) {
    const int32_t slots = min(topk - s0, kThreads);
    int32_t staged = kNoExpert;
    if (tid < slots) {
      const int64_t p = t * topk + s0 + tid;
      const Id e = ids[p];
      const int32_t row = pair_row != nullptr ? pair_row[p] : static_cast<int32_t>(p);
      if (e >= 0 && e < E) staged = row >= 0 && row < y_rows ? row : kBadRow;
      slot_w[tid] = static_cast<float>(w[p]);
    }
    slot_row[tid] = staged;
    __syncthreads();
    if (col < H) {
      for (int32_t j0 = 0; j0 < slots; j0 += kSlotChunk) {
        int32_t row[kSlotChunk];
        T yv[kSlotChunk];
#pragma unroll
        for (int i = 0; i < kSlotChunk; ++i) {  // every y load of the chunk at once (a slot without a row reads row 0)
          row[i] = slot_row[j0 + i];
          yv[i] = y[int64_t(row[i] >= 0 ? row[i] : 0) * H + col];
        }
#pragma unroll
        for (int i = 0; i < kSlotChunk; ++i) {  // the slots with an expert in slot order: one slot after another's bits
          if (row[i] >= 0) acc = __fadd_rn(acc, __fmul_rn(to_float(yv[i]), slot_w[j0 + i]));
          bad_row |= row[i] == kBadRow;
        }
      }
    }
    __syncthreads();  // the slots read before the next round writes them
  }
  if (col < H) out[t * H + col] = from_float<T>(bad_row ? __int_as_float(0x7fc00000) : acc);
}

at::Tensor moe_combine_cuda(const at::Tensor& y_in, const at::Tensor& top_k_weights, const at::Tensor& top_k_index,
                            const std::optional<at::Tensor>& pair_row_in, int64_t num_experts) {
  check_moe_combine_args(y_in, top_k_weights, top_k_index, pair_row_in, num_experts);
  const c10::cuda::CUDAGuard guard(y_in.device());
  const int64_t T = top_k_index.size(0), topk = top_k_index.size(1), H = y_in.size(1);
  at::Tensor out = at::empty({T, H}, y_in.options());
  if (T * H == 0) return out;
  if (topk == 0) return out.zero_();
  const at::Tensor y = y_in.contiguous(), ids = top_k_index.contiguous();
  const at::Tensor pair_row = pair_row_in ? pair_row_in->contiguous() : at::Tensor();
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
                      pair_row.defined() ? pair_row.data_ptr<int32_t>() : nullptr, y.size(0), H, static_cast<int32_t>(topk), num_experts,
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

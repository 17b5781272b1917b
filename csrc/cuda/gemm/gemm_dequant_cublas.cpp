// CUDA gemm / grouped_gemm through "dequantize into a workspace, then cuBLAS".
//
// The large-M path: dequantize_tiled writes W in x's dtype, cuBLAS multiplies with fp32
// accumulation. Correct for every shape; slow at small M (it moves W twice).
// grouped_gemm_dequant_cublas reads expert_offsets on the host (one sync), so it is not
// CUDA-graph capturable; gemm_cuda.cpp uses it only past the grouped kernel's expert limit.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/cuda/CUDAGuard.h>

#include "../../common/checks.h"
#include "gemm_paths.h"

namespace kbit {
namespace cuda {
namespace {

at::Tensor dequantize_tiled_op(const at::Tensor& packed_t, const at::Tensor& absmax_t, const at::Tensor& row_scale,
                               const at::Tensor& codebook, int64_t k, int64_t K, at::ScalarType dtype) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("kbit::dequantize_tiled", "")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                         const at::Tensor&, int64_t, int64_t, at::ScalarType)>();
  return op.call(packed_t, absmax_t, row_scale, codebook, k, K, dtype);
}

}  // namespace

// x @ W^T with fp32 accumulation throughout: cuBLAS's fp16/bf16 GEMM may add split-K
// partial sums in the input precision (PyTorch's allow_*_reduced_precision_reduction,
// on by default), which put bf16 results past our 4e-3 bound at K ~ 16k (fuzz test).
at::Tensor mm_fp32_accumulate(const at::Tensor& x, const at::Tensor& W) {
  return at::mm(x, W.t(), at::kFloat).to(x.scalar_type());
}

at::Tensor gemm_dequant_cublas(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                               const at::Tensor& row_scale, const at::Tensor& codebook, int64_t k,
                               const WeightGeometry& g) {
  const at::Tensor W = dequantize_tiled_op(packed_t, absmax_t, row_scale, codebook, k, g.cols, x.scalar_type());
  return mm_fp32_accumulate(x, W);
}

at::Tensor grouped_gemm_dequant_cublas(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                       const at::Tensor& row_scale, const at::Tensor& codebook,
                                       const at::Tensor& expert_offsets, int64_t k, const WeightGeometry& g) {
  const int64_t T = x.size(0), E = g.experts;
  const at::Tensor offs = expert_offsets.cpu();  // host sync (see the file comment)
  check_expert_offsets(offs, E, T, /*check_values=*/true);
  const int32_t* o = offs.data_ptr<int32_t>();
  at::Tensor y = at::empty({T, g.rows}, x.options());
  for (int64_t e = 0; e < E; ++e) {
    const int64_t m = o[e + 1] - o[e];
    if (m == 0) continue;
    const at::Tensor W = dequantize_tiled_op(packed_t[e], absmax_t[e], row_scale[e], codebook, k, g.cols,
                                             x.scalar_type());
    y.narrow(0, o[e], m).copy_(mm_fp32_accumulate(x.narrow(0, o[e], m), W));
  }
  return y;
}

}  // namespace cuda
}  // namespace kbit

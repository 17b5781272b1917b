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

// y = (x @ Wn^T) * row_scale, where Wn is W dequantized without its row scale (the
// row-normalized weights, |Wn| <= 248, always inside fp16's range even when W is not)
// and the product is accumulated in fp32 throughout: cuBLAS's fp16/bf16 GEMM may add
// split-K partial sums in the input precision (PyTorch's allow_*_reduced_precision_
// reduction, on by default), which put bf16 results past our 4e-3 bound at K ~ 16k.
// unit_scale: ones shaped like row_scale (the dequantize op's row scales).
at::Tensor normalized_gemm(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                           const at::Tensor& row_scale, const at::Tensor& unit_scale, const at::Tensor& codebook,
                           int64_t k, int64_t K) {
  const at::Tensor Wn = dequantize_tiled_op(packed_t, absmax_t, unit_scale, codebook, k, K, x.scalar_type());
  at::Tensor y = at::mm(x, Wn.t(), at::kFloat);
  y.mul_(row_scale);  // [M, N] * [N]: the power-of-two row scales, exact
  return y.to(x.scalar_type());
}

at::Tensor gemm_dequant_cublas(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                               const at::Tensor& row_scale, const at::Tensor& codebook, int64_t k,
                               const WeightGeometry& g) {
  return normalized_gemm(x, packed_t, absmax_t, row_scale, at::ones_like(row_scale), codebook, k, g.cols);
}

at::Tensor grouped_gemm_dequant_cublas(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                       const at::Tensor& row_scale, const at::Tensor& codebook,
                                       const at::Tensor& expert_offsets, int64_t k, const WeightGeometry& g) {
  const int64_t T = x.size(0), E = g.experts;
  const at::Tensor offs = expert_offsets.cpu();  // host sync (see the file comment)
  check_expert_offsets(offs, E, T, /*check_values=*/true);
  const int32_t* o = offs.data_ptr<int32_t>();
  at::Tensor y = at::empty({T, g.rows}, x.options());
  const at::Tensor unit_scale = at::ones({g.rows}, row_scale.options());  // shared by the experts
  for (int64_t e = 0; e < E; ++e) {
    const int64_t m = o[e + 1] - o[e];
    if (m == 0) continue;
    y.narrow(0, o[e], m).copy_(normalized_gemm(x.narrow(0, o[e], m), packed_t[e], absmax_t[e], row_scale[e], unit_scale,
                                               codebook, k, g.cols));
  }
  return y;
}

}  // namespace cuda
}  // namespace kbit

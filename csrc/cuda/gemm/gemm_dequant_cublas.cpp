// CUDA gemm / grouped_gemm through "dequantize into a workspace, then cuBLAS".
//
// The large-M path: dequantize_tiled writes W in x's dtype, cuBLAS multiplies with fp32
// accumulation. Correct for every shape; slow at small M (it moves W twice).
// grouped_gemm_dequant_cublas reads expert_offsets on the host (one sync), so it is not
// CUDA-graph capturable; gemm_cuda.cpp uses it only past the grouped kernel's expert limit.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>

#include "../../common/checks.h"
#include "../format/dequantize_tiled.h"
#include "column_scale.h"
#include "gemm_paths.h"

namespace kbit {
namespace cuda {
namespace {

// y = (x @ Wn^T) * row_scale, written into y [M, N] (contiguous), where Wn is W dequantized
// without its row scales (the row-normalized weights, |Wn| <= 248, always inside fp16's
// range even when W is not) and the product is accumulated in fp32 throughout: cuBLAS's
// fp16/bf16 GEMM may add split-K partial sums in the input precision (PyTorch's
// allow_*_reduced_precision_reduction, on by default), which put bf16 results past our
// 4e-3 bound at K ~ 16k. Three launches: dequantize, cuBLAS, the column-scale epilogue.
// g: the geometry of this one weight (experts = 0); cb contiguous.
void normalized_gemm_into(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                          const at::Tensor& row_scale, const at::Tensor& cb, const WeightGeometry& g, at::Tensor& y) {
  const at::Tensor Wn = dequantize_tiled_unscaled(packed_t, absmax_t, cb, g, x.scalar_type());
  const at::Tensor acc = at::mm(x, Wn.t(), at::kFloat);
  scale_columns_into(acc, row_scale, y);
}

}  // namespace

at::Tensor gemm_dequant_cublas(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                               const at::Tensor& row_scale, const at::Tensor& codebook, int64_t k,
                               const WeightGeometry& g) {
  at::Tensor y = at::empty({x.size(0), g.rows}, x.options());
  normalized_gemm_into(x, packed_t, absmax_t, row_scale.contiguous(), codebook.contiguous(), g, y);
  return y;
}

at::Tensor grouped_gemm_dequant_cublas(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                                       const at::Tensor& row_scale, const at::Tensor& codebook,
                                       const at::Tensor& expert_offsets, int64_t k, const WeightGeometry& g) {
  const int64_t T = x.size(0), E = g.experts;
  const at::Tensor offs = expert_offsets.cpu();  // host sync (see the file comment)
  check_expert_offsets(offs, E, T, /*check_values=*/true);
  const int32_t* o = offs.data_ptr<int32_t>();
  at::Tensor y = at::empty({T, g.rows}, x.options());
  const at::Tensor cb = codebook.contiguous(), rs = row_scale.contiguous();
  WeightGeometry one = g;
  one.experts = 0;
  for (int64_t e = 0; e < E; ++e) {
    const int64_t m = o[e + 1] - o[e];
    if (m == 0) continue;
    at::Tensor ye = y.narrow(0, o[e], m);  // rows of a contiguous [T, N]: contiguous
    normalized_gemm_into(x.narrow(0, o[e], m), packed_t[e], absmax_t[e], rs[e], cb, one, ye);
  }
  return y;
}

}  // namespace cuda
}  // namespace kbit

// CUDA gemm / grouped_gemm through "dequantize into a workspace, then cuBLAS".
//
// The large-M path: dequantize_tiled writes W in x's dtype, cuBLAS multiplies with fp32
// accumulation straight into y. Correct for every shape; slow at small M (it moves W twice).
// grouped_gemm_dequant_cublas reads expert_offsets on the host (one sync), so it is not
// CUDA-graph capturable; gemm_cuda.cpp uses it only past the grouped kernel's expert limit.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>

#include <limits>

#include "../../common/checks.h"
#include "../format/dequantize_tiled.h"
#include "cublas_gemm.h"
#include "dequant_cublas_epilogue.h"
#include "gemm_paths.h"

namespace kbit {
namespace cuda {
namespace {

// The largest row scale the dequantized W carries (|W / row_scale| <= 248: E4M4's largest value, |cb| <= 1).
// fp16: 2^8, W up to 248 * 2^8 = 63488, inside fp16's range; with fp16 x, K terms of |x W| stay far below fp32's
// range. bf16: 2^0, so |W| <= 248 as in the kernels that scale after their fp32 sums (split_reduce.cuh): the partial
// sums are bounded as theirs are (a bf16 W up to 3e38 could overflow fp32 sums whose result fits bf16). Row scales
// are powers of two, so a row at most this is its own values in x's dtype, rounded once as dequantize rounds them.
float scale_cap_of(at::ScalarType dtype) {
  if (dtype == at::kHalf) return 0x1p8f;
  if (dtype == at::kBFloat16) return 1.0f;
  return std::numeric_limits<float>::infinity();
}

// y = x @ W^T written into y [M, N] (contiguous): W dequantized into x's dtype with each row scale capped at
// scale_cap_of (nothing capped in a weight whose values are at most 248 x the cap), cuBLAS with fp32 accumulation
// into y, then the epilogue: the capped rows' outputs multiplied by what the cap left out (an exact power of two; a
// CTA whose columns have none returns at once). No fp32 product and no pass over it
// (docs/design.md, session 42). Three launches: dequantize, cuBLAS, the epilogue. g: the geometry of this one
// weight (experts = 0); row_scale and cb contiguous.
void dequantized_gemm_into(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                           const at::Tensor& row_scale, const at::Tensor& cb, const WeightGeometry& g, at::Tensor& y) {
  const float cap = scale_cap_of(x.scalar_type());
  const at::Tensor W = dequantize_tiled_capped(packed_t, absmax_t, row_scale, cb, g, cap, x.scalar_type());
  gemm_fp32_accumulate_into(x, W, y);
  dequant_cublas_epilogue(y, row_scale, cap);
}

}  // namespace

at::Tensor gemm_dequant_cublas(const at::Tensor& x, const at::Tensor& packed_t, const at::Tensor& absmax_t,
                               const at::Tensor& row_scale, const at::Tensor& codebook, int64_t k,
                               const WeightGeometry& g) {
  at::Tensor y = at::empty({x.size(0), g.rows}, x.options());
  dequantized_gemm_into(x, packed_t, absmax_t, row_scale.contiguous(), codebook.contiguous(), g, y);
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
    dequantized_gemm_into(x.narrow(0, o[e], m), packed_t[e], absmax_t[e], rs[e], cb, one, ye);
  }
  return y;
}

}  // namespace cuda
}  // namespace kbit

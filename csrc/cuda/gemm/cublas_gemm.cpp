// cuBLAS for the dequantize + cuBLAS path (cublas_gemm.h), called directly rather than through at::mm, whose
// math mode follows PyTorch's reduced-precision-reduction switches.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <cublas_v2.h>

#include <limits>

#include "cublas_gemm.h"

namespace kbit {
namespace cuda {

void gemm_fp32_accumulate_into(const at::Tensor& x_any, const at::Tensor& W, at::Tensor& y) {
  TORCH_CHECK(x_any.scalar_type() == W.scalar_type() && y.scalar_type() == x_any.scalar_type() &&
                  (x_any.scalar_type() == at::kHalf || x_any.scalar_type() == at::kBFloat16),
              "kbit: gemm_fp32_accumulate_into takes fp16 or bf16 x, W and y of one dtype");
  const int64_t M = x_any.size(0), K = x_any.size(1), N = W.size(0);
  TORCH_CHECK(W.is_contiguous() && y.is_contiguous() && W.size(1) == K && y.size(0) == M && y.size(1) == N,
              "kbit: gemm_fp32_accumulate_into: W [N, K] and y [M, N] contiguous");
  if (M == 0 || N == 0) return;
  constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
  TORCH_CHECK(M <= kMaxInt && N <= kMaxInt && K <= kMaxInt,
              "kbit: the dequantize + cuBLAS path takes M, N and K up to 2^31 - 1");
  // cuBLAS reads x as rows of K elements at a stride ldx >= K that fits an int (one row: ldx = K); else a copy
  const bool rows_ok = x_any.stride(1) == 1 && (M == 1 || (x_any.stride(0) >= K && x_any.stride(0) <= kMaxInt));
  const at::Tensor x = rows_ok ? x_any : x_any.contiguous();
  const int64_t ldx = M == 1 ? K : x.stride(0);
  const cudaDataType type = x.scalar_type() == at::kHalf ? CUDA_R_16F : CUDA_R_16BF;
  const float alpha = 1.0f, beta = 0.0f;
  cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();  // on the current stream, with PyTorch's workspace
  cublasMath_t mode;
  TORCH_CHECK(cublasGetMathMode(handle, &mode) == CUBLAS_STATUS_SUCCESS, "kbit: cublasGetMathMode failed");
  TORCH_CHECK(cublasSetMathMode(handle, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                                                  CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)) ==
                  CUBLAS_STATUS_SUCCESS,
              "kbit: cublasSetMathMode failed");
  // Column-major view: y^T [N, M] = W [N, K] (W^T of a K x N column-major matrix) times x^T [K, M].
  const cublasStatus_t status =
      cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M), static_cast<int>(K),
                   &alpha, W.data_ptr(), type, static_cast<int>(K), x.data_ptr(), type, static_cast<int>(ldx), &beta,
                   y.data_ptr(), type, static_cast<int>(N), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP);
  cublasSetMathMode(handle, mode);
  TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "kbit: cublasGemmEx failed (status ", static_cast<int>(status),
              ") for M=", M, ", N=", N, ", K=", K);
}

}  // namespace cuda
}  // namespace kbit

#pragma once
#include <ATen/ATen.h>

namespace kbit {
namespace cuda {

// y[M, N] = x[M, K] @ W[N, K]^T by cuBLAS, all three in one dtype (fp16 or bf16), accumulated in fp32 throughout:
// no split-K partial sums in the input precision, whatever PyTorch's allow_*_reduced_precision_reduction says
// (bf16's partials measured past our 4e-3 bound at K ~ 16k). x: any strides (copied when its rows are not K
// contiguous elements at a stride >= K); W, y contiguous. Current stream, PyTorch's cuBLAS handle and workspace
// (CUDA-graph capturable).
void gemm_fp32_accumulate_into(const at::Tensor& x, const at::Tensor& W, at::Tensor& y);

}  // namespace cuda
}  // namespace kbit

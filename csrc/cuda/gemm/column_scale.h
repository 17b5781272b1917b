#pragma once
#include <ATen/ATen.h>

namespace kbit {
namespace cuda {

// y[m, n] = acc[m, n] * row_scale[n], rounded to y's dtype. acc: contiguous fp32 [M, N];
// row_scale: contiguous fp32 [N]; y: contiguous [M, N] (fp16, bf16 or fp32). Current stream.
void scale_columns_into(const at::Tensor& acc, const at::Tensor& row_scale, at::Tensor& y);

}  // namespace cuda
}  // namespace kbit

// kbit::moe_gather on CUDA: kbit.Experts' gather of x into its expert-sorted rows (it was ATen's
// index_select, whose plain launch stopped the PDL chain between moe_route and the first grouped call).
//   out[r] = x[row_token[r]] for x [T, H], row_token [P] (moe_route's); a row_token entry outside [0, T)
//   (not moe_route's; it cannot be checked without a host sync) makes its row NaN instead of a read outside x.
// A bit copy: each thread moves one V (16, 8, 4 or 2 bytes: the widest that divides a row's bytes and both
// rows' alignment). Block (c, y): columns c kThreads .. + kThreads - 1 (in V) of rows y, y + gridDim.y, ...
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../../common/moe_checks.h"
#include "../common/dependent_launch.cuh"
#include "../common/dependent_launch.h"
#include "moe_cuda.h"

namespace kbit {
namespace cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxRowBlocks = 65535;  // gridDim.y's limit; rows past it are strided

template <typename V, typename Id>
__global__ void __launch_bounds__(kThreads) moe_gather_kernel(const V* __restrict__ x, int64_t T, int64_t row_vecs,
                                                              const Id* __restrict__ row_token, int64_t P,
                                                              V nan_fill, V* __restrict__ out) {
  // Launched with PDL (dependent_launch.cuh): row_token (moe_route's) and x are read after the wait.
  allow_dependents();
  grid_dependency_wait();
  const int64_t col = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (col >= row_vecs) return;
  for (int64_t r = blockIdx.y; r < P; r += gridDim.y) {
    const int64_t t = static_cast<int64_t>(row_token[r]);
    out[r * row_vecs + col] = t >= 0 && t < T ? x[t * row_vecs + col] : nan_fill;
  }
}

// A quiet NaN's bits in x's dtype (float16, bfloat16 or float32: moe_checks.cpp's rule).
uint32_t nan_bits_of(at::ScalarType dtype) {
  if (dtype == at::kHalf) return 0x7e00u;
  if (dtype == at::kBFloat16) return 0x7fc0u;
  return 0x7fc00000u;
}

// V filled with `nan_bits` (a quiet NaN of the element type, `elem` bytes) repeated.
template <typename V>
V nan_vector(uint32_t nan_bits, int elem) {
  static_assert(sizeof(V) % 2 == 0 && std::is_trivially_copyable<V>::value, "a bit-copy type");
  uint16_t halves[sizeof(V) / 2];
  for (size_t i = 0; i < sizeof(V) / 2; ++i)
    halves[i] = elem == 2 ? static_cast<uint16_t>(nan_bits) : static_cast<uint16_t>(nan_bits >> (16 * (i % 2)));
  V v;
  std::memcpy(&v, halves, sizeof(V));
  return v;
}

template <typename V>
void launch_gather(const at::Tensor& x, const at::Tensor& row_token, uint32_t nan_bits, at::Tensor& out) {
  const int64_t P = row_token.numel(), row_vecs = x.size(1) * x.element_size() / int64_t(sizeof(V));
  const int64_t col_blocks = (row_vecs + kThreads - 1) / kThreads;
  TORCH_CHECK(col_blocks <= INT32_MAX, "kbit.moe_gather: x's rows are too long (", x.size(1), ")");
  const dim3 grid(static_cast<unsigned>(col_blocks), static_cast<unsigned>(std::min(P, kMaxRowBlocks)));
  const auto stream = at::cuda::getCurrentCUDAStream();
  const bool dependent = dependent_launch_enabled();
  const V fill = nan_vector<V>(nan_bits, static_cast<int>(x.element_size()));
  const auto* src = static_cast<const V*>(x.const_data_ptr());
  auto* dst = static_cast<V*>(out.data_ptr());
  const auto launch = [&](const auto* rows) {
    using Id = std::remove_cv_t<std::remove_pointer_t<decltype(rows)>>;
    launch_kernel(moe_gather_kernel<V, Id>, grid, dim3(kThreads), 0, stream, dependent, src, x.size(0), row_vecs, rows,
                  P, fill, dst);
  };
  if (row_token.scalar_type() == at::kLong) launch(row_token.const_data_ptr<int64_t>());
  else launch(row_token.const_data_ptr<int32_t>());
}

}  // namespace

int row_copy_bytes(int64_t row_bytes, const void* src, const void* dst) {
  for (int bytes : {16, 8, 4}) {
    if (row_bytes % bytes == 0 && reinterpret_cast<uintptr_t>(src) % bytes == 0 &&
        reinterpret_cast<uintptr_t>(dst) % bytes == 0)
      return bytes;
  }
  return 2;  // 2-byte elements (fp32 rows fit 4)
}

at::Tensor moe_gather_cuda(const at::Tensor& x_in, const at::Tensor& row_token_in) {
  check_moe_gather_args(x_in, row_token_in);
  const c10::cuda::CUDAGuard guard(x_in.device());
  const at::Tensor x = x_in.contiguous(), row_token = row_token_in.contiguous();
  at::Tensor out = at::empty({row_token.numel(), x.size(1)}, x.options());
  if (out.numel() == 0) return out;
  const uint32_t nan_bits = nan_bits_of(x.scalar_type());
  with_row_copy_unit(x.size(1) * x.element_size(), x.const_data_ptr(), out.data_ptr(), [&](auto unit) {
    launch_gather<decltype(unit)>(x, row_token, nan_bits, out);
  });
  return out;
}

}  // namespace cuda

TORCH_LIBRARY_IMPL(kbit, CUDA, m) { m.impl("moe_gather", &cuda::moe_gather_cuda); }

}  // namespace kbit

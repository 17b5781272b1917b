// wgmma_x_image (wgmma_gemm.h): the activations as the wgmma kernel's shared-memory stages.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include <algorithm>
#include <cstdint>

#include "../common/dependent_launch.cuh"
#include "../common/dependent_launch.h"
#include "wgmma_gemm.h"

namespace kbit {
namespace cuda {
namespace {

// One thread per (token slot r, 32-column block) of the image, r fastest (consecutive threads
// write consecutive 16-byte chunks). A block of x is a 4 x 4 matrix of 4-byte words (row t =
// its 16-byte chunk t); its transpose is the slot order: chunk p holds word p of each row.
// The wgmma kernel after it is launched with PDL: every CTA waits for the kernel before it (a no-op
// unless this one was launched with PDL too), then lets the wgmma kernel start (in this order: the
// wgmma kernel then reads its weights, codebook and row scales before its own wait, which only this
// kernel's output, the image, must follow; dependent_launch.cuh). The wgmma kernel's set-up (the
// pair table, the first stages' weight copies) so runs while this kernel does.
__global__ void x_image_kernel(const uint4* __restrict__ x, uint4* __restrict__ image, int64_t M, int64_t K,
                               int tokens, int64_t groups, int64_t items) {
  grid_dependency_wait();
  allow_dependents();
  const int64_t x_blocks = K / 32;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < items; i += int64_t(gridDim.x) * blockDim.x) {
    const int r = static_cast<int>(i % tokens);
    int64_t rest = i / tokens;
    const int blk = static_cast<int>(rest % 8);
    rest /= 8;
    const int64_t grp = rest % groups, chunk = rest / groups;
    const int64_t m = chunk * tokens + r, b = grp * 8 + blk;
    uint4 c0 = make_uint4(0, 0, 0, 0), c1 = c0, c2 = c0, c3 = c0;
    if (m < M && b < x_blocks) {
      const uint4* src = x + m * (K / 8) + 4 * b;
      c0 = src[0], c1 = src[1], c2 = src[2], c3 = src[3];
    }
    uint4* dst = image + ((chunk * groups + grp) * 32 + 4 * blk) * tokens + r;
    dst[0] = make_uint4(c0.x, c1.x, c2.x, c3.x);
    dst[tokens] = make_uint4(c0.y, c1.y, c2.y, c3.y);
    dst[2 * tokens] = make_uint4(c0.z, c1.z, c2.z, c3.z);
    dst[3 * tokens] = make_uint4(c0.w, c1.w, c2.w, c3.w);
  }
}

}  // namespace

int64_t wgmma_x_image_ctas(int64_t M, int64_t K, int tokens, int threads) {
  const int64_t groups = (K + 255) / 256, chunks = (M + tokens - 1) / tokens, items = chunks * groups * 8 * tokens;
  return std::min<int64_t>((items + threads - 1) / threads, 16 * 1024);
}

at::Tensor wgmma_x_image(const at::Tensor& x, int tokens, bool dependent, int threads) {
  TORCH_CHECK(wgmma_image_threads_valid(threads), "kbit: wgmma_x_image: internal error: ", threads, " threads a CTA");
  TORCH_CHECK(x.dim() == 2 && x.is_contiguous() && x.element_size() == 2 && x.size(1) % 32 == 0,
              "kbit: wgmma_x_image needs a contiguous 2-byte [M, K] tensor with K % 32 == 0");
  TORCH_CHECK(reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 == 0, "kbit: wgmma_x_image needs 16-byte aligned x");
  const int64_t M = x.size(0), K = x.size(1), groups = (K + 255) / 256, chunks = (M + tokens - 1) / tokens;
  at::Tensor image = at::empty({chunks, groups, int64_t(tokens) * 256}, x.options());
  const int64_t items = chunks * groups * 8 * tokens;
  // the wgmma kernel reads before its wait only because this kernel runs right before it
  TORCH_CHECK(items > 0, "kbit: wgmma_x_image: internal error: an empty x (dense_gemm returns before M = 0 gets here)");
  const int64_t ctas = wgmma_x_image_ctas(M, K, tokens, threads);
  launch_kernel(x_image_kernel, dim3(static_cast<unsigned>(ctas)), dim3(threads), 0,
                at::cuda::getCurrentCUDAStream(), dependent && dependent_launch_enabled(*at::cuda::getCurrentDeviceProperties()),
                static_cast<const uint4*>(x.data_ptr()), static_cast<uint4*>(image.data_ptr()), M, K, tokens, groups, items);
  return image;
}

}  // namespace cuda
}  // namespace kbit

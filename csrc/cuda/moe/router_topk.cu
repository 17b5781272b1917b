// kbit::router_topk on CUDA: an MoE router's softmax, top-k and renormalisation over one token's E logits in one
// kernel (HF's Qwen3-MoE router runs it as torch ops: softmax, gatherTopK and a bitonic sort, a division; 17-22 us a
// call alone at decode, docs/design.md "Session 62").
//   Ranking: by logit, descending, ties to the lower expert index, NaN above +inf (torch.topk's order on the fp32
//   probabilities, but for distinct logits whose probabilities round equal or underflow to 0: ranked here by the
//   logit, in either order there). Weights: e_i = exp(l_i - max l), w_i = e_i / sum over the top-k of e_j
//   (normalize) or e_i / sum over all E of e_j, in fp32, rounded once to the logits' dtype. Sums run in a fixed
//   order (same bits every run).
//   Two kernels, by E: one warp a row to 256 experts (router_topk_warp.cuh; its selection scans each lane's E / 32
//   keys per round), one CTA a row to 1024 (router_topk_cta.cuh; a cost that barely grows with E). Session 64 (H200,
//   one token, us, warp / CTA): E = 256 top-8 3.1 / 3.7, 384 top-8 4.2 / 3.9, 512 top-10 5.2 / 4.5. Past 1024
//   experts or with top_k > 32 the op runs router_topk_aten.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <tuple>

#include "../../common/dispatch.h"
#include "../../common/moe_aten.h"
#include "../../common/moe_checks.h"
#include "../common/dependent_launch.h"
#include "router_topk_cta.cuh"
#include "router_topk_warp.cuh"

namespace kbit {
namespace cuda {
namespace {

using namespace router;

std::tuple<at::Tensor, at::Tensor> router_topk_cuda(const at::Tensor& logits_in, int64_t top_k, bool normalize) {
  check_router_topk_args(logits_in, top_k);
  const int64_t T = logits_in.size(0), E = logits_in.size(1);
  if (E > kCtaMaxExperts || top_k > kCtaMaxTopK) return router_topk_aten(logits_in, top_k, normalize);
  const c10::cuda::CUDAGuard guard(logits_in.device());
  const at::Tensor logits = logits_in.contiguous();
  at::Tensor weights = at::empty({T, top_k}, logits.options());
  at::Tensor ids = at::empty({T, top_k}, logits.options().dtype(at::kLong));
  if (T == 0 || top_k == 0) return {weights, ids};
  TORCH_CHECK(T <= INT32_MAX, "kbit.router_topk: at most ", INT32_MAX, " rows (got ", T, ")");
  const auto stream = at::cuda::getCurrentCUDAStream();
  KBIT_DISPATCH_FLOAT_TYPES(logits.scalar_type(), "kbit_router_topk_cuda", [&] {
    const scalar_t* in = logits.data_ptr<scalar_t>();
    scalar_t* w = weights.data_ptr<scalar_t>();
    int64_t* id = ids.data_ptr<int64_t>();
    const auto e = static_cast<int32_t>(E), k = static_cast<int32_t>(top_k);
    if (E <= kWarpMaxExperts) {  // (top_k <= 32: lane r keeps the r-th choice)
      const auto kernel = E <= 64 ? router_topk_warp_kernel<scalar_t, 2>
                          : E <= 128 ? router_topk_warp_kernel<scalar_t, 4>
                                     : router_topk_warp_kernel<scalar_t, kWarpMaxPerLane>;
      const dim3 grid(static_cast<unsigned>((T + kWarpRowsPerCta - 1) / kWarpRowsPerCta)), block(32 * kWarpRowsPerCta);
      launch_kernel(kernel, grid, block, 0, stream, dependent_launch_enabled(), in, static_cast<int32_t>(T), e, k,
                    normalize, w, id);
    } else {
      launch_kernel(router_topk_cta_kernel<scalar_t>, dim3(static_cast<unsigned>(T)), dim3(kCtaThreads), 0, stream,
                    dependent_launch_enabled(), in, e, k, normalize, w, id);
    }
  });
  return {weights, ids};
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(kbit, CUDA, m) { m.impl("router_topk", &cuda::router_topk_cuda); }

}  // namespace kbit

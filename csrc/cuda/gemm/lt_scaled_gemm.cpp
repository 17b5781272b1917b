// y = (x @ Wn^T) * row_scale as one cuBLASLt matmul: the row scales are its per-row alpha vector
// (CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO), so no fp32 [M, N] product is written and read again.
//
// Column-major view (cuBLASLt's): D = y^T [N, M] (ld N) = op(A) B with A = Wn^T stored [K, N] (ld K, transposed:
// op(A) = Wn [N, K]) and B = x^T stored [K, M] (ld = x's row stride). D's rows are the weights' rows, so the alpha
// vector (length = D's rows) is row_scale.
#include "lt_scaled_gemm.h"

#include "dispatch_query.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAStream.h>
#include <cublasLt.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

namespace kbit {
namespace cuda {
namespace {

void check_lt(cublasStatus_t status, const char* what) {
  TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "kbit: cuBLASLt ", what, " failed: ", cublasGetStatusString(status));
}

// The largest power of two (<= 256) that divides the address: cuBLASLt's heuristic assumes 256-byte aligned buffers
// unless told otherwise.
uint32_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 1;
  while (align < 256 && a % (2 * align) == 0) align *= 2;
  return align;
}

// RAII holders of the descriptors (destroyed on every exit, errors included).
struct MatmulDesc {
  cublasLtMatmulDesc_t d = nullptr;
  ~MatmulDesc() { if (d) cublasLtMatmulDescDestroy(d); }
};
struct Layout {
  cublasLtMatrixLayout_t d = nullptr;
  ~Layout() { if (d) cublasLtMatrixLayoutDestroy(d); }
};
struct Preference {
  cublasLtMatmulPreference_t d = nullptr;
  ~Preference() { if (d) cublasLtMatmulPreferenceDestroy(d); }
};

// The heuristic's pick per problem (it costs host time per query); nullopt-like `found` false where it had none.
using ProblemKey = std::tuple<int, int, int64_t, int64_t, int64_t, int64_t, uint32_t, uint32_t, uint32_t, size_t, int>;
struct Pick {
  bool found = false;
  cublasLtMatmulAlgo_t algo{};
};
std::mutex picks_mutex;
std::map<ProblemKey, Pick> picks;

std::atomic<bool> lt_epilogue_on{true};

}  // namespace

bool lt_epilogue_enabled() { return lt_epilogue_on.load(std::memory_order_relaxed); }
bool set_dequant_lt_epilogue(bool on) { return lt_epilogue_on.exchange(on); }

bool lt_scaled_gemm_into(const at::Tensor& x, const at::Tensor& Wn, const at::Tensor& row_scale, at::Tensor& y) {
  const at::ScalarType t = x.scalar_type();
  if (t != at::kHalf && t != at::kBFloat16) return false;
  if (Wn.scalar_type() != t || y.scalar_type() != t || row_scale.scalar_type() != at::kFloat) return false;
  if (x.dim() != 2 || Wn.dim() != 2 || y.dim() != 2) return false;
  const int64_t M = x.size(0), K = x.size(1), N = Wn.size(0);
  if (M <= 0 || N <= 0 || K <= 0 || Wn.size(1) != K || y.size(0) != M || y.size(1) != N || row_scale.numel() != N)
    return false;
  if (x.stride(1) != 1 || x.stride(0) < K || !Wn.is_contiguous() || !y.is_contiguous() || !row_scale.is_contiguous())
    return false;
  const int64_t ldx = x.stride(0);
  const cudaDataType_t dt = t == at::kHalf ? CUDA_R_16F : CUDA_R_16BF;

  MatmulDesc desc;
  check_lt(cublasLtMatmulDescCreate(&desc.d, CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate");
  const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
  check_lt(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof(op_t)), "TRANSA");
  check_lt(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof(op_n)), "TRANSB");
  const cublasLtPointerMode_t mode = CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO;
  check_lt(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_POINTER_MODE, &mode, sizeof(mode)),
           "POINTER_MODE");
  Layout a, b, d;
  check_lt(cublasLtMatrixLayoutCreate(&a.d, dt, K, N, K), "layout A");
  check_lt(cublasLtMatrixLayoutCreate(&b.d, dt, K, M, ldx), "layout B");
  check_lt(cublasLtMatrixLayoutCreate(&d.d, dt, N, M, N), "layout D");

  const size_t workspace_bytes = at::cuda::getCUDABlasLtWorkspaceSize();
  void* workspace = at::cuda::getCUDABlasLtWorkspace();
  const uint32_t align_a = alignment_of(Wn.data_ptr()), align_b = alignment_of(x.data_ptr()),
                 align_d = alignment_of(y.data_ptr());
  cublasLtHandle_t handle = at::cuda::getCurrentCUDABlasLtHandle();
  const ProblemKey key{x.get_device(), int(dt), M, N, K, ldx, align_a, align_b, align_d, workspace_bytes,
                       at::cuda::getCurrentDeviceProperties()->multiProcessorCount};
  Pick pick;
  bool cached = false;
  {
    const std::lock_guard<std::mutex> lock(picks_mutex);
    const auto it = picks.find(key);
    if (it != picks.end()) { pick = it->second; cached = true; }
  }
  if (!cached) {
    Preference pref;
    check_lt(cublasLtMatmulPreferenceCreate(&pref.d), "PreferenceCreate");
    check_lt(cublasLtMatmulPreferenceSetAttribute(pref.d, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                  sizeof(workspace_bytes)), "MAX_WORKSPACE_BYTES");
    // Split-K partials in fp32 only: INPLACE and OUTPUT_TYPE would add them in fp16 / bf16 (bf16 results then
    // leave the 4e-3 bound at K ~ 16k; gemm_dequant_cublas.cpp).
    const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    check_lt(cublasLtMatmulPreferenceSetAttribute(pref.d, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes,
                                                  sizeof(schemes)), "REDUCTION_SCHEME_MASK");
    const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligns[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a}, {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_d}, {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d}};
    for (const auto& [attr, value] : aligns)
      check_lt(cublasLtMatmulPreferenceSetAttribute(pref.d, attr, &value, sizeof(value)), "MIN_ALIGNMENT");
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t status =
        cublasLtMatmulAlgoGetHeuristic(handle, desc.d, a.d, b.d, d.d, d.d, pref.d, 1, &result, &found);
    pick.found = status == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS;
    if (pick.found) pick.algo = result.algo;
    const std::lock_guard<std::mutex> lock(picks_mutex);
    picks.emplace(key, pick);
  }
  if (!pick.found) return false;
  const float* alpha = row_scale.data_ptr<float>();  // device vector of N: D's rows
  check_lt(cublasLtMatmul(handle, desc.d, alpha, Wn.data_ptr(), a.d, x.data_ptr(), b.d, /*beta=*/nullptr,
                          y.data_ptr(), d.d, y.data_ptr(), d.d, &pick.algo, workspace, workspace_bytes,
                          c10::cuda::getCurrentCUDAStream()),
           "Matmul");
  return true;
}

}  // namespace cuda
}  // namespace kbit

// tensor_map_2d (tensor_map.h): the driver's cuTensorMapEncodeTiled through the runtime's entry point.
#include "tensor_map.h"

#include <c10/util/Exception.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

namespace kbit {
namespace cuda {
namespace {

// The driver's encoder, looked up once (the ABI of CUDA 12.0's, the first with tensor maps).
PFN_cuTensorMapEncodeTiled_v12000 encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
    const cudaError_t err =
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found);
#else
    const cudaError_t err = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &p, cudaEnableDefault, &found);
#endif
    if (err != cudaSuccess) (void)cudaGetLastError();  // not sticky; leave no error for the next runtime call
    TORCH_CHECK(err == cudaSuccess && found == cudaDriverEntryPointSuccess && p != nullptr,
                "kbit: the CUDA driver has no cuTensorMapEncodeTiled (", cudaGetErrorString(err), ", query result ",
                static_cast<int>(found), "); tensor copies need a driver for CUDA 12.0 or newer");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

}  // namespace

CUtensorMap tensor_map_2d(const void* base, CUtensorMapDataType type, uint64_t rows, uint64_t cols,
                          uint64_t row_stride_bytes, uint32_t box_rows, uint32_t box_cols, CUtensorMapSwizzle swizzle) {
  TORCH_CHECK(type == CU_TENSOR_MAP_DATA_TYPE_FLOAT16 || type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
              "kbit: tensor_map_2d: internal error: 2-byte float types only, got ", static_cast<int>(type));
  constexpr uint64_t kElem = 2;
  TORCH_CHECK(reinterpret_cast<uintptr_t>(base) % 16 == 0,
              "kbit: tensor_map_2d: the tensor must start 16-byte aligned");
  TORCH_CHECK(rows >= 1 && cols >= 1 && rows <= (uint64_t(1) << 32) && cols <= (uint64_t(1) << 32),
              "kbit: tensor_map_2d: needs 1 to 2^32 rows and columns; got ", rows, " x ", cols);
  TORCH_CHECK(row_stride_bytes % 16 == 0 && row_stride_bytes >= cols * kElem && row_stride_bytes < (uint64_t(1) << 40),
              "kbit: tensor_map_2d: the row stride (", row_stride_bytes, " bytes) must be a multiple of 16, at least a "
              "row's ", cols * kElem, " bytes and below 2^40");
  TORCH_CHECK(box_rows >= 1 && box_rows <= 256 && box_cols >= 1 && box_cols <= 256 && box_cols * kElem % 16 == 0,
              "kbit: tensor_map_2d: internal error: a box of ", box_rows, " x ", box_cols, " elements (each side 1-256, "
              "a row a multiple of 16 bytes)");
  TORCH_CHECK(swizzle != CU_TENSOR_MAP_SWIZZLE_128B || box_cols * kElem <= 128,
              "kbit: tensor_map_2d: internal error: the 128-byte swizzle takes box rows of at most 128 bytes, got ",
              box_cols * kElem);
  CUtensorMap map{};
  const cuuint64_t dims[2] = {cols, rows};           // dimension 0: the contiguous one
  const cuuint64_t strides[1] = {row_stride_bytes};  // (dimension 0's stride is the element)
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t element_strides[2] = {1, 1};
  // OOB_FILL_NONE: elements outside the tensor read as zeros (the NaN fill would poison the sums)
  const CUresult r = encoder()(&map, type, 2, const_cast<void*>(base), dims, strides, box, element_strides,
                               CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  TORCH_CHECK(r == CUDA_SUCCESS, "kbit: cuTensorMapEncodeTiled failed (CUresult ", static_cast<int>(r), ") for a [",
              rows, ", ", cols, "] tensor, row stride ", row_stride_bytes, " bytes, box ", box_rows, " x ", box_cols,
              ", swizzle mode ", static_cast<int>(swizzle));
  return map;
}

}  // namespace cuda
}  // namespace kbit

#pragma once
// Host side of tensor copies (sm_90's tensor memory accelerator, TMA; device side: tensor_copy.cuh). A tensor map
// (CUtensorMap, 128 bytes) describes a tensor in global memory and the box one copy moves; a kernel takes it as a
// `const __grid_constant__ CUtensorMap` parameter, so it is encoded on the host for every launch (a CUDA graph keeps
// the captured launch's map, as it keeps its other arguments). Encoded by the driver's cuTensorMapEncodeTiled, reached
// through the runtime's driver entry point: kbit does not link libcuda.
#include <cuda.h>

#include <cstdint>

namespace kbit {
namespace cuda {

// A map over a row-major [rows, cols] tensor of 2-byte elements (`type`: CU_TENSOR_MAP_DATA_TYPE_FLOAT16 or
// _BFLOAT16) at `base` (16-byte aligned), row r at base + r row_stride_bytes (a multiple of 16, >= 2 cols), copied in
// boxes of box_rows x box_cols elements (each at most 256; box_cols * 2 bytes at most 128 under
// CU_TENSOR_MAP_SWIZZLE_128B). Elements of a box outside the tensor read as zeros (a box may lie partly or wholly
// outside it). In shared memory a box is box_rows rows of box_cols * 2 bytes; with the 128-byte swizzle (rows of
// exactly 128 bytes, the destination 1024-byte aligned) 16-byte chunk c of row r lands at chunk position c ^ (r % 8)
// of its row. Raises a TORCH_CHECK error naming the rule a parameter breaks, or the driver's CUresult.
CUtensorMap tensor_map_2d(const void* base, CUtensorMapDataType type, uint64_t rows, uint64_t cols,
                          uint64_t row_stride_bytes, uint32_t box_rows, uint32_t box_cols, CUtensorMapSwizzle swizzle);

}  // namespace cuda
}  // namespace kbit

#pragma once
// mma.sync.m16n8k16 with fp32 accumulators, and packing of operand pairs.
// Fragment layouts: PTX ISA, "Matrix Fragments for mma.m16n8k16" (16-bit types):
//   A (16 x 16, row): reg0 = (row g, cols 2t, 2t+1), reg1 = (row g+8, cols 2t, 2t+1),
//                     reg2 = (row g, cols 2t+8, +9), reg3 = (row g+8, cols 2t+8, +9)
//   B (16 x 8, col):  reg0 = (rows 2t, 2t+1, col g),  reg1 = (rows 2t+8, 2t+9, col g)
//   C/D (16 x 8):     d0, d1 = (row g, cols 2t, 2t+1), d2, d3 = (row g+8, cols 2t, 2t+1)
// with g = lane / 4, t = lane % 4.
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace kbit {
namespace cuda {

template <typename T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, c10::Half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// ldmatrix.x4 (PTX ISA, "ldmatrix"): lane l gives the shared-memory address of row l % 8 of 8 x 8 matrix
// l / 8 (16 bytes, 16-byte aligned) and receives, for each matrix i, word l % 4 of its row l / 4 in
// component i. With row r = token r's 16-byte chunk i of a 32-column block of x, lane (g, t) gets x pairs
// t, t + 4, t + 8, t + 12 of token g: its mma B fragments of the block's two steps in tiled layout version 4
// (tiled_layout.h): .x, .y step 2b; .z, .w step 2b + 1.
// `after`: a value read after the barrier or wait that makes the rows visible; the asm, which has no memory
// operand, takes it as an input so that it cannot be moved above that (and may otherwise be scheduled freely).
__device__ __forceinline__ uint4 ldmatrix_x4(const void* row, uint32_t after) {
  uint4 v;
  asm("{\n .reg .b32 unused;\n mov.b32 unused, %5;\n ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n}\n"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "r"(static_cast<uint32_t>(__cvta_generic_to_shared(row))), "r"(after));
  return v;
}

// ldmatrix_x4 ordered like any shared-memory access (volatile, a memory clobber): for callers with no value read
// after their barrier to hand to `after`.
__device__ __forceinline__ uint4 ldmatrix_x4_ordered(const void* row) {
  uint4 v;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(static_cast<uint32_t>(__cvta_generic_to_shared(row)))
               : "memory");
  return v;
}

// Two floats as a packed pair of T (low half = first), round to nearest.
template <typename T>
__device__ __forceinline__ uint32_t pack_pair(float lo, float hi) {
  if constexpr (std::is_same_v<T, c10::Half>) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
}

// The two elements of a packed pair of T as floats (inverse of pack_pair; exact).
template <typename T>
__device__ __forceinline__ float2 unpack_pair(uint32_t w) {
  if constexpr (std::is_same_v<T, c10::Half>) {
    return __half22float2(*reinterpret_cast<const __half2*>(&w));
  } else {
    return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xFFFF0000u));
  }
}

// Elementwise product of two packed pairs of T (HMUL2), round to nearest.
template <typename T>
__device__ __forceinline__ uint32_t mul_pair(uint32_t a, uint32_t b) {
  if constexpr (std::is_same_v<T, c10::Half>) {
    const __half2 p = __hmul2(*reinterpret_cast<const __half2*>(&a), *reinterpret_cast<const __half2*>(&b));
    return *reinterpret_cast<const uint32_t*>(&p);
  } else {
    const __nv_bfloat162 p =
        __hmul2(*reinterpret_cast<const __nv_bfloat162*>(&a), *reinterpret_cast<const __nv_bfloat162*>(&b));
    return *reinterpret_cast<const uint32_t*>(&p);
  }
}

}  // namespace cuda
}  // namespace kbit

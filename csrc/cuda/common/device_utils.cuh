#pragma once
// Small device helpers shared by the kbit CUDA kernels.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace kbit {
namespace cuda {

constexpr unsigned kFullMask = 0xffffffffu;

// a / b (b != 0): a 32-bit division where both are in [0, 2^31), else the 64-bit one. A kernel's prologue divides
// before its first loads are issued; 64-bit divisions there were measured to add hundreds of
// cycles to every call (docs/design.md, "Session 8").
__device__ __forceinline__ int64_t div_nonneg(int64_t a, int64_t b) {
  return ((a | b) >> 31) == 0 ? static_cast<int64_t>(static_cast<uint32_t>(a) / static_cast<uint32_t>(b)) : a / b;
}

// fp32 <-> storage type conversions (round to nearest even).
template <typename T> __device__ __forceinline__ float to_float(T v);
template <> __device__ __forceinline__ float to_float<float>(float v) { return v; }
template <> __device__ __forceinline__ float to_float<c10::Half>(c10::Half v) {
  return __half2float(static_cast<__half>(v));
}
template <> __device__ __forceinline__ float to_float<c10::BFloat16>(c10::BFloat16 v) {
  return __bfloat162float(static_cast<__nv_bfloat16>(v));
}
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ c10::Half from_float<c10::Half>(float v) {
  return c10::Half(__float2half_rn(v));
}
template <> __device__ __forceinline__ c10::BFloat16 from_float<c10::BFloat16>(float v) {
  return c10::BFloat16(__float2bfloat16_rn(v));
}

// Barrier `id` (1..15; 0 is __syncthreads's) for `threads` threads of the CTA (a multiple of 32,
// whole warps): each of those warps waits until all of them arrived.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// fence.acq_rel.gpu: the thread's earlier memory operations (and, cumulatively, those a barrier ordered before them)
// before its later ones, for every thread of the GPU (the lighter one of __threadfence's fence.sc).
__device__ __forceinline__ void fence_acq_rel_gpu() { asm volatile("fence.acq_rel.gpu;\n" ::: "memory"); }

// Named barrier `id` of `threads` threads (whole warps) that also ORs a predicate over them: true in every thread
// where any thread passed true. The result is broadcast from lane 0 by a shuffle, which the compiler knows to be
// warp-uniform (the barrier's own result it does not: branching on it moved the wgmma kernel's loop-carried stage count
// and descriptors out of the uniform registers, two R2UR a wgmma).
__device__ __forceinline__ bool named_barrier_or(int id, int threads, bool predicate) {
  uint32_t any;
  asm volatile(
      "{\n .reg .pred p, q;\n setp.ne.u32 p, %1, 0;\n bar.red.or.pred q, %2, %3, p;\n selp.u32 %0, 1, 0, q;\n}\n"
      : "=r"(any)
      : "r"(static_cast<uint32_t>(predicate)), "r"(id), "r"(threads)
      : "memory");
  return __shfl_sync(0xffffffffu, any, 0) != 0;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// stmatrix.x4 (sm_90+): four 8 x 8 matrices of 16-bit elements from the mma fragment layout to shared memory. Lane
// (g, t) = (lane / 4, lane % 4) gives word i = matrix i's row g, elements 2t, 2t + 1; lane 8 i + r gives the address of
// matrix i's row r (16 bytes, 16-byte aligned). Ordered like any shared-memory store (volatile, a memory clobber).
__device__ __forceinline__ void stmatrix_x4(void* row, const uint32_t (&w)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n"
               :
               : "r"(static_cast<uint32_t>(__cvta_generic_to_shared(row))), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3])
               : "memory");
}
// The same with each matrix transposed on its way: lane (g, t)'s word i lands in row 2t (low half) and 2t + 1 (high
// half) of matrix i, column g; lane 8 i + r gives the address of matrix i's row r.
__device__ __forceinline__ void stmatrix_x4_trans(void* row, const uint32_t (&w)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n"
               :
               : "r"(static_cast<uint32_t>(__cvta_generic_to_shared(row))), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3])
               : "memory");
}
#endif

// silu(gate) * up in fp32 as kbit::silu_and_mul computes it (silu(g) = g / (1 + e^-g)), one rounding a step: the
// op and the grouped GEMV's gated epilogue (TcGemmArgs::gated_silu) share it, so their outputs are the same bits.
__device__ __forceinline__ float silu_mul(float gate, float up) {
  return __fmul_rn(__fdiv_rn(gate, __fadd_rn(1.0f, expf(-gate))), up);
}

// Sum over the warp in xor-butterfly order (offsets 16, 8, 4, 2, 1). Every lane gets
// the same bits; the CPU reference sums in the same tree (csrc/cpu/quantize_cpu.cpp).
__device__ __forceinline__ float warp_sum_butterfly(float v) {
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) v = __fadd_rn(v, __shfl_xor_sync(kFullMask, v, off));
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, off));
  return v;
}

// Blocks for a grid-stride kernel: enough to fill the device, never more than the work.
inline int64_t grid_for(int64_t work_items, int per_sm = 8) {
  const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const int64_t cap = static_cast<int64_t>(sms) * per_sm;
  return work_items < 1 ? 1 : (work_items < cap ? work_items : cap);
}

}  // namespace cuda
}  // namespace kbit

// What one step of the wgmma kernel's main loop costs with its data resident (no memory traffic):
// each CTA (one per SM) runs WGS consumer warpgroups through `groups` x 16 steps of
//   decode A (16 x 16 weights a warp) -> wgmma.fence -> wgmma m64nTNk16 (A from registers, x from
//   shared memory) -> commit -> wait until <= 3 pending
// on a constant x block and a register-resident code stream, and reports cycles per step (clock64,
// median over the CTAs' warpgroups). Decodes (MODE):
//   0  none: constant A registers (the wgmma issue floor)
//   1  the pair table (wgmma_gemm.cuh's: PRMT + IMAD + LDS of a 32-copy table, HMUL2 by the scale)
//   2  the codebook in registers: byte permutes of a 16-entry fp16 codebook's low and high bytes (k = 4)
//   3  the wide pair table (entries 256 bytes apart: the address is one PRMT of the code byte over 4 lane)
//   4  mode 1 without the scale's HMUL2 (what the multiply costs)
//   5  mode 1 in natural k order from layout version 3 (session 35: a wgmma decode that would have let x skip the
//      image pass; layout version 4 made that moot, session 36). The micro keeps version 3's streams and the
//      no-swizzle B descriptor: it models the session-35 kernel, not the TMA kernel: per 32-column block each lane loads word 2 b + t / 2 of its quad's four streams from shared memory (4
//      LDS.32; the real kernel keeps the streams there) and each step's four codes are one PRMT of two of them
// Standalone (no torch at run time):
//   nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -I<torch include dirs> -o wgmma_step \
//     benchmarks/micro/wgmma_step.cu   (with CUDA 13.0 here, -arch=sm_90a failed in ptxas on the wgmma instructions)
// Used in session 31 (docs/design.md) to bound what a decode change can win, in session 35 for mode 5.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../../csrc/cuda/gemm/wgmma.cuh"
#include "cuda_check.h"

using kbit::cuda::smem_matrix_desc;
using kbit::cuda::wgmma_commit;
using kbit::cuda::wgmma_fence;
using kbit::cuda::wgmma_wait;

template <int MODE>
constexpr int kTableBytes = MODE == 3 ? 256 * 256 : 256 * 128;  // 256 entries x 32 lane copies x 4 bytes

__device__ __forceinline__ uint32_t hmul2_bits(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// Mode 2: codes n0..n7 = the nibbles of w (byte r = register r's pair: low nibble -> low half).
// lo[0..3] / hi[0..3]: the codebook's low / high bytes, entries 4 i .. 4 i + 3 in register i.
__device__ __forceinline__ void decode_word_registers(uint32_t w, const uint32_t (&lo)[4], const uint32_t (&hi)[4],
                                                      uint32_t scale, uint32_t (&a)[4]) {
  const uint32_t sel = w & 0x77777777u, ws = w << 4;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const uint32_t s = half ? sel >> 16 : sel;
    // byte i = 0xFF where nibble i of this half-word has bit 3 (sign-replicate selectors)
    const uint32_t mask = __byte_perm(ws, w, half ? 0xFBEAu : 0xD9C8u);
    const uint32_t la = __byte_perm(lo[0], lo[1], s), lb = __byte_perm(lo[2], lo[3], s);
    const uint32_t ha = __byte_perm(hi[0], hi[1], s), hb = __byte_perm(hi[2], hi[3], s);
    const uint32_t l = (la & ~mask) | (lb & mask), h = (ha & ~mask) | (hb & mask);
    a[2 * half] = hmul2_bits(__byte_perm(l, h, 0x5140u), scale);
    a[2 * half + 1] = hmul2_bits(__byte_perm(l, h, 0x7362u), scale);
  }
}

template <int TN>
__device__ __forceinline__ void wgmma_step(float (&acc)[TN / 2], const uint32_t (&a)[4], uint64_t desc) {
  kbit::cuda::wgmma_m64k16<c10::Half, TN>(acc, a, desc);
}

template <int TN, int WGS, int MODE>
__global__ void __launch_bounds__(128 * WGS, 1)
    step_kernel(const uint32_t* __restrict__ codes, long long* cycles, float* sink, int groups) {
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* xs = smem + kTableBytes<MODE>;  // TN x 256 columns of x, the kernel's B layout
  unsigned char* quad_streams = xs + TN * 512;    // mode 5: the warp's 16-word streams, [v][lane][16 B]
  const int lane = threadIdx.x & 31, wg = threadIdx.x / 128;
  for (int i = threadIdx.x; i < kTableBytes<MODE> / 4; i += blockDim.x)
    reinterpret_cast<uint32_t*>(smem)[i] = 0x2C002C00u + (((i >> 5) & 15) << 16) + ((i >> 9) & 15);
  for (int i = threadIdx.x; i < TN * 512 / 4; i += blockDim.x)
    reinterpret_cast<uint32_t*>(xs)[i] = 0x28002800u + (i & 0x00FF00FFu);
  for (int i = threadIdx.x; i < 512; i += blockDim.x) reinterpret_cast<uint32_t*>(quad_streams)[i] = codes[i];
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();

  uint32_t stream[16];
#pragma unroll
  for (int w = 0; w < 16; ++w) stream[w] = codes[(blockIdx.x * blockDim.x + threadIdx.x) * 16 + w];
  uint32_t lo[4], hi[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    lo[i] = codes[i] & 0x1F1F1F1Fu;          // fp16 low bytes: anything
    hi[i] = 0x2C2C2C2Cu + (codes[4 + i] & 0x03030303u);  // high bytes: small normals
  }
  const uint32_t scale = 0x3C003C00u;
  uint32_t table_lane;
  {
    table_lane = static_cast<uint32_t>(__cvta_generic_to_shared(smem)) + 4u * lane;
    asm("mov.b32 %0, %0;" : "+r"(table_lane));
  }
  const uint64_t desc0 = smem_matrix_desc(xs, 16 * TN, 128);
  float acc[TN / 2];
#pragma unroll
  for (int e = 0; e < TN / 2; ++e) acc[e] = 0.0f;
  uint32_t quad[4] = {0u, 0u, 0u, 0u};  // mode 5: this block's words of the quad's streams
  uint32_t a[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int r = 0; r < 4; ++r) a[i][r] = 0x2C002C00u + r;

  __syncthreads();
  const long long t0 = clock64();
  for (int j = 0; j < groups; ++j) {
#pragma unroll
    for (int s = 0; s < 16; ++s) {
      uint32_t (&as)[4] = a[s % 4];
      if constexpr (MODE == 1 || MODE == 4) {
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const uint32_t off = __byte_perm(stream[s], 0u, 0x4440u + r) * 128u + table_lane;
          uint32_t wv;
          asm volatile("ld.shared.b32 %0, [%1];" : "=r"(wv) : "r"(off));
          as[r] = MODE == 1 ? hmul2_bits(wv, scale) : wv;
        }
      } else if constexpr (MODE == 3) {
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const uint32_t off = __byte_perm(stream[s], 4u * lane, 0x5504u + (r << 4));
          as[r] = hmul2_bits(*reinterpret_cast<const volatile uint32_t*>(smem + off), scale);
        }
      } else if constexpr (MODE == 5) {
        // natural step s = 2 b + h: codes of a0 / a1 from lane 4 g + 2 h, of a2 / a3 from lane 4 g + 2 h + 1, word
        // 2 b + t / 2, bytes 2 (t % 2), + 1 (the present layout's r = 0 / 1 or 2 / 3 of that word)
        const int g = lane >> 2, t = lane & 3;
        if (s % 2 == 0) {
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const int w = s + (t >> 1);  // 2 b + t / 2
            const uint32_t at = static_cast<uint32_t>(__cvta_generic_to_shared(quad_streams)) +
                                ((w >> 2) * 32 + 4 * g + q) * 16 + (w & 3) * 4;
            asm volatile("ld.shared.b32 %0, [%1];" : "=r"(quad[q]) : "r"(at));
          }
        }
        const uint32_t code = __byte_perm(quad[2 * (s & 1)], quad[2 * (s & 1) + 1], (t & 1) ? 0x7632u : 0x5410u);
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const uint32_t off = __byte_perm(code, 0u, 0x4440u + r) * 128u + table_lane;
          uint32_t wv;
          asm volatile("ld.shared.b32 %0, [%1];" : "=r"(wv) : "r"(off));
          as[r] = hmul2_bits(wv, scale);
        }
      } else if constexpr (MODE == 2) {
        decode_word_registers(stream[s], lo, hi, scale, as);
      }
      wgmma_fence();
      wgmma_step<TN>(acc, as, desc0 + ((s * TN * 32) >> 4));
      wgmma_commit();
      wgmma_wait<3>();
    }
#pragma unroll
    for (int w = 0; w < 16; ++w) stream[w] = __byte_perm(stream[w], stream[(w + 1) & 15], 0x6543u);
  }
  wgmma_wait<0>();
  const long long t1 = clock64();
  float sum = 0.0f;
#pragma unroll
  for (int e = 0; e < TN / 2; ++e) sum += acc[e];
  if (sum == 12345.678f) sink[threadIdx.x] = sum;  // keeps the math
  if (threadIdx.x % 128 == 0) cycles[blockIdx.x * WGS + wg] = t1 - t0;
}

template <int TN, int WGS, int MODE>
void run(const uint32_t* codes, long long* cycles_d, float* sink, int sms, int groups) {
  auto kernel = step_kernel<TN, WGS, MODE>;
  const int smem = kTableBytes<MODE> + TN * 512 + 2048;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  kernel<<<sms, 128 * WGS, smem>>>(codes, cycles_d, sink, groups);  // warm-up
  CHECK(cudaGetLastError());
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  CHECK(cudaEventRecord(e0));
  kernel<<<sms, 128 * WGS, smem>>>(codes, cycles_d, sink, groups);
  CHECK(cudaEventRecord(e1));
  CHECK(cudaEventSynchronize(e1));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, e0, e1));
  std::vector<long long> c(sms * WGS);
  CHECK(cudaMemcpy(c.data(), cycles_d, c.size() * sizeof(long long), cudaMemcpyDeviceToHost));
  std::sort(c.begin(), c.end());
  const double steps = 16.0 * groups;
  const double tensor = WGS * 64.0 * TN * 16 / 2048;  // cycles of tensor work per step, all warpgroups
  std::printf("| %3d | %d | %d | %7.1f | %7.1f | %7.1f | %5.0f | %7.1f |\n", TN, WGS, MODE, c[c.size() / 2] / steps,
              c.front() / steps, c.back() / steps, tensor, 1e6 * ms / steps);
}

int main(int argc, char** argv) {
  const int groups = argc > 1 ? std::atoi(argv[1]) : 256;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs, %d groups x 16 steps per CTA, one CTA per SM\n\n", prop.name, sms, groups);
  std::printf("| TN | warpgroups | decode | cycles/step (median) | min | max | tensor cycles/step | ns/step (events, whole kernel) |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  std::vector<uint32_t> h(size_t(sms) * 512 * 16);
  uint32_t x = 12345u;
  for (auto& v : h) v = (x = x * 1664525u + 1013904223u);
  uint32_t* codes;
  long long* cycles;
  float* sink;
  CHECK(cudaMalloc(&codes, h.size() * 4));
  CHECK(cudaMemcpy(codes, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMalloc(&cycles, sms * 4 * sizeof(long long)));
  CHECK(cudaMalloc(&sink, 512 * sizeof(float)));
#define CONFIG(TN, WGS)                                 \
  run<TN, WGS, 0>(codes, cycles, sink, sms, groups);   \
  run<TN, WGS, 1>(codes, cycles, sink, sms, groups);   \
  run<TN, WGS, 2>(codes, cycles, sink, sms, groups);   \
  run<TN, WGS, 3>(codes, cycles, sink, sms, groups);   \
  run<TN, WGS, 4>(codes, cycles, sink, sms, groups);   \
  run<TN, WGS, 5>(codes, cycles, sink, sms, groups);
  CONFIG(16, 4)
  CONFIG(32, 4)
  CONFIG(64, 4)
  CONFIG(64, 2)
  CONFIG(128, 2)
  CONFIG(16, 2)
  CONFIG(64, 1)
  CONFIG(16, 1)
  return 0;
}

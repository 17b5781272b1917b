"""Patch this tree's wgmma kernel with a per-CTA clock trace (a diagnostic build, never main's): clock64 stamps of
consumer thread 0 (entry, its PDL wait's return, the CTA barrier, the table, each group's `full` wait, the loop's end,
the epilogue's start, the split reduction's barriers, exit), globaltimer at entry and exit (the SM clock per CTA); read
with kbit._C._wgmma_trace_read() (k = 4 kernels; int64 [2048 CTAs, 64 slots], CTA = blockIdx.x + gridDim.x
blockIdx.y), cleared with _wgmma_trace_reset(). One work cluster a CTA (a persistent CTA's later units overwrite its
slots: scripts/probe_wgmma_trace.py launches a cluster per cluster of work). Used by scripts/probe_wgmma_trace.py.

    python scripts/wgmma_trace_patch.py && bash scripts/build_py312.sh   # then restore: git checkout csrc
"""
import pathlib

root = pathlib.Path(__file__).resolve().parent.parent
k = root / "csrc/cuda/gemm/wgmma_gemm.cuh"
s = k.read_text()


def rep(old, new, count=1):
    global s
    assert s.count(old) == count, (s.count(old), old)
    s = s.replace(old, new)


rep("""namespace kbit {
namespace cuda {

// A CTA's share of one work cluster""", """namespace kbit {
namespace cuda {

constexpr int kTraceCtas = 2048, kTraceSlots = 64;
static __device__ long long g_wgmma_trace[kTraceCtas][kTraceSlots];
__device__ __forceinline__ void trace_clock(int slot) {
  const unsigned cta = blockIdx.x + gridDim.x * blockIdx.y;
  if (cta < kTraceCtas && slot < kTraceSlots) g_wgmma_trace[cta][slot] = clock64();
}
__device__ __forceinline__ void trace_value(int slot, long long v) {
  const unsigned cta = blockIdx.x + gridDim.x * blockIdx.y;
  if (cta < kTraceCtas && slot < kTraceSlots) g_wgmma_trace[cta][slot] = v;
}
__device__ __forceinline__ long long global_ns() {
  long long g;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g));
  return g;
}
template <int K>
at::Tensor wgmma_trace_read() {
  at::Tensor t = at::empty({kTraceCtas, kTraceSlots}, at::kLong);
  C10_CUDA_CHECK(cudaDeviceSynchronize());
  C10_CUDA_CHECK(cudaMemcpyFromSymbol(t.data_ptr(), g_wgmma_trace, sizeof(g_wgmma_trace)));
  return t;
}
template <int K>
void wgmma_trace_reset() {
  at::Tensor z = at::zeros({kTraceCtas, kTraceSlots}, at::kLong);
  C10_CUDA_CHECK(cudaMemcpyToSymbol(g_wgmma_trace, z.data_ptr(), sizeof(g_wgmma_trace)));
  C10_CUDA_CHECK(cudaDeviceSynchronize());
}

// A CTA's share of one work cluster""")
rep("""  allow_dependents();
  if (threadIdx.x == 0) prefetch_l2_line(args.codebook);""", """  if (threadIdx.x == 0) trace_value(0, global_ns()), trace_clock(1);
  allow_dependents();
  if (threadIdx.x == 0) prefetch_l2_line(args.codebook);""")
rep("""  __syncthreads();  // the codebook staged""", """  __syncthreads();
  if (threadIdx.x == 0) trace_clock(2);
  // the codebook staged""")
rep("""  grid_dependency_wait();
  const float cb_value""", """  grid_dependency_wait();
  if (threadIdx.x == 0) trace_clock(50);
  const float cb_value""")
rep("""  named_barrier_sync(3, kConsumerThreads);  // the table
""", """  named_barrier_sync(3, kConsumerThreads);  // the table
  if (threadIdx.x == 0) trace_clock(3), trace_value(52, first.n_groups), trace_value(53, first.splits), trace_value(54, 1);
""")
rep("""      mbarrier_wait(&full[stage], (J / S) & 1);  // group J landed
""", """      mbarrier_wait(&full[stage], (J / S) & 1);  // group J landed
      if (threadIdx.x == 0 && J < 40) trace_clock(4 + J);
""")
rep("""  wgmma_wait<0>();
""", """  wgmma_wait<0>();
  if (threadIdx.x == 0) trace_clock(44);
""")
rep("""  // acc[4 n + e] (wgmma D)""", """  if (threadIdx.x == 0) trace_clock(45);
  // acc[4 n + e] (wgmma D)""")
rep("""        mbarrier_arrive(&empty[last_stage]);
      }
    } else {""", """        mbarrier_arrive(&empty[last_stage]);
      }
      if (threadIdx.x == 0) trace_clock(48), trace_value(49, global_ns());
    } else {""")
rep("""  cluster_sync();  // every split's partials written
""", """  if (threadIdx.x == 0) trace_clock(46);
  cluster_sync();  // every split's partials written
  if (threadIdx.x == 0) trace_clock(47);
""")
rep("""  cluster_sync_relaxed();  // no CTA leaves while another reads its shared memory (their sums fed the stores above)
""", """  if (threadIdx.x == 0) trace_clock(51);
  cluster_sync_relaxed();  // no CTA leaves while another reads its shared memory (their sums fed the stores above)
  if (threadIdx.x == 0) trace_clock(48), trace_value(49, global_ns());
""")
k.write_text(s)

k4 = root / "csrc/cuda/gemm/wgmma_gemm_k4.cu"
t = k4.read_text()
old = "template int wgmma_resident_clusters<4>(WgmmaShape, int);\n"
assert t.count(old) == 1
k4.write_text(t.replace(old, old + "template at::Tensor wgmma_trace_read<4>();\ntemplate void wgmma_trace_reset<4>();\n"))

r = root / "csrc/registration.cpp"
t = r.read_text()
old = '  m.def("_wgmma_launch_plan",'
assert t.count(old) == 1
t = t.replace(old, '''  m.def("_wgmma_trace_read", [] { return kbit::cuda::wgmma_trace_read<4>(); });
  m.def("_wgmma_trace_reset", [] { kbit::cuda::wgmma_trace_reset<4>(); });
''' + old)
old = '#include "cuda/gemm/dispatch_query.h"\n'
assert t.count(old) == 1
t = t.replace(old, old + '''#include <ATen/ATen.h>
namespace kbit { namespace cuda {
template <int K> at::Tensor wgmma_trace_read();
template <int K> void wgmma_trace_reset();
} }
''')
r.write_text(t)
print("patched", k, k4, r)

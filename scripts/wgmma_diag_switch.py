"""The device switch that scripts/wgmma_diag_patch.py and scripts/wgmma_order_patch.py add to the traced wgmma kernel
(scripts/wgmma_trace_patch.py first; diagnostic builds, never main's): a `__device__ int g_wgmma_diag` that
kbit._C._wgmma_diag_set(mode) sets (the k = 4 kernels), read into `diag` by every thread of the kernel after its PDL
wait. Each patch then makes the kernel's copies or waits depend on `diag`."""
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
KERNEL = ROOT / "csrc/cuda/gemm/wgmma_gemm.cuh"


def replace_once(s, old, new):
    assert s.count(old) == 1, (s.count(old), old)
    return s.replace(old, new)


def add_diag_switch(s):
    """The kernel's text s with the switch (and `diag` read in the kernel); also patches wgmma_gemm_k4.cu (the
    setter's instantiation) and registration.cpp (kbit._C._wgmma_diag_set)."""
    assert "g_wgmma_trace" in s, "apply scripts/wgmma_trace_patch.py first"
    s = replace_once(s, """template <int K>
at::Tensor wgmma_trace_read() {""", """static __device__ int g_wgmma_diag;
template <int K>
void wgmma_diag_set(int mode) {
  C10_CUDA_CHECK(cudaMemcpyToSymbol(g_wgmma_diag, &mode, sizeof(int)));
  C10_CUDA_CHECK(cudaDeviceSynchronize());
}
template <int K>
at::Tensor wgmma_trace_read() {""")
    s = replace_once(s, """  const float cb_value = codebook_entry<K>(args.codebook);
""", """  const float cb_value = codebook_entry<K>(args.codebook);
  const int diag = *reinterpret_cast<volatile int*>(&g_wgmma_diag);
""")
    k4 = ROOT / "csrc/cuda/gemm/wgmma_gemm_k4.cu"
    old = "template void wgmma_trace_reset<4>();\n"
    k4.write_text(replace_once(k4.read_text(), old, old + "template void wgmma_diag_set<4>(int);\n"))
    r = ROOT / "csrc/registration.cpp"
    t = r.read_text()
    old = '  m.def("_wgmma_trace_reset",'
    t = replace_once(t, old, '  m.def("_wgmma_diag_set", [](int mode) { kbit::cuda::wgmma_diag_set<4>(mode); });\n' + old)
    old = "template <int K> void wgmma_trace_reset();\n"
    r.write_text(replace_once(t, old, old + "template <int K> void wgmma_diag_set(int);\n"))
    return s

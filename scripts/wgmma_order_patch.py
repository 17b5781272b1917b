"""The order of the wgmma producers' copies as a runtime switch (apply after scripts/wgmma_trace_patch.py on d2a2b59's
kernel, whose weight tiles have barriers of their own; a diagnostic build, never main's; results correct in every
mode). kbit._C._wgmma_diag_set(mode) (the name scripts/probe_wgmma_diag_bench.py calls) picks, for the next launches:

    0  a group's tiles right after its x (the order of main's kernel before d2a2b59)
    1  group J's x, then group J + 1's tiles (the tiles a group ahead, behind x)
    2  group J + 1's tiles, then group J's x (d2a2b59's order)

Question (session 50 run 6: d2a2b59 3-13% slower than main's build at M >= 128): whether a stage's x waits behind
the tiles' copies from DRAM issued before it.

    python scripts/wgmma_trace_patch.py && python scripts/wgmma_order_patch.py && bash scripts/build_py312.sh
    # then restore: git checkout csrc
"""
import pathlib

root = pathlib.Path(__file__).resolve().parent.parent
k = root / "csrc/cuda/gemm/wgmma_gemm.cuh"
s = k.read_text()


def rep(old, new, count=1):
    global s
    assert s.count(old) == count, (s.count(old), old)
    s = s.replace(old, new)


assert "g_wgmma_trace" in s, "apply scripts/wgmma_trace_patch.py first"
rep("""template <int K>
at::Tensor wgmma_trace_read() {""", """static __device__ int g_wgmma_diag;
template <int K>
void wgmma_diag_set(int mode) {
  C10_CUDA_CHECK(cudaMemcpyToSymbol(g_wgmma_diag, &mode, sizeof(int)));
  C10_CUDA_CHECK(cudaDeviceSynchronize());
}
template <int K>
at::Tensor wgmma_trace_read() {""")
rep("""  const float cb_value = codebook_entry<K>(args.codebook);
""", """  const float cb_value = codebook_entry<K>(args.codebook);
  const int diag = *reinterpret_cast<volatile int*>(&g_wgmma_diag);
""")
rep("""    while (x_at.valid && x_at.J < limit) {
      while (tiles_at.valid && tiles_at.J <= x_at.J + 1 && tiles_at.J < limit) {
        copy_tiles(tiles_at.w, tiles_at.j, tiles_at.J);
        advance(tiles_at);
      }
      copy_x(x_at.w, x_at.j, x_at.J);
      advance(x_at);
    }""", """    while (x_at.valid && x_at.J < limit) {
      const uint32_t xj = x_at.J, ahead = diag == 0 ? 0 : 1;
      if (diag != 2) {
        copy_x(x_at.w, x_at.j, x_at.J);
        advance(x_at);
      }
      while (tiles_at.valid && tiles_at.J <= xj + ahead && tiles_at.J < limit) {
        copy_tiles(tiles_at.w, tiles_at.j, tiles_at.J);
        advance(tiles_at);
      }
      if (diag == 2) {
        copy_x(x_at.w, x_at.j, x_at.J);
        advance(x_at);
      }
    }""")
k.write_text(s)

k4 = root / "csrc/cuda/gemm/wgmma_gemm_k4.cu"
t = k4.read_text()
old = "template void wgmma_trace_reset<4>();\n"
assert t.count(old) == 1
k4.write_text(t.replace(old, old + "template void wgmma_diag_set<4>(int);\n"))

r = root / "csrc/registration.cpp"
t = r.read_text()
old = '  m.def("_wgmma_trace_reset",'
assert t.count(old) == 1
t = t.replace(old, '  m.def("_wgmma_diag_set", [](int mode) { kbit::cuda::wgmma_diag_set<4>(mode); });\n' + old)
old = "template <int K> void wgmma_trace_reset();\n"
assert t.count(old) == 1
t = t.replace(old, old + "template <int K> void wgmma_diag_set(int);\n")
r.write_text(t)
print("patched", k, k4, r)

"""The order of the wgmma producers' copies as a runtime switch (apply after scripts/wgmma_trace_patch.py on d2a2b59's
kernel, whose weight tiles have barriers of their own; a diagnostic build, never main's; results correct in every
mode). kbit._C._wgmma_diag_set(mode) (the name scripts/probe_wgmma_diag_bench.py calls) picks, for the next launches:

    0  a group's tiles right after its x (the order of main's kernel before d2a2b59)
    1  group J's x, then group J + 1's tiles (the tiles a group ahead, behind x)
    2  group J + 1's tiles, then group J's x (d2a2b59's order)

Question (session 50 run 6: d2a2b59 2-13% slower than main's build at M = 128-1024): whether a stage's x waits behind
the tiles' copies from DRAM issued before it.

    python scripts/wgmma_trace_patch.py && python scripts/wgmma_order_patch.py && bash scripts/build_py312.sh
    # then restore: git checkout csrc
"""
from wgmma_diag_switch import KERNEL, add_diag_switch, replace_once

s = add_diag_switch(KERNEL.read_text())


def rep(old, new):
    global s
    s = replace_once(s, old, new)


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
KERNEL.write_text(s)
print("patched", KERNEL, "wgmma_gemm_k4.cu, registration.cpp")

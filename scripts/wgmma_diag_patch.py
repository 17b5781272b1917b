"""Diagnostic modes for the traced wgmma kernel (main's, after scripts/wgmma_trace_patch.py; a diagnostic build, never
main's; results are WRONG in modes 1-4 and 6-8, timing only). kbit._C._wgmma_diag_set(mode) picks, for the next
launches (after the CTA's first S groups):

    0  the kernel as it is
    1  no copies after the first S groups (each group J >= S computes on stage J % S's old data, no waits)
    2  every copy, but the consumers wait only for the first S groups (the producer waits for each of its groups
       to land before the next, so none is in flight at the CTA's exit)
    3  as 2, with only x's panels copied after the first S groups (the weights' stage bytes stale)
    4  as 2, with only the weight tiles copied after the first S groups (x stale)
    5  the kernel as it is, plus an L2 prefetch of the next group's weight tiles when a group's copies are issued
       (results correct)
    6  x's panels 0 and 1 only after the first S groups (half of x's bytes), the consumers waiting as usual
    7  only x copied after the first S groups, the consumers waiting as usual (3 with its waits)
    8  only the weight tiles copied after the first S groups, the consumers waiting as usual (4 with its waits)
    9, 10, 11  the kernel as it is, plus an L2 prefetch of the weight tiles' codes and absmax 2, 1 and 4 groups
       ahead when a group's copies are issued (results correct)

Question (session 50): whether the ~20% of a 128 x 128 unit's group time over the resident-data microbenchmark's
(session 31) is the copies' arrival (modes 1, 2 faster than 0), their traffic into shared memory (1 faster, 2 not),
or neither.

    python scripts/wgmma_trace_patch.py && python scripts/wgmma_diag_patch.py && bash scripts/build_py312.sh
    # then restore: git checkout csrc
"""
from wgmma_diag_switch import KERNEL, add_diag_switch, replace_once

s = add_diag_switch(KERNEL.read_text())


def rep(old, new):
    global s
    s = replace_once(s, old, new)


# producers: skip or thin the refills
rep("""    const int stage = static_cast<int>(J % S);
    if (J >= S) mbarrier_wait(&empty[stage], ((J / S) - 1) & 1);  // group J - S released""",
    """    const int stage = static_cast<int>(J % S);
    if (diag == 1 && J >= S) return;
    if (J >= S) mbarrier_wait(&empty[stage], ((J / S) - 1) & 1);  // group J - S released
    const bool copy_x = !((diag == 4 || diag == 8 || (diag == 6 && producer_warp >= 2)) && J >= S);
    const bool copy_w = !((diag == 3 || diag == 7) && J >= S);""")
rep("""    mbarrier_arrive_expect_tx(&full[stage], kPanelBytes + my_tiles * kTileBytes);
    tensor_copy_2d_to_shared(""", """    mbarrier_arrive_expect_tx(&full[stage], (copy_x ? kPanelBytes : 0) + (copy_w ? my_tiles * kTileBytes : 0));
    if (copy_x) tensor_copy_2d_to_shared(""")
rep("""    for (int c = producer_warp; c < w.live_tiles; c += kWgProducerWarps) {
      const int64_t tile = (w.cta_tile0 + c) * G + grp;
      unsigned char* dst = st + kXBytes + c * kTileBytes;""", """    for (int c = producer_warp; c < w.live_tiles; c += kWgProducerWarps) {
      const int64_t tile = (w.cta_tile0 + c) * G + grp;
      if (diag == 5 && grp + 1 < G) prefetch_l2(args.packed + (tile + 1) * tile_words(K), K * 512);
      if (const int d = diag == 9 ? 2 : diag == 10 ? 1 : diag == 11 ? 4 : 0; d > 0 && grp + d < G) {
        prefetch_l2(args.packed + (tile + d) * tile_words(K), K * 512);
        prefetch_l2(args.absmax + (tile + d) * kAbsmaxBytesPerTile, kAbsmaxBytesPerTile);
      }
      if (!copy_w) continue;
      unsigned char* dst = st + kXBytes + c * kTileBytes;""")
# modes 2-4: the producer waits for each of its groups from S on to land before the next (the consumers do not wait
# for those, so the CTA must not exit with copies in flight; a normal producer issues group J + 1 after J landed
# anyway, as the consumers release J - 1 only a few steps into J). Session 50's runs 1-4 used a version that waited
# from group 0 on, before the CTA barrier too: the table was built ~750-1000 cycles later in those modes.
rep("""      bulk_copy_to_shared(dst + K * 512, args.absmax + tile * kAbsmaxBytesPerTile, kAbsmaxBytesPerTile, &full[stage]);
    }
  };""", """      bulk_copy_to_shared(dst + K * 512, args.absmax + tile * kAbsmaxBytesPerTile, kAbsmaxBytesPerTile, &full[stage]);
    }
    if (diag >= 2 && diag <= 4 && J >= S) mbarrier_wait(&full[stage], (J / S) & 1);
  };""")
# consumers: skip the waits after the first S groups (modes 1-4)
rep("""      mbarrier_wait(&full[stage], (J / S) & 1);  // group J landed
""", """      if (!(diag >= 1 && diag <= 4 && J >= S)) mbarrier_wait(&full[stage], (J / S) & 1);  // group J landed
""")
KERNEL.write_text(s)
print("patched", KERNEL, "wgmma_gemm_k4.cu, registration.cpp")

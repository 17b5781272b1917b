"""Every kbit CUDA kernel on small shapes, for compute-sanitizer (scripts/sanitize.sh).

Covers: quantize (k = 2..5; fp16, bf16, fp32; odd N; rows of a warp and of a CTA), dequantize (flat and tiled; the
tiled one into fp16 / bf16 alone: `... cuda dequant-tiled`), repack,
unrepack, the tile kernel (token tiles 1/2/4/8, chunks, partial row blocks, K tail, split-K;
grouped: empty experts, one expert with every token, invalid offsets),
gemm through the small-M tensor-core kernel (token tiles 1/2/4/8, partial tiles, a K tail
that is not a multiple of 256, split-K, small K with several units per CTA, two warps per unit
on N >= 4096) and through
dequantize + cuBLAS (M = 129, past the GEMV's and tile kernels' range, and the dequant_cublas_gemm op, with
capped row scales: `... cuda dequant-cublas`), grouped gemm with empty experts, one expert with every token
(chunked), one warp per unit (many experts), invalid offsets, and the E > 1024 fallback; the dense GEMV with x
resident in CTAs of several unit slots and the decode layouts of session 28 (`python3 scripts/sanitize_cases.py cuda
gemv-slots`: those cases alone) and its
cluster split (`... cuda gemv-split`: those alone);
the wgmma kernel's cluster split-K, x by tensor copies (`... cuda wgmma-splits`: those alone; `... cuda
wgmma-persistent`: four launches of its persistent CTAs, for racecheck; `... cuda wgmma-stream`: its stream-K
schedule); the
grouped GEMV's per-CTA schedules, the scans with their warp lookup and the row form (`... cuda grouped-schedule`: those alone)
and its x shared by a CTA's warps (`... cuda grouped-shared-x`: those alone); kbit.Experts' glue ops (`... cuda moe-glue`: those alone) and its calls by slot (`... cuda moe-slots`); the
dense GEMV's gated epilogue (`... cuda gated-gemv`) and the decode forms of session 66's rule (`... cuda
gemv-decode-path`). Checks results loosely against a dense
matmul so that a run that computes garbage fails even when the sanitizer is quiet.
"""
import itertools
import sys

import torch

import kbit
from benchmarks.session import tuning_aids  # (the tree on PYTHONPATH: scripts/gpu_build.sh, sanitize.sh)


def check(y, ref, what, bound=5e-3):
    err = float((y.double() - ref).norm() / ref.norm().clamp_min(1e-30))
    if not err < bound:
        sys.exit(f"{what}: relative error {err:.2e}")


def gemv_unit_slot_cases(dev="cuda"):
    """The dense GEMV with x resident in CTAs of several unit slots (every warp copies a share of the
    x image, which every slot reads: a missing wait or barrier is a race): 4 warps per unit, three
    tiles (slots without a unit), 301 tiles with token chunks and at 8 token slots (each item's index
    recomputed from its unit, session 29)."""
    if dev != "cuda":
        return
    prev_w, prev_mode = kbit._C._set_gemv_unit_warps(4), kbit._C._set_gemv_x_resident(2)
    try:
        for N, K, M in ((33, 4352, 16), (4801, 2080, 40), (4801, 2080, 6), (33, 4352, 8)):
            qw = kbit.quantize(torch.randn(N, K, device=dev), k=4)
            p = kbit._C._gemv_launch_plan(M, N, K, 4)
            assert p["x_resident"], p
            x = torch.randn(M, K, device=dev, dtype=torch.float16)
            y = torch.ops.kbit.gemv_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4, "mma")
            check(y, x.double() @ kbit.dequantize(qw, torch.float32).double().T,
                  f"gemv x resident N={N} K={K} M={M} warps={p['warps']} per unit={p['warps_per_unit']}")
    finally:
        kbit._C._set_gemv_x_resident(prev_mode)
        kbit._C._set_gemv_unit_warps(prev_w)


def gemv_layout_cases(dev="cuda"):
    """The dense GEMV's decode layouts (session 28): x resident at 2-3 rows in two 4-warp unit slots (x loaded only
    by the lanes whose B columns are stored), and x staged in unit slots of 3 ring stages and with the wide pair
    table (the rings in its gaps), at 1 and 3-4 rows on 301 tiles and on 3 tiles (slots without units); and x staged
    one unit a CTA (the rule's layout: since session 46 its PDL wait comes after the index arithmetic, and the
    codebook by cp.async into the sums' space) at 1 and 4 rows, on both weights."""
    if dev != "cuda":
        return
    aids = (kbit._C._set_gemv_unit_warps, kbit._C._set_gemv_x_resident, kbit._C._set_gemv_staged_layout,
            kbit._C._set_gemv_staged_stages, kbit._C._set_gemv_split_cluster)
    prev = [set_aid(v) for set_aid, v in zip(aids, (4, 0, -1, 0, 0))]
    try:
        for N, K in ((4801, 2080), (33, 4352)):
            qw = kbit.quantize(torch.randn(N, K, device=dev), k=4)
            ref_w = kbit.dequantize(qw, torch.float32).double()
            for xres, layout, stages, M in ((2, -1, 0, 2), (2, -1, 0, 3), (0, 1, 3, 1), (0, 1, 3, 3), (0, 2, 0, 1),
                                            (0, 2, 0, 4), (0, 0, 0, 1), (0, 0, 0, 4)):
                for set_aid, v in zip(aids[1:4], (xres, layout, stages)):
                    set_aid(v)
                p = kbit._C._gemv_launch_plan(M, N, K, 4)
                x = torch.randn(M, K, device=dev, dtype=torch.float16)
                y = torch.ops.kbit.gemv_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4, "mma")
                check(y, x.double() @ ref_w.T, f"gemv N={N} K={K} M={M} x resident {p['x_resident']} layout "
                      f"{p['staged_layout']} stages {p['ring_stages']} warps {p['warps']}/{p['warps_per_unit']}")
    finally:
        for set_aid, v in zip(aids, prev):
            set_aid(v)


def gemv_cluster_split_cases(dev="cuda"):
    """The dense GEMV's cluster split (scalar_gemv_split.cuh: pieces of a tile written into another CTA's
    shared memory, added up after the cluster's barrier) in clusters of 2, 4 and 8: 301 tiles of 17 groups,
    3 tiles with a K tail, 17 tiles of 20 groups (k = 4, fp16); and k = 2 and 5 with bf16 on the first."""
    if dev != "cuda":
        return
    prev = kbit._C._set_gemv_split_cluster(2)
    try:
        for N, K, M, k, dt in ((4801, 4352, 1, 4, torch.float16), (33, 2080, 4, 4, torch.float16),
                               (257, 5120, 3, 4, torch.float16), (4801, 4352, 2, 2, torch.bfloat16),
                               (4801, 4352, 4, 5, torch.bfloat16)):
            qw = kbit.quantize(torch.randn(N, K, device=dev), k=k)
            x = torch.randn(M, K, device=dev, dtype=dt)
            for cluster in (2, 4, 8):
                kbit._C._set_gemv_split_cluster(cluster)
                p = kbit._C._gemv_launch_plan(M, N, K, k)
                y = torch.ops.kbit.gemv_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k, "mma")
                check(y, x.double() @ kbit.dequantize(qw, torch.float32).double().T,
                      f"gemv cluster split N={N} K={K} M={M} k={k} {dt} cluster={p['split_cluster']}")
    finally:
        kbit._C._set_gemv_split_cluster(prev)


def wgmma_persistent_cases(dev="cuda"):
    """Persistent wgmma CTAs in twenty-four launches, for the slow tools (racecheck): CTAs of 80, 96, 112, 128, 144 and
    160 tokens (M = 130, N = 1024, K = 2080: 8 row blocks of 128 rows x 2 token chunks, 16 units; 144 and 160: one
    chunk, 8 units), kbit._C._set_wgmma_grid_clusters(1): one split, one cluster launched, running every unit in turn;
    two splits after one cluster of whole units (kbit._C._set_wgmma_whole_clusters(1)), the launch clamped to the split
    units' clusters (14; 6 at 144 and 160 tokens), so cluster 0 runs the whole units' cluster and then the last split
    unit. The first stage's copies alone (2) and never alone (1)."""
    if dev != "cuda" or not kbit._C.wgmma_gemm_runs(4, 16):
        return
    with tuning_aids(wgmma_splits=1, wgmma_row_tiles=8, wgmma_first_stage_alone=0, wgmma_grid_clusters=1,
                     wgmma_whole_clusters=0, wgmma_tokens=0) as aid:
        N, K, M = 1024, 2080, 130
        qw = kbit.quantize(torch.randn(N, K, device=dev), k=4)
        x = torch.randn(M, K, device=dev, dtype=torch.float16)
        ref = x.double() @ kbit.dequantize(qw, torch.float32).double().T
        for tokens, splits, alone in itertools.product((80, 96, 112, 128, 144, 160), (1, 2), (1, 2)):
            aid["wgmma_tokens"](tokens)
            aid["wgmma_splits"](splits)
            aid["wgmma_whole_clusters"](1 if splits > 1 else 0)
            aid["wgmma_first_stage_alone"](alone)
            plan = kbit._C._wgmma_launch_plan(M, N, K, 4)
            if plan["grid_ctas"] >= plan["ctas"]:
                sys.exit(f"wgmma persistent case: the plan launches {plan['grid_ctas']} CTAs for {plan['ctas']}")
            y = torch.ops.kbit.wgmma_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4)
            check(y, ref, f"wgmma_gemm persistent N={N} K={K} M={M} tokens={tokens} splits={splits} alone={alone}")


def wgmma_stream_cases(dev="cuda"):
    """The wgmma kernel's stream-K schedule (kbit._C._set_wgmma_stream(2): CTAs sharing the units' steps, a unit's
    pieces through the global workspace, added by the last to count), for memcheck / racecheck / synccheck: N = 1024,
    K = 2080 (9 groups, a K tail) at M = 130 in chunks of 80 (two lanes of 8 row blocks) and 144 (one lane) on a CTA
    per SM (one or two steps each: units over several CTAs), at most 5 CTAs (several units each, pieces at both ends)
    and at most 3 (at 80 tokens one CTA a lane: whole units only; at 144 three); N = 300 (3 row blocks, the last
    partial) in bf16."""
    if dev != "cuda" or not kbit._C.wgmma_gemm_runs(4, 16):
        return
    with tuning_aids(wgmma_stream=2, wgmma_tokens=0, wgmma_grid_clusters=0) as aid:
        for N, K, M, dt in ((1024, 2080, 130, torch.float16), (300, 2080, 130, torch.bfloat16)):
            qw = kbit.quantize(torch.randn(N, K, device=dev), k=4)
            x = torch.randn(M, K, device=dev, dtype=dt)
            ref = x.double() @ kbit.dequantize(qw, torch.float32).double().T
            for tokens, grid in itertools.product((80, 144), (0, 5, 3)):
                aid["wgmma_tokens"](tokens)
                aid["wgmma_grid_clusters"](grid)
                plan = kbit._C._wgmma_launch_plan(M, N, K, 4)
                if not plan["stream"]:
                    sys.exit(f"wgmma stream case: no stream-K plan for N={N} K={K} M={M} tokens={tokens} grid={grid}")
                y = torch.ops.kbit.wgmma_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4)
                check(y, ref, f"wgmma_gemm stream N={N} K={K} M={M} tokens={tokens} CTAs={plan['grid_ctas']} {dt}")


def wgmma_split_cases(dev="cuda", shapes=None):
    """The wgmma kernel's K-splits as clusters (partials added through distributed shared memory), x by tensor copies
    (TMA) from x itself (zeros past M and K): 2, 3 and 8 splits, a partly filled row block, a K tail, token chunks of 16
    and 64, and from M = 33 both CTA shapes (8 row tiles: the rule's 64, 112 or 80 tokens at M = 40, 100, 130; 16:
    chunks of 64). Also one split (y's tile through shared memory; N = 1024: its 16-byte pieces), and every stage
    requested at the start (the rule requests the first stage alone). With splits, also the split tail: one cluster of
    whole units before the split ones (kbit._C._set_wgmma_whole_clusters). And persistent CTAs (the rule's chunks at M =
    100 and 130): one cluster launched (at least the split units': kbit._C._set_wgmma_grid_clusters(1)), running every
    whole unit in turn, with the first stage alone and every stage at the start. `shapes`: indices into the four (N, K,
    M) cases (None: all), so a slow tool (racecheck) can take them in parts."""
    if dev != "cuda" or not kbit._C.wgmma_gemm_runs(4, 16):
        return
    with tuning_aids(wgmma_splits=1, wgmma_row_tiles=0, wgmma_first_stage_alone=0, wgmma_whole_clusters=0,
                     wgmma_grid_clusters=0) as aid:
        cases = ((300, 2080, 40), (17, 4096, 5), (300, 2080, 100), (1024, 2080, 130))
        for N, K, M in (cases if shapes is None else [cases[i] for i in shapes]):
            qw = kbit.quantize(torch.randn(N, K, device=dev), k=4)
            ref_w = kbit.dequantize(qw, torch.float32).double()
            x = torch.randn(M, K, device=dev, dtype=torch.float16)
            for row_tiles in ((8, 16) if M > 32 else (0,)):
                for splits in (1, 2, 3, 8):
                    for alone, whole, grid in ((0, 0, 0), (1, 0, 0), (0, 0, 1), (1, 0, 1)) + (
                            ((0, 1, 0), (0, 1, 1)) if splits > 1 else ()):
                        # alone: the rule (the first stage alone), every stage at the start; whole: clusters of
                        # whole units before the split ones; grid: clusters launched (0: the rule's)
                        aid["wgmma_row_tiles"](row_tiles)
                        aid["wgmma_splits"](splits)
                        aid["wgmma_first_stage_alone"](alone)
                        aid["wgmma_whole_clusters"](whole)
                        aid["wgmma_grid_clusters"](grid)
                        y = torch.ops.kbit.wgmma_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4)
                        check(y, x.double() @ ref_w.T, f"wgmma_gemm N={N} K={K} M={M} row_tiles={row_tiles} "
                              f"splits={splits} alone={alone} whole_clusters={whole} grid_clusters={grid}")


def grouped_schedule_cases(dev="cuda"):
    """The grouped GEMV with the per-CTA schedules (E > 32) under both forms (kbit._C.
    _set_gemv_grouped_schedule 0: the scans, whose units a warp's ballots look up over the groups of 32
    experts the build writes into its scan scratch; 2, the default: one row per chunk where T <= E,
    the row -> expert map, RowSchedule; a missing barrier is a race): 1 and 4 rows per chunk, E = 72 and
    300 (a partial last group), empty experts, invalid offsets at a group's edge (out of order: the
    row form falls back to the scans); 72 x 33 tiles takes one warp per unit (sums stored from the
    warp's lanes)."""
    if dev != "cuda":
        return
    for form in (0, 2):
        prev = kbit._C._set_gemv_grouped_schedule(form)
        try:
            _grouped_schedule_cases_once(dev)
        finally:
            kbit._C._set_gemv_grouped_schedule(prev)


def _grouped_schedule_cases_once(dev):
    for E, N, counts_of in ((72, 40, lambda e: 1), (300, 40, lambda e: 1 if e % 7 == 0 else 0),
                            (40, 40, lambda e: 4 * (e % 5 != 0)), (72, 520, lambda e: 1)):
        qe = kbit.quantize(torch.randn(E, N, 96, device=dev), k=4)
        counts = [counts_of(e) for e in range(E)]
        o = [0]
        for c in counts:
            o.append(o[-1] + c)
        x = torch.randn(o[-1], 96, device=dev, dtype=torch.float16)
        off = torch.tensor(o, device=dev, dtype=torch.int32)
        y = torch.ops.kbit.grouped_gemv_gemm(x, qe.packed, qe.absmax, qe.row_scale, qe.codebook, off, 4, "mma")
        We = kbit.dequantize(qe, torch.float32).double().cpu()
        xc = x.double().cpu()
        check(y.cpu(), torch.cat([xc[o[e]:o[e + 1]] @ We[e].T for e in range(E)]), f"grouped GEMV E={E}")
    # invalid offsets at the edge of the first group of 32 experts: the kernel must stay in bounds
    qe = kbit.quantize(torch.randn(40, 40, 96, device=dev), k=4)
    x = torch.randn(10, 96, device=dev, dtype=torch.float16)
    for bad in ([0] * 31 + [2, 1, 7] + [10] * 7, [0] * 31 + [2, 5, 99] + [10] * 7, [0] * 31 + [-5, 5, 7] + [10] * 7):
        off = torch.tensor(bad, device=dev, dtype=torch.int32)
        torch.ops.kbit.grouped_gemv_gemm(x, qe.packed, qe.absmax, qe.row_scale, qe.codebook, off, 4, "mma")
    torch.cuda.synchronize()


def grouped_shared_x_cases(dev="cuda"):
    """The grouped GEMV with x shared by a CTA's warps (one warp per unit: each warp copies its share of a round's x
    into the image of the round's parity, which every warp reads after the round's named barrier; a missing wait or
    barrier is a race): CTAs of 16 and of 8 warps (kbit._C._set_gemv_grouped_x_shared 1 and 2; 2048 units of 8 token
    slots take two rounds a CTA in 8-warp CTAs), a K tail (2080: 9 groups), experts of several chunks and empty
    ones, and 4 token slots on K = 1024 (24 tiles: 8-warp CTAs); and runs of 2 units a warp a round
    (kbit._C._set_gemv_shared_x_run 2, and 4 in 8-warp CTAs: K of 2 groups with a tail, 480, and empty experts, and
    the first two cases; the rounds counted above are one unit a warp's), and runs of 4 over two rounds a CTA (272
    experts on 32 tiles, K = 512: more units than 8-warp CTAs take in one round on up to 132 SMs); and x shared at 4
    token slots on K of 2 groups (mode 3; 480, empty experts), one unit and runs of 4 a warp a round."""
    if dev != "cuda":
        return
    prev, prev_run = kbit._C._set_gemv_grouped_x_shared(1), kbit._C._set_gemv_shared_x_run(0)
    prev_warps = kbit._C._set_gemv_unit_warps(0)
    try:
        for mode, run in ((1, 0), (2, 0), (1, 2), (2, 2), (2, 4), (3, 1), (3, 4)):
            kbit._C._set_gemv_grouped_x_shared(mode)
            kbit._C._set_gemv_shared_x_run(run)
            kbit._C._set_gemv_unit_warps(1 if mode == 3 else 0)  # (mode 3's small case: the rule would keep 2)
            for E, N, K, counts in ((64, 512, 2048, [8] * 64), (64, 512, 2080, [(e * 7) % 13 for e in range(64)]),
                                    (96, 384, 1024, [4 * (e % 16 != 0) for e in range(96)]),
                                    (48, 1024, 480, [8 * (e % 5 != 0) for e in range(48)]),
                                    (272, 512, 512, [8] * 272),
                                    (32, 1024, 480, [4 * (e % 5 != 0) for e in range(32)])):
                if (run >= 2 and N == 384) or (E == 272 and (mode, run) != (2, 4)) or ((mode == 3) != (E == 32)):
                    continue  # (24 tiles: no runs of 2 or 4 in 8-warp CTAs; 272 experts: runs of 4 alone; mode 3: E = 32)
                qe = kbit.quantize(torch.randn(E, N, K, device=dev), k=4)
                o = [0]
                for c in counts:
                    o.append(o[-1] + c)
                p = kbit._C._grouped_gemv_launch_plan(o[-1], E, N, K, 4)
                assert p["x_shared"] and (mode != 2 or p["warps"] == 8) and (run < 2 or p["x_shared_run"] == run), p
                x = torch.randn(o[-1], K, device=dev, dtype=torch.float16)
                off = torch.tensor(o, device=dev, dtype=torch.int32)
                y = torch.ops.kbit.grouped_gemv_gemm(x, qe.packed, qe.absmax, qe.row_scale, qe.codebook, off, 4, "mma")
                We = kbit.dequantize(qe, torch.float32).double().cpu()
                xc = x.double().cpu()
                check(y.cpu(), torch.cat([xc[o[e]:o[e + 1]] @ We[e].T for e in range(E)]),
                      f"grouped GEMV x shared E={E} N={N} K={K} warps={p['warps']} stages={p['ring_stages']} "
                      f"run={p['x_shared_run']}")
    finally:
        kbit._C._set_gemv_grouped_x_shared(prev)
        kbit._C._set_gemv_shared_x_run(prev_run)
        kbit._C._set_gemv_unit_warps(prev_warps)
    torch.cuda.synchronize()


def moe_glue_cases(dev="cuda"):
    """kbit.Experts' glue ops: moe_route's one-CTA kernel (counts in shared memory, the scan, the
    placement warp; ids of no expert; at its 4096-pair and 8191-expert limits) and past them (ATen),
    moe_gather (every copy width, rows out of range), moe_route_gather (its fused kernel: every CTA sorts; up to
    1024 pairs and 8191 experts, else the two ops), grouped_gemm_silu_and_mul (gated epilogue, interleaved silu),
    silu_and_mul, moe_combine (top-300: two rounds of
    staged slots); then a whole Experts forward (the grouped GEMMs on the routed rows)."""
    if dev != "cuda":
        return
    torch.manual_seed(22)
    for T, topk, E in ((3, 8, 128), (512, 8, 64), (4096, 1, 8191), (4097, 1, 4), (1, 1, 1), (2, 300, 512),
                       (128, 8, 8191)):
        ids = torch.randint(-1, E + 1, (T, topk), device=dev)
        off, tok, pair_row = torch.ops.kbit.moe_route(ids, E)
        off_c, tok_c, row_c = torch.ops.kbit.moe_route(ids.cpu(), E)
        assert torch.equal(off.cpu(), off_c) and torch.equal(tok.cpu(), tok_c) and torch.equal(pair_row.cpu(), row_c)
        for H in (96, 300, 6, 3):  # 16-, 8-, 4- and 2-byte copies of fp16 rows; out-of-range rows: NaN, read nothing
            x = torch.randn(T, H, device=dev, dtype=torch.float16)
            assert torch.equal(torch.ops.kbit.moe_gather(x, tok).cpu(), x.cpu()[tok.cpu()])
            bad = torch.ops.kbit.moe_gather(x, torch.tensor([T, -1, 0], device=dev)).cpu()
            assert bad[:2].isnan().all() and torch.equal(bad[2], x[0].cpu())
            fused = torch.ops.kbit.moe_route_gather(ids, E, x)  # one kernel up to 1024 pairs and 8191 experts
            for got, want in zip(fused, (off, tok, pair_row, x[tok])):
                assert torch.equal(got, want)
        y = torch.randn(T * topk, 96, device=dev, dtype=torch.float16)
        w = torch.rand(T, topk, device=dev)
        out = torch.ops.kbit.moe_combine(y, w, ids, pair_row, E)
        # (references in float64: every pair of E = 1 may have no expert, and a zero fp16 norm's clamp
        # underflows)
        check(out.cpu(), torch.ops.kbit.moe_combine(y.cpu(), w.cpu(), ids.cpu(), pair_row.cpu(), E).double(),
              "moe_combine")
        h = torch.randn(T, 2 * 80, device=dev, dtype=torch.bfloat16)
        check(torch.ops.kbit.silu_and_mul(h).cpu(), torch.ops.kbit.silu_and_mul(h.cpu()).double(), "silu_and_mul")
    # the gate/up call: the grouped GEMV's gated epilogue at 1- and 2-row chunks (one warp a unit, and the slot's
    # sums in shared memory at 8 experts), silu_and_mul on the interleaved columns at 8-row chunks; against the ops
    for E, rows in ((128, 8), (8, 8), (16, 24), (16, 128)):
        qw = kbit.quantize(torch.randn(E, 256, 512, device=dev) * 0.05, k=4)
        x = torch.randn(rows, 512, device=dev, dtype=torch.float16)
        off = torch.linspace(0, rows, E + 1, device=dev).round().to(torch.int32)
        args = (qw.packed, qw.absmax, qw.row_scale, qw.codebook, off, 4)
        h = torch.ops.kbit.grouped_gemm(x, *args)
        assert torch.equal(torch.ops.kbit.grouped_gemm_silu_and_mul(x, *args),
                           torch.ops.kbit.silu_and_mul(h, interleaved=True))
    ex = kbit.Experts.from_weights(torch.randn(40, 64, 96, device=dev) * 0.1, torch.randn(40, 96, 32, device=dev) * 0.1)
    ids = torch.randint(-1, 41, (6, 4), device=dev)
    x, w = torch.randn(6, 96, device=dev, dtype=torch.bfloat16), torch.rand(6, 4, device=dev)
    # two bf16 forwards (CUDA and CPU: each grouped GEMM within bf16's 4e-3 of exact, h rounded to bf16 between
    # them) against each other: 1e-2 (session 57's run 10 read 5.11e-3 on these inputs)
    check(ex(x, ids, w).cpu(), ex.cpu()(x.cpu(), ids.cpu(), w.cpu()).double(), "Experts forward", bound=1e-2)
    torch.cuda.synchronize()


def dequant_tiled_cases(dev="cuda"):
    """The tiled dequantize into fp16 / bf16 (on sm_90+ through stmatrix and a per-warp row tile in shared memory,
    session 37; a missing __syncwarp is a race): k = 2-5, odd N, a K tail, experts, against the flat dequantize."""
    for k in (2, 3, 4, 5):
        for shape in ((37, 320), (3, 19, 544), (16, 2080)):
            qw = kbit.quantize(torch.randn(*shape, device=dev), k=k)
            flat = qw.to_layout("flat")
            for dt in (torch.float16, torch.bfloat16):
                got, want = kbit.dequantize(qw, dt), kbit.dequantize(flat, dt)
                if not torch.equal(got, want):
                    sys.exit(f"dequantize tiled vs flat: k={k} shape={shape} {dt}")


def dequant_cublas_cases(dev="cuda"):
    """The dequantize + cuBLAS path alone (the dequant_cublas_gemm op), k = 2-5, N = 40 and 37; at N = 37 every third
    row's row scale is past fp16's cap (2^8), so with fp16 x (k = 3, 5) the capped columns' epilogue reads and
    rewrites y there."""
    if dev != "cuda":
        return
    for k in (2, 3, 4, 5):
        xdt = torch.float16 if k % 2 else torch.bfloat16
        for N in (40, 37):
            W = torch.randn(N, 320, device=dev)
            if N == 37:
                W[0::3] *= 2.0 ** 20
            qw = kbit.quantize(W, k=k)
            x = torch.randn(5, 320, device=dev, dtype=xdt) * (2.0 ** -14 if N == 37 else 1.0)
            y = torch.ops.kbit.dequant_cublas_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k)
            check(y, x.double() @ kbit.dequantize(qw, torch.float32).double().T, f"dequant_cublas k={k} N={N}")


def moe_slot_cases(dev="cuda"):
    """kbit::grouped_gemm_slots' grouped GEMV by slot (session 60): one token's top-8 of 128 experts (gated and not),
    the down call's form (8 tokens x 1 slot), top-10 of 512 at 3 tokens (30 slots), 32 slots with repeated experts,
    ids outside [0, E) (NaN rows; their units read expert 0's weights, not x), K with a tail of 32-column blocks;
    moe_combine without pair_row; kbit.Experts' forward at one token (its slot path). Against the CPU op (the routed
    form)."""
    if dev != "cuda":
        return
    torch.manual_seed(60)
    for T, r, E, N, K, k, gated in ((1, 8, 128, 256, 512, 4, True), (8, 1, 128, 512, 256, 4, False),
                                    (3, 10, 512, 64, 256, 3, True), (32, 1, 6, 48, 288, 5, False),
                                    (4, 8, 40, 33, 96, 2, False)):
        qw = kbit.quantize(torch.randn(E, N, K, device=dev) * K ** -0.5, k=k)
        x = torch.randn(T, K, device=dev, dtype=torch.float16)
        ids = torch.randint(-1, E + 1, (T, r), device=dev)  # (-1 and E: no expert)
        y = torch.ops.kbit.grouped_gemm_slots(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, ids, k, gated)
        want = torch.ops.kbit.grouped_gemm_slots(x.cpu(), qw.packed.cpu(), qw.absmax.cpu(), qw.row_scale.cpu(),
                                                 qw.codebook.cpu(), ids.cpu(), k, gated)
        assert torch.equal(y.cpu().isnan(), want.isnan()), f"slots T={T} r={r}: NaN rows differ"
        ok = ~want.isnan().any(1)
        check(y.cpu()[ok], want[ok].double(), f"grouped_gemm_slots T={T} r={r} E={E} k={k} gated={gated}", 1e-2)
        w = torch.rand(T, r, device=dev)
        if not gated:
            out = torch.ops.kbit.moe_combine(y, w, ids, None, E)
            check(out.cpu(), torch.ops.kbit.moe_combine(want.to(y.dtype), w.cpu(), ids.cpu(), None, E).double(),
                  "moe_combine without pair_row", 1e-2)
    ex = kbit.Experts.from_weights(torch.randn(40, 64, 96, device=dev) * 0.1, torch.randn(40, 96, 32, device=dev) * 0.1)
    ids = torch.randint(0, 40, (1, 8), device=dev)
    x, w = torch.randn(1, 96, device=dev, dtype=torch.bfloat16), torch.rand(1, 8, device=dev)
    assert ex.slot_path(1, 8, x.device), "Experts at one token: the slot path"
    check(ex(x, ids, w).cpu(), ex.cpu()(x.cpu(), ids.cpu(), w.cpu()).double(), "Experts forward by slot", bound=1e-2)
    torch.cuda.synchronize()


def router_cases(dev="cuda"):
    """kbit::router_topk's kernels (one warp a row to 256 experts, one CTA a row to 1024; sessions 62, 64): one
    token's top-8 of 128 and top-10 of 512, prefill rows, each kernel's most (256 / 1024 experts, top-32), E not a
    multiple of 32, each of the one-warp kernel's keys-a-lane forms (2, 4, 8), a NaN (T = 67: in each kernel), +inf
    (T > 2) and -inf logit, both normalisations, every dtype. Against the CPU op (ids equal; weights within the
    dtype's rounding)."""
    if dev != "cuda":
        return
    torch.manual_seed(62)
    for T, E, top_k in ((1, 128, 8), (1, 512, 10), (67, 60, 4), (3, 1024, 32), (2, 33, 32), (5, 256, 32), (2, 100, 8),
                        (67, 300, 8)):
        for dtype in (torch.bfloat16, torch.float16, torch.float32):
            logits = (torch.randn(T, E, device=dev) * 3).to(dtype)
            logits[0, E // 3] = float("nan") if T > 60 else logits[0, E // 3]
            logits[-1, -1] = float("-inf")
            logits[T // 2, 1] = float("inf") if T > 2 else logits[T // 2, 1]
            for normalize in (True, False):
                w, ids = torch.ops.kbit.router_topk(logits, top_k, normalize)
                want_w, want_ids = torch.ops.kbit.router_topk(logits.cpu(), top_k, normalize)
                assert torch.equal(ids.cpu(), want_ids), f"router_topk T={T} E={E} top_k={top_k}: ids differ"
                assert torch.equal(w.cpu().isnan(), want_w.isnan()), f"router_topk T={T} E={E}: NaN weights differ"
                ok = ~want_w.isnan()
                bound = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}[dtype]
                check(w.cpu()[ok], want_w[ok].double(), f"router_topk T={T} E={E} top_k={top_k} {dtype}", bound)
    torch.cuda.synchronize()


def gated_gemv_cases(dev="cuda"):
    """kbit::gemm_silu_and_mul's dense GEMV with the gated epilogue (session 65; M = 1, and M = 2, the two ops) on
    x-resident and x-staged plans (Llama-3 8B's gate/up 28672 x 4096, Qwen3's 10240 x 2048), a small weight (96 x
    256), k = 2 and 5, fp16 and bf16; bitwise against gemm then silu_and_mul on the interleaved columns."""
    if dev != "cuda":
        return
    torch.manual_seed(65)
    for N, K, k in ((28672, 4096, 4), (10240, 2048, 4), (96, 256, 2), (2048, 2048, 5)):
        qw = kbit.quantize(torch.randn(N, K, device=dev) * K ** -0.5, k=k)
        args = (qw.packed, qw.absmax, qw.row_scale, qw.codebook)
        for dtype in (torch.float16, torch.bfloat16):
            for M in (1, 2):
                x = torch.randn(M, K, device=dev).to(dtype)
                got = torch.ops.kbit.gemm_silu_and_mul(x, *args, k)
                want = torch.ops.kbit.silu_and_mul(torch.ops.kbit.gemm(x, *args, k), True)
                assert torch.equal(got, want), f"gemm_silu_and_mul N={N} K={K} k={k} M={M} {dtype}"
    torch.cuda.synchronize()


def gemv_decode_path_cases(dev="cuda"):
    """The forms session 66's decode rule takes at 1-4 rows, forced on a small weight (608 x 3584: 14 groups): x
    resident at 2 warps a unit (unit slots sharing one x image and pair table) and at 8 (two warps of each unit with
    one group, the others two), k = 4, 2 and 5 (session 67: k = 5 takes 8 at 2-4 rows), fp16 and bf16, against a dense
    matmul; and the dense gated kernel at 8 warps a unit, bitwise against gemm then silu_and_mul under the same aids."""
    if dev != "cuda":
        return
    torch.manual_seed(66)
    N, K = 608, 3584
    for k in (4, 2, 5):
        W = torch.randn(N, K, device=dev) * K ** -0.5
        qw = kbit.quantize(W, k=k)
        args = (qw.packed, qw.absmax, qw.row_scale, qw.codebook)
        ref_w = kbit.dequantize(qw.to_layout("flat"), torch.float32).double()
        for w in (2, 8):
            with tuning_aids(gemv_x_resident=2, gemv_unit_warps=w):
                for M in (1, 2, 4):
                    p = kbit._C._gemv_launch_plan(M, N, K, k)
                    assert p["x_resident"] and p["warps_per_unit"] == w, p
                    for dtype in (torch.float16, torch.bfloat16):
                        x = torch.randn(M, K, device=dev).to(dtype)
                        y = torch.ops.kbit.gemv_gemm(x, *args, k, "mma")
                        check(y, x.double() @ ref_w.T, f"decode path N={N} K={K} k={k} M={M} {w} warps {dtype}")
                if w == 8:
                    x = torch.randn(1, K, device=dev, dtype=torch.float16)
                    got = torch.ops.kbit.gemm_silu_and_mul(x, *args, k)
                    want = torch.ops.kbit.silu_and_mul(torch.ops.kbit.gemm(x, *args, k), True)
                    assert torch.equal(got, want), f"gated, 8 warps a unit, k={k}"
    torch.cuda.synchronize()


def pair_table_k5_cases(dev="cuda"):
    """k = 5's pair tables in the tensor-core kernels (session 69: the split table, 16 lane copies of 32 KB built by
    every thread before a barrier, in the tile and wgmma kernels; the wgmma CTAs of 96 tokens and more and the small-M
    kernel keep the one-copy table): wgmma_gemm at 16, 32, 64 and 96 tokens a CTA, mma_gemm and tile_gemm dense, and
    grouped_mma_gemm / grouped_tile_gemm over 5 experts (one empty), fp16 and bf16, against a float64 matmul."""
    if dev != "cuda":
        return
    torch.manual_seed(69)
    N, K = 520, 2080  # 33 row tiles (a partial row block), 9 groups (a 32-column tail)
    qw = kbit.quantize(torch.randn(N, K, device=dev) * K ** -0.5, k=5)
    args = (qw.packed, qw.absmax, qw.row_scale, qw.codebook)
    ref_w = kbit.dequantize(qw.to_layout("flat"), torch.float32).double()
    for dtype in (torch.float16, torch.bfloat16):
        if kbit._C.wgmma_gemm_runs(5, 16):
            for M, tokens in ((9, 16), (20, 32), (40, 64), (100, 96)):
                with tuning_aids(wgmma_tokens=tokens):
                    x = torch.randn(M, K, device=dev).to(dtype)
                    y = torch.ops.kbit.wgmma_gemm(x, *args, 5)
                    check(y, x.double() @ ref_w.T, f"wgmma k=5 M={M} tokens={tokens} {dtype}")
        for M in (3, 17):
            x = torch.randn(M, K, device=dev).to(dtype)
            for op in (torch.ops.kbit.mma_gemm, torch.ops.kbit.tile_gemm):
                check(op(x, *args, 5), x.double() @ ref_w.T, f"{op} k=5 M={M} {dtype}")
        E, Ng = 5, 272
        qe = kbit.quantize(torch.randn(E, Ng, K, device=dev) * K ** -0.5, k=5)
        counts = [3, 0, 17, 1, 9]
        o = [0]
        for c in counts:
            o.append(o[-1] + c)
        x = torch.randn(o[-1], K, device=dev).to(dtype)
        off = torch.tensor(o, device=dev, dtype=torch.int32)
        We = kbit.dequantize(qe.to_layout("flat"), torch.float32).double()
        ref = torch.cat([x[o[e]:o[e + 1]].double() @ We[e].T for e in range(E)])
        for op in (torch.ops.kbit.grouped_mma_gemm, torch.ops.kbit.grouped_tile_gemm):
            y = op(x, qe.packed, qe.absmax, qe.row_scale, qe.codebook, off, 5)
            check(y, ref, f"{op} k=5 counts={counts} {dtype}")
    torch.cuda.synchronize()


def main(dev="cuda"):
    torch.manual_seed(0)
    dequant_tiled_cases(dev)
    dequant_cublas_cases(dev)
    gemv_unit_slot_cases(dev)
    gemv_layout_cases(dev)
    gemv_cluster_split_cases(dev)
    wgmma_split_cases(dev)
    wgmma_stream_cases(dev)
    grouped_schedule_cases(dev)
    moe_glue_cases(dev)
    moe_slot_cases(dev)
    router_cases(dev)
    gated_gemv_cases(dev)
    gemv_decode_path_cases(dev)
    pair_table_k5_cases(dev)
    for k in (2, 3, 4, 5):
        for wdt in (torch.float16, torch.bfloat16, torch.float32):
            W = torch.randn(37, 320, device=dev, dtype=wdt)
            qw = kbit.quantize(W, k=k)
            flat = qw.to_layout("flat")
            W_hat = kbit.dequantize(flat, torch.float32)
            assert torch.equal(W_hat, kbit.dequantize(qw, torch.float32)), "flat vs tiled dequantize"
            assert torch.equal(flat.to_layout("tiled").packed, qw.packed), "repack(unrepack) round trip"
        xdt = torch.float16 if k % 2 else torch.bfloat16
        for N, K, Ms in ((37, 320, (1, 5, 9, 17, 33, 64, 65, 129)), (40, 2080, (1, 12)), (9, 5120, (1, 3)), (50, 64, (1, 8))):
            qw = kbit.quantize(torch.randn(N, K, device=dev), k=k)
            W_hat = kbit.dequantize(qw, torch.float32).double()
            for M in Ms:
                x = torch.randn(M, K, device=dev, dtype=xdt)
                check(kbit.gemm(x, qw), x.double() @ W_hat.T, f"gemm k={k} N={N} K={K} M={M}")
        # the tile and wgmma kernels: token tiles of 8-64 and chunks past 64, row blocks N fills
        # partly, a K tail, split-K (small N), several row blocks
        for N, K, Ms in ((37, 320, (1, 9, 17, 33, 70)), (300, 2080, (5, 40)), (4100, 544, (24,))):
            qw = kbit.quantize(torch.randn(N, K, device=dev), k=k)
            W_hat = kbit.dequantize(qw, torch.float32).double()
            for M in Ms:
                x = torch.randn(M, K, device=dev, dtype=xdt)
                if dev == "cuda":
                    y = torch.ops.kbit.tile_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k)
                    check(y, x.double() @ W_hat.T, f"tile_gemm k={k} N={N} K={K} M={M}")
                if dev == "cuda" and kbit._C.wgmma_gemm_runs(k, M):  # the same cases on the wgmma kernel
                    y = torch.ops.kbit.wgmma_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k)
                    check(y, x.double() @ W_hat.T, f"wgmma_gemm k={k} N={N} K={K} M={M}")
        # grouped: empty experts, one expert with every token, invalid offsets
        E, N, K = 6, 33, 288
        qe = kbit.quantize(torch.randn(E, N, K, device=dev), k=k)
        We = kbit.dequantize(qe, torch.float32).double()
        for counts in ([0, 3, 0, 0, 1, 0], [0, 0, 130, 0, 0, 0], [1, 1, 1, 1, 1, 1]):
            o = [0]
            for c in counts:
                o.append(o[-1] + c)
            x = torch.randn(o[-1], K, device=dev, dtype=xdt)
            off = torch.tensor(o, device=dev, dtype=torch.int32)
            ref = torch.cat([x[o[e]:o[e + 1]].double() @ We[e].T for e in range(E)])
            check(kbit.grouped_gemm(x, qe, off), ref, f"grouped k={k} counts={counts}")
            if dev == "cuda":  # the grouped tile kernel too (grouped_gemm takes it for more tokens per expert)
                y = torch.ops.kbit.grouped_tile_gemm(x, qe.packed, qe.absmax, qe.row_scale, qe.codebook, off, k)
                check(y, ref, f"grouped tile k={k} counts={counts}")
        if dev == "cuda":  # invalid offsets: the CPU op rejects them; the kernels must stay in bounds
            x = torch.randn(7, K, device=dev, dtype=xdt)
            bad = torch.tensor([0, 9, 2, 2, 5, 3, 99], device=dev, dtype=torch.int32)
            kbit.grouped_gemm(x, qe, bad)
            torch.ops.kbit.grouped_tile_gemm(x, qe.packed, qe.absmax, qe.row_scale, qe.codebook, bad, k)
        # quantize rows longer than a warp takes (K > 32768: the CTA-per-row variant)
        W = torch.randn(3, 32800, device=dev, dtype=torch.float16)
        q_long, q_cpu = kbit.quantize(W, k=k, layout="flat"), kbit.quantize(W.cpu(), k=k, layout="flat")
        assert torch.equal(q_long.packed.cpu(), q_cpu.packed) and torch.equal(q_long.absmax.cpu(), q_cpu.absmax), \
            f"quantize long rows k={k}: CUDA differs from CPU"
    # launch configurations picked by size: two warps per unit (dense, N >= 4096, M > 8) and one
    # warp per unit (grouped, min(E, T) x row tiles >= 8 x SMs)
    qw = kbit.quantize(torch.randn(4100, 544, device=dev), k=4)
    x = torch.randn(12, 544, device=dev, dtype=torch.float16)
    check(kbit.gemm(x, qw), x.double() @ kbit.dequantize(qw, torch.float32).double().T, "gemm two warps per unit")
    qe = kbit.quantize(torch.randn(72, 520, 96, device=dev), k=3)
    x = torch.randn(80, 96, device=dev, dtype=torch.float16)
    o = torch.arange(0, 81, device=dev, dtype=torch.int32).clamp(max=80)[:73].contiguous()
    o[-1] = 80
    # reference on the CPU: 72 small float64 matmuls on the device exhaust synccheck's launch
    # tracking memory (it then reports internal errors on PyTorch's kernels, not on ours)
    We = kbit.dequantize(qe, torch.float32).double().cpu()
    y = kbit.grouped_gemm(x, qe, o)
    oc, xc = o.tolist(), x.double().cpu()
    check(y.cpu(), torch.cat([xc[oc[e]:oc[e + 1]] @ We[e].T for e in range(72)]), "grouped one warp per unit")
    big = kbit.quantize(torch.randn(1030, 16, 32, device=dev), k=2)
    x = torch.randn(4, 32, device=dev, dtype=torch.float16)
    off = torch.zeros(1031, dtype=torch.int32, device=dev)
    off[5:] = 2
    off[900:] = 4
    kbit.grouped_gemm(x, big, off)
    if dev == "cuda":
        torch.cuda.synchronize()
    print("sanitize_cases: all kernels ran")


# One group of cases by name (`sanitize_cases.py DEVICE NAME`): NAME -> its case functions, run in order.
GROUPS = {
    "dequant-tiled": (dequant_tiled_cases,),
    "dequant-cublas": (dequant_cublas_cases,),
    "gemv-slots": (gemv_unit_slot_cases, gemv_layout_cases),  # (a quick racecheck / synccheck)
    "gemv-split": (gemv_cluster_split_cases,),
    "grouped-schedule": (grouped_schedule_cases,),
    "grouped-shared-x": (grouped_shared_x_cases,),
    "moe-slots": (moe_slot_cases,),
    "router": (router_cases,),
    "gated-gemv": (gated_gemv_cases,),
    "gemv-decode-path": (gemv_decode_path_cases,),  # (session 66's forms, for racecheck)
    "pair-table-k5": (pair_table_k5_cases,),  # (session 69: the split table in the tensor-core kernels)
    "moe-glue": (moe_glue_cases,),
    "wgmma-stream": (wgmma_stream_cases,),
    "wgmma-persistent": (wgmma_persistent_cases,),  # (a quick racecheck)
}


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[2] in GROUPS:  # only these cases
        for cases in GROUPS[sys.argv[2]]:
            cases(sys.argv[1])
        print(f"sanitize_cases: {sys.argv[2]} ran")
    elif sys.argv[2:3] == ["wgmma-splits"]:  # only these cases (optionally: a comma list of its shape indices, 0-3)
        if len(sys.argv) > 4:
            sys.exit("sanitize_cases: wgmma-splits takes one comma list of shape indices, e.g. 0,3; got "
                     + " ".join(sys.argv[3:]))
        picked = sys.argv[3].split(",") if sys.argv[3:] else None
        if picked is not None and not all(i in ("0", "1", "2", "3") for i in picked):  # the four cases' indices
            sys.exit(f"sanitize_cases: wgmma-splits shape indices must be 0-3; got {sys.argv[3]}")
        picked = None if picked is None else [int(i) for i in picked]
        wgmma_split_cases(sys.argv[1], picked)
        print("sanitize_cases: wgmma-splits ran" + (f" (shapes {sys.argv[3]})" if sys.argv[3:] else ""))
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "cuda")

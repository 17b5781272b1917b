"""Measure the dense gemm crossover on this GPU and write the dispatch table (issue 7).

For each benchmark weight shape, k = 2..5 and M in a grid, times the dense paths: the
small-M tensor-core kernel (torch.ops.kbit.mma_gemm), the tile kernel (torch.ops.kbit.tile_gemm,
where the GPU has the shared memory for it), its wgmma successor (torch.ops.kbit.wgmma_gemm,
Hopper) and dequantize + cuBLAS
(torch.ops.kbit.dequant_cublas_gemm), fp16 activations, cold L2, CUDA-graph medians
(benchmarks/harness.py), plus cuBLAS fp16 on the unquantized weight as the yardstick. Writes:

* ``<out>/dispatch-<slug>.json``: every timing;
* ``<out>/dispatch-<slug>.md``: the tables (kernel / fallback / fp16 per shape, M, k);
* ``<out>/tc_dispatch_table.h``: the C++ tables: this GPU's, with the other GPUs' of ``--merge-with``
  (default: csrc/cuda/gemm/tc_dispatch_table.h; copy it there and rebuild).

A table row per measured weight size N*K (the smallest crossovers among shapes of that size), and
where a size has several shapes one more row per shape (its own crossovers; taken first for it),
per k: the largest M of the grid up to which the small-M kernel was the fastest path at every
grid point, then the M up to which the faster tile kernel (tile or wgmma) runs against
dequantize + cuBLAS (the grid point with the least worst loss over the grid after that: where the
tile kernels win up to some M and lose past it, that M), and the smallest M in that range from which
the wgmma kernel beat the tile kernel at every grid point (0: never; the largest such M among
shapes of the size). Between grid points the next path starts right after the last grid point
its predecessor won. At M = 1, 4, 8 and 16 the small-M kernel is timed with each warps-per-unit
value (mma_gemm's tuning argument: 8, 4, 2, 1 warps share a 16-row unit along K); per size, k and
M the value with the least worst-case loss over the size's shapes goes into the table (for M up to
that grid point, above the previous one) and its time is the kernel's time in the crossovers (at
grid points between buckets, e.g. M = 2, every value is timed too and the bucket's choice counts).

    python -m benchmarks.tune_dispatch --out $OUT                 # on the GPU, ~1.5 min (H100, session 25)
    python -m benchmarks.tune_dispatch --from-json F --out DIR    # regenerate .md / .h from a run
    python -m benchmarks.tune_dispatch --merge-runs A,B --out DIR # a table from runs over parts of the grid

--merge-runs: runs of one GPU, each over some M (e.g. a sweep of the large M only, when one path changed
there); B's timings replace A's at the same (shape, M, k, path), the M grid is the union, and the table's
note names each run's commit and M.

--sustain S: every timing in the sustained regime (harness.TimerConfig.sustain_s: S seconds of back-to-back
replays, the second half's median, at the clocks the power cap holds them to). The large-M grid points are long
prefill calls, which run at the 700 W cap on the H200; the settled default times their first replays only partly
capped (session 55: capped, dequantize + cuBLAS ran at lower clocks than the wgmma kernel, so the regime moves
their crossover).

    python -m benchmarks.tune_dispatch --sustain 0.3 --ms 1024,1536,2048,3072 --out L   # then --merge-runs ...,L/...

--dtype bfloat16: times the tiled kernels (wgmma, else tile) against dequantize + cuBLAS with bf16 activations (and
cuBLAS bf16 as the yardstick), and at M up to GEMV_MAX_ROWS the scalar GEMV too; writes its JSON and .md, no table.
--bf16-runs A,B (with a measured or merged fp16 run): the table's bf16 columns from them, per k with bf16 activations
the tiled range's end (bf16_range_ends) and the GEMV's (bf16_gemv_ends). cuBLAS runs bf16 as fast as fp16, and so
does the GEMV, while the tensor-core kernels' bf16 decode costs more (session 42, H200: Llama-3 8B gate/up M = 1024,
wgmma 257 us in bf16 against dequantize + cuBLAS's 226, where fp16's table keeps wgmma; session 70: GLM shared gate/up
M = 12, wgmma 11.41 us in bf16 against 9.60 in fp16), so the crossover to the fallback comes earlier in bf16 and the
GEMV's later. (The small-M kernel is not timed in bf16: it lost to the GEMV or a tiled kernel at every grid point of
the H200's and H100's fp16 tables, and its decode is the tiled kernels'.)

    python -m benchmarks.tune_dispatch --dtype bfloat16 --ms 192,256,384,512,768,1024,1536,2048,3072,4096 --out B
    python -m benchmarks.tune_dispatch --dtype bfloat16 --ms 6,8,12,16,24,32,48 --out B2   # the GEMV's bf16 end
    python -m benchmarks.tune_dispatch --merge-runs A,B --bf16-runs $OUT/bf16/dispatch-<slug>.json --out DIR
"""
from __future__ import annotations

import json
import os
import re
from typing import Dict, List, Optional

from kbit._fake import GEMV_MAX_ROWS  # kGemvMaxRows: dense M through the GEMV

from .ab_paths import cublas_path, sweep, timing_words
from .results import open_record
from .session import tuning_parser, tuning_run

# 33: the wgmma kernel's CTA shape changes there (wgmma_plan: 64 tokens, often two warpgroups; session 23:
# GLM shared-expert down ran the tile kernel at M = 33-47, 19.6 us against wgmma's 16.2, because the grid
# had 32 (tile won) then 48)
# From 192 up: prefill chunks. Above 128 only wgmma (the tile kernel where wgmma does not run) and
# dequantize + cuBLAS are timed: the small-M kernel and the tile kernel lost to wgmma from M = 48 or less
# on every shape, and session 25's run 1 (k = 4) had the wgmma kernel ahead of dequantize + cuBLAS up to
# M = 1024 on every shape (KV at 512-1024 within 0.5 us) while the table's grid ended at 128, so everything
# above went to dequantize + cuBLAS (0.38-0.75x of cuBLAS fp16 at M = 192-1024).
# 1536-4096 (session 38, run 1): the wgmma kernel beat dequantize + cuBLAS at M = 2048 on Qwen3 Q, O, gate/up,
# KV and GLM shared gate/up, while the grid's end at 1024 sent every larger M to dequantize + cuBLAS.
# (M = 12: the GEMV's range ended at the last point it won, so with 8 then 16 a GEMV that won at 12 and tied at 16 lost
# M = 9-16 to the wgmma kernel: GLM shared gate/up up to 6% slower there on the H200, docs/design.md "Session 71")
MS = [1, 2, 4, 8, 12, 16, 24, 32, 33, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096]
SMALL_KERNELS_MAX_M = 128  # the small-M kernel's and (where wgmma runs) the tile kernel's top grid M
KS = [2, 3, 4, 5]
WPU_BUCKETS = [1, 4, 8, 16]  # kWpuBucketM (csrc/cuda/gemm/tc_dispatch.h)
WPUS = [8, 4, 2, 1]          # small-M kernel warps per unit, the default first (ties go to it)
PATHS = [("kernel", "mma_gemm"), ("tile", "tile_gemm"), ("wgmma", "wgmma_gemm"), ("dequant_cublas", "dequant_cublas_gemm")]
PATHS += [(f"kernel/w{w}", "mma_gemm", w) for w in WPUS]
PATHS += [("gemv", "gemv_gemm")]


def wpu_cap(K: int) -> int:
    """tc_warps_per_unit(K): the most warps that can share a unit (K's 256-column groups, a power of 2)."""
    groups = (K + 255) // 256
    return 8 if groups >= 8 else 4 if groups >= 4 else 2 if groups >= 2 else 1


def runs_path(path: str, k: int, M: int, K: int, wgmma_runs) -> bool:
    if path == "wgmma":
        return wgmma_runs(k, M)
    if path == "gemv":
        return M <= GEMV_MAX_ROWS
    if path == "kernel":  # above the warps-per-unit buckets: the launch rule (the table has no value there)
        return WPU_BUCKETS[-1] < M <= SMALL_KERNELS_MAX_M
    if path == "tile":
        return M <= SMALL_KERNELS_MAX_M or not wgmma_runs(k, M)
    if path.startswith("kernel/w"):  # every M the buckets cover, so no timing depends on the table being tuned
        return M <= WPU_BUCKETS[-1] and int(path[len("kernel/w"):]) <= wpu_cap(K)
    return True


def bucket_of(M: int) -> int:
    """The warps-per-unit bucket (its grid point) that covers M <= WPU_BUCKETS[-1]."""
    return next(b for b in WPU_BUCKETS if M <= b)
SHAPES = ["KV", "Q", "O", "gateup", "down", "glm_shared_gu", "glm_shared_dn", "llama8b_gu", "llama70b_gu"]
# Shapes whose rows are their own only (the table's N x K rows, taken for that shape alone; no size row, so no other
# shape's crossovers move): lm_head weights (vocab x hidden), past the largest size row (Llama-3 70B's gate/up), which
# they took before (session 67). They may be timed on a prefix of the grid (e.g. M <= 128: a sweep at prefill sizes
# costs minutes a shape): where their tiled range runs to the top of their own grid, it continues as the size row's
# they took before (the largest size row at or below their size), with that row's bf16 end.
OWN_ROW_SHAPES = ["qwen3_lm_head", "llama8b_lm_head", "qwen25_7b_lm_head"]


PATHS_BF16 = [("tile", "tile_gemm"), ("wgmma", "wgmma_gemm"), ("dequant_cublas", "dequant_cublas_gemm"),
              ("gemv", "gemv_gemm")]


def measure_bf16(shape_names: List[str], ms: List[int], ks: List[int], sustain_s: float = 0.0) -> Dict:
    """The bf16 sweep: wgmma (the tile kernel where it does not run; both up to SMALL_KERNELS_MAX_M) and dequantize +
    cuBLAS with bf16 activations, and the scalar GEMV up to GEMV_MAX_ROWS, cold L2, CUDA-graph medians."""
    import torch
    import kbit
    return sweep(PATHS_BF16, shape_names, ms, ks, cool_s=0.0, dtype=torch.bfloat16, sustain_s=sustain_s,
                 runs=lambda path, k, M, K: runs_path(path, k, M, K, kbit._C.wgmma_gemm_runs))


def measure(shape_names: List[str], ms: List[int], ks: List[int], sustain_s: float = 0.0) -> Dict:
    import kbit
    # the wgmma kernel only where it runs (Hopper, sm_90a build); a tile kernel that the GPU lacks
    # the shared memory for is left out by sweep
    # (cool_s = 0: at one M its paths differ by more than 4x (dequantize + cuBLAS, the GEMV), so an idle after
    # heavier timings would cost minutes; its dense M grid, descending, is its protection)
    return sweep(PATHS, shape_names, ms, ks, sustain_s=sustain_s,
                 runs=lambda path, k, M, K: runs_path(path, k, M, K, kbit._C.wgmma_gemm_runs), cool_s=0.0)


def shape_sizes(run: Dict) -> Dict[str, int]:
    """{shape: N*K} for the run's shapes, in run order."""
    return {r["shape"]: r["N"] * r["K"] for r in run["rows"]}


def chosen_wpu(run: Dict) -> Dict:
    """{(N*K, k, M): warps per unit} for the bucket grid points measured: per weight size, the value
    whose worst time ratio to the best value over the size's shapes is least (within 1%: the earlier
    of WPUS, i.e. more warps)."""
    t = {(r["shape"], r["M"], r["k"], r["path"]): r["us"] for r in run["rows"]}
    sizes = shape_sizes(run)
    out = {}
    for size in sorted(set(sizes.values())):
        group = [n for n, s in sizes.items() if s == size]
        for k in run["ks"]:
            for M in (m for m in run["ms"] if m in WPU_BUCKETS):
                cand = [w for w in WPUS if all((n, M, k, f"kernel/w{w}") in t for n in group)]
                if not cand:
                    continue
                best = {n: min(t[(n, M, k, f"kernel/w{w}")] for w in cand) for n in group}
                loss = {w: max(t[(n, M, k, f"kernel/w{w}")] / best[n] for n in group) for w in cand}
                least = min(loss.values())
                out[(size, k, M)] = next(w for w in cand if loss[w] <= least * 1.01)
    return out


def timings(run: Dict) -> Dict:
    """{(shape, M, k, path): us}, with "kernel" at every M the buckets cover = the time at the warps
    per unit the table will use there (its bucket's choice)."""
    t = {(r["shape"], r["M"], r["k"], r["path"]): r["us"] for r in run["rows"]}
    wpu = chosen_wpu(run)
    for name, size in shape_sizes(run).items():
        for k in run["ks"]:
            for M in (m for m in run["ms"] if m <= WPU_BUCKETS[-1]):
                w = wpu.get((size, k, bucket_of(M)))
                if w is not None and (name, M, k, "kernel") not in t and (name, M, k, f"kernel/w{w}") in t:
                    t[(name, M, k, "kernel")] = t[(name, M, k, f"kernel/w{w}")]
    return t


def crossovers(run: Dict, bf16_run: Optional[Dict] = None) -> List[Dict]:
    """The table's rows, ascending by N*K: one per weight size (size_rows: the most cautious over
    the size's shapes; shape_n = shape_k = 0), and where a size has several shapes (Qwen3 Q and O)
    one more per shape with that shape's own crossovers and warps per unit (shape_n x shape_k;
    the dispatch takes an exact shape's row first). max_tile_m_bf16 and max_gemv_m_bf16: {k: M} from bf16_run
    (bf16_range_ends, bf16_gemv_ends; a size row the least over its shapes), {} without one or for shapes it did not
    time (0 in the table: fp16's end)."""
    rows = size_rows(run)
    sizes = shape_sizes(run)
    own_rows = {}  # OWN_ROW_SHAPES' rows: {row index: the size row they inherit their tiled range's top from}
    for name, size in sizes.items():
        own_only = name in OWN_ROW_SHAPES
        if own_only or sum(s == size and n not in OWN_ROW_SHAPES for n, s in sizes.items()) > 1:
            row = shape_row(run, name)
            r0 = next(r for r in run["rows"] if r["shape"] == name)
            if own_only:
                below = [r for r in rows if not r["shape_n"] and r["weights"] <= size]  # (none: its own rows only)
                own_rows[len(rows)] = below[-1] if below else None
            rows.append({**row, "shape_n": r0["N"], "shape_k": r0["K"]})
    dims = {r["shape"]: (r["N"], r["K"]) for r in run["rows"]}
    for field, ends in (("max_tile_m_bf16", bf16_range_ends(run, bf16_run) if bf16_run else {}),
                        ("max_gemv_m_bf16", bf16_gemv_ends(run, bf16_run) if bf16_run else {})):
        for row in rows:
            names = [n for n in ends if (dims[n] == (row["shape_n"], row["shape_k"]) if row["shape_n"]
                                         else sizes[n] == row["weights"] and n not in OWN_ROW_SHAPES)]
            row[field] = {k: min(ends[n][k] for n in names) for k in run["ks"]} if names else {}
    for i, donor in own_rows.items():  # past the top of their own grid: the size row's they took before
        row = rows[i]
        if donor is None or row["measured_to"] >= max(run["ms"]):
            continue
        for k in run["ks"]:
            if row["max_tile_m"][k] >= row["measured_to"]:
                row["max_tile_m"][k] = max(row["max_tile_m"][k], donor["max_tile_m"][k])
                row["max_tile_m_bf16"][k] = donor["max_tile_m_bf16"].get(k, 0)
    return sorted(rows, key=lambda r: (r["weights"], r["shape_n"], r["shape_k"]))


def bf16_range_ends(run: Dict, bf16_run: Dict) -> Dict[str, Dict[int, int]]:
    """{shape: {k: M}}: with bf16 activations, the M up to which the shape's tiled range runs, for the shapes that
    bf16_run (measure_bf16) timed. Where fp16's range (the fp16 run's, that shape alone) ends at or below
    SMALL_KERNELS_MAX_M, fp16's end (bf16 was not timed there); else tiled_range_end over bf16_run's grid from
    SMALL_KERNELS_MAX_M (below it the tiled kernels are taken to win in bf16 as in fp16), at most fp16's end: the
    fallback's bf16 cuBLAS runs as fp16's and the kernels' bf16 decode costs them more, so the crossover comes no
    later than fp16's (a later bf16 end is noise). Where the tiled kernels won to the top of bf16_run's grid, fp16's
    end (past that grid bf16 was not timed)."""
    inf = float("inf")
    t = {(r["shape"], r["M"], r["k"], r["path"]): r["us"] for r in bf16_run["rows"]}
    timed = {r["shape"] for r in bf16_run["rows"]}
    out = {}
    for name in dict.fromkeys(r["shape"] for r in run["rows"]):
        if name not in timed:
            continue
        own = shape_row(run, name)
        ends = {}
        for k in run["ks"]:
            fp16_end = own["max_tile_m"][k]
            if fp16_end <= SMALL_KERNELS_MAX_M or k not in bf16_run["ks"]:
                ends[k] = fp16_end
                continue
            ms = bf16_run["ms"]
            tiled = {M: min(t.get((name, M, k, "tile"), inf), t.get((name, M, k, "wgmma"), inf)) for M in ms}
            fallback = {M: t.get((name, M, k, "dequant_cublas"), inf) for M in ms}
            end = tiled_range_end(ms, SMALL_KERNELS_MAX_M, tiled, fallback)
            if end >= max(ms):  # won to the grid's top: past it as fp16
                end = fp16_end
            ends[k] = max(min(end, fp16_end), own["max_kernel_m"][k])
        out[name] = ends
    return out


def bf16_gemv_ends(run: Dict, bf16_run: Dict) -> Dict[str, Dict[int, int]]:
    """{shape: {k: M}}: with bf16 activations, the M up to which the shape's scalar GEMV runs, for every shape of the
    run where bf16_run timed the GEMV at all ({} where it did not), fp16's end for a shape it did not time the GEMV on
    (so a size row, the least over its shapes, never runs the GEMV past an untimed shape's end). Never below fp16's end
    (the fp16 run's, that shape alone): the GEMV's bf16 calls run at its fp16 time while the tensor-core kernels' bf16
    decode costs them more (session 72, H200: wgmma 1.02-1.12x), so the GEMV's range ends no earlier in bf16 (an earlier
    bf16 end is noise, and M just past it would go to the small-M kernel, which the bf16 sweep does not time). Above
    fp16's end, gemv_range_end over bf16_run's grid points there at which the GEMV and every other path the dispatch
    takes above it (the tiled kernels, dequantize + cuBLAS) were timed, a contiguous run from the first; fp16's end
    where it has none or the GEMV won at none of them."""
    inf = float("inf")
    t = {(r["shape"], r["M"], r["k"], r["path"]): r["us"] for r in bf16_run["rows"]}
    out = {}
    if not any(key[3] == "gemv" for key in t):
        return out
    for name in dict.fromkeys(r["shape"] for r in run["rows"]):
        own = shape_row(run, name)
        ends = {}
        for k in run["ks"]:
            fp16_end = own["max_gemv_m"][k]
            ms = []
            for M in (m for m in sorted(bf16_run["ms"]) if fp16_end < m <= GEMV_MAX_ROWS):
                if (name, M, k, "gemv") not in t or (name, M, k, "dequant_cublas") not in t:
                    break
                ms.append(M)
            gemv = {M: t[(name, M, k, "gemv")] for M in ms}
            others = {M: min(t.get((name, M, k, "tile"), inf), t.get((name, M, k, "wgmma"), inf),
                             t[(name, M, k, "dequant_cublas")]) for M in ms}
            ends[k] = max(gemv_range_end(ms, gemv, others), fp16_end)
        out[name] = ends
    return out


def shape_row(run: Dict, name: str) -> Dict:
    """The crossovers of one shape of the run alone (size_rows over its rows, OWN_ROW_SHAPES included)."""
    (row,) = size_rows({**run, "rows": [r for r in run["rows"] if r["shape"] == name]}, skip=())
    return row


def row_label(r: Dict) -> str:
    return f"{r['shape_n']} x {r['shape_k']}" if r["shape_n"] else str(r["weights"])


def tiled_range_end(ms: List[int], small: int, tiled: Dict[int, float], fallback: Dict[int, float]) -> int:
    """Where the tile kernels hand over to dequantize + cuBLAS: the grid M (or small: none) up to which the faster
    tile kernel runs, above it the fallback. Chosen for the least worst loss over the grid past small, each M's time
    over the faster of the two there; then the least total loss; then the larger M. Where the tile kernels win up to
    some M and lose past it, that M (no loss). Session 42: the first loss used to end the range, so a near-tie
    (Qwen3 Q at M = 768, wgmma 29.3 against 28.6 us) sent M = 1024, where wgmma won 30.7 to 34.5, to the fallback."""
    above = [m for m in ms if m > small and min(tiled[m], fallback[m]) < float("inf")]  # M with a timed path
    best_key, best = None, small
    for end in [small] + above:
        losses = [(tiled[m] if m <= end else fallback[m]) / min(tiled[m], fallback[m]) for m in above]
        key = (max(losses, default=1.0), sum(losses), -end)
        if best_key is None or key < best_key:
            best_key, best = key, end
    return best


def gemv_range_end(ms: List[int], gemv: Dict[int, float], others: Dict[int, float]) -> int:
    """Where the scalar GEMV hands over (0: it never runs): the grid M (of ms, those it was timed at) up to which it
    runs, above it the fastest other path. Chosen as tiled_range_end chooses: the least worst loss over ms, each M's
    time over the faster of the two there; then the least total loss; then the smaller M. Where the GEMV wins up to
    some M and loses past it, that M (no loss). Sessions 67-69: the first loss used to end the range (session 68 let a
    2% deficit pass); Qwen2.5-7B's lm_head at k = 5 had the GEMV 1.3% (session 67), then 2.6% (session 69: the wgmma
    kernel's split pair table) behind at M = 1 and 10-11% ahead at 2-4, so M = 2-8 would have run the wgmma kernel."""
    best_key, best = None, 0
    for end in [0] + [m for m in ms if gemv[m] < others[m]]:
        losses = [(gemv[m] if m <= end else others[m]) / min(gemv[m], others[m]) for m in ms]
        key = (max(losses, default=1.0), sum(losses), end)
        if best_key is None or key < best_key:
            best_key, best = key, end
    return best


def size_rows(run: Dict, skip=None) -> List[Dict]:
    """Per weight size N*K and k: the largest grid M up to which the small-M kernel was the
    fastest path everywhere; the M after that up to which the faster tile kernel (tile or wgmma)
    runs, against dequantize + cuBLAS (tiled_range_end; equal to the first when neither won or was
    measured); and within that range, counting its first M (the small-M kernel's last), the
    smallest M from which wgmma beat tile everywhere (0: never). Each shape over the grid's M it was
    timed at (OWN_ROW_SHAPES: a prefix of it; measured_to: the least top M over the size's shapes).
    Shapes in skip (None: OWN_ROW_SHAPES, whose rows crossovers makes apart) are left out."""
    inf = float("inf")
    skip = OWN_ROW_SHAPES if skip is None else skip
    t = timings(run)
    wpu = chosen_wpu(run)
    sizes: Dict[int, Dict[str, Dict[int, int]]] = {}
    for name in dict.fromkeys(r["shape"] for r in run["rows"]):
        if name in skip:
            continue
        r0 = next(r for r in run["rows"] if r["shape"] == name)
        size = r0["N"] * r0["K"]
        for k in run["ks"]:
            ms = run["ms"]  # OWN_ROW_SHAPES: the M they were timed at (merge_runs: a prefix); the others every M
            if name in OWN_ROW_SHAPES:
                ms = [M for M in run["ms"] if (name, M, k, "dequant_cublas") in t]
            tiled = {M: min(t.get((name, M, k, "tile"), inf), t.get((name, M, k, "wgmma"), inf)) for M in ms}
            # the scalar GEMV first, over the grid M it was timed at (a contiguous prefix: up to GEMV_MAX_ROWS)
            gemv_ms = []
            for M in (m for m in ms if m <= GEMV_MAX_ROWS):
                if (name, M, k, "gemv") not in t:
                    break
                gemv_ms.append(M)
            others = {M: min(t.get((name, M, k, "kernel"), inf), tiled[M], t[(name, M, k, "dequant_cublas")])
                      for M in gemv_ms}
            gemv = gemv_range_end(gemv_ms, {M: t[(name, M, k, "gemv")] for M in gemv_ms}, others)
            small = gemv  # M <= gemv is the scalar GEMV's: the small-M kernel's range starts after it
            for M in (m for m in ms if m > gemv):
                if t.get((name, M, k, "kernel"), inf) <= min(tiled[M], t[(name, M, k, "dequant_cublas")]):
                    small = M
                else:
                    break
            tile = tiled_range_end(ms, small, tiled, {M: t[(name, M, k, "dequant_cublas")] for M in ms})
            # From the top of the tiled range down while wgmma beats tile; the search includes the
            # last M of the GEMV / small-M kernel, so that M between it and the next grid point
            # (where the dispatcher takes a tile kernel) gets wgmma where it beat tile on both sides
            # (session 19: Qwen3 O at M = 56 ran the tile kernel, 15.9 us, wgmma ~12.2).
            wgmma = 0
            for M in reversed([m for m in ms if small <= m <= tile]):
                w = t.get((name, M, k, "wgmma"))
                if w is not None and w <= t.get((name, M, k, "tile"), inf):
                    wgmma = M
                else:
                    break
            cur = sizes.setdefault(size, {"max_kernel_m": {}, "max_tile_m": {}, "min_wgmma_m": {}, "max_gemv_m": {},
                                          "measured_to": max(ms)})
            cur["measured_to"] = min(cur["measured_to"], max(ms))
            cur["max_gemv_m"][k] = min(cur["max_gemv_m"].get(k, gemv), gemv)
            cur["max_kernel_m"][k] = min(cur["max_kernel_m"].get(k, small), small)
            cur["max_tile_m"][k] = min(cur["max_tile_m"].get(k, tile), tile)
            prev = cur["min_wgmma_m"].get(k)
            # the most cautious: never (0) if any shape of the size never wants it, else the largest start
            cur["min_wgmma_m"][k] = wgmma if prev is None else (0 if 0 in (prev, wgmma) else max(prev, wgmma))
    out = []
    for size in sorted(sizes):
        c = sizes[size]
        tile = {k: max(v, c["max_kernel_m"][k]) for k, v in c["max_tile_m"].items()}
        out.append({"weights": size, "shape_n": 0, "shape_k": 0, "max_kernel_m": c["max_kernel_m"], "max_tile_m": tile,
                    "min_wgmma_m": c["min_wgmma_m"],
                    "small_m_wpu": {k: [wpu.get((size, k, M), 0) for M in WPU_BUCKETS] for k in run["ks"]},
                    "max_gemv_m": c["max_gemv_m"], "measured_to": c["measured_to"]})
    return out


HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "csrc", "cuda", "gemm", "tc_dispatch_table.h")

_HEADER_TOP = """#pragma once
// Generated by `python -m benchmarks.tune_dispatch` - do not edit; rerun it on the GPU (it keeps the
// other GPUs' tables of the header it merges with and replaces or adds this GPU's).
// One table per GPU (tc_dispatch.cpp takes the table of the GPU's name and chip, else of its chip: same
// compute capability and SM count, the longest name in common), each measured with fp16 activations, cold
// L2, CUDA-graph medians.
// Per weight size N*K (shape 0 x 0: every shape of that size; N x K: that shape only, where a
// size has several) and k = 2, 3, 4, 5: the largest M up to which the small-M kernel was the
// fastest path, then the M up to which a tile kernel runs before dequantize + cuBLAS (the least
// worst loss over the grid), the M from which the wgmma kernel beat the tile kernel (0: never),
// the small-M kernel's warps per unit for M <= {buckets} (0: the rule), the largest M up to
// which the scalar GEMV beat every other path (0: never; it takes precedence; see docs/benchmarks/
// for the timings), and with bf16 activations the tiled range's end (measured apart above M = 128;
// 0: not measured, the fp16 end) and the GEMV's (measured apart; 0: not measured, the fp16 end).
#include "tc_dispatch.h"

namespace kbit {{
namespace cuda {{
"""

# A table's block: its provenance line, then its rows (ROW_RE each).
TABLE_RE = re.compile(r"^// (?P<device>[^\n]+?) \((?P<sms>\d+) SMs, sm_(?P<major>\d+)(?P<minor>\d)\): (?P<note>[^\n]*)\n"
                      r"inline constexpr TcCrossoverRow kTcRows\d+\[\] = \{\n(?P<rows>.*?)^\};", re.M | re.S)


def table_of_run(run: Dict, bf16_run: Optional[Dict] = None) -> Dict:
    """This run's table, as read_tables gives one: device, sms, major, minor, note (date, commit, grid; bf16_run's
    commit and grid) and the rows with per-k lists (k = 2..5; 0 where k was not measured)."""
    dev = run["device"]
    major, minor = (int(v) for v in dev["capability"].split("."))
    rows = [{"weights": r["weights"], "shape_n": r["shape_n"], "shape_k": r["shape_k"],
             **{f: [r[f].get(k, 0) for k in (2, 3, 4, 5)] for f in ("max_kernel_m", "max_tile_m", "min_wgmma_m",
                                                                  "max_gemv_m", "max_tile_m_bf16",
                                                                  "max_gemv_m_bf16")},
             "small_m_wpu": [r["small_m_wpu"].get(k, [0] * 4) for k in (2, 3, 4, 5)]}
            for r in crossovers(run, bf16_run)]
    bf16 = f" bf16: commit {bf16_run['commit']}; M grid {bf16_run['ms']}." if bf16_run else ""
    return {"device": dev["name"], "sms": dev["sms"], "major": major, "minor": minor,
            "note": f"{run['date']}, commit {run['commit']}; M grid {run['ms']}.{bf16}", "rows": rows}


def header_text(tables: List[Dict]) -> str:
    """The C++ header holding `tables` (table_of_run / read_tables dicts), in this order."""
    def ints(v):
        return ", ".join(map(str, v))
    out = [_HEADER_TOP.format(buckets=", ".join(map(str, WPU_BUCKETS)))]
    for i, tb in enumerate(tables):
        out.append(f"// {tb['device']} ({tb['sms']} SMs, sm_{tb['major']}{tb['minor']}): {tb['note']}")
        out.append(f"inline constexpr TcCrossoverRow kTcRows{i}[] = {{")
        out += [f"    {{{r['weights']}, {r['shape_n']}, {r['shape_k']}, {{{ints(r['max_kernel_m'])}}}, "
                f"{{{ints(r['max_tile_m'])}}}, {{{ints(r['min_wgmma_m'])}}}, "
                f"{{{', '.join('{' + ints(b) + '}' for b in r['small_m_wpu'])}}}, {{{ints(r['max_gemv_m'])}}}, "
                f"{{{ints(r['max_tile_m_bf16'])}}}, {{{ints(r['max_gemv_m_bf16'])}}}}},"
                for r in tb["rows"]]
        out += ["};", ""]
    out.append("inline constexpr TcCrossoverTable kTcCrossoverTables[] = {")
    out += [f"    {{\"{tb['device']}\", {tb['major']}, {tb['minor']}, {tb['sms']}, kTcRows{i}, {len(tb['rows'])}}},"
            for i, tb in enumerate(tables)]
    out += ["};", f"inline constexpr int kNumTcCrossoverTables = {len(tables)};", "",
            "}  // namespace cuda", "}  // namespace kbit", ""]
    return "\n".join(out)


def write_header(run: Dict, path: str, merge_with: str = "", bf16_run: Optional[Dict] = None) -> None:
    """Write the C++ header: the tables of the header at merge_with ('': none) with this run's GPU's
    table replaced, or added after them (its bf16 column from bf16_run, zeros without one)."""
    tables = []
    if merge_with:
        with open_record(merge_with) as f:  # (a path given but missing raises: its other GPUs' tables would be lost)
            tables = read_tables(f.read())
    new = table_of_run(run, bf16_run)
    at = next((i for i, tb in enumerate(tables) if tb["device"] == new["device"]), len(tables))
    tables[at:at + 1] = [new]
    with open(path, "w") as f:
        f.write(header_text(tables))


# (the bf16 columns, the last two, optional: headers before session 43 had neither, before session 72 the second)
ROW_RE = re.compile(r"\{(\d+), (\d+), (\d+), \{([\d, ]+)\}, \{([\d, ]+)\}, \{([\d, ]+)\}, "
                    r"\{((?:\{[\d, ]+\}(?:, )?){4})\}, \{([\d, ]+)\}(?:, \{([\d, ]+)\})?(?:, \{([\d, ]+)\})?\}")


def read_table(text: str) -> List[Dict]:
    """The rows in `text` (one table's, as header_text writes them), as dicts with per-k lists
    (k = 2..5) and small_m_wpu as four lists of four. Raises if a row does not parse."""
    ints = lambda v: [int(i) for i in v.replace("{", "").replace("}", "").split(",")]  # noqa: E731
    rows = []
    for w, n, kk, small, tile, wg, wpu, gemv, tile_bf16, gemv_bf16 in ROW_RE.findall(text):
        flat = ints(wpu)
        rows.append({"weights": int(w), "shape_n": int(n), "shape_k": int(kk), "max_kernel_m": ints(small),
                     "max_tile_m": ints(tile), "min_wgmma_m": ints(wg),
                     "small_m_wpu": [flat[4 * i:4 * i + 4] for i in range(4)], "max_gemv_m": ints(gemv),
                     "max_tile_m_bf16": ints(tile_bf16) if tile_bf16 else [0] * 4,
                     "max_gemv_m_bf16": ints(gemv_bf16) if gemv_bf16 else [0] * 4})
    if len(rows) != len(re.findall(r"^\s*\{\d+,", text, re.M)):
        raise ValueError("a table row that read_table does not parse")
    return rows


def read_tables(text: str) -> List[Dict]:
    """The tables of a header that header_text wrote, in order (dicts as table_of_run's). Raises if a
    table or row does not parse, or the list of tables does not name them in this order."""
    tables = [{"device": m["device"], "sms": int(m["sms"]), "major": int(m["major"]), "minor": int(m["minor"]),
               "note": m["note"], "rows": read_table(m["rows"])} for m in TABLE_RE.finditer(text)]
    if len(tables) != len(re.findall(r"inline constexpr TcCrossoverRow ", text)):
        raise ValueError("a table whose provenance line read_tables does not parse")
    listed = re.findall(r'^\s*\{"(.+?)", (\d+), (\d+), (\d+), kTcRows(\d+), (\d+)\},$', text, re.M)
    if [(d, int(a), int(b), int(c), int(i), int(n)) for d, a, b, c, i, n in listed] != [
            (tb["device"], tb["major"], tb["minor"], tb["sms"], i, len(tb["rows"])) for i, tb in enumerate(tables)]:
        raise ValueError("kTcCrossoverTables does not list the tables in order")
    return tables


def write_markdown(run: Dict, path: str, bf16_run: Optional[Dict] = None) -> None:
    dev = run["device"]
    t = timings(run)
    dense = cublas_path(run)
    lines = [f"# Dense gemm crossover: {dev['name']}", "",
             f"{run['date']}, commit {run['commit']}, torch {run['torch']}; {dense} activations, cold L2, "
             f"{timing_words(run)} (us). `kernel` = torch.ops.kbit.mma_gemm, `tile` = torch.ops.kbit.tile_gemm, "
             "`wgmma` = torch.ops.kbit.wgmma_gemm, "
             "`dq+cuBLAS` = "
             f"torch.ops.kbit.dequant_cublas_gemm, `{dense}` = cuBLAS on the unquantized weight. "
             "Produced by `python -m benchmarks.tune_dispatch`; the table it wrote is "
             "csrc/cuda/gemm/tc_dispatch_table.h."
             + (f" bf16 column from commit {bf16_run['commit']}." if bf16_run else ""), "",
             "## Crossovers (per k: [scalar GEMV up to M;] small-M kernel up to M, a tile kernel up to M (wgmma "
             "from M), dequantize + cuBLAS above)", "",
             "| N*K or shape | k=2 | k=3 | k=4 | k=5 |", "|---:|---:|---:|---:|---:|"]
    rows = crossovers(run, bf16_run)
    for r in rows:
        lines.append(f"| {row_label(r)} | " + " | ".join(
            (f"gemv {r['max_gemv_m'][k]}; " if r.get("max_gemv_m", {}).get(k) else "") +
            f"{r['max_kernel_m'].get(k, '-')} / {r['max_tile_m'].get(k, '-')} ({r['min_wgmma_m'].get(k, '-')})"
            + (f"; bf16 to {r['max_tile_m_bf16'][k]}" if r["max_tile_m_bf16"].get(k) else "")
            + (f"; bf16 gemv {r['max_gemv_m_bf16'][k]}" if r["max_gemv_m_bf16"].get(k) else "")
            for k in (2, 3, 4, 5)) + " |")
    lines += ["", f"## Small-M kernel warps per unit (M <= {' / '.join(map(str, WPU_BUCKETS))}; 0: the rule)", "",
              "| N*K or shape | k=2 | k=3 | k=4 | k=5 |", "|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {row_label(r)} | " + " | ".join(
            " / ".join(map(str, r["small_m_wpu"].get(k, []))) or "-" for k in (2, 3, 4, 5)) + " |")
    for name in dict.fromkeys(r["shape"] for r in run["rows"]):
        r0 = next(r for r in run["rows"] if r["shape"] == name)
        lines += ["", f"## {name} (N={r0['N']}, K={r0['K']})", "",
                  "| M | fp16 | " + " | ".join(f"k={k} kernel | k={k} tile | k={k} wgmma | k={k} dq+cuBLAS | "
                                               f"k={k} best vs fp16" for k in run["ks"]) + " |",
                  "|---:|---:|" + "---:|---:|---:|---:|---:|" * len(run["ks"])]
        for M in (m for m in run["ms"] if (name, m, None, dense) in t):  # (OWN_ROW_SHAPES: a prefix of the grid)
            fp = t[(name, M, None, dense)]
            cells = []
            for k in run["ks"]:
                a, b = t.get((name, M, k, "kernel")), t[(name, M, k, "dequant_cublas")]
                c, w = t.get((name, M, k, "tile")), t.get((name, M, k, "wgmma"))
                cells += ["-" if a is None else f"{a:.1f}", "-" if c is None else f"{c:.1f}",
                          "-" if w is None else f"{w:.1f}", f"{b:.1f}",
                          f"{fp / min(b, *(v for v in (a, c, w) if v is not None)):.2f}x"]
            lines.append(f"| {M} | {fp:.1f} | " + " | ".join(cells) + " |")
    if bf16_run:
        lines += [""] + bf16_timing_lines(bf16_run)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def bf16_timing_lines(bf16_run: Dict) -> List[str]:
    """A bf16 run's timings (measure_bf16), per shape: M, cuBLAS bf16, and per k the tiled kernel's time (wgmma, else
    tile) / dequantize + cuBLAS's (/ the GEMV's where it was timed)."""
    lines = ["## bf16: cuBLAS bf16, and per k the tiled kernel (wgmma or tile) / dequantize + cuBLAS [/ scalar GEMV] "
             "(us)", ""]
    tb = {(r["shape"], r["M"], r["k"], r["path"]): r["us"] for r in bf16_run["rows"]}
    for name in dict.fromkeys(r["shape"] for r in bf16_run["rows"]):
        lines += [f"### {name}", "", "| M | bf16 | " + " | ".join(f"k={k}" for k in bf16_run["ks"]) + " |",
                  "|---:|---:|" + "---:|" * len(bf16_run["ks"])]
        for M in bf16_run["ms"]:
            cells = []
            for k in bf16_run["ks"]:
                tiled = min(tb.get((name, M, k, p), float("inf")) for p in ("wgmma", "tile"))
                gemv = tb.get((name, M, k, "gemv"))
                cells.append(f"{tiled:.1f} / {tb[(name, M, k, 'dequant_cublas')]:.1f}"
                             + (f" / {gemv:.1f}" if gemv is not None else ""))
            lines.append(f"| {M} | {tb[(name, M, None, 'bf16')]:.1f} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def write_markdown_bf16(run: Dict, path: str) -> None:
    dev = run["device"]
    lines = [f"# Dense gemm crossover, bf16 activations: {dev['name']}", "",
             f"{run['date']}, commit {run['commit']}, torch {run['torch']}; cold L2, {timing_words(run)}. Produced by "
             "`python -m benchmarks.tune_dispatch --dtype bfloat16`; its table column comes from `--bf16-runs`.", ""]
    with open(path, "w") as f:
        f.write("\n".join(lines + bf16_timing_lines(run)) + "\n")


def merge_runs(runs: List[Dict]) -> Dict:
    """One run from runs of one GPU over parts of the grid: a later run's rows replace an earlier one's
    at the same (shape, M, k, path); ms the union; commit "c1 (M m1, m2, ...) + c2 (M ...; sustained S s)" (a
    run timed in the sustained regime says so)."""
    devices = {(r["device"]["name"], r["device"]["sms"]) for r in runs}
    if len(devices) != 1:
        raise SystemExit(f"--merge-runs: the runs are from different GPUs: {sorted(devices)}")
    dtypes = {cublas_path(r) for r in runs}
    if len(dtypes) != 1:
        raise SystemExit(f"--merge-runs: the runs timed different activation dtypes: {sorted(dtypes)}")
    ks = sorted({k for r in runs for k in r["ks"]})
    if any(sorted(r["ks"]) != ks for r in runs):
        raise SystemExit(f"--merge-runs: the runs timed different k: {[r['ks'] for r in runs]}")
    rows = {}
    for r in runs:
        for row in r["rows"]:
            rows[(row["shape"], row["M"], row["k"], row["path"])] = row
    ms = sorted({m for r in runs for m in r["ms"]})
    # every shape timed at every M of the union (the crossovers read dequantize + cuBLAS and cuBLAS fp16 at each);
    # OWN_ROW_SHAPES at every M up to the largest they were timed at
    top = {shape: max(key[1] for key in rows if key[0] == shape) if shape in OWN_ROW_SHAPES else ms[-1]
           for shape in {key[0] for key in rows}}
    missing = sorted({(shape, M, k) for shape in top for M in ms if M <= top[shape] for k in ks
                      if (shape, M, k, "dequant_cublas") not in rows or (shape, M, None, cublas_path(runs[0])) not in rows})
    if missing:
        raise SystemExit(f"--merge-runs: shapes not timed at every M of the merged grid (shape, M, k): {missing[:8]}"
                         + (f" and {len(missing) - 8} more" if len(missing) > 8 else ""))
    parts = [f"{r['commit']} (M {', '.join(map(str, sorted(r['ms'])))}"
             + (f"; sustained {r['sustain_s']:g} s" if r.get("sustain_s") else "") + ")" for r in runs]
    commit = " + ".join(dict.fromkeys(parts))  # runs of one commit over the same M (shapes apart) once
    regimes = {r.get("sustain_s") or 0.0 for r in runs}  # one run's regime for all, else None (the note says)
    return {**runs[-1], "commit": commit, "ms": ms, "ks": ks, "rows": list(rows.values()),
            "sustain_s": regimes.pop() if len(regimes) == 1 else None}


def read_runs(paths: str) -> List[Dict]:
    """The run JSONs of a comma-separated list of paths, in order."""
    runs = []
    for path in paths.split(","):
        with open_record(path) as f:
            runs.append(json.load(f))
    return runs


def main(argv=None) -> None:
    ap = tuning_parser(__doc__)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--ms", default=",".join(map(str, MS)))
    ap.add_argument("--ks", default=",".join(map(str, KS)))
    ap.add_argument("--merge-with", default=HEADER,
                    help="the header whose other GPUs' tables the written one keeps ('' for this GPU's alone)")
    ap.add_argument("--merge-runs", default=None,
                    help="comma-separated run JSONs of one GPU: the table from their rows (later runs' win)")
    ap.add_argument("--dtype", default="float16", choices=("float16", "bfloat16"),
                    help="the activations' dtype; bfloat16: the bf16 sweep (no table of its own; --bf16-runs)")
    ap.add_argument("--bf16-runs", default=None,
                    help="comma-separated bf16 run JSONs of this GPU: the table's bf16 column from them (merged)")
    ap.add_argument("--sustain", type=float, default=0.0,
                    help="seconds: time every cell in the sustained regime (harness.TimerConfig.sustain_s): the "
                         "regime of long prefill calls, for the large-M grid points")
    args = ap.parse_args(argv)
    if args.dtype == "bfloat16":
        if args.merge_runs or args.bf16_runs:
            raise SystemExit("--dtype bfloat16 measures a bf16 sweep; merge it with --bf16-runs on an fp16 table")
        run = tuning_run(args, "dispatch-bf16", lambda: measure_bf16(
            args.shapes.split(","), [int(v) for v in args.ms.split(",")], [int(v) for v in args.ks.split(",")],
            args.sustain))
        write_markdown_bf16(run, os.path.join(args.out, f"dispatch-bf16-{run['device']['slug']}.md"))
        return
    bf16_run = None
    if args.bf16_runs:
        bf16_run = merge_runs(read_runs(args.bf16_runs))
        if cublas_path(bf16_run) != "bf16":
            raise SystemExit("--bf16-runs: runs of --dtype bfloat16 only")
    if args.merge_runs:
        run = merge_runs(read_runs(args.merge_runs))
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, f"dispatch-{run['device']['slug']}.json"), "w") as f:
            json.dump(run, f, indent=1)
    else:
        run = tuning_run(args, "dispatch", lambda: measure(args.shapes.split(","), [int(v) for v in args.ms.split(",")],
                                                           [int(v) for v in args.ks.split(",")], args.sustain))
    if bf16_run and (bf16_run["device"]["name"], bf16_run["device"]["sms"]) != (run["device"]["name"],
                                                                                run["device"]["sms"]):
        raise SystemExit("--bf16-runs: from another GPU than the fp16 run")
    if cublas_path(run) != "fp16":
        raise SystemExit("the table's run must be an fp16 one (a bf16 run goes in --bf16-runs)")
    write_markdown(run, os.path.join(args.out, f"dispatch-{run['device']['slug']}.md"), bf16_run)
    if sorted(run["ks"]) == sorted(KS) and set(SHAPES) <= {r["shape"] for r in run["rows"]}:
        write_header(run, os.path.join(args.out, "tc_dispatch_table.h"), args.merge_with, bf16_run)
    else:  # its table would have zeros (dequantize + cuBLAS everywhere) for the k and sizes it did not time
        print(f"a run over fewer k or shapes than {KS} x {SHAPES}: no tc_dispatch_table.h written")
    print("crossovers:", json.dumps(crossovers(run, bf16_run)))


if __name__ == "__main__":
    main()

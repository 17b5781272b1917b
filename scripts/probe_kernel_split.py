"""Where a dense op's time goes, kernel by kernel: for each shape and M, calls torch.ops.kbit.<op>
(k = 4, fp16) after an L2 flush, under torch.profiler, and prints each kernel's median device
duration (us) over the calls, e.g. the wgmma path's x image, main kernel and split reduction.
Kernel durations only: the gaps between launches (graph floor, PDL overlap) are not in them;
benchmarks.ab_paths times the whole op in a CUDA graph.

    python scripts/probe_kernel_split.py --ops wgmma_gemm,tile_gemm --shapes gateup,llama8b_gu --ms 16,64,128
"""
from __future__ import annotations

import argparse
import collections
import json
import statistics

import torch
from torch.profiler import ProfilerActivity, profile

import kbit
from benchmarks import shapes as S


def kernel_medians(fn, flush, calls: int = 20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            flush.zero_()
            fn()
        torch.cuda.synchronize()
    per_name = collections.defaultdict(list)
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA and "zero" not in ev.name and "fill" not in ev.name.lower():
            per_name[ev.name].append(ev.device_time)
    return {name[:90]: (statistics.median(ts), len(ts) // calls) for name, ts in per_name.items()}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ops", default="wgmma_gemm")
    p.add_argument("--shapes", default="gateup")
    p.add_argument("--ms", default="64")
    p.add_argument("--out", default=None)
    a = p.parse_args()
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows = []
    for name in a.shapes.split(","):
        N, K = S.SHAPES[name].N, S.SHAPES[name].K
        W = torch.randn(N, K, device="cuda", dtype=torch.float16) * K ** -0.5
        qw = kbit.quantize(W, k=4)
        for M in map(int, a.ms.split(",")):
            x = torch.randn(M, K, device="cuda", dtype=torch.float16)
            for op_name in a.ops.split(","):
                op = getattr(torch.ops.kbit, op_name)
                med = kernel_medians(lambda: op(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4), flush)
                total = sum(t * n for t, n in med.values())
                print(f"{name} M={M} {op_name}: kernels {total:.1f} us = " +
                      "; ".join(f"{n} x{c} {t:.1f}" for n, (t, c) in med.items()), flush=True)
                rows.append({"shape": name, "M": M, "op": op_name, "kernels": med, "sum_us": total})
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

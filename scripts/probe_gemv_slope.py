"""The dense M = 1 GEMV's fixed cost and streaming rate (GPU machine): CUDA-graph medians of
torch.ops.kbit.gemv_gemm (mma decode, the launcher's rule) and cuBLAS fp16 (F.linear) at M = 1 over
weights of growing N at fixed K, hot (one copy, L2-resident where it fits) and cold (rotated copies,
> 4x L2), with and without programmatic dependent launch. A line fitted to the cold times over the
weights' bytes gives the per-call intercept (launch, prologue, first latency, tail) and the slope
(the streaming rate); hot against cold says whether DRAM or the SM binds. (The rule's launch plan
changes with N, so the fit spans plans: each row records its plan.) Writes <out>/gemv-slope.json.

    python3 scripts/probe_gemv_slope.py --ks 4096,8192 --ns 2048,4096,7168,14336,28672,57344 --out DIR
"""
import argparse
import json
import os

import numpy
import torch

import kbit
from benchmarks.harness import Work
from benchmarks.session import run_meta, tuning_setup
from benchmarks.weights import cold_copies


def fit(points):
    """Least-squares (intercept us, slope us per MB) of [(MB, us)]."""
    slope, intercept = numpy.polyfit([p[0] for p in points], [p[1] for p in points], 1)
    return float(intercept), float(slope)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ks", default="4096,8192")
    ap.add_argument("--ns", default="2048,4096,7168,14336,28672,57344")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--out", default="out")
    args = ap.parse_args()
    dev, info, timer = tuning_setup()
    t = lambda fns, label: timer.measure(fns, Work(0, 0, label)).median_us
    small = torch.zeros(64, device=dev)
    trivial = t([lambda: small.add(1.0)], "add")
    print(f"trivial add: {trivial:.2f} us", flush=True)
    rows = []
    print("| K | N | MB (kbit) | kbit hot | kbit cold | kbit cold, no PDL | GB/s cold | fp16 hot | fp16 cold | GB/s fp16 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for K in (int(v) for v in args.ks.split(",")):
        for N in (int(v) for v in args.ns.split(",")):
            g = torch.Generator(device=dev).manual_seed(N * 131 + K)
            W = torch.randn(N, K, device=dev, dtype=torch.float16, generator=g) * K ** -0.5
            x = torch.randn(1, K, device=dev, dtype=torch.float16, generator=g)
            qw = kbit.quantize(W, k=args.k)
            a = (qw.packed, qw.absmax, qw.row_scale, qw.codebook)
            nb = sum(v.numel() * v.element_size() for v in a)
            copies = [a] + [tuple(v.clone() for v in a) for _ in range(cold_copies(nb, info["l2_bytes"]) - 1)]
            op = lambda c: torch.ops.kbit.gemv_gemm(x, *c, args.k, "mma")
            at = f"{N}x{K}"  # (a label per cell: the timer remembers a failed capture by label)
            hot = t([lambda: op(a)], f"hot {at}")
            cold = t([lambda c=c: op(c) for c in copies], f"cold {at}")
            pdl = kbit._C.set_dependent_launch(False)
            try:
                cold_nopdl = t([lambda c=c: op(c) for c in copies], f"cold no pdl {at}")
            finally:
                kbit._C.set_dependent_launch(pdl)
            del copies
            w16s = [W] + [W.clone() for _ in range(cold_copies(W.numel() * 2, info["l2_bytes"]) - 1)]
            f16_hot = t([lambda: torch.nn.functional.linear(x, W)], f"f16 hot {at}")
            f16_cold = t([lambda w=w: torch.nn.functional.linear(x, w) for w in w16s], f"f16 cold {at}")
            del w16s
            row = {"K": K, "N": N, "bytes": nb, "fp16_bytes": N * K * 2, "kbit_hot": hot, "kbit_cold": cold,
                   "kbit_cold_no_pdl": cold_nopdl, "fp16_hot": f16_hot, "fp16_cold": f16_cold,
                   "plan": dict(kbit._C._gemv_launch_plan(1, N, K, args.k, "mma"))}
            rows.append(row)
            print(f"| {K} | {N} | {nb / 1e6:.2f} | {hot:.2f} | {cold:.2f} | {cold_nopdl:.2f} | {nb / cold / 1e3:.0f} | "
                  f"{f16_hot:.2f} | {f16_cold:.2f} | {N * K * 2 / f16_cold / 1e3:.0f} |", flush=True)
    for K in (int(v) for v in args.ks.split(",")):
        sel = [r for r in rows if r["K"] == K]
        for key, nbkey in (("kbit_cold", "bytes"), ("kbit_cold_no_pdl", "bytes"), ("kbit_hot", "bytes"),
                           ("fp16_cold", "fp16_bytes")):
            b, s = fit([(r[nbkey] / 1e6, r[key]) for r in sel])
            print(f"K = {K} {key}: intercept {b:.2f} us, slope {s:.4f} us/MB ({1e3 / s if s else 0:.0f} GB/s)")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "gemv-slope.json"), "w") as f:
        json.dump({**run_meta(info), "k": args.k, "trivial_us": trivial, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

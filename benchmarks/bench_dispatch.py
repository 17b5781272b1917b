"""Host-side cost per call of kbit's entry points (issue 7: <= 8 us for a small shape).

What is timed is the CPU time to *issue* one call (Python, argument checks, the C++ op, dispatch,
the kernel launch), not the GPU time: `calls` back-to-back calls are issued with no
synchronization and the wall time of the loop is divided by `calls`. The shape is small
(its kernel runs in a few microseconds) and `calls` stays below the launch queue's depth, so
the loop never waits for the GPU; the GPU is drained before each repetition. Reported: the
median over repetitions of the per-call time, next to native aten calls of the same shape
(torch.nn.functional.linear on fp16 weights, torch.mm) as the yardstick.

    python -m benchmarks.bench_dispatch [--out DIR] [--calls 200] [--reps 25]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch
import torch.nn.functional as F

import kbit

SHAPES = [(1, 2048, 512), (1, 2048, 5120), (16, 2048, 5120), (64, 2048, 5120)]  # (M, K, N)


def per_call_us(fn, calls: int, reps: int) -> dict:
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t0) / calls * 1e6)
    torch.cuda.synchronize()
    samples.sort()
    return {"median_us": statistics.median(samples), "p10_us": samples[len(samples) // 10],
            "p90_us": samples[(9 * len(samples)) // 10]}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--reps", type=int, default=25)
    args = ap.parse_args(argv)
    dev = torch.device("cuda")
    rows = []
    for M, K, N in SHAPES:
        W = torch.randn(N, K, device=dev, dtype=torch.float16) * 0.02
        x = torch.randn(M, K, device=dev, dtype=torch.float16)
        qw = kbit.quantize(W, k=4)
        lin = kbit.Linear.from_linear(torch.nn.Linear(K, N, bias=False, device=dev, dtype=torch.float16), k=4)
        op = torch.ops.kbit.gemm
        entries = {
            "F.linear fp16 (aten)": lambda: F.linear(x, W),
            "torch.mm fp16 (aten)": lambda: torch.mm(x, W.t()),
            "torch.ops.kbit.gemm": lambda: op(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4),
            "kbit.gemm": lambda: kbit.gemm(x, qw),
            "kbit.Linear": lambda: lin(x),
        }
        for name, fn in entries.items():
            r = per_call_us(fn, args.calls, args.reps)
            rows.append({"M": M, "K": K, "N": N, "entry": name, **r})
            print(f"M={M:3d} K={K} N={N:5d} {name:24s} {r['median_us']:6.2f} us/call "
                  f"(p10 {r['p10_us']:.2f}, p90 {r['p90_us']:.2f})", flush=True)
    info = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cpu": os.cpu_count(), "calls": args.calls, "reps": args.reps, "rows": rows}
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "dispatch.json"), "w") as f:
            json.dump(info, f, indent=1)
        with open(os.path.join(args.out, "dispatch.md"), "w") as f:
            f.write(f"# Host cost per call ({info['device']}, torch {info['torch']})\n\n"
                    f"CPU time to issue one call, median of {args.reps} loops of {args.calls} calls "
                    "(no synchronization inside a loop). `python -m benchmarks.bench_dispatch`.\n\n"
                    "| M | K | N | entry | us/call | p10 | p90 |\n|---:|---:|---:|---|---:|---:|---:|\n")
            for r in rows:
                f.write(f"| {r['M']} | {r['K']} | {r['N']} | {r['entry']} | {r['median_us']:.2f} | "
                        f"{r['p10_us']:.2f} | {r['p90_us']:.2f} |\n")


if __name__ == "__main__":
    main()

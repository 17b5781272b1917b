"""Host-side cost per call of kbit's entry points (issue 7: <= 8 us for a small shape).

What is timed is the CPU time to *issue* one call (Python, argument checks, the C++ op, dispatch,
the kernel launch), not the GPU time: `calls` back-to-back calls are issued with no
synchronization and the wall time of the loop is divided by `calls`. The shape is small
(its kernel runs in a few microseconds) and `calls` stays below the launch queue's depth, so
the loop never waits for the GPU; the GPU is drained before each repetition. Reported: the
median over repetitions of the per-call time, next to native aten calls of the same shape
(torch.nn.functional.linear on fp16 weights, torch.mm) as the yardstick.

    python -m benchmarks.bench_dispatch [--out DIR] [--calls 200] [--reps 25] [--shapes "160,4096,14336;..."]

Above M = 128 (--shapes) also kbit._C.gemm_direct under session 51's wgmma rule (kbit._C._set_wgmma_max_tokens(128)):
the wide candidate's host cost (a third split-model evaluation and the plan model, gemm_cuda.cpp) was the
difference where chunks of up to 160 are fewer than chunks of 128, until session 53 remembered the plans
(remembered_plans.h): a repeated call now plans once under either rule.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import statistics
import time

import torch
import torch.nn.functional as F

import kbit
from .session import tuning_aids

SHAPES = [(1, 2048, 512), (1, 2048, 5120), (16, 2048, 5120), (64, 2048, 5120)]  # (M, K, N)


def per_call_us(entries: dict, calls: int, reps: int) -> dict:
    """{name: timing} for {name: (fn, context factory)}: each repetition times every entry once, in
    turn (round robin), so that drift of the machine over the run falls on all of them alike."""
    for fn, ctx in entries.values():
        with ctx():
            for _ in range(20):
                fn()
    torch.cuda.synchronize()
    samples = {name: [] for name in entries}
    for _ in range(reps):
        for name, (fn, ctx) in entries.items():
            with ctx():
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(calls):
                    fn()
                samples[name].append((time.perf_counter() - t0) / calls * 1e6)
    torch.cuda.synchronize()
    out = {}
    for name, v in samples.items():
        v.sort()
        out[name] = {"median_us": statistics.median(v), "p10_us": v[len(v) // 10], "p90_us": v[(9 * len(v)) // 10]}
    return out


def parse_shapes(text):
    """"M,K,N;M,K,N" -> [(M, K, N), ...]."""
    return [tuple(int(v) for v in part.split(",")) for part in text.split(";") if part.strip()]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--reps", type=int, default=25)
    ap.add_argument("--shapes", default=None, help='"M,K,N;M,K,N" (default: the four small shapes)')
    args = ap.parse_args(argv)
    dev = torch.device("cuda")
    rows = []
    for M, K, N in parse_shapes(args.shapes) if args.shapes else SHAPES:
        W = torch.randn(N, K, device=dev, dtype=torch.float16) * 0.02
        x = torch.randn(M, K, device=dev, dtype=torch.float16)
        qw = kbit.quantize(W, k=4)
        lin = kbit.Linear.from_linear(torch.nn.Linear(K, N, bias=False, device=dev, dtype=torch.float16), k=4)
        op, op_default = torch.ops.kbit.gemm, torch.ops.kbit.gemm.default
        direct = kbit._C.gemm_direct
        add_op = torch.ops.aten.add.Tensor
        x0 = x[:0]
        w = (qw.packed, qw.absmax, qw.row_scale, qw.codebook)
        plain, infer = contextlib.nullcontext, torch.inference_mode
        entries = {
            "F.linear fp16 (aten)": (lambda: F.linear(x, W), plain),
            "torch.mm fp16 (aten)": (lambda: torch.mm(x, W.t()), plain),
            "torch.add(x, x) (aten)": (lambda: torch.add(x, x), plain),
            "torch.ops.aten.add.Tensor(x, x)": (lambda: add_op(x, x), plain),
            "torch.empty(M, N)": (lambda: torch.empty(M, N, device=dev, dtype=torch.float16), plain),
            "torch.ops.kbit.gemm": (lambda: op(x, *w, 4), plain),
            "torch.ops.kbit.gemm.default": (lambda: op_default(x, *w, 4), plain),
            "kbit._C.gemm_direct": (lambda: direct(x, *w, 4), plain),
            "kbit._C.gemm_direct, M = 0 (no launch)": (lambda: direct(x0, *w, 4), plain),
            "kbit._C.gemm_direct, inference_mode": (lambda: direct(x, *w, 4), infer),
            "kbit.gemm": (lambda: kbit.gemm(x, qw), plain),
            "kbit.gemm, inference_mode": (lambda: kbit.gemm(x, qw), infer),
            "kbit.Linear": (lambda: lin(x), plain),
            "kbit.Linear, inference_mode": (lambda: lin(x), infer),
        }
        if M > 128:
            entries["kbit._C.gemm_direct, session 51's wgmma rule"] = (
                lambda: direct(x, *w, 4), functools.partial(tuning_aids, wgmma_max_tokens=128))
        for name, r in per_call_us(entries, args.calls, args.reps).items():
            rows.append({"M": M, "K": K, "N": N, "entry": name, **r})
            print(f"M={M:3d} K={K} N={N:5d} {name:40s} {r['median_us']:6.2f} us/call "
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
                    "(no synchronization inside a loop; the entries timed in turn, round robin). `python -m benchmarks.bench_dispatch`.\n\n"
                    "| M | K | N | entry | us/call | p10 | p90 |\n|---:|---:|---:|---|---:|---:|---:|\n")
            for r in rows:
                f.write(f"| {r['M']} | {r['K']} | {r['N']} | {r['entry']} | {r['median_us']:.2f} | "
                        f"{r['p10_us']:.2f} | {r['p90_us']:.2f} |\n")


if __name__ == "__main__":
    main()

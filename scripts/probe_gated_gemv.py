"""A gated MLP's gate/up call at decode (GPU machine): kbit::gemm_silu_and_mul (the GEMV's gated epilogue where it
takes the call) against the same weight's kbit.gemm then kbit::silu_and_mul (what kbit.nn.GatedMLP replaces), and
the GEMM alone; weights of 2I rows interleaved in 8s, k = 4, rotated copies (cold L2, > 4x L2 between two uses of
one copy), CUDA-graph medians per call, us. Also the three in bf16 where --dtypes has it.

    python3 scripts/probe_gated_gemv.py --shapes 28672x4096,10240x2048 --ms 1,2 [--json F]

--host: instead, the host time to issue one call (benchmarks.bench_dispatch's per-call loop, round robin, medians):
kbit._C.gemm_direct against kbit._C.gemm_silu_and_mul_direct on one weight copy, fp16.
"""
import argparse
import contextlib
import json

import torch

import kbit
from benchmarks.harness import Work
from benchmarks.session import run_meta, tuning_setup
from benchmarks.weights import rotated_copies


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="28672x4096,10240x2048,57344x8192,6144x1024",
                    help="N x K of the gate/up weight (N = 2I)")
    ap.add_argument("--ms", default="1,2")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--dtypes", default="fp16,bf16")
    ap.add_argument("--json", default=None)
    ap.add_argument("--host", action="store_true", help="host time per call instead of GPU time")
    args = ap.parse_args()
    if args.host:
        return host_times(args)
    dev, info, timer = tuning_setup()
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16}
    rows = []
    print("| N x K | dtype | M | gemm | gemm + silu_and_mul | gemm_silu_and_mul | saved |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for shape in args.shapes.split(","):
        N, K = (int(v) for v in shape.split("x"))
        g = torch.Generator().manual_seed(N + K)
        W = (torch.randn(N, K, generator=g) * K ** -0.5).half().to(dev)
        qw = kbit.quantize(W, k=args.k)
        del W
        copies = rotated_copies((qw.packed, qw.absmax, qw.row_scale, qw.codebook), info["l2_bytes"])
        for dname in args.dtypes.split(","):
            dtype = dtypes[dname]
            for M in (int(v) for v in args.ms.split(",")):
                x = torch.randn(M, K, generator=g).to(dtype).to(dev)
                a = torch.ops.kbit.gemm_silu_and_mul(x, *copies[0], args.k)
                b = torch.ops.kbit.silu_and_mul(torch.ops.kbit.gemm(x, *copies[0], args.k), True)
                assert torch.equal(a, b)
                path = kbit._C.gemm_dispatch(M, N, K, args.k, 0, str(dtype)[6:])[0]

                def t(label, fn):
                    return timer.measure([lambda c=c: fn(c) for c in copies],
                                         Work(0, 0, f"{label} {N}x{K} {M}")).median_us

                row = dict(N=N, K=K, M=M, dtype=dname, k=args.k, path=path, copies=len(copies))
                row["gemm"] = t("gemm", lambda c: torch.ops.kbit.gemm(x, *c, args.k))
                row["two_ops"] = t("two", lambda c: torch.ops.kbit.silu_and_mul(torch.ops.kbit.gemm(x, *c, args.k),
                                                                                   True))
                row["fused"] = t("fused", lambda c: torch.ops.kbit.gemm_silu_and_mul(x, *c, args.k))
                rows.append(row)
                print(f"| {N} x {K} ({path}) | {dname} | {M} | {row['gemm']:.2f} | {row['two_ops']:.2f} | "
                      f"{row['fused']:.2f} | {row['two_ops'] - row['fused']:.2f} |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**run_meta(info), "rows": rows}, f, indent=1)


def host_times(args):
    from benchmarks.bench_dispatch import per_call_us

    dev = torch.device("cuda")
    rows = []
    print("| N x K | M | gemm_direct | gemm_silu_and_mul_direct | fuses |")
    print("|---|---:|---:|---:|---|")
    for shape in args.shapes.split(","):
        N, K = (int(v) for v in shape.split("x"))
        qw = kbit.quantize((torch.randn(N, K, device=dev) * K ** -0.5).half(), k=args.k)
        w = (qw.packed, qw.absmax, qw.row_scale, qw.codebook)
        for M in (int(v) for v in args.ms.split(",")):
            x = torch.randn(M, K, device=dev, dtype=torch.float16)
            assert torch.equal(kbit._C.gemm_silu_and_mul_direct(x, *w, args.k),
                               torch.ops.kbit.silu_and_mul(torch.ops.kbit.gemm(x, *w, args.k), True))
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                kbit._C.gemm_silu_and_mul_direct(x, *w, args.k)
                torch.cuda.synchronize()
            kernels = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
            t = per_call_us({"gemm": (lambda: kbit._C.gemm_direct(x, *w, args.k), contextlib.nullcontext),
                             "gated": (lambda: kbit._C.gemm_silu_and_mul_direct(x, *w, args.k),
                                       contextlib.nullcontext)}, 200, 25)
            row = dict(N=N, K=K, M=M, k=args.k, gemm_us=t["gemm"]["median_us"], gated_us=t["gated"]["median_us"],
                       kernels=kernels)
            rows.append(row)
            print(f"| {N} x {K} | {M} | {row['gemm_us']:.2f} | {row['gated_us']:.2f} | {len(kernels)} kernel(s) |",
                  flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

"""Host time of the wgmma plan (kbit._C._wgmma_launch_plan: the rule, its split models and the model of session 52)
and of a whole gemm_direct call, under the rule and under session 51's (kbit._C._set_wgmma_max_tokens(128)), the two
alternating; per-call medians over repetitions of `--calls` back-to-back calls (no synchronization inside a loop).

    python3 scripts/probe_plan_host.py --shapes "160,4096,14336;640,2048,4096"
"""
import argparse
import statistics
import time

import torch

import kbit


def per_call(fn, calls):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1e6


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="160,4096,14336")
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--reps", type=int, default=15)
    a = p.parse_args()
    dev = torch.device("cuda")
    for part in a.shapes.split(";"):
        M, K, N = (int(v) for v in part.split(","))
        qw = kbit.quantize(torch.randn(N, K, device=dev, dtype=torch.float16) * 0.02, k=4)
        x = torch.randn(M, K, device=dev, dtype=torch.float16)
        w = (qw.packed, qw.absmax, qw.row_scale, qw.codebook)
        fns = {"plan": lambda: kbit._C._wgmma_launch_plan(M, N, K, 4),
               "gemm_direct": lambda: kbit._C.gemm_direct(x, *w, 4)}
        for name, fn in fns.items():
            times = {0: [], 128: []}
            for _ in range(5):
                fn()
            for r in range(a.reps):
                for aid in ((0, 128) if r % 2 == 0 else (128, 0)):
                    previous = kbit._C._set_wgmma_max_tokens(aid)
                    times[aid].append(per_call(fn, a.calls))
                    kbit._C._set_wgmma_max_tokens(previous)
            print(f"M={M} K={K} N={N} {name}: rule {statistics.median(times[0]):.2f} us, session 51's rule "
                  f"{statistics.median(times[128]):.2f} us (plans {kbit._C._wgmma_launch_plan(M, N, K, 4)['tokens']} "
                  "tokens under the rule)", flush=True)
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()

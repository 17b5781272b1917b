"""Host time of the wgmma plan (kbit._C._wgmma_launch_plan: the rule, its split models and the model of session 52)
and of a whole gemm_direct call, under the rule and under session 51's (kbit._C._set_wgmma_max_tokens(128)), timed
round robin as benchmarks.bench_dispatch times its entries: per-call medians over repetitions of `--calls`
back-to-back calls (no synchronization inside a loop).

    python3 scripts/probe_plan_host.py --shapes "160,4096,14336;640,2048,4096"
"""
import argparse
import contextlib
import functools

import torch

import kbit
from benchmarks.bench_dispatch import parse_shapes, per_call_us
from benchmarks.session import tuning_aids


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="160,4096,14336")
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--reps", type=int, default=15)
    a = p.parse_args()
    dev = torch.device("cuda")
    session51 = functools.partial(tuning_aids, wgmma_max_tokens=128)
    for M, K, N in parse_shapes(a.shapes):
        qw = kbit.quantize(torch.randn(N, K, device=dev, dtype=torch.float16) * 0.02, k=4)
        x = torch.randn(M, K, device=dev, dtype=torch.float16)
        w = (qw.packed, qw.absmax, qw.row_scale, qw.codebook)
        fns = {"plan": lambda: kbit._C._wgmma_launch_plan(M, N, K, 4),
               "gemm_direct": lambda: kbit._C.gemm_direct(x, *w, 4)}
        for name, fn in fns.items():
            t = per_call_us({"rule": (fn, contextlib.nullcontext), "session 51": (fn, session51)}, a.calls, a.reps)
            print(f"M={M} K={K} N={N} {name}: rule {t['rule']['median_us']:.2f} us, session 51's rule "
                  f"{t['session 51']['median_us']:.2f} us (plans {kbit._C._wgmma_launch_plan(M, N, K, 4)['tokens']} "
                  "tokens under the rule)", flush=True)


if __name__ == "__main__":
    main()

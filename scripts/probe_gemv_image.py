"""Does the x-resident GEMV slow down with its x image's size? gemv_gemm under the rule (k = 4, fp16, cold L2,
CUDA-graph medians, us) and its launch plan, on weights of the same bytes with K = 8192 and K = 4096 (Llama-3 70B
gate/up, 28672 x 8192, against 57344 x 4096) and on Llama-3 8B gate/up, at M = 1-16: at M = 8 the 70B image is
128 KB (one CTA an SM), the 57344 x 4096 one 64 KB.

    python3 scripts/probe_gemv_image.py --sizes 28672x8192,57344x4096 --ms 1,4,5,8,12,16
"""
import argparse

import torch

import kbit
from benchmarks.harness import Work
from benchmarks.session import tuning_setup
from benchmarks.weights import cold_copies

PLAN_KEYS = ("token_slots", "x_resident", "ring_stages", "warps", "warps_per_unit", "ctas_per_sm", "grid",
             "smem_bytes")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="28672x8192,57344x4096,14336x4096")
    ap.add_argument("--ms", default="1,4,5,8,12,16")
    ap.add_argument("--k", type=int, default=4)
    a = ap.parse_args()
    dev, info, timer = tuning_setup()
    for size in a.sizes.split(","):
        N, K = map(int, size.split("x"))
        g = torch.Generator(device=dev).manual_seed(N * 131 + K)
        qw = kbit.quantize(torch.randn(N, K, device=dev, dtype=torch.float16, generator=g) * K ** -0.5, k=a.k)
        w = (qw.packed, qw.absmax, qw.row_scale, qw.codebook)
        nb = sum(t.numel() * t.element_size() for t in w)
        copies = [w] + [tuple(t.clone() for t in w) for _ in range(cold_copies(nb, info["l2_bytes"]) - 1)]
        for M in map(int, a.ms.split(",")):
            x = torch.randn(M, K, device=dev, dtype=torch.float16, generator=g)
            plan = dict(kbit._C._gemv_launch_plan(M, N, K, a.k))
            us = timer.measure([lambda c=c: torch.ops.kbit.gemv_gemm(x, *c, a.k) for c in copies],
                               Work(0, 0, f"gemv{N}x{K}M{M}")).median_us
            print(f"{N}x{K} M={M}: gemv_gemm {us:.2f} us ({nb / us / 1e3:.0f} GB/s) plan "
                  + " ".join(f"{k_}={plan.get(k_)}" for k_ in PLAN_KEYS), flush=True)


if __name__ == "__main__":
    main()

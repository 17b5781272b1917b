"""The wgmma op under the rule's plan (k = 4 unless --ks, fp16 unless --dtype, cold L2, CUDA-graph medians) on a few
shapes and M, for an A/B of two builds: run it once per build (PYTHONPATH picks the tree, its kbit and its carried
extension), alternating, and compare the JSONs. --op gemv_gemm (M <= 128) or gemm times that op instead, under its
rule. Only APIs that every build since session 40 has (torch.ops.kbit.<op>, the harness's timer).

    PYTHONPATH=/path/to/tree python3 scripts/probe_wgmma_build_ab.py --shapes down,O --ms 256,512 --label a --out x.json
"""
import argparse
import json

import torch

import kbit
from benchmarks import shapes as S
from benchmarks.harness import Work
from benchmarks.session import tuning_setup
from benchmarks.weights import cold_copies


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="down,O")
    p.add_argument("--ms", default="256,512,1024")
    p.add_argument("--label", default="a")
    p.add_argument("--op", default="wgmma_gemm", choices=("wgmma_gemm", "gemv_gemm", "gemm"))
    p.add_argument("--ks", default="4", help="bit widths, e.g. 2,3,4,5")
    p.add_argument("--dtype", default="float16", choices=("float16", "bfloat16"), help="the activations' dtype")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    dev, info, timer = tuning_setup()
    print(f"{a.label}: kbit from {kbit.__file__}, extension {kbit._C.__file__}", flush=True)
    op = getattr(torch.ops.kbit, a.op)
    rows = []
    for k in map(int, a.ks.split(",")):
        for name in a.shapes.split(","):
            N, K = S.SHAPES[name].N, S.SHAPES[name].K
            g = torch.Generator(device=dev).manual_seed(N * 7 + K)
            qw = kbit.quantize(torch.randn(N, K, device=dev, dtype=torch.float16, generator=g) * K ** -0.5, k=k)
            w = (qw.packed, qw.absmax, qw.row_scale, qw.codebook)
            nb = sum(t.numel() * t.element_size() for t in w)
            copies = [w] + [tuple(t.clone() for t in w) for _ in range(cold_copies(nb, info["l2_bytes"]) - 1)]
            for M in map(int, a.ms.split(",")):
                x = torch.randn(M, K, device=dev, dtype=torch.float16, generator=g).to(getattr(torch, a.dtype))
                us = timer.measure([lambda c=c: op(x, *c, k) for c in copies],
                                   Work(0, 0, f"{name} {M}")).median_us
                rows.append({"shape": name, "M": M, "k": k, "op": a.op, "dtype": a.dtype, "us": us})
                print(f"{a.label} | k{k} | {name} | {M} | {us:.2f}", flush=True)
            del copies
    with open(a.out, "w") as f:
        json.dump({"label": a.label, "kbit": kbit.__file__, "extension": kbit._C.__file__, "device": info, "rows": rows}, f,
                  indent=1)


if __name__ == "__main__":
    main()

"""Where the dequantize + cuBLAS fallback's time goes: for each shape and M (k = 4, fp16 or bf16, CUDA-graph
medians, us), the whole op (torch.ops.kbit.dequant_cublas_gemm), its dequantize pass alone (the dequantize_tiled op
into x's dtype: the same kernel and, for every row of these weights, the same row scales), cuBLAS on the fp16 / bf16
weight cold (rotated copies) and hot (one copy, in L2 after its first replay), cuBLAS with fp32 output (what the
fallback called before session 42; since then cuBLAS writes y in x's dtype), and wgmma_gemm.

    python scripts/probe_dequant_cublas.py --shapes Q,gateup --ms 64,128 [--dtype bf16]
"""
from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

from benchmarks import shapes as S
from benchmarks.harness import Work
from benchmarks.session import tuning_setup
from benchmarks.weights import shape_weight_copies


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="Q,gateup")
    p.add_argument("--ms", default="64,128")
    p.add_argument("--dtype", default="fp16", choices=["fp16", "bf16"], help="x's dtype (and cuBLAS's weights')")
    a = p.parse_args()
    dt = torch.float16 if a.dtype == "fp16" else torch.bfloat16
    dev, info, timer = tuning_setup(0.0)
    ops = torch.ops.kbit
    for name in a.shapes.split(","):
        N, K = S.SHAPES[name].N, S.SHAPES[name].K
        W, fp16, copies = shape_weight_copies(S.SHAPES[name], 4, dev, info["l2_bytes"])
        W, dense = W.to(dt), [w.to(dt) for w in fp16]
        del fp16

        def t(label, fns):
            return timer.measure(fns, Work(0, 0, label)).median_us

        deq = t("deq", [lambda c=c: ops.dequantize_tiled(c[0], c[1], c[2], c[3], 4, K, dt) for c in copies])
        for M in map(int, a.ms.split(",")):
            x = torch.randn(M, K, device=dev, dtype=dt)
            cold = t("cold", [lambda w=w: F.linear(x, w) for w in dense])
            hot = t("hot", [lambda: F.linear(x, W)])
            mm32 = t("mm32", [lambda w=w: torch.mm(x, w.t(), out_dtype=torch.float32) for w in dense])
            full = t("full", [lambda c=c: ops.dequant_cublas_gemm(x, *c, 4) for c in copies])
            wg = t("wgmma", [lambda c=c: ops.wgmma_gemm(x, *c, 4) for c in copies])
            print(f"{name} N={N} K={K} M={M} {a.dtype}: dq+cuBLAS {full:.2f} | dequantize {deq:.2f} | "
                  f"cuBLAS cold {cold:.2f} hot {hot:.2f} fp32-out cold {mm32:.2f} | wgmma {wg:.2f}", flush=True)


if __name__ == "__main__":
    main()

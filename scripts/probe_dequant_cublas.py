"""Where the dequantize + cuBLAS fallback's time goes: for each shape and M (k = 4, fp16 or bf16, CUDA-graph
medians, us), the whole op (torch.ops.kbit.dequant_cublas_gemm), its dequantize pass alone (the dequantize_tiled op
into x's dtype: the same kernel and, for every row of these weights, the same row scales), cuBLAS on the fp16 / bf16
weight cold (rotated copies) and hot (one copy, in L2 after its first replay), cuBLAS with fp32 output (what the
fallback called before session 42; since then cuBLAS writes y in x's dtype), and wgmma_gemm.

With --pdl-ab R instead: the whole op with kbit's PDL off and on (kbit._C.set_dependent_launch; each graph keeps the
setting it was captured under), R rounds alternating, and cuBLAS cold once per round; the medians over the rounds, and
the rounds' times in --json. (Session 56's runs 1-2 also timed the dequantize_tiled op, then launched with PDL, and run
2 a first-tile L2 prefetch before the dequantize's wait, forced off and on: 83be9db's and 48fa4d1's versions of this
file.)

    python scripts/probe_dequant_cublas.py --shapes Q,gateup --ms 64,128 [--dtype bf16] [--pdl-ab 3 --json F]
"""
from __future__ import annotations

import argparse
import json
import statistics

import torch
import torch.nn.functional as F

import kbit

from benchmarks import shapes as S
from benchmarks.harness import Work
from benchmarks.session import git_commit, tuning_setup
from benchmarks.weights import shape_weight_copies


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="Q,gateup")
    p.add_argument("--ms", default="64,128")
    p.add_argument("--dtype", default="fp16", choices=["fp16", "bf16"], help="x's dtype (and cuBLAS's weights')")
    p.add_argument("--pdl-ab", type=int, default=0, help="rounds of the PDL off / on A/B (0: the breakdown)")
    p.add_argument("--json", default=None, help="with --pdl-ab: write every round's times here")
    a = p.parse_args()
    records = []
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

        if a.pdl_ab:
            for M in map(int, a.ms.split(",")):
                x = torch.randn(M, K, device=dev, dtype=dt)
                rec = pdl_ab(t, a.pdl_ab, [lambda c=c: ops.dequant_cublas_gemm(x, *c, 4) for c in copies],
                             [lambda w=w: F.linear(x, w) for w in dense])
                rec.update(shape=name, N=N, K=K, M=M, dtype=a.dtype)
                records.append(rec)
                med = {key: statistics.median(v) for key, v in rec["rounds"].items()}
                print(f"{name} N={N} K={K} M={M} {a.dtype}: dq+cuBLAS PDL off {med['off']:.2f} on {med['on']:.2f} "
                      f"({med['on'] / med['off']:.3f}x) | cuBLAS cold {med['cublas']:.2f} | cuBLAS / op: off "
                      f"{med['cublas'] / med['off']:.3f} on {med['cublas'] / med['on']:.3f}", flush=True)
            continue
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
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": info, "commit": git_commit(), "records": records}, f, indent=1)


def pdl_ab(t, rounds, full_fns, cublas_fns):
    """Each round: cuBLAS, then the op with PDL off and on, the order flipped every round."""
    previous = kbit._C.dependent_launch()
    out = {"cublas": [], "off": [], "on": []}
    try:
        for r in range(rounds):
            out["cublas"].append(t("cublas", cublas_fns))
            for on in ((False, True) if r % 2 == 0 else (True, False)):
                kbit._C.set_dependent_launch(on)
                out["on" if on else "off"].append(t("full", full_fns))
    finally:
        kbit._C.set_dependent_launch(previous)
    return {"rounds": out}


if __name__ == "__main__":
    main()

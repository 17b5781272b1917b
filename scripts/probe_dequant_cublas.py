"""Where the dequantize + cuBLAS fallback's time goes: for each shape and M (k = 4, fp16 or bf16, CUDA-graph
medians, us), the whole op (torch.ops.kbit.dequant_cublas_gemm), its dequantize pass alone (the dequantize_tiled op
into x's dtype: the same kernel and, for every row of these weights, the same row scales), cuBLAS on the fp16 / bf16
weight cold (rotated copies) and hot (one copy, in L2 after its first replay), cuBLAS with fp32 output (what the
fallback called before session 42; since then cuBLAS writes y in x's dtype), and wgmma_gemm.

With --pdl-ab R instead: the whole op and its dequantize alone with kbit's PDL off, on (kbit._C.set_dependent_launch;
each graph keeps the setting it was captured under), and on with the dequantize's first-tile L2 prefetch forced off
(`on0`) and on (`on1`) (kbit._C._set_pdl_prefetch_bytes 0 / 65536; `on` is its rule), R rounds in a rotating order, and
cuBLAS cold once per round; the medians over the rounds, and the rounds' times in --json.

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

        deq_fns = [lambda c=c: ops.dequantize_tiled(c[0], c[1], c[2], c[3], 4, K, dt) for c in copies]
        if a.pdl_ab:
            for M in map(int, a.ms.split(",")):
                x = torch.randn(M, K, device=dev, dtype=dt)
                rec = pdl_ab(t, a.pdl_ab, deq_fns, [lambda c=c: ops.dequant_cublas_gemm(x, *c, 4) for c in copies],
                             [lambda w=w: F.linear(x, w) for w in dense])
                rec.update(shape=name, N=N, K=K, M=M, dtype=a.dtype)
                records.append(rec)
                med = {key: statistics.median(v) for key, v in rec["rounds"].items()}
                full = " ".join(f"{c} {med['full_' + c]:.2f}" for c in PDL_CONFIGS)
                deq = " ".join(f"{c} {med['deq_' + c]:.2f}" for c in PDL_CONFIGS)
                ratio = " ".join(f"{c} {med['cublas'] / med['full_' + c]:.3f}" for c in PDL_CONFIGS)
                print(f"{name} N={N} K={K} M={M} {a.dtype}: dq+cuBLAS {full} | dequantize {deq} | cuBLAS cold "
                      f"{med['cublas']:.2f} | cuBLAS / op: {ratio}", flush=True)
            continue
        deq = t("deq", deq_fns)
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


# (PDL, the PDL prefetch aid's bytes) of each configuration
PDL_CONFIGS = {"off": (False, -1), "on": (True, -1), "on0": (True, 0), "on1": (True, 65536)}


def pdl_ab(t, rounds, deq_fns, full_fns, cublas_fns):
    """Each round: cuBLAS, then the op and its dequantize in each of PDL_CONFIGS, the order rotated every round."""
    previous = kbit._C.dependent_launch(), kbit._C._set_pdl_prefetch_bytes(-1)
    names = list(PDL_CONFIGS)
    out = {"cublas": [], **{f"{what}_{c}": [] for c in names for what in ("full", "deq")}}
    try:
        for r in range(rounds):
            out["cublas"].append(t("cublas", cublas_fns))
            for c in names[r % len(names):] + names[:r % len(names)]:
                kbit._C.set_dependent_launch(PDL_CONFIGS[c][0])
                kbit._C._set_pdl_prefetch_bytes(PDL_CONFIGS[c][1])
                out["full_" + c].append(t("full", full_fns))
                out["deq_" + c].append(t("deq", deq_fns))
    finally:
        kbit._C.set_dependent_launch(previous[0])
        kbit._C._set_pdl_prefetch_bytes(previous[1])
    return {"rounds": out}


if __name__ == "__main__":
    main()

"""The tiled dequantize with each tile split into 1, 2, 4 or 8 work items (kbit._C._set_dequant_parts; 0 = the
rule), alone and inside the dequantize + cuBLAS fallback (torch.ops.kbit.dequant_cublas_gemm), k = 4 unless
--ks, x's dtype, CUDA-graph medians over cold weight copies, us. Rounds alternate the settings.

    python scripts/probe_dequant_parts.py --shapes Q,gateup --ms 1536,2048 --parts 0,1,2,4,8 --rounds 2
"""
from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

import kbit
from benchmarks import shapes as S
from benchmarks.harness import Work
from benchmarks.session import tuning_setup
from benchmarks.weights import shape_weight_copies


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="Q,gateup")
    p.add_argument("--ms", default="")
    p.add_argument("--parts", default="0,1,2,4,8")
    p.add_argument("--ks", default="4")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--dtype", default="fp16", choices=["fp16", "bf16"])
    a = p.parse_args()
    dt = torch.float16 if a.dtype == "fp16" else torch.bfloat16
    dev, info, timer = tuning_setup(0.0)
    ops = torch.ops.kbit
    parts = [int(v) for v in a.parts.split(",")]
    ms = [int(v) for v in a.ms.split(",")] if a.ms else []

    def t(label, fns):
        return timer.measure(fns, Work(0, 0, label)).median_us

    for k in map(int, a.ks.split(",")):
        for name in a.shapes.split(","):
            N, K = S.SHAPES[name].N, S.SHAPES[name].K
            W, fp16, copies = shape_weight_copies(S.SHAPES[name], k, dev, info["l2_bytes"])
            dense = [w.to(dt) for w in fp16] if ms else []
            del fp16, W
            xs = {M: torch.randn(M, K, device=dev, dtype=dt) for M in ms}
            cub = {M: t("cub", [lambda w=w, x=xs[M]: F.linear(x, w) for w in dense]) for M in ms}
            for r in range(a.rounds):
                cells = []
                for P in parts:
                    kbit._C._set_dequant_parts(P)
                    deq = t(f"deq{P}", [lambda c=c: ops.dequantize_tiled(c[0], c[1], c[2], c[3], k, K, dt)
                                        for c in copies])
                    cell = f"P={P}: deq {deq:.2f}"
                    for M in ms:
                        full = t(f"full{P}", [lambda c=c, x=xs[M]: ops.dequant_cublas_gemm(x, *c, k) for c in copies])
                        cell += f" M{M} {full:.2f}"
                    cells.append(cell)
                kbit._C._set_dequant_parts(0)
                print(f"{name} N={N} K={K} k={k} {a.dtype} round {r}: " + " | ".join(cells)
                      + (" | cuBLAS " + " ".join(f"M{M} {v:.2f}" for M, v in cub.items()) if ms else ""), flush=True)


if __name__ == "__main__":
    main()

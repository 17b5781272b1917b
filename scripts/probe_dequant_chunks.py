"""Would the dequantize + cuBLAS fallback gain from running in N-chunks (dequantize rows [n0, n1) into a small
workspace, cuBLAS on those rows, next chunk into the same workspace, so the dequantized weight stays in L2)?
Emulated with the existing ops (k = 4, x's dtype, CUDA-graph medians over cold weight copies, us): the fallback op
whole; the dequantize pass whole and as c chunks; cuBLAS on the fp16 weight whole and as c row chunks; and the
chunked chain (dequantize chunk, cuBLAS chunk, ...) with each chunk's output its own [M, rows] tensor.

    python scripts/probe_dequant_chunks.py --shapes Q,gateup --ms 1536,2048 --chunks 2,4,8
"""
from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

from benchmarks import shapes as S
from benchmarks.harness import Work
from benchmarks.session import tuning_setup
from benchmarks.weights import shape_weight_copies


def row_chunks(N: int, c: int, align: int = 256):
    step = -(-N // c)
    step = -(-step // align) * align
    return [(n0, min(N, n0 + step)) for n0 in range(0, N, step)]


def slice_tiled(copy, n0: int, n1: int):
    packed, absmax, row_scale, cb = copy
    t0, t1 = n0 // 16, -(-n1 // 16)
    return packed[t0:t1], absmax[t0:t1], row_scale[n0:n1], cb


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="Q,gateup")
    p.add_argument("--ms", default="1536,2048")
    p.add_argument("--chunks", default="2,4,8")
    p.add_argument("--dtype", default="fp16", choices=["fp16", "bf16"])
    a = p.parse_args()
    dt = torch.float16 if a.dtype == "fp16" else torch.bfloat16
    dev, info, timer = tuning_setup(0.0)
    ops = torch.ops.kbit
    for name in a.shapes.split(","):
        N, K = S.SHAPES[name].N, S.SHAPES[name].K
        W, fp16, copies = shape_weight_copies(S.SHAPES[name], 4, dev, info["l2_bytes"])
        dense = [w.to(dt) for w in fp16]
        del fp16, W

        def t(label, fns):
            return timer.measure(fns, Work(0, 0, label)).median_us

        deq = t("deq", [lambda c=c: ops.dequantize_tiled(c[0], c[1], c[2], c[3], 4, K, dt) for c in copies])
        deq_c = {}
        for nc in map(int, a.chunks.split(",")):
            parts = [[slice_tiled(c, n0, n1) for n0, n1 in row_chunks(N, nc)] for c in copies]

            def deq_chain(ps=None):
                for s in ps:
                    ops.dequantize_tiled(s[0], s[1], s[2], s[3], 4, K, dt)
            deq_c[nc] = (parts, t(f"deq{nc}", [lambda ps=ps: deq_chain(ps) for ps in parts]))
        print(f"{name} N={N} K={K} {a.dtype}: dequantize whole {deq:.2f} | "
              + " | ".join(f"{nc} chunks {v[1]:.2f}" for nc, v in deq_c.items()), flush=True)
        for M in map(int, a.ms.split(",")):
            x = torch.randn(M, K, device=dev, dtype=dt)
            full = t("full", [lambda c=c: ops.dequant_cublas_gemm(x, *c, 4) for c in copies])
            cold = t("cold", [lambda w=w: F.linear(x, w) for w in dense])
            line = [f"{name} M={M}: fallback {full:.2f} | cuBLAS {cold:.2f}"]
            for nc, (parts, _) in deq_c.items():
                bounds = row_chunks(N, nc)
                cub = t(f"cub{nc}", [lambda w=w: [F.linear(x, w[n0:n1]) for n0, n1 in bounds] for w in dense])

                def chain(ps):
                    for s in ps:
                        F.linear(x, ops.dequantize_tiled(s[0], s[1], s[2], s[3], 4, K, dt))
                ch = t(f"chain{nc}", [lambda ps=ps: chain(ps) for ps in parts])
                line.append(f"c={nc}: cuBLAS chunks {cub:.2f} chain {ch:.2f}")
            print(" | ".join(line), flush=True)


if __name__ == "__main__":
    main()

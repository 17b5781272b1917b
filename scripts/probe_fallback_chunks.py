"""Would the dequantize + cuBLAS fallback gain from working in row chunks? For each shape and M (k = 4, fp16,
sustained CUDA-graph medians, cold L2, us):

- cublas: F.linear on the fp16 weight (rotated copies);
- op: torch.ops.kbit.dequant_cublas_gemm (today's fallback: the whole W dequantized, then one cuBLAS call);
- seq C: for each chunk of C rows, the dequantize_tiled op on the chunk's tiles, then cuBLAS into y's columns
  (y[:, n0:n1], leading dimension N): the chunk's fp16 rows may still be in L2 when cuBLAS reads them;
- par C: the chunks dequantized on a second stream, each chunk's cuBLAS call waiting for its own chunk only, so the
  dequantize of chunk i + 1 may overlap the GEMM of chunk i.

Every variant's y is checked against the op's before it is timed. Pure Python: the chunked forms slice the tiled
layout (packed [N/16, K/256, k, 32, 4] and absmax [N/16, K/256, 128]: a chunk of whole row tiles is a contiguous
slice of both, docs/format.md section 5).

    python scripts/probe_fallback_chunks.py --shapes llama8b_gu,Q --ms 1024,4096 --chunks 1024,2048 --json F
"""
from __future__ import annotations

import argparse
import json

import torch
import torch.nn.functional as F

from benchmarks import shapes as S
from benchmarks.harness import Work
from benchmarks.session import git_commit, tuning_setup
from benchmarks.weights import shape_weight_copies


def chunk_bounds(N: int, rows: int):
    assert rows % 16 == 0
    return [(n0, min(n0 + rows, N)) for n0 in range(0, N, rows)]


def chunked(x, c, K, bounds, side=None):
    """y = x @ W^T by row chunks of W; with side, the chunks' dequantizes run on that stream."""
    packed, absmax, row_scale, cb = c
    ops = torch.ops.kbit
    y = torch.empty(x.size(0), row_scale.numel(), device=x.device, dtype=x.dtype)

    def deq(n0, n1):
        return ops.dequantize_tiled(packed[n0 // 16:(n1 + 15) // 16], absmax[n0 // 16:(n1 + 15) // 16],
                                    row_scale[n0:n1], cb, 4, K, x.dtype)

    if side is None:
        for n0, n1 in bounds:
            torch.mm(x, deq(n0, n1).t(), out=y[:, n0:n1])
        return y
    main = torch.cuda.current_stream()
    side.wait_stream(main)
    ready = []
    with torch.cuda.stream(side):
        for n0, n1 in bounds:
            w = deq(n0, n1)
            ev = torch.cuda.Event()
            ev.record(side)
            ready.append((w, ev))
    for (n0, n1), (w, ev) in zip(bounds, ready):
        main.wait_event(ev)
        torch.mm(x, w.t(), out=y[:, n0:n1])
    main.wait_stream(side)
    return y


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="llama8b_gu,Q")
    p.add_argument("--ms", default="1024,4096")
    p.add_argument("--chunks", default="1024,2048,4096", help="rows per chunk (multiples of 16)")
    p.add_argument("--par", default="2048,4096", help="rows per chunk of the two-stream form")
    p.add_argument("--sustain", type=float, default=0.3)
    p.add_argument("--json", default=None)
    a = p.parse_args()
    dev, info, timer = tuning_setup(0.0, a.sustain)
    ops = torch.ops.kbit
    side = torch.cuda.Stream(dev)
    records = []
    for name in a.shapes.split(","):
        N, K = S.SHAPES[name].N, S.SHAPES[name].K
        W, dense, copies = shape_weight_copies(S.SHAPES[name], 4, dev, info["l2_bytes"])
        del W
        for M in map(int, a.ms.split(",")):
            x = torch.randn(M, K, device=dev, dtype=torch.float16)
            want = ops.dequant_cublas_gemm(x, *copies[0], 4).float()
            variants = {"cublas": [lambda w=w: F.linear(x, w) for w in dense],
                        "op": [lambda c=c: ops.dequant_cublas_gemm(x, *c, 4) for c in copies]}
            for rows in map(int, a.chunks.split(",")):
                if rows < N:
                    b = chunk_bounds(N, rows)
                    variants[f"seq{rows}"] = [lambda c=c, b=b: chunked(x, c, K, b) for c in copies]
            for rows in map(int, a.par.split(",")):
                if rows < N:
                    b = chunk_bounds(N, rows)
                    variants[f"par{rows}"] = [lambda c=c, b=b: chunked(x, c, K, b, side) for c in copies]
            rec = {"shape": name, "N": N, "K": K, "M": M, "us": {}}
            for label, fns in variants.items():
                if label not in ("cublas", "op"):
                    got = fns[0]().float()
                    torch.cuda.synchronize()
                    err = ((got - want).abs().max() / want.abs().max()).item()
                    assert err <= 2e-3, f"{name} M={M} {label}: y differs from the op's (max rel {err:.3g})"
                    rec.setdefault("max_rel_diff", {})[label] = err
                rec["us"][label] = timer.measure(fns, Work(0, 0, f"{name}-{M}-{label}")).median_us
            records.append(rec)
            cb = rec["us"]["cublas"]
            print(f"{name} N={N} K={K} M={M}: "
                  + " | ".join(f"{k} {v:.2f} ({cb / v:.3f})" for k, v in rec["us"].items()), flush=True)
        del dense, copies
        torch.cuda.empty_cache()
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": info, "commit": git_commit(), "sustain_s": a.sustain, "records": records}, f, indent=1)


if __name__ == "__main__":
    main()

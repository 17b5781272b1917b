"""The GEMV's decodes side by side (torch.ops.kbit.gemv_gemm's decode argument: auto, mma, shuffle)
on one quantized copy set per shape: fp16 activations, cold L2, CUDA-graph medians (us). Prints one
line per (shape, k, M) and writes <out>/gemv-variants.json with every row.

    python scripts/gemv_variants.py --decodes shuffle,mma --shapes Q,llama8b_gu --ks 4 --ms 1,4 --out out

(Session 11's runs 1-3 used an earlier form of this script whose variants also set the warps per
CTA and the register cap through launcher environment switches; those switches were removed once
the rules were chosen: docs/benchmarks/nvidia-h100-80gb-hbm3/2026-11-26-session11/README.md.)
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from benchmarks import shapes as S  # noqa: E402
from benchmarks.harness import Work  # noqa: E402
from benchmarks.session import run_meta, tuning_setup  # noqa: E402
from benchmarks.weights import cold_copies  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decodes", default="shuffle,mma", help="gemv_gemm decode values, comma-separated")
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--ks", default="4")
    ap.add_argument("--ms", default="1")
    ap.add_argument("--out", default="out")
    a = ap.parse_args()
    import kbit
    dev, info, timer = tuning_setup()
    decodes = a.decodes.split(",")
    ks, ms = [int(v) for v in a.ks.split(",")], [int(v) for v in a.ms.split(",")]
    op = torch.ops.kbit.gemv_gemm
    rows = []
    for name in a.shapes.split(","):
        N, K = S.SHAPES[name].N, S.SHAPES[name].K
        g = torch.Generator(device=dev).manual_seed(N * 131 + K)
        W = torch.randn(N, K, device=dev, dtype=torch.float16, generator=g) * K ** -0.5
        xs = {M: torch.randn(M, K, device=dev, dtype=torch.float16, generator=g) for M in ms}
        for k in ks:
            qw = kbit.quantize(W, k=k)
            args = (qw.packed, qw.absmax, qw.row_scale, qw.codebook)
            nbytes = sum(t.numel() * t.element_size() for t in args)
            copies = [args] + [tuple(t.clone() for t in args) for _ in range(cold_copies(nbytes, info["l2_bytes"]) - 1)]
            for M in ms:
                line = []
                for decode in decodes:
                    t = timer.measure([lambda c=c, x=xs[M], d=decode: op(x, *c, k, d) for c in copies],
                                      Work(0, 0, f"{name} {k} {M} {decode}"))
                    rows.append({"shape": name, "N": N, "K": K, "k": k, "M": M, "variant": decode, "us": t.median_us})
                    line.append(f"{decode} {t.median_us:6.2f}")
                print(f"{name:12s} k={k} M={M} " + "  ".join(line), flush=True)
            del copies, qw
        del W
        torch.cuda.empty_cache()
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "gemv-variants.json"), "w") as f:
        json.dump({**run_meta(info), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
